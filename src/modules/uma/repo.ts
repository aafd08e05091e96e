import { sql, type Selectable } from 'kysely';
import type { DbOrTx, Tx } from '../../platform/db/database.js';
import { lockKeyForTransaction } from '../../platform/db/advisory-locks.js';
import { withJsonColumns } from '../../platform/db/json.js';
import { deleteOldest, pastMargin, RETENTION_MARGIN_MS } from '../../platform/retention.js';

interface VaspKeysTable {
  id: 'default';
  signing_cert_chain: string;
  signing_key_sealed: string;
  encryption_cert_chain: string;
  encryption_key_sealed: string;
  created_at: Date;
}

interface NoncesTable {
  vasp_domain: string;
  nonce: string;
  expires_at: Date;
}

interface LookupsTable {
  platform_id: string;
  id: string;
  customer_id: string;
  receiver_uma_address: string;
  counterparty_domain: string;
  response: unknown;
  created_at: Date;
  expires_at: Date;
}

interface IncomingPaymentsTable {
  platform_id: string;
  id: string;
  customer_id: string;
  receiver_uma_address: string;
  sender_identifier: string;
  sender_vasp_domain: string;
  currency_code: string;
  amount: bigint;
  amount_msats: bigint;
  fee_msats: bigint;
  payment_hash: string;
  invoice: string;
  payer_data: unknown;
  status: 'PENDING' | 'COMPLETED' | 'EXPIRED';
  created_at: Date;
  expires_at: Date;
  transaction_id: string | null;
  sender_confirmed_at: Date | null;
}

interface OutgoingPaymentsTable {
  platform_id: string;
  quote_id: string;
  transaction_id: string | null;
  receiver_uma_address: string;
  counterparty_domain: string;
  invoice: string;
  payment_hash: string;
  amount_msats: bigint;
  receiving_currency: string;
  received_amount: bigint;
  post_transaction_callback: string | null;
  preimage: string | null;
  created_at: Date;
}

declare module '../../platform/db/database.js' {
  interface Database {
    uma_outgoing_payments: OutgoingPaymentsTable;
    uma_vasp_keys: VaspKeysTable;
    uma_nonces: NoncesTable;
    uma_lookups: LookupsTable;
    uma_incoming_payments: IncomingPaymentsTable;
  }
}

export type VaspKeysRow = Selectable<VaspKeysTable>;
export type LookupRow = Selectable<LookupsTable>;
export type IncomingPaymentRow = Selectable<IncomingPaymentsTable>;
export type OutgoingPaymentRow = Selectable<OutgoingPaymentsTable>;

export async function findVaspKeys(db: DbOrTx): Promise<VaspKeysRow | undefined> {
  return db.selectFrom('uma_vasp_keys').selectAll().where('id', '=', 'default').executeTakeFirst();
}

/** First start: the first process to insert wins; the others read its keys. */
export async function insertVaspKeys(db: DbOrTx, row: VaspKeysRow): Promise<void> {
  await db.insertInto('uma_vasp_keys').values(row).onConflict((oc) => oc.column('id').doNothing()).execute();
}

/**
 * Nonces are kept per sending VASP under its domain lower-cased (DNS names are case-insensitive):
 * the same nonce again under `VASP.example` is the replay it is.
 */
export async function nonceSeen(db: DbOrTx, vaspDomain: string, nonce: string): Promise<boolean> {
  const row = await db.selectFrom('uma_nonces').select('nonce').where('vasp_domain', '=', vaspDomain.toLowerCase()).where('nonce', '=', nonce).executeTakeFirst();
  return row !== undefined;
}

/**
 * Records a nonce; false when it was already there (a replay, or the same message arriving
 * twice at once). Spent nonces are the retention purge's (purgeSpentNonces): deleted here, on
 * this process's clock without a margin, a nonce another process's clock still judged
 * replayable could go.
 */
export async function insertNonce(db: DbOrTx, vaspDomain: string, nonce: string, expiresAt: Date): Promise<boolean> {
  const inserted = await db
    .insertInto('uma_nonces')
    .values({ vasp_domain: vaspDomain.toLowerCase(), nonce, expires_at: expiresAt })
    .onConflict((oc) => oc.columns(['vasp_domain', 'nonce']).doNothing())
    .returning('nonce')
    .executeTakeFirst();
  return inserted !== undefined;
}

/**
 * Retention: deletes at most `limit` nonces that no message can be replayed with any more. A
 * message is refused by its timestamp once that is more than the window from now, before its
 * nonce is looked at; `expires_at` is the timestamp plus the window of the process that
 * recorded it, so a nonce goes only once `expires_at` is the current window (should it have
 * grown since) and RETENTION_MARGIN_MS behind `now`. Domain by domain along uma_nonces_expiry
 * (vasp_domain, expires_at): the recursive CTE skips from one domain to the next through the
 * index, a probe per domain, instead of reading the table.
 */
export async function purgeSpentNonces(db: DbOrTx, now: Date, windowSeconds: number, limit: number): Promise<number> {
  const before = new Date(now.getTime() - windowSeconds * 1000 - RETENTION_MARGIN_MS);
  const deleted = await sql`
    with recursive domains (vasp_domain) as (
      select min(vasp_domain) from uma_nonces
      union all
      select (select min(n.vasp_domain) from uma_nonces n where n.vasp_domain > d.vasp_domain) from domains d where d.vasp_domain is not null)
    delete from uma_nonces where ctid = any(array(
      select spent.ctid
        from domains d
        cross join lateral (select ctid from uma_nonces where vasp_domain = d.vasp_domain and expires_at < ${before} order by expires_at limit ${limit}) spent
       limit ${limit}))`.execute(db);
  return Number(deleted.numAffectedRows ?? 0n);
}

export async function insertLookup(db: DbOrTx, row: LookupRow): Promise<void> {
  await db
    .insertInto('uma_lookups')
    .values(withJsonColumns(row, ['response']))
    .execute();
}

export async function findLookup(db: DbOrTx, platformId: string, id: string): Promise<LookupRow | undefined> {
  return db.selectFrom('uma_lookups').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

/**
 * Retention: deletes at most `limit` lookups expired more than RETENTION_MARGIN_MS before `now`,
 * oldest first along uma_lookups_expiry (migration 0046). Only a quote's pay request reads a
 * lookup (findUmaLookup), and it refuses an expired one as it refuses an unknown one
 * (LOOKUP_REQUEST_NOT_FOUND); a quote keeps what it priced itself (uma_outgoing_payments) and
 * names its lookup only as text (quotes.lookup_id, no foreign key).
 */
export function purgeExpiredUmaLookups(db: DbOrTx, now: Date, limit: number): Promise<number> {
  return deleteOldest(db, { table: 'uma_lookups', key: sql`expires_at`, before: pastMargin(now) }, limit);
}

export async function insertIncomingPayment(db: DbOrTx, row: IncomingPaymentRow): Promise<void> {
  await db
    .insertInto('uma_incoming_payments')
    .values(withJsonColumns(row, ['payer_data']))
    .execute();
}

export async function findIncomingPayment(db: DbOrTx, platformId: string, id: string): Promise<IncomingPaymentRow | undefined> {
  return db.selectFrom('uma_incoming_payments').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

export async function findIncomingPaymentByHash(db: DbOrTx, paymentHash: string, options: { forUpdate?: boolean } = {}): Promise<IncomingPaymentRow | undefined> {
  let query = db.selectFrom('uma_incoming_payments').selectAll().where('payment_hash', '=', paymentHash);
  if (options.forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

/** By the payment id alone: the UTXO callback URL names it, whichever platform it is for. */
export async function findIncomingPaymentById(db: DbOrTx, id: string): Promise<IncomingPaymentRow | undefined> {
  return db.selectFrom('uma_incoming_payments').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function setIncomingPaymentStatus(db: DbOrTx, platformId: string, id: string, status: IncomingPaymentRow['status']): Promise<void> {
  await db.updateTable('uma_incoming_payments').set({ status }).where('platform_id', '=', platformId).where('id', '=', id).execute();
}

export async function markSenderConfirmed(db: DbOrTx, platformId: string, id: string, at: Date): Promise<void> {
  await db.updateTable('uma_incoming_payments').set({ sender_confirmed_at: at }).where('platform_id', '=', platformId).where('id', '=', id).where('sender_confirmed_at', 'is', null).execute();
}

/** The advisory-lock class of pay requests awaiting their invoice, by payment id (its own key space). */
const PAY_REQUEST_LOCK_CLASS = 0x756d62; // 'umb'

/**
 * Serialises, until the transaction ends, recording a pay request's invoice and giving the pay
 * request up (`abandonPayRequest`): whichever comes second sees what the first did.
 */
export async function lockPayRequest(trx: Tx, paymentId: string): Promise<void> {
  await lockKeyForTransaction(trx, PAY_REQUEST_LOCK_CLASS, paymentId);
}

/** The advisory-lock class of invoice payment hashes (its own key space). */
const INVOICE_HASH_LOCK_CLASS = 0x756d61; // 'uma'

/** Serialises, until the transaction ends, the quotes that record one invoice: the second waits for the first to commit or roll back. */
export async function lockInvoiceHash(trx: Tx, paymentHash: string): Promise<void> {
  await lockKeyForTransaction(trx, INVOICE_HASH_LOCK_CLASS, paymentHash);
}

/** Whether an outgoing payment already holds this invoice (index uma_outgoing_payments_payment_hash, migration 0042). */
export async function outgoingPaymentWithHash(db: DbOrTx, paymentHash: string): Promise<boolean> {
  const row = await db.selectFrom('uma_outgoing_payments').select('quote_id').where('payment_hash', '=', paymentHash).limit(1).executeTakeFirst();
  return row !== undefined;
}

export async function insertOutgoingPayment(db: DbOrTx, row: OutgoingPaymentRow): Promise<void> {
  await db.insertInto('uma_outgoing_payments').values(row).execute();
}

export async function findOutgoingPaymentByTransaction(db: DbOrTx, platformId: string, transactionId: string): Promise<OutgoingPaymentRow | undefined> {
  return db.selectFrom('uma_outgoing_payments').selectAll().where('platform_id', '=', platformId).where('transaction_id', '=', transactionId).executeTakeFirst();
}

export async function setOutgoingPreimage(db: DbOrTx, platformId: string, quoteId: string, preimage: string): Promise<void> {
  await db.updateTable('uma_outgoing_payments').set({ preimage }).where('platform_id', '=', platformId).where('quote_id', '=', quoteId).execute();
}
