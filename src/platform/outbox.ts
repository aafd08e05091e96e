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
  const now = clock.now();
  const id = uuidv7(now.getTime());
  await trx
    .insertInto('events')
    .values({
      id,
      platform_id: event.platformId,
      type: event.type,
      resource_id: event.resourceId,
      data: JSON.stringify(event.data),
      created_at: now,
      published_at: null,
    })
    .execute();
  return id;
}
