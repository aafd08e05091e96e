import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { uuidv7 } from '../../src/platform/ids.js';
import { openTestDatabase } from '../helpers/context.js';

/**
 * The rules of transactions and quotes (migration 0059: one CHECK per table, calling
 * transaction_valid / quote_valid, in place of 14 and 10 constraints): each still refuses a row
 * that breaks it, on inserts and updates, and a rule on a null column still passes, as its own
 * constraint did.
 */
describe('transactions and quotes CHECK constraints', () => {
  let handle: DbHandle;
  let drop: () => Promise<void>;
  const platform = uuidv7();

  beforeAll(async () => {
    ({ handle, drop } = await openTestDatabase());
    await sql`insert into platforms (id, name, environment, created_at, updated_at) values (${platform}, 'checks', 'sandbox', now(), now())`.execute(handle.db);
  });
  afterAll(() => drop());

  type Row = Record<string, string | number | null>;

  /** Runs `statement` in a transaction that is rolled back: answers the error's code and message, if any. */
  async function attempt(statement: ReturnType<typeof sql>): Promise<{ code: unknown; message: string } | undefined> {
    try {
      await withTx(handle.db, async (trx) => {
        await statement.execute(trx);
        throw new Error('rollback');
      });
    } catch (error) {
      const { code, message } = error as { code?: unknown; message: string };
      return message === 'rollback' ? undefined : { code, message };
    }
    return undefined;
  }
  const insert = (table: string, row: Row) =>
    attempt(sql`insert into ${sql.table(table)} (${sql.join(Object.keys(row).map((column) => sql.ref(column)))}) values (${sql.join(Object.values(row))})`);
  const refused = (check: string) => ({ code: '23514', message: expect.stringContaining(`check constraint "${check}"`) });

  it('each table has one CHECK constraint, the call of its function', async () => {
    const { rows } = await sql<{ table: string; name: string; definition: string }>`
      select conrelid::regclass::text as table, conname as name, pg_get_constraintdef(oid) as definition
      from pg_constraint where conrelid in ('transactions'::regclass, 'quotes'::regclass) and contype = 'c' order by 1`.execute(handle.db);
    expect(rows).toEqual([
      { table: 'quotes', name: 'quotes_valid', definition: expect.stringMatching(/^CHECK \(quote_valid\(/) },
      { table: 'transactions', name: 'transactions_valid', definition: expect.stringMatching(/^CHECK \(transaction_valid\(/) },
    ]);
  });

  describe('transactions', () => {
    const transaction = (changes: Row = {}): Row => ({
      platform_id: platform,
      id: uuidv7(),
      type: 'OUTGOING',
      status: 'PENDING',
      failure_reason: null,
      environment: 'sandbox',
      customer_id: uuidv7(),
      platform_customer_id: 'customer-1',
      source: '{"sourceType":"ACCOUNT"}',
      destination: '{"destinationType":"ACCOUNT"}',
      sending_currency: 'USD',
      receiving_currency: 'EUR',
      sent_amount: 1000,
      total_sending_amount: 1015,
      received_amount: 920,
      fees: 10,
      platform_fees: 5,
      exchange_rate: '0.92',
      reconciliation_reference: 'REF',
      refund_reference: null,
      refund_status: null,
      refund_reason: null,
      created_at: '2025-10-13T09:00:00Z',
      updated_at: '2025-10-13T09:00:00Z',
      ...changes,
    });
    const transactions = refused('transactions_valid');

    it('refuses a row that breaks any one rule', async () => {
      const broken: Row[] = [
        { type: 'SIDEWAYS' },
        { status: 'LOST' },
        { environment: 'staging' },
        { status: 'FAILED' }, // a failure without its reason
        { failure_reason: 'LIMIT_EXCEEDED' }, // a reason on a payment that has not failed
        { status: 'FAILED', failure_reason: 'SETTLEMENT_FAILED' }, // a removed reason
        { refund_status: 'PENDING' }, // a refund without its reference
        { refund_reference: 'refund-1' }, // a reference without the refund's status
        { refund_status: 'DONE', refund_reference: 'refund-1' },
        { refund_reason: 'WHIM' },
        { platform_customer_id: null }, // the customer's uuid without the platform's id
        { customer_id: null },
        { sent_amount: -1 },
        { total_sending_amount: -1 },
        { received_amount: -1 },
        { fees: -1 },
        { platform_fees: -1 },
      ];
      for (const changes of broken) expect(await insert('transactions', transaction(changes)), JSON.stringify(changes)).toEqual(transactions);
    });

    it('passes the rows the old constraints passed, null columns included', async () => {
      const valid: Row[] = [
        {},
        { customer_id: null, platform_customer_id: null }, // the platform's own transfer
        { status: 'EXPIRED', failure_reason: 'QUOTE_EXPIRED' },
        { status: 'REFUNDED', refund_status: 'COMPLETED', refund_reference: 'refund-1', refund_reason: 'TRANSACTION_FAILED' },
        { refund_reason: 'USER_CANCELLATION' }, // a reason alone: no rule pairs it
        { sent_amount: 0, total_sending_amount: 0, received_amount: 0, fees: 0, platform_fees: 0 },
      ];
      for (const changes of valid) expect(await insert('transactions', transaction(changes)), JSON.stringify(changes)).toBeUndefined();
    });

    it('checks updates too', async () => {
      const row = transaction();
      await sql`insert into transactions (${sql.join(Object.keys(row).map((column) => sql.ref(column)))}) values (${sql.join(Object.values(row))})`.execute(handle.db);
      const update = (set: ReturnType<typeof sql>) => attempt(sql`update transactions set ${set} where platform_id = ${platform} and id = ${row.id}`);
      expect(await update(sql`status = 'FAILED'`)).toEqual(transactions);
      expect(await update(sql`status = 'PROCESSING'`)).toBeUndefined();
      expect(await update(sql`status = 'FAILED', failure_reason = 'LIMIT_EXCEEDED'`)).toBeUndefined();
    });
  });

  describe('quotes', () => {
    const quote = (changes: Row = {}): Row => ({
      id: uuidv7(),
      platform_id: platform,
      source: '{"sourceType":"ACCOUNT"}',
      destination: '{"destinationType":"ACCOUNT"}',
      source_kind: 'INTERNAL_ACCOUNT',
      destination_kind: 'EXTERNAL_ACCOUNT',
      destination_account_id: uuidv7(),
      sending_currency: 'USD',
      receiving_currency: 'EUR',
      locked_side: 'SENDING',
      locked_amount: 1000,
      sent_amount: 1000,
      service_fees: 10,
      platform_fees: 5,
      total_sending_amount: 1015,
      received_amount: 920,
      exchange_rate: '0.92',
      rate_details: '{}',
      rate_window_start: '2025-10-13T09:00:00Z',
      transaction_id: uuidv7(),
      expires_at: '2025-10-13T09:05:00Z',
      created_at: '2025-10-13T09:00:00Z',
      ...changes,
    });
    const quotes = refused('quotes_valid');

    it('refuses a row that breaks any one rule', async () => {
      const broken: Row[] = [
        { total_sending_amount: 1016 },
        { source_kind: 'CARD' },
        { destination_kind: 'MOON' },
        { destination_kind: 'UMA_ADDRESS' }, // a UMA address's quote with an account
        { destination_account_id: null }, // an account's quote without one
        { locked_side: 'BOTH' },
        { locked_amount: 0 },
        { sent_amount: 0, total_sending_amount: 15 },
        { received_amount: 0 },
        { service_fees: -1, total_sending_amount: 1004 },
        { platform_fees: -1, total_sending_amount: 1009 },
      ];
      for (const changes of broken) expect(await insert('quotes', quote(changes)), JSON.stringify(changes)).toEqual(quotes);
    });

    it('passes the rows the old constraints passed, null columns included', async () => {
      const valid: Row[] = [
        {},
        { destination_kind: 'UMA_ADDRESS', destination_account_id: null },
        { source_kind: 'REALTIME_FUNDING', locked_side: 'RECEIVING', service_fees: 0, platform_fees: 0, total_sending_amount: 1000 },
      ];
      for (const changes of valid) expect(await insert('quotes', quote(changes)), JSON.stringify(changes)).toBeUndefined();
    });

    it('keeps raising bigint overflow of the total before any other rule refuses the row', async () => {
      expect(await insert('quotes', quote({ locked_side: 'BOTH', sent_amount: '9223372036854775807' }))).toEqual({ code: '22003', message: expect.stringContaining('out of range') });
    });
  });
});
