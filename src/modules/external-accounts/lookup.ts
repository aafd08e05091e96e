import type { DbOrTx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { formatId, parseId } from '../../platform/ids.js';
import { senderReadiness } from '../customers/index.js';
import { findAccount } from './repo.js';
import type { BeneficiaryVerificationStatus, ExternalAccount, ExternalAccountStatus, OwnershipType } from './schemas.js';
import { primaryIdentifier } from './sandbox-suffix.js';
import { loadAccount, needsOwnershipProof, notFound, toExternalAccount, variantOf } from './service.js';
import type { DestinationNetwork, ExternalAccountType, PaymentRail } from './variants.js';

/** An external account as other modules see it: where it is paid, and what it may be used for. */
export interface ExternalAccountDestination {
  /** `ExternalAccount:<uuid>`. */
  id: string;
  uuid: string;
  platformUuid: string;
  /** The owning customer's uuid; null for the platform's own account. */
  customerUuid: string | null;
  accountType: ExternalAccountType;
  currency: string;
  kind: 'bank' | 'wallet' | 'lightning';
  /** Bank accounts: the rails it can be paid on (non-empty). Crypto destinations: []. */
  rails: PaymentRail[];
  /** Crypto destinations: the network it settles on. */
  network?: DestinationNetwork;
  status: ExternalAccountStatus;
  ownershipType?: OwnershipType;
  beneficiaryVerificationStatus: BeneficiaryVerificationStatus;
  /** A FIRST_PARTY self-custody wallet: must prove ownership to receive above the threshold. */
  requiresOwnershipProof: boolean;
  /** Rails money can be pulled from it on (debit); [] when it cannot be a source. */
  pullRails: PaymentRail[];
  /** The API view (for embedding in quotes and transactions). */
  account: ExternalAccount;
}

/**
 * Pulls (debits) need the holder's own authorisation: only a FIRST_PARTY bank account on a
 * debit rail (ACH debit for USD, SEPA Direct Debit for EUR) that is ACTIVE and whose holder
 * name did not fail the institution's check.
 */
const PULL_RAILS: Partial<Record<ExternalAccountType, PaymentRail>> = { USD_ACCOUNT: 'ACH', EUR_ACCOUNT: 'SEPA' };

/**
 * The Travel Rule threshold (EU 2023/1113 art. 14(5) and 16(2)): a transfer to a self-hosted
 * wallet of more than EUR 1,000 needs the wallet's ownership verified first. At or below it an
 * account in PENDING_OWNERSHIP_VERIFICATION may receive (spec §3).
 */
export const OWNERSHIP_THRESHOLD = { currency: 'EUR', amountMinor: 100_000n } as const;

export type ReceiveDecision = { allowed: true } | { allowed: false; code: 'EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED'; message: string };

/**
 * Whether `destination` may receive a transfer worth `valueEurMinor` (euro cents, converted by
 * the caller at its quote's rate). ACTIVE: yes. PENDING_OWNERSHIP_VERIFICATION: up to the
 * threshold. UNVERIFIED (its last proof failed) and every other status: no, until verified.
 */
export function receiveDecision(destination: Pick<ExternalAccountDestination, 'id' | 'status'>, valueEurMinor: bigint): ReceiveDecision {
  if (destination.status === 'ACTIVE') return { allowed: true };
  if (destination.status === 'PENDING_OWNERSHIP_VERIFICATION' && valueEurMinor <= OWNERSHIP_THRESHOLD.amountMinor) return { allowed: true };
  const why =
    destination.status === 'PENDING_OWNERSHIP_VERIFICATION'
      ? 'transfers above EUR 1,000 to a self-custody wallet need its ownership verified'
      : `the account is ${destination.status}`;
  return {
    allowed: false,
    code: 'EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED',
    message: `External account ${destination.id} cannot receive this transfer: ${why}. Verify its ownership (POST …/challenge, then …/verify).`,
  };
}

/** `receiveDecision`, thrown as the 400 EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED a quote answers. */
export function assertCanReceive(destination: Pick<ExternalAccountDestination, 'id' | 'status'>, valueEurMinor: bigint): void {
  const decision = receiveDecision(destination, valueEurMinor);
  if (!decision.allowed) throw new AppError(decision.code, decision.message, { details: { externalAccountId: destination.id, status: destination.status } });
}

/**
 * The live external account `externalAccountId` of the platform, as a destination or source.
 * `payer`: the customer paying to it, so its own or the platform's (a customer's beneficiaries
 * are its own, upstream's per-customer ownership and trust; null: the platform pays, to any);
 * without it, any owner. Anything else — unknown, deleted, another platform's or another owner's
 * — is 404 REFERENCE_NOT_FOUND, as is an id that is not `ExternalAccount:<uuid>`.
 */
export async function findExternalAccount(
  db: DbOrTx,
  platformUuid: string,
  externalAccountId: string,
  scope: { payer?: string | null } = {},
): Promise<ExternalAccountDestination> {
  if (!parseId('ExternalAccount', externalAccountId)) throw notFound(externalAccountId);
  const row = await loadAccount(db, platformUuid, { kind: 'any' }, externalAccountId);
  if (scope.payer != null && row.customer_id !== null && row.customer_id !== scope.payer) throw notFound(externalAccountId);
  const variant = variantOf(row);
  const rails = variant.kind === 'bank' ? ((row.account_info.paymentRails as PaymentRail[] | undefined) ?? []) : [];
  const pullRail = PULL_RAILS[row.account_type];
  const canPull = Boolean(pullRail) && row.status === 'ACTIVE' && row.ownership_type === 'FIRST_PARTY' && row.beneficiary_verification_status !== 'NOT_MATCHED';
  return {
    id: formatId('ExternalAccount', row.id),
    uuid: row.id,
    platformUuid: row.platform_id,
    customerUuid: row.customer_id,
    accountType: row.account_type,
    currency: row.currency,
    kind: variant.kind,
    rails,
    ...(variant.kind === 'bank' ? {} : { network: variant.network }),
    status: row.status,
    ...(row.ownership_type ? { ownershipType: row.ownership_type } : {}),
    beneficiaryVerificationStatus: row.beneficiary_verification_status,
    requiresOwnershipProof: needsOwnershipProof(row),
    pullRails: canPull ? [pullRail!] : [],
    account: toExternalAccount(row),
  };
}

/**
 * Whether the account's owner is a deleted customer (false for the platform's own accounts): a
 * deleted customer's accounts receive nothing and are pulled from by nothing. Read FOR SHARE in
 * the transaction that pays to or pulls from the account, so a concurrent DELETE of the owner
 * (which locks the customer FOR UPDATE) waits for that payment to commit, or is seen by it.
 * Outside a transaction (a quote's creation, a receiver lookup) a plain read: a lock would hold
 * nothing past it, yet cost PostgreSQL a transaction id and a flushed commit record.
 */
export async function accountOwnerDeleted(db: DbOrTx, platformUuid: string, account: Pick<ExternalAccountDestination, 'customerUuid'>): Promise<boolean> {
  if (account.customerUuid === null) return false;
  const owner = await senderReadiness(db, platformUuid, account.customerUuid, { forShare: db.isTransaction });
  return owner?.deleted === true;
}

/**
 * An external account may be paid (`destination`) or pulled from (`source`): not one of a deleted
 * customer (410), whatever the sender — the platform's own payments too. Its owner is read FOR
 * SHARE (accountOwnerDeleted): in the executing transaction this keeps a concurrent DELETE of the
 * owner from passing between the look and the payment.
 */
export async function checkExternalOwner(trx: DbOrTx, platformId: string, account: ExternalAccountDestination, side: 'source' | 'destination'): Promise<void> {
  if (!(await accountOwnerDeleted(trx, platformId, account))) return;
  const customerId = formatId('Customer', account.customerUuid!);
  const why = side === 'destination' ? 'it can no longer receive money' : 'money can no longer be pulled from it';
  throw new AppError('CUSTOMER_DELETED', `External account ${account.id} belongs to customer ${customerId}, which has been deleted: ${why}.`, {
    details: { customerId, accountId: account.id },
  });
}

/** Whether external account `accountUuid` (a deleted one too) belongs to a deleted customer, its owner read FOR SHARE (accountOwnerDeleted). */
export async function externalOwnerDeleted(db: DbOrTx, platformUuid: string, accountUuid: string): Promise<boolean> {
  const row = await findAccount(db, platformUuid, accountUuid, { kind: 'any' }, { includeDeleted: true });
  return row !== undefined && (await accountOwnerDeleted(db, platformUuid, { customerUuid: row.customer_id }));
}

/**
 * The primary identifier (account number, IBAN, CLABE, PIX key, wallet address…) of the platform's
 * external account `externalAccountId`; null when there is none, or no such account. Sandbox
 * rails read their test outcomes from it for payments already made to the account, so a deleted
 * account still answers: deleting it must not change how a payment in flight to it ends.
 */
export async function primaryIdentifierOf(db: DbOrTx, platformUuid: string, externalAccountId: string): Promise<string | null> {
  const uuid = parseId('ExternalAccount', externalAccountId);
  const row = uuid && (await findAccount(db, platformUuid, uuid, { kind: 'any' }, { includeDeleted: true }));
  return row ? (primaryIdentifier(row.account_info as Record<string, unknown>) ?? null) : null;
}
