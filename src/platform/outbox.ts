import type { TSchema } from 'typebox';
import type { Clock } from './clock.js';
import type { Db, DbOrTx, Tx } from './db/database.js';
import { deferInsert, withTx } from './db/tx.js';
import { uuidv7 } from './ids.js';
import { wakeWorkers } from './wake-ups.js';

interface EventsTable {
  id: string;
  platform_id: string;
  type: string;
  resource_id: string;
  data: unknown;
  created_at: Date;
  published_at: Date | null;
}

declare module './db/database.js' {
  interface Database {
    events: EventsTable;
  }
}

export interface DomainEvent {
  platformId: string;
  /** `OBJECT.EVENT`, e.g. `CUSTOMER.KYC_APPROVED`. */
  type: string;
  resourceId: string;
  data: unknown;
}

/**
 * Event types a module records and platforms receive as webhooks, with the one payload schema
 * they share (`data` of the envelope). A module declares its groups beside its schemas; the
 * wiring hands them all to the webhooks catalogue, which validates, documents and delivers them.
 */
export interface EventGroup {
  /** Key of the group in the OpenAPI document's `webhooks`, e.g. `customer-status`. */
  name: string;
  summary: string;
  /** When these events are sent and what the receiver should do; Markdown. */
  description: string;
  /** Schema of `data`; absent for events without data (TEST). */
  payload?: TSchema;
  /** Every type of the group with the change that emits it. */
  types: Record<string, string>;
}

/**
 * Records a domain event in the caller's transaction (transactional outbox): the event exists
 * if and only if the change that caused it was committed. Committing wakes the workers, whose
 * outbox relay hands the event on (webhook delivery).
 */
export async function recordEvent(trx: DbOrTx, clock: Clock, event: DomainEvent): Promise<string> {
  const [id] = await recordEvents(trx, clock, [event]);
  return id!;
}

/** Several events of one change in one statement (in order), e.g. one per account a payment moved. */
export async function recordEvents(trx: DbOrTx, clock: Clock, events: readonly DomainEvent[]): Promise<string[]> {
  if (events.length === 0) return [];
  const now = clock.now();
  const rows = events.map((event) => ({
    id: uuidv7(now.getTime()),
    platform_id: event.platformId,
    type: event.type,
    resource_id: event.resourceId,
    data: JSON.stringify(event.data),
    created_at: now,
    published_at: null,
  }));
  // Inside withTx the rows go in with the transaction's other deferred rows, just before COMMIT.
  if (!deferInsert(trx, 'events', rows)) await trx.insertInto('events').values(rows).execute();
  await wakeWorkers(trx, 'sources');
  return rows.map((r) => r.id);
}

export interface OutboxEvent {
  id: string;
  platformId: string;
  type: string;
  resourceId: string;
  data: unknown;
  createdAt: Date;
}

/**
 * A work source that hands committed, unpublished events to `publish` in batches, oldest
 * first, inside the transaction that marks them published: an event counts as published
 * exactly when what `publish` wrote commits, so none is lost or handed on twice. SKIP LOCKED
 * lets every process relay at once without two taking the same event.
 */
export function outboxRelay(db: Db, clock: Clock, publish: (trx: Tx, events: OutboxEvent[]) => Promise<void>, batchSize = 500) {
  return async (): Promise<number> => {
    let total = 0;
    // A look without a transaction first: the relay runs on every wake-up, mostly finding nothing,
    // and an empty look is then one statement instead of BEGIN, SELECT, COMMIT.
    const waiting = await db.selectFrom('events').select('id').where('published_at', 'is', null).limit(1).executeTakeFirst();
    if (!waiting) return 0;
    for (;;) {
      const relayed = await withTx(db, async (trx) => {
        // Taken and marked in one statement: the mark commits exactly with what `publish` writes.
        const rows = await trx
          .updateTable('events')
          .set({ published_at: clock.now() })
          .where('id', 'in', (eb) =>
            eb.selectFrom('events').select('id').where('published_at', 'is', null).orderBy('id').limit(batchSize).forUpdate().skipLocked(),
          )
          .returning(['id', 'platform_id', 'type', 'resource_id', 'data', 'created_at'])
          .execute();
        if (rows.length === 0) return 0;
        rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
        await publish(
          trx,
          rows.map((r) => ({ id: r.id, platformId: r.platform_id, type: r.type, resourceId: r.resource_id, data: r.data, createdAt: r.created_at })),
        );
        return rows.length;
      });
      total += relayed;
      if (relayed < batchSize) return total;
    }
  };
}
