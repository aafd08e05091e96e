import { formatId } from '../../platform/ids.js';
import type { OwnerRow } from '../beneficial-owners/index.js';
import type { CustomerForReview, ReviewStatus } from '../customers/index.js';
import { type Document, DOCUMENT_CATEGORIES, type DocumentCategory, type DocumentType, TWO_SIDED_TYPES } from '../documents/index.js';
import type { DocumentReviewCode, VerificationError, VerificationErrorType } from './schemas.js';

/**
 * The written requirements of a review (README.md lists them). Pure functions over what the
 * service loaded, so every rule is visible in one place.
 */
export interface ReviewInput {
  customer: CustomerForReview;
  owners: OwnerRow[];
  documents: Document[];
  sandbox: boolean;
}

const MISSING_DOCUMENT_TYPE: Record<DocumentCategory, VerificationErrorType> = {
  IDENTITY: 'MISSING_IDENTITY_DOCUMENT',
  LEGAL_PRESENCE: 'MISSING_LEGAL_PRESENCE_DOCUMENT',
  CONTROL_STRUCTURE: 'MISSING_CONTROL_STRUCTURE_DOCUMENT',
  OWNERSHIP_STRUCTURE: 'MISSING_OWNERSHIP_STRUCTURE_DOCUMENT',
  PROOF_OF_ADDRESS: 'MISSING_PROOF_OF_ADDRESS_DOCUMENT',
};

const CATEGORY_WORDS: Record<DocumentCategory, string> = {
  IDENTITY: 'an identity document',
  LEGAL_PRESENCE: 'a document proving legal presence',
  CONTROL_STRUCTURE: 'a document showing the control structure',
  OWNERSHIP_STRUCTURE: 'a document showing the ownership structure',
  PROOF_OF_ADDRESS: 'a proof of address',
};

/** Roles that make an owner a person controlling the business. */
const CONTROL_ROLES = new Set(['CONTROL_PERSON', 'DIRECTOR', 'COMPANY_OFFICER', 'GENERAL_PARTNER', 'TRUSTEE']);

const REQUIRED_INDIVIDUAL_FIELDS = ['fullName', 'birthDate', 'nationality', 'address'] as const;
const REQUIRED_BUSINESS_CATEGORIES: DocumentCategory[] = ['LEGAL_PRESENCE', 'CONTROL_STRUCTURE', 'OWNERSHIP_STRUCTURE', 'PROOF_OF_ADDRESS'];

/** Supporting types a business may file beside the required categories. */
const BUSINESS_SUPPORTING: ReadonlySet<string> = new Set([
  'GOOD_STANDING_CERTIFICATE', 'INCUMBENCY_CERTIFICATE', 'INFORMATION_STATEMENT', 'BUSINESS_LICENSE', 'POWER_OF_ATTORNEY', 'PROOF_OF_ADDRESS',
]);
const PERSON_SUPPORTING: ReadonlySet<string> = new Set(['SELFIE', 'PROOF_OF_ADDRESS']);

const REVIEW_TYPE: Record<DocumentReviewCode, VerificationErrorType> = {
  LOW_QUALITY: 'POOR_QUALITY_DOCUMENT',
  DATA_MISMATCH: 'INVALID_DOCUMENT',
  EXPIRED: 'EXPIRED_DOCUMENT',
  SUSPECTED_FRAUD: 'SUSPECTED_FRAUD_DOCUMENT',
  UNSUITABLE_DOCUMENT: 'WRONG_DOCUMENT_TYPE',
  INCOMPLETE: 'INCOMPLETE_DOCUMENT',
};

/** Sandbox: a document number containing one of these forces that review verdict. */
export const SANDBOX_DOCUMENT_TRIGGERS: Array<[marker: string, code: DocumentReviewCode]> = [
  ['SANDBOX_FRAUD', 'SUSPECTED_FRAUD'],
  ['SANDBOX_EXPIRED', 'EXPIRED'],
  ['SANDBOX_LOW_QUALITY', 'LOW_QUALITY'],
];

/** Sandbox: a platformCustomerId containing one of these forces the review outcome. */
export const SANDBOX_OUTCOME_TRIGGERS: Array<[marker: string, outcome: 'REJECTED' | 'PENDING_MANUAL_REVIEW']> = [
  ['SANDBOX_REJECT', 'REJECTED'],
  ['SANDBOX_MANUAL_REVIEW', 'PENDING_MANUAL_REVIEW'],
];

function inCategory(type: string, category: DocumentCategory): boolean {
  return (DOCUMENT_CATEGORIES[category] as readonly string[]).includes(type);
}

function missingDocument(resourceId: string, category: DocumentCategory, whose: string): VerificationError {
  return {
    resourceId,
    type: MISSING_DOCUMENT_TYPE[category],
    acceptedDocumentTypes: [...DOCUMENT_CATEGORIES[category]] as DocumentType[],
    reason: `Upload ${CATEGORY_WORDS[category]} for ${whose}.`,
  };
}

function documentsOf(input: ReviewInput, holderId: string): Document[] {
  return input.documents.filter((d) => d.documentHolder === holderId);
}

/**
 * What must be on file before a review can start. One entry per problem: a missing field
 * names it, a missing document lists the types that would satisfy it.
 */
export function missingRequirements(input: ReviewInput): VerificationError[] {
  const { customer } = input;
  const problems: VerificationError[] = [];
  const has = (holderId: string, category: DocumentCategory) => documentsOf(input, holderId).some((d) => inCategory(d.documentType, category));
  if (customer.type === 'INDIVIDUAL') {
    for (const field of REQUIRED_INDIVIDUAL_FIELDS) {
      if (customer.profile[field] === undefined) {
        problems.push({ resourceId: customer.id, type: 'MISSING_FIELD', field: `customer.${field}`, reason: `The customer's ${field} is required.` });
      }
    }
    if (!has(customer.id, 'IDENTITY')) problems.push(missingDocument(customer.id, 'IDENTITY', 'the customer'));
    return problems;
  }
  if (customer.profile.address === undefined) {
    problems.push({ resourceId: customer.id, type: 'MISSING_FIELD', field: 'customer.address', reason: "The business's address is required." });
  }
  for (const category of REQUIRED_BUSINESS_CATEGORIES) {
    if (!has(customer.id, category)) problems.push(missingDocument(customer.id, category, 'the business'));
  }
  if (input.owners.length === 0) {
    problems.push({ resourceId: customer.id, type: 'MISSING_BENEFICIAL_OWNER', reason: 'Add the beneficial owners of the business.' });
  } else if (!input.owners.some((o) => o.roles.some((r) => CONTROL_ROLES.has(r)))) {
    problems.push({
      resourceId: customer.id,
      type: 'MISSING_CONTROL_PERSON',
      reason: 'At least one beneficial owner must control the business (CONTROL_PERSON, DIRECTOR, COMPANY_OFFICER, GENERAL_PARTNER or TRUSTEE).',
    });
  }
  for (const owner of input.owners) {
    const ownerId = formatId('BeneficialOwner', owner.id);
    if (!has(ownerId, 'IDENTITY')) {
      problems.push(missingDocument(ownerId, 'IDENTITY', `${owner.personal_info.firstName} ${owner.personal_info.lastName}`));
    }
  }
  return problems;
}

interface HolderFacts {
  kind: 'person' | 'business';
  nationality?: string;
  addressCountry?: string;
  businessCountry?: string;
  registrationNumber?: string;
}

function holderFacts(input: ReviewInput): Map<string, HolderFacts> {
  const facts = new Map<string, HolderFacts>();
  const { customer } = input;
  const profile = customer.profile;
  if (customer.type === 'INDIVIDUAL') {
    facts.set(customer.id, { kind: 'person', nationality: profile.nationality as string | undefined, addressCountry: profile.address?.country });
  } else {
    facts.set(customer.id, {
      kind: 'business',
      addressCountry: profile.address?.country,
      businessCountry: profile.businessInfo?.country,
      registrationNumber: profile.businessInfo?.registrationNumber,
    });
  }
  for (const owner of input.owners) {
    facts.set(formatId('BeneficialOwner', owner.id), {
      kind: 'person',
      nationality: owner.personal_info.nationality,
      addressCountry: owner.personal_info.address.country,
    });
  }
  return facts;
}

function acceptedFor(kind: HolderFacts['kind']): DocumentType[] {
  const categories: DocumentCategory[] = kind === 'person' ? ['IDENTITY', 'PROOF_OF_ADDRESS'] : [...REQUIRED_BUSINESS_CATEGORIES];
  const supporting = kind === 'person' ? PERSON_SUPPORTING : BUSINESS_SUPPORTING;
  return [...new Set([...categories.flatMap((c) => DOCUMENT_CATEGORIES[c]), ...supporting])] as DocumentType[];
}

const normalise = (value: string) => value.replace(/[\s-]/g, '').toUpperCase();

/**
 * The review of each document on file: one entry per problem found, carrying the spec §7.1
 * document-review code and the document id.
 */
export function reviewDocuments(input: ReviewInput): VerificationError[] {
  const facts = holderFacts(input);
  const problems: VerificationError[] = [];
  const reject = (doc: Document, code: DocumentReviewCode, reason: string, extra: Partial<VerificationError> = {}) =>
    problems.push({ resourceId: doc.id, type: REVIEW_TYPE[code], code, reason, ...extra });
  for (const doc of input.documents) {
    const holder = facts.get(doc.documentHolder);
    if (!holder) continue;
    if (input.sandbox && doc.documentNumber) {
      const trigger = SANDBOX_DOCUMENT_TRIGGERS.find(([marker]) => doc.documentNumber!.toUpperCase().includes(marker));
      if (trigger) {
        reject(doc, trigger[1], `Sandbox trigger ${trigger[0]} in the document number.`);
        continue;
      }
    }
    const accepted = acceptedFor(holder.kind);
    if (!accepted.includes(doc.documentType)) {
      reject(doc, 'UNSUITABLE_DOCUMENT', `A ${doc.documentType} is not accepted for this ${holder.kind === 'person' ? 'person' : 'business'}.`, {
        acceptedDocumentTypes: accepted,
      });
      continue;
    }
    if (TWO_SIDED_TYPES.has(doc.documentType)) {
      const sides = new Set(documentsOf(input, doc.documentHolder).filter((d) => d.documentType === doc.documentType).map((d) => d.side));
      if (!doc.side) reject(doc, 'INCOMPLETE', `A ${doc.documentType} has two sides; upload each with its side (FRONT, BACK).`, { field: 'side' });
      else if (!sides.has(doc.side === 'FRONT' ? 'BACK' : 'FRONT')) {
        reject(doc, 'INCOMPLETE', `The ${doc.side === 'FRONT' ? 'BACK' : 'FRONT'} of this ${doc.documentType} is missing.`, { field: 'side' });
      }
    }
    if ((doc.documentType === 'PASSPORT' || doc.documentType === 'NATIONAL_ID') && holder.nationality && doc.country !== holder.nationality) {
      reject(doc, 'DATA_MISMATCH', `The document was issued by ${doc.country}, but the nationality on file is ${holder.nationality}.`, { field: 'country' });
    }
    if (inCategory(doc.documentType, 'PROOF_OF_ADDRESS') && holder.addressCountry && doc.country !== holder.addressCountry) {
      reject(doc, 'DATA_MISMATCH', `The document is from ${doc.country}, but the address on file is in ${holder.addressCountry}.`, { field: 'country' });
    }
    if (inCategory(doc.documentType, 'LEGAL_PRESENCE')) {
      if (holder.businessCountry && doc.country !== holder.businessCountry) {
        reject(doc, 'DATA_MISMATCH', `The document is from ${doc.country}, but the business is incorporated in ${holder.businessCountry}.`, { field: 'country' });
      }
      if (doc.documentNumber && holder.registrationNumber && normalise(doc.documentNumber) !== normalise(holder.registrationNumber)) {
        reject(doc, 'DATA_MISMATCH', 'The document number differs from the registration number on file.', { field: 'documentNumber' });
      }
    }
  }
  return problems;
}

/** Sandbox outcome forced by the customer's platformCustomerId, if any. */
export function sandboxOutcome(input: ReviewInput): 'REJECTED' | 'PENDING_MANUAL_REVIEW' | undefined {
  if (!input.sandbox) return undefined;
  const id = input.customer.platformCustomerId.toUpperCase();
  return SANDBOX_OUTCOME_TRIGGERS.find(([marker]) => id.includes(marker))?.[1];
}

/**
 * Sandbox: upstream's test values, the last three characters of an individual's fullName or a
 * business's registrationNumber. REJECTED settles the review before any check; the others are
 * what a review with everything on file concludes.
 */
export type SuffixOutcome = 'REJECTED' | 'PENDING_MANUAL_REVIEW' | 'LOW_QUALITY';

const INDIVIDUAL_SUFFIX_OUTCOMES: ReadonlyMap<string, SuffixOutcome> = new Map([
  ['001', 'PENDING_MANUAL_REVIEW'],
  ['002', 'REJECTED'],
  ['003', 'LOW_QUALITY'],
]);

/** Sandbox: a beneficial owner's status, by the last three characters of its lastName, when its business is rejected by suffix. */
const OWNER_SUFFIX_STATUSES: ReadonlyMap<string, ReviewStatus> = new Map([
  ['001', 'PENDING'],
  ['002', 'REJECTED'],
]);

/** The test value the customer carries, if a sandbox one. */
function suffixOf(input: ReviewInput): string | undefined {
  const { customer } = input;
  const value = customer.type === 'INDIVIDUAL' ? customer.profile.fullName : customer.profile.businessInfo?.registrationNumber;
  return input.sandbox && typeof value === 'string' ? value.slice(-3) : undefined;
}

export function sandboxSuffixOutcome(input: ReviewInput): SuffixOutcome | undefined {
  const suffix = suffixOf(input);
  if (suffix === undefined) return undefined;
  // Businesses ending in 001 or 003 are reviewed like any other (README.md says why).
  if (input.customer.type === 'BUSINESS') return suffix === '002' ? 'REJECTED' : undefined;
  return INDIVIDUAL_SUFFIX_OUTCOMES.get(suffix);
}

/** The entry of a review settled REJECTED by suffix. */
export function suffixRejection(input: ReviewInput): VerificationError {
  const field = input.customer.type === 'INDIVIDUAL' ? 'fullName' : 'registrationNumber';
  return { resourceId: input.customer.id, type: 'APPLICANT_REJECTED', reason: `Sandbox test value: the ${field} ends in 002.` };
}

/** The entry of a 003 individual's review: its identity document read as too poor to use. */
export function suffixLowQuality(input: ReviewInput): VerificationError {
  const identity = documentsOf(input, input.customer.id).find((d) => inCategory(d.documentType, 'IDENTITY'))!;
  return {
    resourceId: identity.id,
    type: REVIEW_TYPE.LOW_QUALITY,
    code: 'LOW_QUALITY',
    reason: 'Sandbox test value: the fullName ends in 003, so the identity document counts as too poor in quality.',
  };
}

/** An owner's status when its business is rejected by suffix: 001 PENDING, 002 REJECTED, otherwise APPROVED. */
export function sandboxOwnerStatus(owner: OwnerRow): ReviewStatus {
  return OWNER_SUFFIX_STATUSES.get(owner.personal_info.lastName.slice(-3)) ?? 'APPROVED';
}
