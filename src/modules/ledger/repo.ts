import { CompiledQuery } from 'kysely';
import type { DbOrTx } from '../../platform/db/database.js';

export type LedgerAccountKind = 'INTERNAL_ACCOUNT' | 'PLATFORM_FEES' | 'SERVICE_FEES' | 'FX' | 'SETTLEMENT' | 'SANDBOX_FUNDING';
export type LedgerTransactionKind = 'POSTED' | 'PENDING' | 'POST_PENDING' | 'VOID_PENDING';
export type Side = 'D' | 'C';

interface LedgerAccountsTable {
  id: string;
  platform_id: string;
  kind: LedgerAccountKind;
  currency: string;
  rail: string | null;
  shards: number;
  no_overdraft: boolean;
  created_at: Date;
}

interface LedgerBalancesTable {
  account_id: string;
  shard: number;
  platform_id: string;
  currency: string;
  shards: number;
  no_overdraft: boolean;
  debits_posted: bigint;
  credits_posted: bigint;
  debits_pending: bigint;
  credits_pending: bigint;
  updated_at: Date;
}

interface LedgerTransactionsTable {
  id: string;
  platform_id: string;
  reference: string;
  kind: LedgerTransactionKind;
  pending_id: string | null;
  reverses_id: string | null;
  fingerprint: string;
  metadata: unknown;
  created_at: Date;
}

interface LedgerEntriesTable {
  transaction_id: string;
  seq: number;
  platform_id: string;
  account_id: string;
  shard: number;
  currency: string;
  side: Side;
  amount: bigint;
}

declare module '../../platform/db/database.js' {
  interface Database {
    ledger_accounts: LedgerAccountsTable;
    ledger_balances: LedgerBalancesTable;
    ledger_transactions: LedgerTransactionsTable;
    ledger_entries: LedgerEntriesTable;
  }
}

/** Posted and pending sums of one account (all its shards). */
export interface BalanceSums {
  debitsPosted: bigint;
  creditsPosted: bigint;
  debitsPending: bigint;
  creditsPending: bigint;
}

/** One aggregated line of a transaction: what one account is debited or credited. */
export interface Line {
  accountId: string;
  side: Side;
  amount: bigint;
  currency: string;
  /** INTERNAL_ACCOUNT (one balance row) or the kind of a hot system account, opened on first use. */
  kind: LedgerAccountKind;
  rail: string | null;
}

export interface ApplyCall {
  platformId: string;
  id: string;
  reference: string;
  kind: LedgerTransactionKind;
  /** The hold a POST_PENDING / VOID_PENDING resolves, or the transaction a reversal undoes. */
  target: string | null;
  reverse: boolean;
  fingerprint: string;
  metadata: Record<string, unknown> | null;
  now: Date;
  /** Shard count of system accounts opened by this call. */
  shards: number;
  /** Sorted by account, then side (credits first); empty when derived from `target`. */
  lines: Line[];
}

export interface ApplyResult {
  transactionId: string;
  replayed: boolean;
  createdAt: Date;
  /** New sums of every internal account the transaction touched, and when its balances last changed (never back in time). */
  internalAccounts: Map<string, BalanceSums & { updatedAt: Date }>;
}

const SAFE_ELEMENT = /^[A-Za-z0-9_-]+$/;

/**
 * PostgreSQL array literals of the lines' fields. The elements are ids, codes and decimal amounts
 * the service has already validated; the pattern check keeps anything that would need quoting
 * out regardless.
 */
function lineArrays(lines: readonly Line[]): string[] {
  const fields: string[][] = [[], [], [], [], [], []];
  const add = (field: string[], v: string | null) => {
    if (v === null) field.push('NULL');
    else if (SAFE_ELEMENT.test(v)) field.push(v);
    else throw new Error(`unsafe ledger array element ${JSON.stringify(v)}`);
  };
  for (const l of lines) {
    add(fields[0]!, l.accountId);
    add(fields[1]!, l.side);
    add(fields[2]!, l.amount.toString());
    add(fields[3]!, l.currency);
    add(fields[4]!, l.kind);
    add(fields[5]!, l.rail);
  }
  return fields.map((f) => `{${f.join(',')}}`);
}

interface ApplyRow {
  transaction_id: string;
  replayed: boolean;
  created_at: Date | null;
  account_id: string | null;
  debits_posted: bigint | null;
  credits_posted: bigint | null;
  debits_pending: bigint | null;
  credits_pending: bigint | null;
  balance_updated_at: Date | null;
}

/** The one statement every ledger write runs: its text is fixed, so it is built once, not per call. */
const APPLY_SQL = `select * from ledger_apply($1::uuid, $2::uuid, $3, $4, $5::uuid, $6, $7, $8::jsonb, $9::timestamptz, $10::smallint,
  $11::uuid[], $12::text[], $13::bigint[], $14::text[], $15::text[], $16::text[])`;

/** One round trip: ledger_apply() (migrations 0010, 0023, 0041, 0053, 0055) writes the transaction, its entries and balances. */
export async function applyTransaction(db: DbOrTx, call: ApplyCall): Promise<ApplyResult> {
  const [accounts, sides, amounts, currencies, kinds, rails] = lineArrays(call.lines);
  const { rows } = await db.executeQuery<ApplyRow>(
    CompiledQuery.raw(APPLY_SQL, [
      call.platformId, call.id, call.reference, call.kind, call.target, call.reverse,
      call.fingerprint, call.metadata === null ? null : JSON.stringify(call.metadata), call.now, call.shards,
      accounts, sides, amounts, currencies, kinds, rails,
    ]),
  );
  const internalAccounts = new Map<string, BalanceSums & { updatedAt: Date }>();
  for (const row of rows) {
    if (row.account_id === null) continue;
    internalAccounts.set(row.account_id, {
      debitsPosted: row.debits_posted!,
      creditsPosted: row.credits_posted!,
      debitsPending: row.debits_pending!,
      creditsPending: row.credits_pending!,
      updatedAt: new Date(row.balance_updated_at!),
    });
  }
  const first = rows[0]!;
  return { transactionId: first.transaction_id, replayed: first.replayed, createdAt: new Date(first.created_at!), internalAccounts };
}

/** Opens the ledger account of an internal account (same id), unless it exists. */
/** Internal accounts' ledger accounts, any number with two statements (a bulk import approves many customers at once). */
export async function insertInternalLedgerAccounts(
  db: DbOrTx,
  accounts: ReadonlyArray<{ id: string; platformId: string; currency: string; noOverdraft: boolean; now: Date }>,
): Promise<void> {
  if (accounts.length === 0) return;
  await db
    .insertInto('ledger_accounts')
    .values(
      accounts.map((account) => ({
        id: account.id,
        platform_id: account.platformId,
        kind: 'INTERNAL_ACCOUNT' as const,
        currency: account.currency,
        rail: null,
        shards: 1,
        no_overdraft: account.noOverdraft,
        created_at: account.now,
      })),
    )
    .onConflict((oc) => oc.doNothing())
    .execute();
  await db
    .insertInto('ledger_balances')
    .values(
      accounts.map((account) => ({
        account_id: account.id,
        shard: 0,
        platform_id: account.platformId,
        currency: account.currency,
        shards: 1,
        no_overdraft: account.noOverdraft,
        debits_posted: 0n,
        credits_posted: 0n,
        debits_pending: 0n,
        credits_pending: 0n,
        updated_at: account.now,
      })),
    )
    .onConflict((oc) => oc.doNothing())
    .execute();
}

/** Sums over shards, per account, with the latest change; accounts of another platform are left out. */
export async function selectBalances(db: DbOrTx, platformId: string, accountIds: readonly string[]) {
  if (accountIds.length === 0) return [];
  return db
    .selectFrom('ledger_balances')
    .select((eb) => [
      'account_id',
      eb.fn.sum<bigint>('debits_posted').as('debits_posted'),
      eb.fn.sum<bigint>('credits_posted').as('credits_posted'),
      eb.fn.sum<bigint>('debits_pending').as('debits_pending'),
      eb.fn.sum<bigint>('credits_pending').as('credits_pending'),
      eb.fn.max('updated_at').as('updated_at'),
    ])
    .where('platform_id', '=', platformId)
    .where('account_id', 'in', accountIds)
    .groupBy('account_id')
    .execute();
}

export async function selectTransaction(db: DbOrTx, platformId: string, by: { id: string } | { reference: string }) {
  let query = db.selectFrom('ledger_transactions').selectAll().where('platform_id', '=', platformId);
  query = 'id' in by ? query.where('id', '=', by.id) : query.where('reference', '=', by.reference);
  return query.executeTakeFirst();
}

export async function selectEntries(db: DbOrTx, transactionId: string) {
  return db.selectFrom('ledger_entries').selectAll().where('transaction_id', '=', transactionId).orderBy('seq').execute();
}

/** The transaction that posted or voided a hold, if any. */
export async function selectResolution(db: DbOrTx, holdId: string) {
  return db.selectFrom('ledger_transactions').select(['id', 'kind', 'created_at']).where('pending_id', '=', holdId).executeTakeFirst();
}

/** The transaction that reversed this one, if any. */
export async function selectReversal(db: DbOrTx, transactionId: string) {
  return db.selectFrom('ledger_transactions').select(['id', 'created_at']).where('reverses_id', '=', transactionId).executeTakeFirst();
}
