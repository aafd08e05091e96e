import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertTransaction } from '../../src/modules/transactions/repo.js';
import type { DbHandle } from '../../src/platform/db/database.js';
import { listMigrations, migrate } from '../../src/platform/db/migrate.js';
import { uuidv7 } from '../../src/platform/ids.js';
import { openDatabaseBefore } from '../helpers/context.js';

/**
 * Migration 0038 (feed_deposits) on a database that already holds production deposits: one id
 * credited on two platforms (possible before it), an unmatched row a later listing credited, and
 * sandbox deposits (whose ids stay per platform). It applies, keeps each id's first credit, and
 * leaves the operator the rest to see.
 */
let handle: DbHandle;
let drop: () => Promise<void>;

beforeAll(async () => {
  ({ handle, drop } = await openDatabaseBefore(38));
}, 120_000);
afterAll(() => drop());

const at = (minutes: number) => new Date(Date.UTC(2025, 9, 13, 9, minutes));

async function platform(environment: 'sandbox' | 'production'): Promise<string> {
  const id = uuidv7();
  await sql`insert into platforms (id, name, environment, created_at, updated_at) values (${id}, ${'p-' + id.slice(-6)}, ${environment}, ${at(0)}, ${at(0)})`.execute(handle.db);
  return id;
}

/** A deposit credited the way FundingDeposits did before 0038: the INCOMING transaction and its funding_deposits row. */
async function credited(platformId: string, environment: 'sandbox' | 'production', depositId: string, reference: string, minute: number): Promise<string> {
  const id = uuidv7();
  await insertTransaction(handle.db, {
    platform_id: platformId,
    id,
    quote_id: null,
    type: 'INCOMING',
    status: 'COMPLETED',
    failure_reason: null,
    environment,
    customer_id: null,
    platform_customer_id: null,
    source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', paymentRail: 'WIRE' },
    destination: { destinationType: 'ACCOUNT', accountId: `InternalAccount:${uuidv7()}`, currency: 'USD' },
    source_account_id: null,
    destination_account_id: null,
    sending_currency: 'USD',
    receiving_currency: 'USD',
    sent_amount: 5000n,
    total_sending_amount: 5000n,
    received_amount: 5000n,
    fees: 0n,
    platform_fees: 0n,
    exchange_rate: '1',
    rate_details: null,
    description: null,
    remittance_information: null,
    purpose_of_payment: null,
    payment_instructions: null,
    payment_rail: 'WIRE',
    reconciliation_reference: reference,
    created_at: at(minute),
    updated_at: at(minute),
  });
  await sql`insert into funding_deposits (platform_id, deposit_id, transaction_id, created_at) values (${platformId}, ${depositId}, ${id}, ${at(minute)})`.execute(handle.db);
  return id;
}

async function unmatched(depositId: string, minute: number) {
  await sql`insert into unmatched_deposits (deposit_id, reference, currency, amount, rail, reason, received_at)
            values (${depositId}, 'CDRNOSUCHREF0000', 'USD', 5000, 'WIRE', 'UNKNOWN_REFERENCE', ${at(minute)})`.execute(handle.db);
}

describe('migration 0038 on existing deposits', () => {
  it('applies, keeps the first credit of each production id, closes stale unmatched rows and shows double credits to the operator', async () => {
    const a = await platform('production');
    const b = await platform('production');
    const s = await platform('sandbox');
    const firstCredit = await credited(a, 'production', 'dup-1', 'CDRAAAA000000001', 2);
    const secondCredit = await credited(b, 'production', 'dup-1', 'CDRBBBB000000001', 3);
    await credited(s, 'sandbox', 'dup-1', 'CDRSSSS000000001', 1);
    await credited(s, 'sandbox', 'sandbox-only', 'CDRSSSS000000001', 1);
    // Kept unmatched at 09:04, credited when listed again at 09:05: a stale row before 0038.
    await unmatched('late-1', 4);
    const lateCredit = await credited(a, 'production', 'late-1', 'CDRAAAA000000001', 5);
    // Credited at 09:06, then listed with a reference nobody has at 09:07: still the operator's.
    await credited(a, 'production', 'after-1', 'CDRAAAA000000001', 6);
    await unmatched('after-1', 7);
    await unmatched('stray-1', 8);

    expect(await migrate(handle.db, listMigrations().filter((m) => m.version === 38))).toEqual(['0038_feed_deposits']);

    const feed = await handle.db.selectFrom('feed_deposits').select(['deposit_id', 'platform_id', 'transaction_id']).orderBy('deposit_id').execute();
    expect(feed.map((f) => [f.deposit_id, f.platform_id])).toEqual([
      ['after-1', a],
      ['dup-1', a],
      ['late-1', a],
    ]);
    expect(feed.find((f) => f.deposit_id === 'dup-1')!.transaction_id).toBe(firstCredit);

    const rows = await handle.db.selectFrom('unmatched_deposits').selectAll().orderBy('deposit_id').execute();
    expect(rows.map((r) => [r.deposit_id, r.reason, r.resolved_at !== null])).toEqual([
      ['after-1', 'UNKNOWN_REFERENCE', false],
      ['dup-1', 'CONFLICTING_DEPOSIT', false],
      ['late-1', 'UNKNOWN_REFERENCE', true],
      ['stray-1', 'UNKNOWN_REFERENCE', false],
    ]);
    expect(rows.find((r) => r.deposit_id === 'late-1')).toMatchObject({ credited_platform_id: a, credited_transaction_id: lateCredit });
    expect(rows.find((r) => r.deposit_id === 'dup-1')).toMatchObject({
      platform_id: b,
      reference: 'CDRBBBB000000001',
      credited_platform_id: a,
      credited_transaction_id: firstCredit,
      detail: expect.stringContaining(secondCredit),
    });

    // The new reasons are accepted, others still refused; the feed's key holds.
    await sql`insert into unmatched_deposits (deposit_id, reference, currency, amount, rail, reason, received_at, detail) values ('refused-1', 'X', 'USD', 1, 'WIRE', 'REFUSED', now(), 'ledger INVALID_POSTING')`.execute(handle.db);
    await expect(sql`insert into unmatched_deposits (deposit_id, reference, currency, amount, rail, reason, received_at) values ('bogus-1', 'X', 'USD', 1, 'WIRE', 'BOGUS', now())`.execute(handle.db)).rejects.toThrow();
    await expect(sql`insert into feed_deposits (deposit_id, platform_id, transaction_id, created_at) values ('dup-1', ${b}, ${secondCredit}, now())`.execute(handle.db)).rejects.toThrow();
  });
});
