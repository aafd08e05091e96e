import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountBalance, findLedgerTransaction, LedgerError, type LedgerAccountRef } from '../../src/modules/ledger/index.js';
import { withTx } from '../../src/platform/db/tx.js';
import { BASE, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

let seq = 0;
/** A sandbox individual (approved at creation) and the uuid of its USD account. */
async function customerAccount(p: TestPlatform): Promise<string> {
  const created = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `ledger-${++seq}`, fullName: 'Ann Lee' });
  expect(created.statusCode, created.body).toBe(201);
  const list = (await call(p, 'GET', `/customers/internal-accounts?customerId=${(created.json() as Body).id as string}`)).json() as { data: Array<{ id: string }> };
  return list.data[0]!.id.slice('InternalAccount:'.length);
}

const account = (id: string): LedgerAccountRef => ({ kind: 'INTERNAL_ACCOUNT', id });
const usd = (amount: bigint, from: LedgerAccountRef, to: LedgerAccountRef) => ({ from, to, amount, currency: 'USD' });
const tx = <T>(work: (trx: Parameters<Parameters<typeof withTx>[1]>[0]) => Promise<T>) => withTx(ctx.handle.db, work);
const balance = async (p: TestPlatform, ref: LedgerAccountRef) => {
  const b = await accountBalance(ctx.handle.db, p.uuid, ref);
  return { available: b.available, total: b.total };
};

async function fund(p: TestPlatform, accountUuid: string, amount: bigint) {
  return tx((trx) => ctx.ledger.transfer(trx, { platformId: p.uuid, reference: `fund-${++seq}`, postings: [usd(amount, { kind: 'SANDBOX_FUNDING', currency: 'USD' }, account(accountUuid))] }));
}

async function refusal(work: () => Promise<unknown>): Promise<LedgerError> {
  try {
    await work();
  } catch (error) {
    if (error instanceof LedgerError) return error;
    throw error;
  }
  throw new Error('expected a LedgerError');
}

describe('ledger', () => {
  it('moves money with a fee, idempotently by reference, and refuses an overdraft', async () => {
    const p = await ctx.newPlatform();
    const [a, b] = [await customerAccount(p), await customerAccount(p)];
    await fund(p, a, 10_000n);
    const fees: LedgerAccountRef = { kind: 'PLATFORM_FEES', currency: 'USD' };
    const input = { platformId: p.uuid, reference: 'pay-1', postings: [usd(7_000n, account(a), account(b)), usd(100n, account(a), fees)] };
    const first = await tx((trx) => ctx.ledger.transfer(trx, input));
    expect(first).toMatchObject({ kind: 'POSTED', replayed: false });
    expect(first.internalAccounts.sort((x, y) => (x.accountId === a ? -1 : y.accountId === a ? 1 : 0))).toEqual([
      { accountId: a, available: 2_900n, total: 2_900n },
      { accountId: b, available: 7_000n, total: 7_000n },
    ]);
    const again = await tx((trx) => ctx.ledger.transfer(trx, input));
    expect(again).toMatchObject({ id: first.id, replayed: true });
    expect(await balance(p, account(a))).toEqual({ available: 2_900n, total: 2_900n });
    expect(await balance(p, fees)).toEqual({ available: 100n, total: 100n });

    const reused = await refusal(() => tx((trx) => ctx.ledger.transfer(trx, { ...input, postings: [usd(1n, account(a), account(b))] })));
    expect(reused.reason).toBe('REFERENCE_CONFLICT');
    const overdraft = await refusal(() => tx((trx) => ctx.ledger.transfer(trx, { platformId: p.uuid, reference: 'pay-2', postings: [usd(2_901n, account(a), account(b))] })));
    expect(overdraft).toMatchObject({ reason: 'INSUFFICIENT_FUNDS', subject: a });
    expect(await balance(p, account(a))).toEqual({ available: 2_900n, total: 2_900n });

    const events = await ctx.handle.db.selectFrom('events').select(['type', 'resource_id', 'data']).where('platform_id', '=', p.uuid).where('type', '=', 'INTERNAL_ACCOUNT.BALANCE_UPDATED').orderBy('id').execute();
    // Funding (a), then the payment (a and b); the replay and the refusals record nothing.
    expect(events.map((e) => [e.resource_id, (e.data as { balance: { amount: number } }).balance.amount])).toEqual(
      expect.arrayContaining([
        [`InternalAccount:${a}`, 10_000],
        [`InternalAccount:${a}`, 2_900],
        [`InternalAccount:${b}`, 7_000],
      ]),
    );
    expect(events).toHaveLength(3);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('holds money, then posts or voids the hold exactly once', async () => {
    const p = await ctx.newPlatform();
    const a = await customerAccount(p);
    await fund(p, a, 5_000n);
    const sepa: LedgerAccountRef = { kind: 'SETTLEMENT', rail: 'ACH', currency: 'USD' };
    const hold = await tx((trx) => ctx.ledger.hold(trx, { platformId: p.uuid, reference: 'q1:hold', postings: [usd(3_000n, account(a), sepa)] }));
    expect(hold.internalAccounts).toEqual([{ accountId: a, available: 2_000n, total: 5_000n }]);
    expect((await findLedgerTransaction(ctx.handle.db, p.uuid, { id: hold.id }))?.holdStatus).toBe('OPEN');
    const overdraft = await refusal(() => tx((trx) => ctx.ledger.hold(trx, { platformId: p.uuid, reference: 'q2:hold', postings: [usd(2_001n, account(a), sepa)] })));
    expect(overdraft.reason).toBe('INSUFFICIENT_FUNDS');

    const posted = await tx((trx) => ctx.ledger.postHold(trx, { platformId: p.uuid, holdId: hold.id, reference: 'q1:post' }));
    expect(posted.internalAccounts).toEqual([{ accountId: a, available: 2_000n, total: 2_000n }]);
    expect(await balance(p, sepa)).toEqual({ available: 3_000n, total: 3_000n });
    expect((await findLedgerTransaction(ctx.handle.db, p.uuid, { reference: 'q1:hold' }))).toMatchObject({ holdStatus: 'POSTED', resolvedBy: posted.id });
    const twice = await refusal(() => tx((trx) => ctx.ledger.voidHold(trx, { platformId: p.uuid, holdId: hold.id, reference: 'q1:void' })));
    expect(twice.reason).toBe('HOLD_NOT_PENDING');
    expect((await tx((trx) => ctx.ledger.postHold(trx, { platformId: p.uuid, holdId: hold.id, reference: 'q1:post' }))).replayed).toBe(true);

    const second = await tx((trx) => ctx.ledger.hold(trx, { platformId: p.uuid, reference: 'q3:hold', postings: [usd(1_500n, account(a), sepa)] }));
    const voided = await tx((trx) => ctx.ledger.voidHold(trx, { platformId: p.uuid, holdId: second.id, reference: 'q3:void' }));
    expect(voided.internalAccounts).toEqual([{ accountId: a, available: 2_000n, total: 2_000n }]);
    const notAHold = await refusal(() => tx((trx) => ctx.ledger.postHold(trx, { platformId: p.uuid, holdId: posted.id, reference: 'q1:post-again' })));
    expect(notAHold.reason).toBe('HOLD_NOT_PENDING');
    const report = await expectLedgerConsistent(ctx.handle.db);
    expect(report.holds.posted).toBeGreaterThanOrEqual(1);
    expect(report.holds.voided).toBeGreaterThanOrEqual(1);
  });

  it('balances an FX transfer per currency and reverses it once as a refund', async () => {
    const p = await ctx.newPlatform();
    const a = await customerAccount(p);
    await fund(p, a, 10_000n);
    const fx = await tx((trx) =>
      ctx.ledger.transfer(trx, {
        platformId: p.uuid,
        reference: 'fx-1',
        postings: [
          usd(9_900n, account(a), { kind: 'FX', currency: 'USD' }),
          usd(100n, account(a), { kind: 'PLATFORM_FEES', currency: 'USD' }),
          { from: { kind: 'FX', currency: 'EUR' }, to: { kind: 'SETTLEMENT', rail: 'SEPA_INSTANT', currency: 'EUR' }, amount: 9_100n, currency: 'EUR' },
        ],
      }),
    );
    expect(fx.internalAccounts).toEqual([{ accountId: a, available: 0n, total: 0n }]);
    const view = await findLedgerTransaction(ctx.handle.db, p.uuid, { id: fx.id });
    expect(view?.entries.map((e) => `${e.side} ${e.amount} ${e.currency}`).sort()).toEqual(['CREDIT 100 USD', 'CREDIT 9100 EUR', 'CREDIT 9900 USD', 'DEBIT 10000 USD', 'DEBIT 9100 EUR']);

    const refund = await tx((trx) => ctx.ledger.reverse(trx, { platformId: p.uuid, transactionId: fx.id, reference: 'fx-1:refund' }));
    expect(refund.internalAccounts).toEqual([{ accountId: a, available: 10_000n, total: 10_000n }]);
    expect(await balance(p, { kind: 'FX', currency: 'EUR' })).toEqual({ available: 0n, total: 0n });
    const twice = await refusal(() => tx((trx) => ctx.ledger.reverse(trx, { platformId: p.uuid, transactionId: fx.id, reference: 'fx-1:refund-2' })));
    expect(twice.reason).toBe('NOT_REVERSIBLE');
    expect((await findLedgerTransaction(ctx.handle.db, p.uuid, { id: fx.id }))?.reversedBy).toBe(refund.id);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('refuses bad postings before touching the database', async () => {
    const p = await ctx.newPlatform();
    const a = await customerAccount(p);
    const other = await ctx.newPlatform();
    const foreign = await customerAccount(other);
    const attempt = (postings: Parameters<typeof ctx.ledger.transfer>[1]['postings']) =>
      refusal(() => tx((trx) => ctx.ledger.transfer(trx, { platformId: p.uuid, reference: `bad-${++seq}`, postings })));
    expect((await attempt([])).reason).toBe('INVALID_POSTING');
    expect((await attempt([usd(0n, account(a), { kind: 'FX', currency: 'USD' })])).reason).toBe('INVALID_POSTING');
    expect((await attempt([usd(1n, account(a), account(a))])).reason).toBe('INVALID_POSTING');
    expect((await attempt([{ ...usd(1n, account(a), { kind: 'FX', currency: 'USD' }), currency: 'XYZ' }])).reason).toBe('INVALID_CURRENCY');
    expect((await attempt([{ from: { kind: 'FX', currency: 'EUR' }, to: account(a), amount: 1n, currency: 'EUR' }])).reason).toBe('ACCOUNT_MISMATCH');
    expect((await attempt([usd(1n, { kind: 'FX', currency: 'USD' }, account(foreign))])).reason).toBe('ACCOUNT_MISMATCH');
    expect((await attempt([usd(1n, { kind: 'FX', currency: 'USD' }, account('00000000-0000-7000-8000-000000000000'))])).reason).toBe('UNKNOWN_ACCOUNT');
    await expectLedgerConsistent(ctx.handle.db);
  });
});
