import type { Clock } from './clock.js';
import type { DbOrTx } from './db/database.js';
import { uuidv7 } from './ids.js';

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
 * Records a domain event in the caller's transaction (transactional outbox): the event exists
 * if and only if the change that caused it was committed. Webhook delivery reads from here.
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
  await trx.insertInto('events').values(rows).execute();
  return rows.map((r) => r.id);
}
