import type { Clock } from '../../platform/clock.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { invalidInput } from '../../platform/errors.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { ownerHolder } from '../beneficial-owners/service.js';
import { customerTypeOf } from '../customers/service.js';
import { documentsOf, insertDocument, type DocumentRow } from './repo.js';

export const DOCUMENT_TYPES = [
  'PASSPORT', 'DRIVERS_LICENSE', 'NATIONAL_ID', 'PROOF_OF_ADDRESS', 'BANK_STATEMENT', 'TAX_RETURN', 'CERTIFICATE_OF_INCORPORATION',
  'ARTICLES_OF_INCORPORATION', 'ARTICLES_OF_ASSOCIATION', 'STATE_REGISTRY_EXCERPT', 'GOOD_STANDING_CERTIFICATE', 'INFORMATION_STATEMENT',
  'INCUMBENCY_CERTIFICATE', 'BUSINESS_LICENSE', 'SHAREHOLDER_REGISTER', 'POWER_OF_ATTORNEY', 'UTILITY_BILL', 'ELECTRICITY_BILL',
  'RENT_OR_LEASE_AGREEMENT', 'DIRECTOR_REGISTRY', 'TRUST_AGREEMENT', 'STATE_COMPANY_REGISTRY', 'PARTNERSHIP_CONTROL_AGREEMENT',
  'PARTNERSHIP_AGREEMENT', 'SELFIE', 'OTHER',
] as const;
export type DocumentType = (typeof DOCUMENT_TYPES)[number];

/** Spec §2.2: which document types prove which verification category. */
export const DOCUMENT_CATEGORIES = {
  IDENTITY: ['PASSPORT', 'DRIVERS_LICENSE', 'NATIONAL_ID'],
  LEGAL_PRESENCE: ['CERTIFICATE_OF_INCORPORATION', 'ARTICLES_OF_INCORPORATION', 'ARTICLES_OF_ASSOCIATION', 'STATE_REGISTRY_EXCERPT'],
  CONTROL_STRUCTURE: ['DIRECTOR_REGISTRY', 'TRUST_AGREEMENT', 'STATE_COMPANY_REGISTRY', 'PARTNERSHIP_CONTROL_AGREEMENT'],
  OWNERSHIP_STRUCTURE: ['SHAREHOLDER_REGISTER', 'TRUST_AGREEMENT', 'PARTNERSHIP_AGREEMENT'],
  PROOF_OF_ADDRESS: ['UTILITY_BILL', 'RENT_OR_LEASE_AGREEMENT', 'ELECTRICITY_BILL', 'BANK_STATEMENT', 'TAX_RETURN'],
} as const satisfies Record<string, readonly DocumentType[]>;
export type DocumentCategory = keyof typeof DOCUMENT_CATEGORIES;

/** Types that have a front and a back; both sides must be uploaded. */
export const TWO_SIDED_TYPES: ReadonlySet<string> = new Set(['DRIVERS_LICENSE', 'NATIONAL_ID']);

export interface Document {
  id: string;
  documentHolder: string;
  documentType: DocumentType;
  side?: 'FRONT' | 'BACK';
  country: string;
  documentNumber?: string;
  issuingAuthority?: string;
  fileName: string;
  createdAt: string;
  updatedAt?: string;
}

export type NewDocument = Omit<Document, 'id' | 'createdAt' | 'updatedAt'>;

export function toDocument(row: DocumentRow): Document {
  return {
    id: formatId('Document', row.id),
    documentHolder: formatId(row.holder_type, row.holder_id),
    documentType: row.document_type as DocumentType,
    ...(row.side ? { side: row.side } : {}),
    country: row.country,
    ...(row.document_number ? { documentNumber: row.document_number } : {}),
    ...(row.issuing_authority ? { issuingAuthority: row.issuing_authority } : {}),
    fileName: row.file_name,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/**
 * Records a document's metadata for a customer or beneficial owner of this platform
 * (USER_NOT_FOUND / REFERENCE_NOT_FOUND otherwise). Field formats are checked by the caller's schema.
 */
export async function addDocument(trx: Tx, clock: Clock, platformId: string, input: NewDocument): Promise<Document> {
  const customerUuid = parseId('Customer', input.documentHolder);
  const ownerUuid = parseId('BeneficialOwner', input.documentHolder);
  if (customerUuid) await customerTypeOf(trx, platformId, input.documentHolder);
  else if (ownerUuid) await ownerHolder(trx, platformId, ownerUuid);
  else throw invalidInput([{ field: 'documentHolder', message: 'must be a Customer or BeneficialOwner id' }]);
  const now = clock.now();
  const row: DocumentRow = {
    id: uuidv7(now.getTime()),
    platform_id: platformId,
    holder_type: customerUuid ? 'Customer' : 'BeneficialOwner',
    holder_id: (customerUuid ?? ownerUuid)!,
    document_type: input.documentType,
    side: input.side ?? null,
    country: input.country,
    document_number: input.documentNumber ?? null,
    issuing_authority: input.issuingAuthority ?? null,
    file_name: input.fileName,
    created_at: now,
    updated_at: now,
  };
  await insertDocument(trx, row);
  return toDocument(row);
}

/** Every document held by any of these customers or owners, oldest first. */
export async function documentsOfHolders(db: DbOrTx, platformId: string, holderUuids: string[]): Promise<Document[]> {
  return (await documentsOf(db, platformId, holderUuids)).map(toDocument);
}
