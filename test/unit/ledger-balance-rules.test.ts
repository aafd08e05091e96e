import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { internalAccountBalances, Ledger, LedgerError, openInternalLedgerAccount, type InternalAccountBalance } from '../../src/modules/ledger/index.js';
import { systemClock } from '../../src/platform/clock.js';
import { withTx } from '../../src/platform/db/tx.js';
import { uuidv7 } from '../../src/platform/ids.js';
import { createTestContext, type TestContext } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';

/**
 * Rules of the ledger's TypeScript side (modules/ledger README) that the property run does not
 * reach: an incoming hold raises only the receiver's `totalBalance`, a system account takes
 * postings in its own currency only, and a replayed reference tells no one of a balance change.
 */
let ctx: TestContext;
const changes: InternalAccountBalance[][] = [];
let ledger: Ledger;
beforeAll(async () => {
  ctx = await createTestContext();
  ledger = new Ledger({ clock: systemClock, onInternalBalancesChanged: async (_trx, _platformId, balances) => void changes.push(balances) });
});
afterAll(() => ctx.close());

async function openUsdAccount(): Promise<string> {
  const id = uuidv7();
  await withTx(ctx.handle.db, (trx) => openInternalLedgerAccount(trx, { id, platformId: ctx.platform.uuid, currency: 'USD', now: new Date() }));
  return id;
}

describe('ledger balance rules', () => {
  it('a hold between internal accounts lowers the sender’s available balance only and raises the receiver’s total only', async () => {
    const [sender, receiver] = [await openUsdAccount(), await openUsdAccount()];
    const platformId = ctx.platform.uuid;
    await withTx(ctx.handle.db, (trx) =>
      ledger.transfer(trx, { platformId, reference: `fund:${sender}`, postings: [{ from: { kind: 'SANDBOX_FUNDING', currency: 'USD' }, to: { kind: 'INTERNAL_ACCOUNT', id: sender }, amount: 100n, currency: 'USD' }] }),
    );
    await withTx(ctx.handle.db, (trx) =>
      ledger.hold(trx, { platformId, reference: `hold:${sender}`, postings: [{ from: { kind: 'INTERNAL_ACCOUNT', id: sender }, to: { kind: 'INTERNAL_ACCOUNT', id: receiver }, amount: 30n, currency: 'USD' }] }),
    );
    const balances = await internalAccountBalances(ctx.handle.db, platformId, [sender, receiver]);
    expect(balances.get(sender)).toMatchObject({ available: 70n, total: 100n });
    expect(balances.get(receiver)).toMatchObject({ available: 0n, total: 30n });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('a system account of one currency is refused a posting in another (ACCOUNT_MISMATCH), before anything is written', async () => {
    const account = await openUsdAccount();
    const platformId = ctx.platform.uuid;
    const attempt = withTx(ctx.handle.db, (trx) =>
      ledger.transfer(trx, { platformId, reference: `mismatch:${account}`, postings: [{ from: { kind: 'SANDBOX_FUNDING', currency: 'EUR' }, to: { kind: 'INTERNAL_ACCOUNT', id: account }, amount: 5n, currency: 'USD' }] }),
    );
    await expect(attempt).rejects.toBeInstanceOf(LedgerError);
    await expect(attempt).rejects.toMatchObject({ reason: 'ACCOUNT_MISMATCH' });
    expect((await internalAccountBalances(ctx.handle.db, platformId, [account])).get(account)).toMatchObject({ available: 0n, total: 0n });
  });

  it('a replayed reference changes nothing and reports no balance change (no second BALANCE_UPDATED)', async () => {
    const account = await openUsdAccount();
    const input = { platformId: ctx.platform.uuid, reference: `replay:${account}`, postings: [{ from: { kind: 'SANDBOX_FUNDING', currency: 'USD' } as const, to: { kind: 'INTERNAL_ACCOUNT', id: account } as const, amount: 7n, currency: 'USD' }] };
    changes.length = 0;
    const first = await withTx(ctx.handle.db, (trx) => ledger.transfer(trx, input));
    const again = await withTx(ctx.handle.db, (trx) => ledger.transfer(trx, input));
    expect([first.replayed, again.replayed]).toEqual([false, true]);
    expect(again.id).toBe(first.id);
    expect(changes).toEqual([[expect.objectContaining({ accountId: account, available: 7n, total: 7n })]]);
  });
});
