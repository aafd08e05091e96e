import { sql, type Insertable, type RawBuilder, type Selectable } from 'kysely';
import type { DbOrTx } from '../../platform/db/database.js';
import { withJsonColumns } from '../../platform/db/json.js';
import { platformRowCount } from '../../platform/db/row-counts.js';

interface SigningKeysTable {
  platform_id: string;
  id: string;
  generation: number;
  public_key: string;
  sealed_private_key: string;
  created_at: Date;
  activates_at: Date;
  retires_at: Date | null;
}

export type DeliveryKind = 'EVENT' | 'TEST' | 'APPROVAL';
export type DeliveryStatus = 'PENDING' | 'SUCCEEDED' | 'FAILED';
export type AttemptOutcome = 'SUCCEEDED' | 'FAILED' | 'REFUSED';

interface DeliveriesTable {
  platform_id: string;
  id: string;
  kind: DeliveryKind;
  event_type: string;
  resource_id: string | null;
  data: unknown;
  status: DeliveryStatus;
  attempt_count: number;
  next_attempt_at: Date | null;
  last_attempt_at: Date | null;
  last_response_status: number | null;
  last_latency_ms: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

interface AttemptsTable {
  platform_id: string;
  delivery_id: string;
  number: number;
  attempted_at: Date;
  url: string | null;
  outcome: AttemptOutcome;
  response_status: number | null;
  response_body: string | null;
  latency_ms: number;
  error: string | null;
}

export type ApprovalStatus = 'PENDING' | 'APPROVED' | 'REJECTED' | 'INFO_REQUIRED' | 'TIMED_OUT' | 'WEBHOOK_ERROR';

interface ApprovalsTable {
  platform_id: string;
  id: string;
  transaction_id: string;
  consumer: string;
  status: ApprovalStatus;
  requested_fields: unknown;
  outcome: unknown;
  decided_via: 'WEBHOOK' | 'API' | 'DEADLINE' | null;
  deadline: Date;
  created_at: Date;
  decided_at: Date | null;
}

declare module '../../platform/db/database.js' {
  interface Database {
    webhook_signing_keys: SigningKeysTable;
    webhook_deliveries: DeliveriesTable;
    webhook_attempts: AttemptsTable;
    webhook_approvals: ApprovalsTable;
  }
}

export type SigningKeyRow = Selectable<SigningKeysTable>;
export type DeliveryRow = Selectable<DeliveriesTable>;
export type AttemptRow = Selectable<AttemptsTable>;
export type ApprovalRow = Selectable<ApprovalsTable>;

// ---- signing keys

/**
 * How many of a platform's newest generations can be published at once. A rotation retires every
 * other key by the new key's activation, and is refused while a key is pending (unless it switches
 * at once, retiring them all now): so the published keys are the newest generations, at most two
 * (the signing key and the next one, during an overlap). The third is for a process whose clock
 * lags the rotating one's, which may still see the key retired by the previous rotation.
 */
export const PUBLISHABLE_GENERATIONS = 3;

/**
 * A platform's keys published at `now` (not retired, or retiring later), oldest generation first;
 * the newest key, never retired, is always among them. Only the newest PUBLISHABLE_GENERATIONS
 * rows are read, backwards along the (platform_id, generation) unique index: every rotation
 * leaves a retired row behind, and a platform that rotated thousands of times made every read of
 * its keys read them all.
 */
export async function listPublishedSigningKeys(db: DbOrTx, platformId: string, now: Date): Promise<SigningKeyRow[]> {
  const newest = db.selectFrom('webhook_signing_keys').selectAll().where('platform_id', '=', platformId).orderBy('generation', 'desc').limit(PUBLISHABLE_GENERATIONS);
  return db
    .selectFrom(newest.as('newest'))
    .selectAll()
    .where((eb) => eb.or([eb('retires_at', 'is', null), eb('retires_at', '>', now)]))
    .orderBy('generation')
    .execute();
}

/** Adds a key unless its generation exists (a concurrent rotation won): answers whether it was added. */
export async function insertSigningKey(db: DbOrTx, row: SigningKeyRow): Promise<boolean> {
  const result = await db.insertInto('webhook_signing_keys').values(row).onConflict((oc) => oc.columns(['platform_id', 'generation']).doNothing()).executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
}

export async function retireSigningKeys(db: DbOrTx, platformId: string, exceptId: string, at: Date): Promise<void> {
  await db
    .updateTable('webhook_signing_keys')
    .set({ retires_at: at })
    .where('platform_id', '=', platformId)
    .where('id', '<>', exceptId)
    .where((eb) => eb.or([eb('retires_at', 'is', null), eb('retires_at', '>', at)]))
    .execute();
}

// ---- deliveries

export async function insertDeliveries(db: DbOrTx, rows: Array<Insertable<DeliveriesTable>>): Promise<string[]> {
  if (rows.length === 0) return [];
  const inserted = await db
    .insertInto('webhook_deliveries')
    .values(rows.map((r) => withJsonColumns(r, ['data'] as const)))
    .onConflict((oc) => oc.columns(['platform_id', 'id']).doNothing())
    .returning('id')
    .execute();
  return inserted.map((r) => r.id);
}

export async function findDelivery(db: DbOrTx, platformId: string, id: string): Promise<DeliveryRow | undefined> {
  return db.selectFrom('webhook_deliveries').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

export interface AttemptRecord {
  attemptedAt: Date;
  url: string | null;
  outcome: AttemptOutcome;
  responseStatus: number | null;
  responseBody: string | null;
  latencyMs: number;
  error: string | null;
  /**
   * The delivery's status and next attempt after a failed attempt; `'UNCHANGED'` (a re-send)
   * leaves them as the row has them when the attempt is counted, which its job may have moved
   * while the re-send was waiting for its answer. A success always makes it SUCCEEDED, and
   * SUCCEEDED is never undone by a later failure.
   */
  schedule: { status: DeliveryStatus; nextAttemptAt: Date | null } | 'UNCHANGED';
}

/**
 * Counts an attempt on its delivery and logs it, in one statement (atomic without a
 * transaction around it, and one round trip on the delivery path); answers the delivery as it
 * now is, `attempt_count` being the attempt's number. `alsoRun`: a data-modifying statement that
 * goes in the same one (the delivery job's completion, JobCompletion in platform/jobs/queue.ts).
 */
export async function recordAttempt(db: DbOrTx, platformId: string, deliveryId: string, attempt: AttemptRecord, alsoRun?: RawBuilder<unknown>): Promise<DeliveryRow> {
  const delivered = attempt.outcome === 'SUCCEEDED';
  const unchanged = attempt.schedule === 'UNCHANGED';
  const schedule = attempt.schedule === 'UNCHANGED' ? { status: null, nextAttemptAt: null } : attempt.schedule;
  const updated = await sql<DeliveryRow>`
    with updated as (
      update webhook_deliveries set
        attempt_count = attempt_count + 1,
        status = case when status = 'SUCCEEDED' or ${delivered}::boolean then 'SUCCEEDED' when ${unchanged}::boolean then status else ${schedule.status}::text end,
        next_attempt_at = case when status = 'SUCCEEDED' or ${delivered}::boolean then null when ${unchanged}::boolean then next_attempt_at
          else ${schedule.nextAttemptAt}::timestamptz end,
        last_attempt_at = ${attempt.attemptedAt},
        last_response_status = ${attempt.responseStatus}::integer,
        last_latency_ms = ${attempt.latencyMs}::integer,
        last_error = ${attempt.error}::text,
        delivered_at = coalesce(delivered_at, ${delivered ? attempt.attemptedAt : null}::timestamptz),
        updated_at = ${attempt.attemptedAt}
      where platform_id = ${platformId} and id = ${deliveryId}
      returning *
    ), logged as (
      insert into webhook_attempts (platform_id, delivery_id, number, attempted_at, url, outcome, response_status, response_body, latency_ms, error)
      select platform_id, id, attempt_count, ${attempt.attemptedAt}::timestamptz, ${attempt.url}::text, ${attempt.outcome}::text,
        ${attempt.responseStatus}::integer, ${attempt.responseBody}::text, ${attempt.latencyMs}::integer, ${attempt.error}::text
      from updated
    )${alsoRun ? sql`, also_run as (${alsoRun})` : sql``}
    select * from updated`.execute(db);
  return updated.rows[0]!;
}

/**
 * Fails a delivery that is still PENDING without logging an attempt: its job died of something
 * other than the endpoint's answer (which `recordAttempt` logs), or its only attempt could not
 * be logged. Answers whether it was PENDING.
 */
export async function abandonDelivery(db: DbOrTx, platformId: string, deliveryId: string, error: string, at: Date): Promise<boolean> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({ status: 'FAILED', last_error: error, next_attempt_at: null, updated_at: at })
    .where('platform_id', '=', platformId)
    .where('id', '=', deliveryId)
    .where('status', '=', 'PENDING')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export interface DeliveryFilter {
  eventType?: string;
  status?: DeliveryStatus;
  /** Keyset position: only ids strictly below this one. */
  before?: string;
  limit: number;
}

/**
 * Newest first, `limit + 1` rows so the caller learns whether another page exists, with the
 * total where it costs the same whatever the size of the log: the kept count (migration 0050) of
 * the unfiltered list. Counting what a type or a status matches would read every match.
 */
export async function listDeliveries(db: DbOrTx, platformId: string, filter: DeliveryFilter): Promise<{ rows: DeliveryRow[]; totalCount: number | undefined }> {
  let query = db.selectFrom('webhook_deliveries').selectAll().where('platform_id', '=', platformId);
  if (filter.eventType) query = query.where('event_type', '=', filter.eventType);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.before) query = query.where('id', '<', filter.before);
  const page = query.orderBy('id', 'desc').limit(filter.limit + 1).execute();
  const counted = filter.eventType || filter.status ? undefined : platformRowCount(db, 'webhook_deliveries', platformId, 'total');
  const [rows, totalCount] = await Promise.all([page, counted]);
  return { rows, totalCount };
}

/** A delivery's latest `limit` attempts, oldest first: re-sends can make its log as long as the platform likes. */
export async function listAttempts(db: DbOrTx, platformId: string, deliveryId: string, limit: number): Promise<AttemptRow[]> {
  const latest = await db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('delivery_id', '=', deliveryId)
    .orderBy('number', 'desc')
    .limit(limit)
    .execute();
  return latest.reverse();
}

// ---- approvals

export async function insertApproval(db: DbOrTx, row: ApprovalRow): Promise<void> {
  await db.insertInto('webhook_approvals').values(withJsonColumns(row, ['requested_fields', 'outcome'] as const)).execute();
}

export async function findApproval(db: DbOrTx, platformId: string, id: string): Promise<ApprovalRow | undefined> {
  return db.selectFrom('webhook_approvals').selectAll().where('platform_id', '=', platformId).where('id', '=', id).executeTakeFirst();
}

export async function findPendingApproval(db: DbOrTx, platformId: string, transactionId: string): Promise<ApprovalRow | undefined> {
  return db
    .selectFrom('webhook_approvals')
    .selectAll()
    .where('platform_id', '=', platformId)
    .where('transaction_id', '=', transactionId)
    // A literal, as webhook_approvals_pending's predicate: a named statement's generic plan can use that index only then.
    .where('status', '=', sql.lit('PENDING'))
    .forUpdate()
    .executeTakeFirst();
}

/** Moves a PENDING approval to its decision; answers the row only if this call decided it. */
export async function decideApproval(
  db: DbOrTx,
  platformId: string,
  id: string,
  decision: { status: Exclude<ApprovalStatus, 'PENDING'>; outcome: unknown; via: 'WEBHOOK' | 'API' | 'DEADLINE'; at: Date },
): Promise<ApprovalRow | undefined> {
  return db
    .updateTable('webhook_approvals')
    .set({ status: decision.status, outcome: JSON.stringify(decision.outcome), decided_via: decision.via, decided_at: decision.at })
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .where('status', '=', 'PENDING')
    .returningAll()
    .executeTakeFirst();
}

export async function shortenApprovalDeadline(db: DbOrTx, platformId: string, id: string, deadline: Date): Promise<void> {
  await db
    .updateTable('webhook_approvals')
    .set({ deadline })
    .where('platform_id', '=', platformId)
    .where('id', '=', id)
    .where('status', '=', 'PENDING')
    .where('deadline', '>', deadline)
    .execute();
}
