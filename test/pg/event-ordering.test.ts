import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';
import { auditEvents, outboxOf } from '../helpers/event-audit.js';

/**
 * Two changes of one account's balance racing on PostgreSQL: the one that commits second must
 * come second in every order an integrator can read off its events (the webhook id, the
 * account's `updatedAt`), and the account's `updatedAt` never goes back.
 */
describe.runIf(onPostgres)('event order under racing balance changes', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  type Body = Record<string, any>;
  const call = (p: TestPlatform, method: 'GET' | 'POST', path: string, payload?: unknown) =>
    ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

  async function accountOf(p: TestPlatform, name: string): Promise<string> {
    const created = await call(p, 'POST', '/customers', {
      customerType: 'INDIVIDUAL',
      platformCustomerId: name,
      fullName: 'Ann Lee',
      endUserTermsConsent: { acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const list = (await call(p, 'GET', `/customers/internal-accounts?customerId=${(created.json() as Body).id}`)).json() as Body;
    return list.data[0].id as string;
  }

  /** Until a backend waits for a row lock (the change held back by the test's lock). */
  async function untilWaitingForLock(): Promise<void> {
    for (let i = 0; i < 500; i++) {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`.execute(ctx.handle.db);
      if (rows[0]!.n > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error('no change waited for the lock');
  }

  it('a change that took its time before the lock, committed after another, is the later one in ids and updatedAt', async () => {
    const p = await ctx.newPlatform();
    // Customers are created in order, so the first account's id sorts first: the ledger updates it first.
    const first = await accountOf(p, 'race-a');
    const second = await accountOf(p, 'race-b');
    expect(first < second).toBe(true);
    expect((await call(p, 'POST', `/sandbox/internal-accounts/${first}/fund`, { amount: 50_000 })).statusCode).toBe(200);

    // The test holds the first account's balance row: a book transfer first → second stops there,
    // after it has taken its time, before it reaches the second account.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const holding = ctx.handle.db.transaction().execute(async (trx) => {
      await sql`select 1 from ledger_balances where account_id = ${first.slice('InternalAccount:'.length)}::uuid for update`.execute(trx);
      await held;
    });
    const quote = call(p, 'POST', '/quotes', {
      source: { sourceType: 'ACCOUNT', accountId: first },
      destination: { destinationType: 'ACCOUNT', accountId: second },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 10_000,
      immediatelyExecute: true,
    });
    let executed;
    try {
      await Promise.race([untilWaitingForLock(), quote.then((answer) => Promise.reject(new Error(`the quote did not wait: ${answer.statusCode} ${answer.body}`)))]);
      // Meanwhile, a second later, the second account is funded: committed first.
      ctx.clock.advance(1_000);
      const funded = await call(p, 'POST', `/sandbox/internal-accounts/${second}/fund`, { amount: 7_000 });
      expect(funded.statusCode, funded.body).toBe(200);
    } finally {
      release();
      await holding;
      executed = await quote;
    }
    expect(executed.statusCode, executed.body).toBe(201);

    const events = (await outboxOf(ctx, p.uuid)).filter((e) => e.resource_id === second && e.type === 'INTERNAL_ACCOUNT.BALANCE_UPDATED');
    // In id order: the funding (committed first), then the transfer's pending credit on top of it.
    expect(events.map((e) => [e.data.balance.amount, e.data.totalBalance.amount])).toEqual([
      [7_000, 7_000],
      [7_000, 17_000],
    ]);
    const [fundedAt, creditedAt] = events.map((e) => e.data.updatedAt as string);
    expect(creditedAt! >= fundedAt!, `updatedAt went back: funded ${fundedAt}, credited after it ${creditedAt}`).toBe(true);
    const view = ((await call(p, 'GET', `/customers/internal-accounts?limit=100`)).json() as Body).data.find((a: Body) => a.id === second);
    expect(view.updatedAt >= fundedAt!, 'the account’s updatedAt went back').toBe(true);
    await auditEvents(ctx, p, 'racing balance changes');
  });
});
