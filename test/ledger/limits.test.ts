import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger, LedgerError, MAX_POSTING_AMOUNT, openInternalLedgerAccount, systemAccountId, type LedgerAccountRef } from '../../src/modules/ledger/index.js';
import { createPlatform } from '../../src/modules/platforms/index.js';
import { systemClock } from '../../src/platform/clock.js';
import type { DbHandle } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { uuidv7 } from '../../src/platform/ids.js';
import { openTestDatabase } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';

/**
 * The ledger's sums are PostgreSQL bigints: lifetime debits and credits of one balance row may
 * reach 2^63 − 1 only after ~2^10 postings of the largest amount through it. Should that happen,
 * the posting is refused as a ledger refusal (BALANCE_LIMIT), which callers answer, and not a
 * raw "bigint out of range" (a 500); nothing is written.
 */
describe('ledger sums at the edge of bigint', () => {
  let handle: DbHandle;
  let drop: () => Promise<void>;
  const ledger = new Ledger({ clock: systemClock, hotAccountShards: 1, onInternalBalancesChanged: async () => {} });
  const NEAR_MAX = 9_223_372_036_854_775_000n;

  beforeAll(async () => {
    ({ handle, drop } = await openTestDatabase());
  });
  afterAll(() => drop());

  it('an account whose lifetime credits would pass 2^63 − 1: BALANCE_LIMIT, nothing written', async () => {
    const db = handle.db;
    const platformId = await withTx(db, async (trx) => (await createPlatform(trx, systemClock, { name: 'limits', environment: 'sandbox' })).platformUuid);
    const id = uuidv7();
    await withTx(db, (trx) => openInternalLedgerAccount(trx, { id, platformId, currency: 'USD', now: new Date() }));
    const account: LedgerAccountRef = { kind: 'INTERNAL_ACCOUNT', id };
    const funding: LedgerAccountRef = { kind: 'SANDBOX_FUNDING', currency: 'USD' };
    await withTx(db, (trx) => ledger.transfer(trx, { platformId, reference: 'open', postings: [{ from: funding, to: account, amount: 1n, currency: 'USD' }] }));
    const attempt = (what: 'internal' | 'system') =>
      withTx(db, async (trx) => {
        // The history it would take to get here, written as its sums only, in a transaction that rolls back.
        const row = what === 'internal' ? id : systemAccountId(platformId, { kind: 'SANDBOX_FUNDING', currency: 'USD' });
        await sql`update ledger_balances set debits_posted = debits_posted + ${NEAR_MAX}, credits_posted = credits_posted + ${NEAR_MAX} where account_id = ${row}`.execute(trx);
        await ledger.transfer(trx, { platformId, reference: `past-${what}`, postings: [{ from: funding, to: account, amount: MAX_POSTING_AMOUNT - 1n, currency: 'USD' }] });
      });
    for (const what of ['internal', 'system'] as const) {
      const refused = await attempt(what).catch((error: unknown) => error);
      expect(refused, what).toBeInstanceOf(LedgerError);
      expect((refused as LedgerError).reason, what).toBe('BALANCE_LIMIT');
    }
    expect(await sql`select 1 from ledger_transactions where reference like 'past-%'`.execute(db).then((r) => r.rows)).toEqual([]);
    await expectLedgerConsistent(db);
  });
});
