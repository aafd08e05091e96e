import Type, { type Static } from 'typebox';
import { DateTime, IdParam, ListResponse, PaginationQuery, ResourceId, StringEnum } from '../../platform/http/schemas.js';
import { Address, Country, DateOnly } from '../customers/index.js';
import { DOCUMENT_TYPES } from '../documents/index.js';
import type { EventGroup } from '../../platform/outbox.js';

export const VERIFICATION_STATUSES = ['RESOLVE_ERRORS', 'PENDING_MANUAL_REVIEW', 'IN_PROGRESS', 'APPROVED', 'REJECTED', 'READY_FOR_VERIFICATION'] as const;
export type VerificationStatus = (typeof VERIFICATION_STATUSES)[number];

export const VERIFICATION_ERROR_TYPES = [
  'MISSING_FIELD', 'INVALID_FIELD', 'MISSING_LEGAL_PRESENCE_DOCUMENT', 'MISSING_CONTROL_STRUCTURE_DOCUMENT',
  'MISSING_OWNERSHIP_STRUCTURE_DOCUMENT', 'MISSING_PROOF_OF_ADDRESS_DOCUMENT', 'MISSING_IDENTITY_DOCUMENT', 'INVALID_DOCUMENT',
  'EXPIRED_DOCUMENT', 'POOR_QUALITY_DOCUMENT', 'SUSPECTED_FRAUD_DOCUMENT', 'WRONG_DOCUMENT_TYPE', 'INCOMPLETE_DOCUMENT',
  'UNREADABLE_DOCUMENT', 'DOCUMENT_VERIFICATION_FAILED', 'APPLICANT_SANCTIONED', 'APPLICANT_FRAUD', 'APPLICANT_CRIMINAL_RECORD',
  'APPLICANT_REJECTED', 'MISSING_BENEFICIAL_OWNER', 'MISSING_CONTROL_PERSON', 'MISSING_GOOD_STANDING_DOCUMENT',
] as const;
export type VerificationErrorType = (typeof VERIFICATION_ERROR_TYPES)[number];

/** Spec §7.1 document-review codes. */
export const DOCUMENT_REVIEW_CODES = ['LOW_QUALITY', 'DATA_MISMATCH', 'EXPIRED', 'SUSPECTED_FRAUD', 'UNSUITABLE_DOCUMENT', 'INCOMPLETE'] as const;
export type DocumentReviewCode = (typeof DOCUMENT_REVIEW_CODES)[number];

export const VerificationError = Type.Object(
  {
    resourceId: Type.String({ description: 'The Customer, BeneficialOwner or Document the problem is about.' }),
    type: StringEnum(VERIFICATION_ERROR_TYPES),
    field: Type.Optional(Type.String({ description: 'Dot path of the missing or invalid field, e.g. `customer.address`.' })),
    acceptedDocumentTypes: Type.Optional(Type.Array(StringEnum(DOCUMENT_TYPES), { description: 'Any one of these resolves the problem.' })),
    code: Type.Optional(StringEnum(DOCUMENT_REVIEW_CODES, { description: 'Why a document was rejected in review; replace it, then start a new verification.' })),
    reason: Type.String(),
  },
  { title: 'VerificationError' },
);
export type VerificationError = Static<typeof VerificationError>;

export const Verification = Type.Object(
  {
    id: ResourceId('Verification'),
    customerId: ResourceId('Customer'),
    verificationStatus: StringEnum(VERIFICATION_STATUSES),
    errors: Type.Array(VerificationError),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  },
  { title: 'Verification' },
);
export type Verification = Static<typeof Verification>;

export const VerificationCreateRequest = Type.Object({ customerId: ResourceId('Customer') }, { additionalProperties: false, title: 'VerificationCreateRequest' });
export const VerificationParams = Type.Object({ verificationId: IdParam('Verification', 'REFERENCE_NOT_FOUND') }, { additionalProperties: false });
export const VerificationListQuery = Type.Object(
  { customerId: Type.Optional(ResourceId('Customer')), verificationStatus: Type.Optional(StringEnum(VERIFICATION_STATUSES)), ...PaginationQuery },
  { additionalProperties: false },
);
export type VerificationListQuery = Static<typeof VerificationListQuery>;
export const VerificationListResponse = ListResponse(Verification, 'VerificationListResponse');

/** A person's verdict on a PENDING_MANUAL_REVIEW verification (sandbox: POST /sandbox/verifications/{id}/manual-review). */
export const ManualReviewDecision = Type.Object(
  {
    verificationStatus: StringEnum(['APPROVED', 'REJECTED'] as const, { description: 'The reviewer’s verdict.' }),
    reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Why, for a rejection: the reason of its APPLICANT_REJECTED entry.' })),
  },
  { additionalProperties: false, title: 'ManualReviewDecision' },
);
export type ManualReviewDecision = Static<typeof ManualReviewDecision>;

/** Webhooks about a verification's status; `data` is the verification. */
export const VERIFICATION_EVENTS: EventGroup = {
  name: 'verification-status',
  summary: 'Verification status',
  description: 'A KYC/KYB verification changed status. `data` is the whole verification, with its `errors` when there are any.',
  payload: Verification,
  types: {
    'VERIFICATION.IN_PROGRESS': 'A review started (POST /verifications with everything needed).',
    'VERIFICATION.RESOLVE_ERRORS': 'Something is missing or was rejected: `errors` has one entry per problem.',
    'VERIFICATION.PENDING_MANUAL_REVIEW': 'The review needs a person.',
    'VERIFICATION.APPROVED': 'The customer passed.',
    'VERIFICATION.REJECTED': 'The customer did not pass.',
  },
};

/** Who runs the hosted flow. Upstream names its vendor (SUMSUB); Corridor's own page is CORRIDOR. */
export const KYC_PROVIDERS = ['CORRIDOR'] as const;

export const KycLinkCreateRequest = Type.Object(
  {
    redirectUri: Type.Optional(
      Type.String({
        format: 'uri',
        pattern: '^https?://',
        maxLength: 2048,
        description: 'Where the customer is sent after submitting. `https://` (sandbox platforms may use `http://` for local development).',
      }),
    ),
  },
  { additionalProperties: false, title: 'KycLinkCreateRequest' },
);
export type KycLinkCreateRequest = Static<typeof KycLinkCreateRequest>;

export const KycLinkResponse = Type.Object(
  {
    kycUrl: Type.String({ format: 'uri', description: 'The hosted verification page. Single use (consumed when the customer submits); expires at `expiresAt`.' }),
    expiresAt: DateTime(),
    provider: StringEnum(KYC_PROVIDERS, { description: 'Corridor serves the page itself; there is no vendor SDK, so no `token` is returned.' }),
    token: Type.Optional(Type.String({ description: 'A vendor SDK token; never returned by Corridor (no vendor SDK to embed).' })),
  },
  { title: 'KycLinkResponse' },
);
export type KycLinkResponse = Static<typeof KycLinkResponse>;

/** GET /customers/kyc-link: the customer named by the platform's own id, as the upstream's published SDK asks. */
export const KycLinkByPlatformCustomerIdQuery = Type.Object(
  {
    platformCustomerId: Type.String({ minLength: 1, maxLength: 255, description: "The platform's own id of a live customer." }),
    redirectUri: KycLinkCreateRequest.properties.redirectUri,
  },
  { additionalProperties: false },
);
export type KycLinkByPlatformCustomerIdQuery = Static<typeof KycLinkByPlatformCustomerIdQuery>;

export const KycLinkForCustomerResponse = Type.Object(
  {
    customerId: ResourceId('Customer'),
    platformCustomerId: Type.String(),
    ...KycLinkResponse.properties,
  },
  { title: 'KycLinkForCustomerResponse' },
);
export type KycLinkForCustomerResponse = Static<typeof KycLinkForCustomerResponse>;

/** What the hosted page may fill in: the fields a review requires, each only while it is missing. */
export const KycPageFields = Type.Object(
  {
    fullName: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    birthDate: Type.Optional(DateOnly()),
    nationality: Type.Optional(Country()),
    address: Type.Optional(Address),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type KycPageFields = Static<typeof KycPageFields>;
