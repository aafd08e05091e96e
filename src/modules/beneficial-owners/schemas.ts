import Type, { type Static } from 'typebox';
import { IdParam, ListResponse, PaginationQuery, ResourceId, StringEnum } from '../../platform/http/schemas.js';
import { Address, BeneficialOwner, Country, DateOnly, Email, OWNER_ROLES, Phone } from '../customers/index.js';

/** Upstream's IdentificationType, which BeneficialOwnerPersonalInfo.idType references. */
export const OWNER_ID_TYPES = ['SSN', 'ITIN', 'EIN', 'NON_US_TAX_ID'] as const;

const Text = (max: number) => Type.String({ minLength: 1, maxLength: max });

const personalInfoFields = {
  firstName: Text(100),
  middleName: Type.Optional(Text(100)),
  lastName: Text(100),
  birthDate: DateOnly({ description: 'YYYY-MM-DD; not in the future.' }),
  nationality: Country(),
  email: Type.Optional(Email),
  phoneNumber: Type.Optional(Phone),
  address: Address,
  idType: StringEnum(OWNER_ID_TYPES),
  identifier: Type.String({
    minLength: 1,
    maxLength: 64,
    description: 'SSN or ITIN as ###-##-####, EIN as ##-#######, or a foreign tax id. Sealed at rest; returned masked (last four characters, at most half of it).',
  }),
  countryOfIssuance: Type.Optional(Country({ description: 'Country that issued the identifier; US for SSN, ITIN and EIN (the default).' })),
};

const PersonalInfo = Type.Object(personalInfoFields, { additionalProperties: false, title: 'BeneficialOwnerPersonalInfo' });
const PersonalInfoUpdate = Type.Partial(PersonalInfo, { additionalProperties: false, title: 'BeneficialOwnerPersonalInfoUpdate' });

const Roles = Type.Array(StringEnum(OWNER_ROLES), { minItems: 1, maxItems: OWNER_ROLES.length, uniqueItems: true });
const Percentage = Type.Integer({ minimum: 0, maximum: 100, description: 'Share of ownership, whole percent. All owners of a customer total at most 100.' });

export const BeneficialOwnerCreateRequest = Type.Object(
  { customerId: ResourceId('Customer'), roles: Roles, ownershipPercentage: Percentage, personalInfo: PersonalInfo },
  { additionalProperties: false, title: 'BeneficialOwnerCreateRequest' },
);
export const BeneficialOwnerUpdateRequest = Type.Object(
  { roles: Type.Optional(Roles), ownershipPercentage: Type.Optional(Percentage), personalInfo: Type.Optional(PersonalInfoUpdate) },
  { additionalProperties: false, minProperties: 1, title: 'BeneficialOwnerUpdateRequest' },
);
export type BeneficialOwnerCreateRequest = Static<typeof BeneficialOwnerCreateRequest>;
export type BeneficialOwnerUpdateRequest = Static<typeof BeneficialOwnerUpdateRequest>;
export type PersonalInfo = Omit<Static<typeof PersonalInfo>, 'identifier'>;

// The response shape lives with customers: a business customer's response embeds its owners.
export { BeneficialOwner, OWNER_ROLES };


export const OwnerParams = Type.Object({ beneficialOwnerId: IdParam('BeneficialOwner', 'REFERENCE_NOT_FOUND') }, { additionalProperties: false });
export const OwnerListQuery = Type.Object({ customerId: ResourceId('Customer'), ...PaginationQuery }, { additionalProperties: false });
export type OwnerListQuery = Static<typeof OwnerListQuery>;
export const OwnerListResponse = ListResponse(BeneficialOwner, 'BeneficialOwnerListResponse');
