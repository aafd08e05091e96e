import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountBalance, LedgerError, type LedgerAccountRef } from '../../src/modules/ledger/index.js';
import type { Tx } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { BASE, createTestContext, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';

/** Money under real concurrency: many connections (and two app instances) on one PostgreSQL. */
describe.runIf(onPostgres)('ledger on PostgreSQL', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  let seq = 0;
  async function accountOf(p: TestPlatform): Promise<string> {
    const created = await ctx.app.inject({
      method: 'POST',
      url: `${BASE}/customers`,
      headers: { authorization: p.auth },
      payload: { customerType: 'INDIVIDUAL', platformCustomerId: `pg-ledger-${++seq}`, fullName: 'Ann Lee' },
    });
    const list = await ctx.app.inject({ method: 'GET', url: `${BASE}/customers/internal-accounts?customerId=${(created.json() as { id: string }).id}`, headers: { authorization: p.auth } });
    return (list.json() as { data: Array<{ id: string }> }).data[0]!.id;
  }
  const uuidOf = (id: string) => id.slice('InternalAccount:'.length);
  const internal = (id: string): LedgerAccountRef => ({ kind: 'INTERNAL_ACCOUNT', id: uuidOf(id) });

  async function outcomes<T>(work: Array<() => Promise<T>>): Promise<{ ok: T[]; refused: string[] }> {
    const settled = await Promise.allSettled(work.map((w) => w()));
    const ok: T[] = [];
    const refused: string[] = [];
    for (const s of settled) {
      if (s.status === 'fulfilled') ok.push(s.value);
      else if (s.reason instanceof LedgerError) refused.push(s.reason.reason);
      else throw s.reason;
    }
    return { ok, refused };
  }

  it('concurrent funding requests through two processes all land, once each, with one event each', async () => {
    const p = await ctx.newPlatform();
    const account = await accountOf(p);
    const other = await ctx.secondApp();
    const requests = Array.from({ length: 40 }, (_, i) => () =>
      (i % 2 ? other : ctx.app).inject({
        method: 'POST',
        url: `${BASE}/sandbox/internal-accounts/${account}/fund`,
        headers: { authorization: p.auth, 'idempotency-key': `k-${i % 30}` },
        payload: { amount: 100 + (i % 30) },
      }),
    );
    const responses = await Promise.all(requests.map((r) => r()));
    // Keys 0–9 are sent twice: the second either replays or waits and is told the first is in progress.
    expect(responses.every((r) => r.statusCode === 200 || r.statusCode === 409)).toBe(true);
    const expected = Array.from({ length: 30 }, (_, i) => 100 + i).reduce((a, b) => a + b, 0);
    const balance = await accountBalance(ctx.handle.db, p.uuid, internal(account));
    expect(balance.available).toBe(BigInt(expected));
    const events = await ctx.handle.db.selectFrom('events').select('id').where('platform_id', '=', p.uuid).where('type', '=', 'INTERNAL_ACCOUNT.BALANCE_UPDATED').execute();
    expect(events).toHaveLength(30);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('concurrent transfers, holds and fees that together overdraw an account: exactly what the balance allows goes through', async () => {
    const p = await ctx.newPlatform();
    const [a, b] = [await accountOf(p), await accountOf(p)];
    await withTx(ctx.handle.db, (trx) =>
      ctx.ledger.transfer(trx, { platformId: p.uuid, reference: 'seed', postings: [{ from: { kind: 'SANDBOX_FUNDING', currency: 'USD' }, to: internal(a), amount: 10_000n, currency: 'USD' }] }),
    );
    const fees: LedgerAccountRef = { kind: 'PLATFORM_FEES', currency: 'USD' };
    // 60 attempts of 990 + 10 fee (transfers) or 1000 (holds): 10 fit.
    const work = Array.from({ length: 60 }, (_, i) => () =>
      withTx(ctx.handle.db, (trx) =>
        i % 3 === 0
          ? ctx.ledger.hold(trx, { platformId: p.uuid, reference: `h-${i}`, postings: [{ from: internal(a), to: { kind: 'SETTLEMENT', rail: 'ACH', currency: 'USD' }, amount: 1_000n, currency: 'USD' }] })
          : ctx.ledger.transfer(trx, {
              platformId: p.uuid,
              reference: `t-${i}`,
              postings: [
                { from: internal(a), to: internal(b), amount: 990n, currency: 'USD' },
                { from: internal(a), to: fees, amount: 10n, currency: 'USD' },
              ],
            }),
      ),
    );
    const { ok, refused } = await outcomes(work);
    expect(ok).toHaveLength(10);
    expect(refused).toEqual(Array(50).fill('INSUFFICIENT_FUNDS'));
    const balanceA = await accountBalance(ctx.handle.db, p.uuid, internal(a));
    expect(balanceA.available).toBe(0n);
    const holds = ok.filter((t) => t.kind === 'PENDING').length;
    expect(balanceA.total).toBe(BigInt(holds * 1_000));
    expect((await accountBalance(ctx.handle.db, p.uuid, internal(b))).available).toBe(BigInt((10 - holds) * 990));
    expect((await accountBalance(ctx.handle.db, p.uuid, fees)).available).toBe(BigInt((10 - holds) * 10));
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('a hold posted and voided at once, and one reference applied at once, each take effect exactly once', async () => {
    const p = await ctx.newPlatform();
    const a = await accountOf(p);
    const settlement: LedgerAccountRef = { kind: 'SETTLEMENT', rail: 'WIRE', currency: 'USD' };
    await withTx(ctx.handle.db, (trx) =>
      ctx.ledger.transfer(trx, { platformId: p.uuid, reference: 'seed', postings: [{ from: { kind: 'SANDBOX_FUNDING', currency: 'USD' }, to: internal(a), amount: 5_000n, currency: 'USD' }] }),
    );
    const hold = await withTx(ctx.handle.db, (trx) => ctx.ledger.hold(trx, { platformId: p.uuid, reference: 'hold', postings: [{ from: internal(a), to: settlement, amount: 3_000n, currency: 'USD' }] }));
    const race = await outcomes(
      Array.from({ length: 10 }, (_, i) => () =>
        withTx(ctx.handle.db, (trx) => (i % 2 ? ctx.ledger.voidHold : ctx.ledger.postHold).call(ctx.ledger, trx, { platformId: p.uuid, holdId: hold.id, reference: `resolve-${i}` })),
      ),
    );
    expect(race.ok).toHaveLength(1);
    expect(race.refused).toEqual(Array(9).fill('HOLD_NOT_PENDING'));
    const same = await outcomes(
      Array.from({ length: 10 }, () => () =>
        withTx(ctx.handle.db, (trx) => ctx.ledger.transfer(trx, { platformId: p.uuid, reference: 'once', postings: [{ from: internal(a), to: settlement, amount: 100n, currency: 'USD' }] })),
      ),
    );
    expect(same.ok.filter((t) => !t.replayed)).toHaveLength(1);
    expect(new Set(same.ok.map((t) => t.id)).size).toBe(1);
    const posted = race.ok[0]!.kind === 'POST_PENDING';
    expect((await accountBalance(ctx.handle.db, p.uuid, internal(a))).available).toBe(posted ? 1_900n : 4_900n);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('one post, void or refund applied at once by many processes (a retried job): one takes effect, the rest replay it', async () => {
    const p = await ctx.newPlatform();
    const a = await accountOf(p);
    const settlement: LedgerAccountRef = { kind: 'SETTLEMENT', rail: 'WIRE', currency: 'USD' };
    const fund = (reference: string, amount: bigint) =>
      withTx(ctx.handle.db, (trx) =>
        ctx.ledger.transfer(trx, { platformId: p.uuid, reference, postings: [{ from: { kind: 'SANDBOX_FUNDING', currency: 'USD' }, to: internal(a), amount, currency: 'USD' }] }),
      );
    await fund('seed', 5_000n);
    const refunded = await fund('seed-2', 2_000n);
    const holds = await Promise.all(
      ['h1', 'h2'].map((reference) =>
        withTx(ctx.handle.db, (trx) => ctx.ledger.hold(trx, { platformId: p.uuid, reference, postings: [{ from: internal(a), to: settlement, amount: 1_000n, currency: 'USD' }] })),
      ),
    );
    const calls = [
      (trx: Tx) => ctx.ledger.postHold(trx, { platformId: p.uuid, holdId: holds[0]!.id, reference: 'post-h1' }),
      (trx: Tx) => ctx.ledger.voidHold(trx, { platformId: p.uuid, holdId: holds[1]!.id, reference: 'void-h2' }),
      (trx: Tx) => ctx.ledger.reverse(trx, { platformId: p.uuid, transactionId: refunded.id, reference: 'refund-seed-2' }),
    ];
    for (const call of calls) {
      const same = await outcomes(Array.from({ length: 8 }, () => () => withTx(ctx.handle.db, call)));
      expect(same.refused).toEqual([]);
      expect(same.ok.filter((t) => !t.replayed)).toHaveLength(1);
      expect(new Set(same.ok.map((t) => t.id)).size).toBe(1);
    }
    // 7 000 funded, 1 000 paid out, 1 000 held and given back, 2 000 refunded: each once.
    expect(await accountBalance(ctx.handle.db, p.uuid, internal(a))).toMatchObject({ available: 4_000n, total: 4_000n });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('a post repeated by a second process that passes the reference check before the first has written its row: replayed, not refused', async () => {
    const db = ctx.handle.db;
    const p = await ctx.newPlatform();
    const a = await accountOf(p);
    await withTx(db, (trx) =>
      ctx.ledger.transfer(trx, { platformId: p.uuid, reference: 'seed', postings: [{ from: { kind: 'SANDBOX_FUNDING', currency: 'USD' }, to: internal(a), amount: 1_000n, currency: 'USD' }] }),
    );
    const hold = await withTx(db, (trx) =>
      ctx.ledger.hold(trx, { platformId: p.uuid, reference: 'race-hold', postings: [{ from: internal(a), to: { kind: 'SETTLEMENT', rail: 'ACH', currency: 'USD' }, amount: 400n, currency: 'USD' }] }),
    );
    // Widens a window of microseconds to 300 ms, in this test's schema: PostgreSQL writes a row's
    // index entries in the order the indexes were made, so an index whose key is slow to compute
    // for this post's reference, made before the (re-made) reference and resolution indexes,
    // holds each call between ON CONFLICT's reference check and the entries that check looks for.
    await sql`create function race_key(reference text) returns text language plpgsql immutable as $$
      begin if reference = 'race-post' then perform pg_sleep(0.3); end if; return reference; end $$`.execute(db);
    await sql`create index ledger_transactions_race on ledger_transactions (race_key(reference))`.execute(db);
    await sql`drop index ledger_transactions_reference`.execute(db);
    await sql`create unique index ledger_transactions_reference on ledger_transactions (platform_id, reference)`.execute(db);
    await sql`drop index ledger_transactions_resolution`.execute(db);
    await sql`create unique index ledger_transactions_resolution on ledger_transactions (pending_id) where pending_id is not null`.execute(db);
    try {
      const post = () => withTx(db, (trx) => ctx.ledger.postHold(trx, { platformId: p.uuid, holdId: hold.id, reference: 'race-post' }));
      const first = post();
      await new Promise((resolve) => setTimeout(resolve, 100));
      const race = await outcomes([() => first, post]);
      expect(race.refused).toEqual([]);
      expect(race.ok.map((t) => t.replayed).sort()).toEqual([false, true]);
      expect(race.ok[0]!.id).toBe(race.ok[1]!.id);
    } finally {
      await sql`drop index ledger_transactions_race`.execute(db);
      await sql`drop function race_key(text)`.execute(db);
    }
    expect(await accountBalance(db, p.uuid, internal(a))).toMatchObject({ available: 600n, total: 600n });
    await expectLedgerConsistent(db);
  });

  it('spreads a hot account over shards and still reads one balance', async () => {
    const p = await ctx.newPlatform();
    const accounts = await Promise.all(Array.from({ length: 8 }, () => accountOf(p)));
    const fees: LedgerAccountRef = { kind: 'PLATFORM_FEES', currency: 'USD' };
    await Promise.all(
      accounts.map((id, i) =>
        withTx(ctx.handle.db, (trx) =>
          ctx.ledger.transfer(trx, { platformId: p.uuid, reference: `f-${i}`, postings: [{ from: { kind: 'SANDBOX_FUNDING', currency: 'USD' }, to: internal(id), amount: 1_000n, currency: 'USD' }] }),
        ),
      ),
    );
    await Promise.all(
      accounts.flatMap((id, i) =>
        Array.from({ length: 5 }, (_, k) => () =>
          withTx(ctx.handle.db, (trx) => ctx.ledger.transfer(trx, { platformId: p.uuid, reference: `fee-${i}-${k}`, postings: [{ from: internal(id), to: fees, amount: 7n, currency: 'USD' }] })),
        ).map((w) => w()),
      ),
    );
    expect((await accountBalance(ctx.handle.db, p.uuid, fees)).available).toBe(8n * 5n * 7n);
    const shards = await ctx.handle.db
      .selectFrom('ledger_balances')
      .select(['shard', 'credits_posted'])
      .where('platform_id', '=', p.uuid)
      .where('shards', '>', 1)
      .where('credits_posted', '>', 0n)
      .execute();
    expect(shards.length).toBeGreaterThan(1);
    await expectLedgerConsistent(ctx.handle.db);
  });
});
