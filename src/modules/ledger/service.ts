import { createHash } from 'node:crypto';
import type { Clock } from '../../platform/clock.js';
import { isCurrency } from '../../platform/currencies.js';
import { canonicalJson, sha256Hex } from '../../platform/crypto/encoding.js';
import type { DbOrTx } from '../../platform/db/database.js';
import { violatedUniqueIndex } from '../../platform/db/unique-violation.js';
import { uuidv7 } from '../../platform/ids.js';
import { MAX_WIRE_AMOUNT } from '../../platform/money.js';
import {
  applyTransaction,
  insertInternalLedgerAccounts,
  selectBalances,
  selectEntries,
  selectResolution,
  selectReversal,
  selectTransaction,
  type ApplyCall,
  type BalanceSums,
  type LedgerAccountKind,
  type LedgerTransactionKind,
  type Line,
} from './repo.js';

/**
 * An account money moves from or to. Internal accounts are named by their id; every other
 * account is the calling platform's system account of that kind and currency, opened on first
 * use: PLATFORM_FEES (the platform's fee revenue), SERVICE_FEES (what Corridor charges the
 * platform), FX (the conversion position per currency), SETTLEMENT (the outside world, per rail
 * or network and currency) and SANDBOX_FUNDING (where sandbox money comes from).
 */
export type LedgerAccountRef =
  | { kind: 'INTERNAL_ACCOUNT'; id: string }
  | { kind: 'PLATFORM_FEES' | 'SERVICE_FEES' | 'FX' | 'SANDBOX_FUNDING'; currency: string }
  | { kind: 'SETTLEMENT'; rail: string; currency: string };

/** Formance-style posting: `amount` minor units of `currency` from one account to another. */
export interface Posting {
  from: LedgerAccountRef;
  to: LedgerAccountRef;
  amount: bigint;
  currency: string;
}

export type LedgerMetadata = Record<string, string | number | boolean | null>;

export interface TransferInput {
  /** The platform's uuid; every account of the transaction is the platform's. */
  platformId: string;
  /**
   * The business reference that makes the call idempotent, unique per platform (e.g.
   * `quote:<uuid>:hold`): applying it again returns the first transaction (`replayed: true`);
   * reusing it for different postings is refused (REFERENCE_CONFLICT).
   */
  reference: string;
  postings: Posting[];
  metadata?: LedgerMetadata;
}

export interface ResolveInput {
  platformId: string;
  /** The PENDING transaction (hold) to post or void. */
  holdId: string;
  reference: string;
  metadata?: LedgerMetadata;
}

export interface ReverseInput {
  platformId: string;
  /** A POSTED or POST_PENDING transaction to undo in full; not itself a reversal. */
  transactionId: string;
  reference: string;
  metadata?: LedgerMetadata;
}

/**
 * `available` is what can be spent: credits posted − debits posted − debits pending (held).
 * `total` also counts money in flight: credits posted + credits pending − debits posted; a
 * hold lowers `available` only, an incoming pending credit raises `total` only.
 */
export interface Balance {
  available: bigint;
  total: bigint;
}

export interface InternalAccountBalance extends Balance {
  accountId: string;
}

export interface LedgerTransaction {
  id: string;
  platformId: string;
  reference: string;
  kind: LedgerTransactionKind;
  /** True when the reference had already been applied: nothing changed this time. */
  replayed: boolean;
  /** When it was applied (the first time, on a replay); balances it changed show this time. */
  createdAt: Date;
  /** New balances of the internal accounts the transaction touched. */
  internalAccounts: InternalAccountBalance[];
  /**
   * When each of those accounts' balances last changed (by account id): this transaction's time,
   * or a later one's that committed first while this one waited for the account's row. Taken
   * under the row's lock, it never goes back, so it orders the account's balance changes.
   */
  balancesUpdatedAt: ReadonlyMap<string, Date>;
}

export type LedgerErrorReason =
  | 'INSUFFICIENT_FUNDS'
  | 'BALANCE_LIMIT'
  | 'REFERENCE_CONFLICT'
  | 'HOLD_NOT_PENDING'
  | 'NOT_REVERSIBLE'
  | 'TRANSACTION_NOT_FOUND'
  | 'UNKNOWN_ACCOUNT'
  | 'ACCOUNT_MISMATCH'
  | 'INVALID_CURRENCY'
  | 'INVALID_POSTING';

/**
 * What the ledger refuses. Callers map it to their own answer (a quote execution turns
 * INSUFFICIENT_FUNDS into its refusal); unmapped, it is a bug and surfaces as a 500. The
 * database transaction is aborted after any of these: use `inSavepoint` to carry on.
 */
export class LedgerError extends Error {
  constructor(
    readonly reason: LedgerErrorReason,
    message: string,
    /** The account (INSUFFICIENT_FUNDS, BALANCE_LIMIT, UNKNOWN_ACCOUNT, ACCOUNT_MISMATCH) or transaction concerned. */
    readonly subject?: string,
  ) {
    super(message);
    this.name = 'LedgerError';
  }
}

/** Largest amount of one posting: what the wire can carry as a JSON number. */
export const MAX_POSTING_AMOUNT = MAX_WIRE_AMOUNT;
const RAIL_RE = /^[A-Z][A-Z0-9_]{0,31}$/;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function checkUuid(value: string, what: string): string {
  if (!UUID_RE.test(value)) throw new LedgerError('INVALID_POSTING', `${what} must be a lowercase uuid`);
  return value;
}

function checkReference(reference: string): string {
  if (reference.length < 1 || reference.length > 255) throw new LedgerError('INVALID_POSTING', 'a reference is 1–255 characters');
  return reference;
}

/**
 * System accounts have ids derived from what they are, so a posting names them without a
 * lookup and two processes opening one at once agree on its id (an RFC 9562 v8 uuid).
 */
export function systemAccountId(platformId: string, ref: Exclude<LedgerAccountRef, { kind: 'INTERNAL_ACCOUNT' }>): string {
  const key = `corridor-ledger|${platformId}|${ref.kind}|${ref.currency}|${ref.kind === 'SETTLEMENT' ? ref.rail : ''}`;
  const known = SYSTEM_IDS.get(key);
  if (known) return known;
  const hash = createHash('sha256').update(key).digest();
  hash[6] = 0x80 | (hash[6]! & 0x0f);
  hash[8] = 0x80 | (hash[8]! & 0x3f);
  const hex = hash.subarray(0, 16).toString('hex');
  const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  // Every payment names the same few system accounts: remember their ids (a bounded memo, not state).
  if (SYSTEM_IDS.size >= 10_000) SYSTEM_IDS.clear();
  SYSTEM_IDS.set(key, id);
  return id;
}

const SYSTEM_IDS = new Map<string, string>();

interface ResolvedAccount {
  id: string;
  kind: LedgerAccountKind;
  rail: string | null;
}

function resolveAccount(platformId: string, ref: LedgerAccountRef, currency: string): ResolvedAccount {
  if (ref.kind === 'INTERNAL_ACCOUNT') return { id: checkUuid(ref.id, 'an internal account id'), kind: ref.kind, rail: null };
  if (ref.currency !== currency) {
    throw new LedgerError('ACCOUNT_MISMATCH', `a ${ref.kind} ${ref.currency} account cannot take a ${currency} posting`);
  }
  if (ref.kind === 'SETTLEMENT' && !RAIL_RE.test(ref.rail)) throw new LedgerError('INVALID_POSTING', `rail ${JSON.stringify(ref.rail)} is not a rail name`);
  return { id: systemAccountId(platformId, ref), kind: ref.kind, rail: ref.kind === 'SETTLEMENT' ? ref.rail : null };
}

/** Postings → one line per (account, side), sorted by account then side: the order balances are locked in. */
export function linesOf(platformId: string, postings: readonly Posting[]): Line[] {
  if (postings.length === 0) throw new LedgerError('INVALID_POSTING', 'a transaction has at least one posting');
  if (postings.length > 64) throw new LedgerError('INVALID_POSTING', 'a transaction has at most 64 postings');
  const lines = new Map<string, Line>();
  const add = (account: ResolvedAccount, side: 'D' | 'C', amount: bigint, currency: string) => {
    const key = `${account.id}|${side}`;
    const line = lines.get(key);
    if (line) {
      if (line.currency !== currency) throw new LedgerError('ACCOUNT_MISMATCH', `account ${account.id} was given postings in two currencies`, account.id);
      line.amount += amount;
    } else {
      lines.set(key, { accountId: account.id, side, amount, currency, kind: account.kind, rail: account.rail });
    }
  };
  for (const posting of postings) {
    if (!isCurrency(posting.currency)) throw new LedgerError('INVALID_CURRENCY', `unknown currency ${JSON.stringify(posting.currency)}`);
    if (typeof posting.amount !== 'bigint' || posting.amount <= 0n || posting.amount > MAX_POSTING_AMOUNT) {
      throw new LedgerError('INVALID_POSTING', `a posting amount is a bigint in 1..${MAX_POSTING_AMOUNT}`);
    }
    const from = resolveAccount(platformId, posting.from, posting.currency);
    const to = resolveAccount(platformId, posting.to, posting.currency);
    if (from.id === to.id) throw new LedgerError('INVALID_POSTING', 'a posting moves money between two different accounts', from.id);
    add(from, 'D', posting.amount, posting.currency);
    add(to, 'C', posting.amount, posting.currency);
  }
  return [...lines.values()].sort((a, b) => (a.accountId < b.accountId ? -1 : a.accountId > b.accountId ? 1 : a.side < b.side ? -1 : a.side > b.side ? 1 : 0));
}

/** Sums → the two balances an internal account shows. */
export function balanceOf(sums: BalanceSums): Balance {
  return {
    available: sums.creditsPosted - sums.debitsPosted - sums.debitsPending,
    total: sums.creditsPosted + sums.creditsPending - sums.debitsPosted,
  };
}

/** SQLSTATEs raised by ledger_apply() and the unique indexes, as ledger errors. */
function ledgerErrorOf(error: unknown, reversing: boolean): LedgerError | undefined {
  const e = error as { code?: unknown; detail?: unknown; message?: unknown } | null;
  const detail = typeof e?.detail === 'string' ? e.detail : undefined;
  const message = typeof e?.message === 'string' ? e.message : 'ledger error';
  switch (e?.code) {
    case 'CL001':
      return new LedgerError('REFERENCE_CONFLICT', message, detail);
    case 'CL002':
      return new LedgerError('INSUFFICIENT_FUNDS', message, detail);
    case 'CL003':
      return new LedgerError(reversing ? 'NOT_REVERSIBLE' : 'HOLD_NOT_PENDING', message, detail);
    case 'CL004':
      return new LedgerError('UNKNOWN_ACCOUNT', message, detail);
    case 'CL005':
      return new LedgerError('ACCOUNT_MISMATCH', message, detail);
    case 'CL006':
      return new LedgerError('TRANSACTION_NOT_FOUND', message, detail);
    case 'CL007':
      return new LedgerError('BALANCE_LIMIT', message, detail);
    case '22003':
      // A balance row's lifetime debits or credits past 2^63 − 1 (PostgreSQL's bigint): only the
      // sums of ledger_apply() can overflow, after ~2^10 postings of the largest amount through one row.
      return new LedgerError('BALANCE_LIMIT', 'a balance sum of the transaction would pass 2^63 - 1');
    case '23505': {
      const which = violatedUniqueIndex(error, ['ledger_transactions_resolution', 'ledger_transactions_reversal']);
      if (which === 'ledger_transactions_resolution') return new LedgerError('HOLD_NOT_PENDING', 'the hold was already posted or voided');
      if (which === 'ledger_transactions_reversal') return new LedgerError('NOT_REVERSIBLE', 'the transaction was already reversed');
      return undefined;
    }
    default:
      return undefined;
  }
}

export interface LedgerOptions {
  clock: Clock;
  /** Shard rows of each hot system account opened from now on (README: hot accounts). Default 64. */
  hotAccountShards?: number;
  /**
   * Told, inside the same database transaction, of every internal account whose balances a
   * transaction changed (not on replays), with when they changed (`balancesUpdatedAt`):
   * internal-accounts records INTERNAL_ACCOUNT.BALANCE_UPDATED.
   */
  onInternalBalancesChanged: (trx: DbOrTx, platformId: string, balances: Array<InternalAccountBalance & { updatedAt: Date }>) => Promise<void>;
}

/**
 * The only writer of balances. Every method runs inside the caller's database transaction, so
 * the ledger transaction commits or rolls back with the business change that causes it.
 */
export class Ledger {
  private readonly shards: number;

  constructor(private readonly options: LedgerOptions) {
    this.shards = options.hotAccountShards ?? 64;
    if (!Number.isInteger(this.shards) || this.shards < 1 || this.shards > 256) throw new Error('hotAccountShards must be 1–256');
  }

  /** Moves money at once (a POSTED transaction). */
  async transfer(trx: DbOrTx, input: TransferInput): Promise<LedgerTransaction> {
    return this.apply(trx, input.platformId, input.reference, 'POSTED', { lines: linesOf(input.platformId, input.postings) }, input.metadata);
  }

  /**
   * Holds money in flight (a PENDING transaction): debits lower `available` at once, credits
   * raise `total` only; nothing is posted until `postHold`, and `voidHold` gives it all back.
   */
  async hold(trx: DbOrTx, input: TransferInput): Promise<LedgerTransaction> {
    return this.apply(trx, input.platformId, input.reference, 'PENDING', { lines: linesOf(input.platformId, input.postings) }, input.metadata);
  }

  /** Posts a hold in full (a POST_PENDING transaction). A hold is posted or voided once. */
  async postHold(trx: DbOrTx, input: ResolveInput): Promise<LedgerTransaction> {
    return this.apply(trx, input.platformId, input.reference, 'POST_PENDING', { target: checkUuid(input.holdId, 'holdId') }, input.metadata);
  }

  /** Releases a hold (a VOID_PENDING transaction). */
  async voidHold(trx: DbOrTx, input: ResolveInput): Promise<LedgerTransaction> {
    return this.apply(trx, input.platformId, input.reference, 'VOID_PENDING', { target: checkUuid(input.holdId, 'holdId') }, input.metadata);
  }

  /**
   * Undoes a posted transaction in full with a new POSTED transaction of the opposite entries
   * (a refund); a transaction is reversed at most once, and a reversal is final (NOT_REVERSIBLE:
   * undoing a refund is a new transfer). It can fail INSUFFICIENT_FUNDS when the money it
   * brought in has been spent.
   */
  async reverse(trx: DbOrTx, input: ReverseInput): Promise<LedgerTransaction> {
    return this.apply(trx, input.platformId, input.reference, 'POSTED', { target: checkUuid(input.transactionId, 'transactionId'), reverse: true }, input.metadata);
  }

  private async apply(
    trx: DbOrTx,
    platformId: string,
    reference: string,
    kind: LedgerTransactionKind,
    what: { lines?: Line[]; target?: string; reverse?: boolean },
    metadata: LedgerMetadata | undefined,
  ): Promise<LedgerTransaction> {
    checkUuid(platformId, 'platformId');
    checkReference(reference);
    const now = this.options.clock.now();
    const lines = what.lines ?? [];
    // What was asked, so a reference reused for something else is told apart from a replay.
    const fingerprint = sha256Hex(
      `${kind}|${what.target ?? ''}|${what.reverse ? 'R' : ''}|${lines.map((l) => `${l.accountId}${l.side}${l.amount}${l.currency}`).join(',')}|${metadata ? canonicalJson(metadata) : ''}`,
    );
    const call: ApplyCall = {
      platformId,
      id: uuidv7(now.getTime()),
      reference,
      kind,
      target: what.target ?? null,
      reverse: what.reverse ?? false,
      fingerprint,
      metadata: metadata ?? null,
      now,
      shards: this.shards,
      lines,
    };
    let result;
    try {
      result = await applyTransaction(trx, call);
    } catch (error) {
      throw ledgerErrorOf(error, call.reverse) ?? error;
    }
    const internalAccounts = [...result.internalAccounts].map(([accountId, sums]) => ({ accountId, ...balanceOf(sums) }));
    const balancesUpdatedAt = new Map([...result.internalAccounts].map(([accountId, sums]) => [accountId, sums.updatedAt]));
    if (!result.replayed && internalAccounts.length > 0) {
      await this.options.onInternalBalancesChanged(
        trx,
        platformId,
        internalAccounts.map((b) => ({ ...b, updatedAt: balancesUpdatedAt.get(b.accountId)! })),
      );
    }
    return { id: result.transactionId, platformId, reference, kind, replayed: result.replayed, createdAt: result.createdAt, internalAccounts, balancesUpdatedAt };
  }
}

/**
 * Opens the ledger account behind an internal account (same id, one currency), in the
 * transaction that creates the internal account. It may never go below zero. Safe to repeat.
 */
export async function openInternalLedgerAccount(trx: DbOrTx, account: { id: string; platformId: string; currency: string; now: Date }): Promise<void> {
  await openInternalLedgerAccounts(trx, [account]);
}

/** As openInternalLedgerAccount, for many accounts with a fixed number of statements. */
export async function openInternalLedgerAccounts(trx: DbOrTx, accounts: ReadonlyArray<{ id: string; platformId: string; currency: string; now: Date }>): Promise<void> {
  for (const account of accounts) {
    if (!isCurrency(account.currency)) throw new LedgerError('INVALID_CURRENCY', `unknown currency ${JSON.stringify(account.currency)}`);
  }
  await insertInternalLedgerAccounts(
    trx,
    accounts.map((account) => ({ ...account, noOverdraft: true })),
  );
}

/** Balances of internal accounts, by id (absent: not this platform's, or no ledger account). */
export async function internalAccountBalances(
  db: DbOrTx,
  platformId: string,
  accountIds: readonly string[],
): Promise<Map<string, Balance & { updatedAt: Date }>> {
  const rows = await selectBalances(db, platformId, accountIds);
  return new Map(
    rows.map((r) => [
      r.account_id,
      {
        ...balanceOf({ debitsPosted: BigInt(r.debits_posted), creditsPosted: BigInt(r.credits_posted), debitsPending: BigInt(r.debits_pending), creditsPending: BigInt(r.credits_pending) }),
        updatedAt: new Date(r.updated_at as Date),
      },
    ]),
  );
}

export interface AccountBalance extends Balance, BalanceSums {
  accountId: string;
}

/** Any account's sums and balances, all shards added up; a system account never used reads zero. */
export async function accountBalance(db: DbOrTx, platformId: string, ref: LedgerAccountRef): Promise<AccountBalance> {
  const accountId = ref.kind === 'INTERNAL_ACCOUNT' ? ref.id : systemAccountId(platformId, ref);
  const [row] = await selectBalances(db, platformId, [accountId]);
  const sums: BalanceSums = row
    ? { debitsPosted: BigInt(row.debits_posted), creditsPosted: BigInt(row.credits_posted), debitsPending: BigInt(row.debits_pending), creditsPending: BigInt(row.credits_pending) }
    : { debitsPosted: 0n, creditsPosted: 0n, debitsPending: 0n, creditsPending: 0n };
  return { accountId, ...sums, ...balanceOf(sums) };
}

export interface LedgerEntry {
  accountId: string;
  side: 'DEBIT' | 'CREDIT';
  amount: bigint;
  currency: string;
}

export interface LedgerTransactionView {
  id: string;
  reference: string;
  kind: LedgerTransactionKind;
  createdAt: Date;
  metadata: LedgerMetadata | null;
  /** POST_PENDING / VOID_PENDING: the hold resolved. */
  holdId?: string;
  /** A reversal: the transaction it undoes. */
  reversesId?: string;
  /** PENDING only: OPEN until a POST_PENDING (POSTED) or VOID_PENDING (VOIDED) resolves it. */
  holdStatus?: 'OPEN' | 'POSTED' | 'VOIDED';
  /** The transaction that resolved this hold, or reversed this transaction. */
  resolvedBy?: string;
  reversedBy?: string;
  entries: LedgerEntry[];
}

/** One ledger transaction of the platform, by id or by business reference. */
export async function findLedgerTransaction(
  db: DbOrTx,
  platformId: string,
  by: { id: string } | { reference: string },
): Promise<LedgerTransactionView | undefined> {
  if ('id' in by && !UUID_RE.test(by.id)) return undefined;
  const row = await selectTransaction(db, platformId, by);
  if (!row) return undefined;
  const [entries, resolution, reversal] = await Promise.all([
    selectEntries(db, row.id),
    row.kind === 'PENDING' ? selectResolution(db, row.id) : undefined,
    row.kind === 'POSTED' || row.kind === 'POST_PENDING' ? selectReversal(db, row.id) : undefined,
  ]);
  return {
    id: row.id,
    reference: row.reference,
    kind: row.kind,
    createdAt: row.created_at,
    metadata: (row.metadata as LedgerMetadata | null) ?? null,
    ...(row.pending_id ? { holdId: row.pending_id } : {}),
    ...(row.reverses_id ? { reversesId: row.reverses_id } : {}),
    ...(row.kind === 'PENDING' ? { holdStatus: resolution ? (resolution.kind === 'POST_PENDING' ? 'POSTED' : 'VOIDED') : 'OPEN' } : {}),
    ...(resolution ? { resolvedBy: resolution.id } : {}),
    ...(reversal ? { reversedBy: reversal.id } : {}),
    entries: entries.map((e) => ({ accountId: e.account_id, side: e.side === 'D' ? 'DEBIT' : 'CREDIT', amount: BigInt(e.amount), currency: e.currency })),
  };
}
