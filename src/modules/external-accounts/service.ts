import type { Clock } from '../../platform/clock.js';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { recordEvent } from '../../platform/outbox.js';
import { pageRequest, toPage, type Page } from '../../platform/pagination.js';
import { customerTypeOf } from '../customers/index.js';
import { beneficiaryOf, type BeneficiaryVerification } from './beneficiary.js';
import { identityOf } from './identity.js';
import {
  clearDefaultUmaDeposit,
  deleteChallenge,
  findAccount,
  insertAccount,
  listAccounts,
  UNIQUE_IDENTITY,
  updateAccount,
  type ExternalAccountRow,
  type Owner,
} from './repo.js';
import type { CustomerListQuery, ExternalAccount, ExternalAccountCreate, ExternalAccountStatus, PlatformListQuery } from './schemas.js';
import type { CheckedAccount } from './validation.js';
import { VARIANT_BY_TYPE, type Variant } from './variants.js';

export const STATUS_UPDATED = 'EXTERNAL_ACCOUNT.STATUS_UPDATED';

export function notFound(id: string): AppError {
  return new AppError('REFERENCE_NOT_FOUND', `External account ${id} not found.`);
}

export function variantOf(row: Pick<ExternalAccountRow, 'account_type'>): Variant {
  return VARIANT_BY_TYPE.get(row.account_type)!;
}

/**
 * Whether an account must prove its owner controls it before it receives above the Travel Rule
 * threshold: a FIRST_PARTY self-custody crypto wallet (no `vaspName`). Bank accounts are
 * confirmed by their institution's name check instead; custodial wallets by their VASP; a
 * THIRD_PARTY wallet is someone else's, whose key the customer cannot be asked to prove.
 */
export function needsOwnershipProof(row: Pick<ExternalAccountRow, 'account_type' | 'ownership_type' | 'account_info'>): boolean {
  return variantOf(row).kind === 'wallet' && row.ownership_type === 'FIRST_PARTY' && row.account_info.vaspName === undefined;
}

export function toExternalAccount(row: ExternalAccountRow): ExternalAccount {
  return {
    id: formatId('ExternalAccount', row.id),
    ...(row.customer_id ? { customerId: formatId('Customer', row.customer_id) } : {}),
    status: row.status,
    ...(row.platform_account_id ? { platformAccountId: row.platform_account_id } : {}),
    ...(row.ownership_type ? { ownershipType: row.ownership_type } : {}),
    currency: row.currency,
    ...(row.customer_id ? { defaultUmaDepositAccount: row.default_uma_deposit_account } : {}),
    beneficiaryVerificationStatus: row.beneficiary_verification_status,
    ...(row.beneficiary_verified_name ? { beneficiaryVerifiedData: { fullName: row.beneficiary_verified_name } } : {}),
    accountInfo: row.account_info,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** Moves an account's status and records exactly one STATUS_UPDATED event, in the caller's transaction. */
export async function moveStatus(trx: Tx, clock: Clock, row: ExternalAccountRow, status: ExternalAccountStatus): Promise<ExternalAccountRow> {
  if (row.status === status) return row;
  const updated = await updateAccount(trx, row.platform_id, row.id, { status, updated_at: clock.now() });
  const account = toExternalAccount(updated);
  await recordEvent(trx, clock, { platformId: row.platform_id, type: STATUS_UPDATED, resourceId: account.id, data: account });
  return updated;
}

/** The beneficiary check to run for a new account: wallets and Lightning have no institution to ask. */
export function beneficiaryQueryOf(checked: CheckedAccount, currency: string) {
  if (checked.variant.kind !== 'bank') return undefined;
  const holder = beneficiaryOf(checked.info);
  if (!holder) return undefined;
  const { beneficiary: _beneficiary, paymentRails: _rails, ...account } = checked.info;
  return { accountType: checked.variant.accountType, currency, account, ...holder };
}

export interface CreateContext {
  platformId: string;
  /** Customer endpoints: the account may name a customer; platform endpoints never do. */
  path: 'customers' | 'platform';
}

export async function createExternalAccount(
  trx: Tx,
  clock: Clock,
  context: CreateContext,
  input: ExternalAccountCreate,
  checked: CheckedAccount,
  verification: BeneficiaryVerification,
): Promise<ExternalAccount> {
  const customerUuid = context.path === 'customers' && input.customerId ? (await customerTypeOf(trx, context.platformId, input.customerId, { forUpdate: true })).uuid : null;
  const now = clock.now();
  const ownership = { account_type: checked.variant.accountType, ownership_type: input.ownershipType ?? null, account_info: checked.info } as const;
  const makeDefault = Boolean(customerUuid && input.defaultUmaDepositAccount);
  if (makeDefault) await clearDefaultUmaDeposit(trx, context.platformId, customerUuid!, now);
  const row: ExternalAccountRow = {
    id: uuidv7(now.getTime()),
    platform_id: context.platformId,
    customer_id: customerUuid,
    account_type: checked.variant.accountType,
    currency: input.currency,
    status: needsOwnershipProof(ownership) ? 'PENDING_OWNERSHIP_VERIFICATION' : 'ACTIVE',
    ownership_type: input.ownershipType ?? null,
    platform_account_id: input.platformAccountId ?? null,
    default_uma_deposit_account: makeDefault,
    account_info: checked.info,
    identity_sha256: identityOf(checked),
    beneficiary_verification_status: verification.status,
    beneficiary_verified_name: verification.verifiedName ?? null,
    created_at: now,
    updated_at: now,
    deleted_at: null,
  };
  try {
    await insertAccount(trx, row);
  } catch (error) {
    if ((error as { constraint?: string; message?: string }).constraint === UNIQUE_IDENTITY || String((error as Error).message).includes(UNIQUE_IDENTITY)) {
      throw new AppError('CONFLICT', `This ${checked.variant.accountType} is already an external account of the same owner.`);
    }
    throw error;
  }
  return toExternalAccount(row);
}

/** The live account visible to `owner`; 404 when it does not exist, is deleted, or belongs to another platform or owner. */
export async function loadAccount(db: DbOrTx, platformId: string, owner: Owner, id: string, options: { forUpdate?: boolean } = {}): Promise<ExternalAccountRow> {
  const uuid = parseId('ExternalAccount', id);
  const row = uuid && (await findAccount(db, platformId, uuid, owner, options));
  if (!row) throw notFound(id);
  return row;
}

export async function getExternalAccount(db: DbOrTx, platformId: string, owner: Owner, id: string): Promise<ExternalAccount> {
  return toExternalAccount(await loadAccount(db, platformId, owner, id));
}

export async function listCustomerExternalAccounts(db: DbOrTx, platformId: string, query: CustomerListQuery): Promise<Page<ExternalAccount>> {
  const page = pageRequest(query);
  const customerId = query.customerId ? parseId('Customer', query.customerId) : undefined;
  const { rows, totalCount } = await listAccounts(
    db,
    platformId,
    'customers',
    { ...(customerId ? { customerId } : {}), ...(query.currency ? { currency: query.currency } : {}) },
    page,
  );
  return toPage(rows, page, toExternalAccount, totalCount);
}

export async function listPlatformExternalAccounts(db: DbOrTx, platformId: string, query: PlatformListQuery): Promise<Page<ExternalAccount>> {
  const page = pageRequest(query);
  const { rows, totalCount } = await listAccounts(db, platformId, 'platform', query.currency ? { currency: query.currency } : {}, page);
  return toPage(rows, page, toExternalAccount, totalCount);
}

/** Soft delete: payments that named the account still resolve it; the API no longer shows it. */
export async function deleteExternalAccount(trx: Tx, clock: Clock, platformId: string, owner: Owner, id: string): Promise<void> {
  const row = await loadAccount(trx, platformId, owner, id, { forUpdate: true });
  await deleteChallenge(trx, platformId, row.id);
  const now = clock.now();
  await updateAccount(trx, platformId, row.id, { deleted_at: now, updated_at: now, default_uma_deposit_account: false });
}
