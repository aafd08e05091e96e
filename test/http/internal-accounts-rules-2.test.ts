import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { balances, call, fundedCustomer, type Json } from '../helpers/payments.js';

/**
 * Rules of the internal-accounts module that its other tests leave open: which accounts show
 * `privateEnabled`, the embedded wallet's currency, the requests its routes refuse, which owners'
 * accounts each list shows, and what sandbox funding refuses.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());
afterEach(async () => {
  await expectLedgerConsistent(ctx.handle.db);
});

const currency = (code: string) => ({ currencyCode: code, minAmount: 1, maxAmount: 1_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] });

let seq = 0;
async function customerAccounts(p: TestPlatform, extra: Json = {}): Promise<{ customerId: string; accounts: Json[] }> {
  const created = await call(ctx, p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `ia2-${++seq}`, fullName: 'Ann Lee', ...extra });
  expect(created.statusCode, created.body).toBe(201);
  const customerId = (created.json() as Json).id as string;
  const listed = await call(ctx, p, 'GET', `/customers/internal-accounts?customerId=${customerId}`);
  expect(listed.statusCode, listed.body).toBe(200);
  return { customerId, accounts: (listed.json() as { data: Json[] }).data };
}

const label = (a: Json) => `${a.type}/${a.balance.currency.code}`;
const fund = (p: TestPlatform, accountId: string, amount: number) => call(ctx, p, 'POST', `/sandbox/internal-accounts/${accountId}/fund`, { amount });
const balanceEvents = async (p: TestPlatform, accountId: string) =>
  (await ctx.handle.db.selectFrom('events').select('type').where('platform_id', '=', p.uuid).where('resource_id', '=', accountId).where('type', '=', 'INTERNAL_ACCOUNT.BALANCE_UPDATED').execute()).length;

describe('embedded wallets', () => {
  it('are opened in the first supported currency, and only they carry privateEnabled', async () => {
    const p = await ctx.newPlatform();
    const configured = await call(ctx, p, 'PATCH', '/config', { supportedCurrencies: [currency('EUR'), currency('USD')], embeddedWalletConfig: { appName: 'Acme' } });
    expect(configured.statusCode, configured.body).toBe(200);
    const { accounts } = await customerAccounts(p, { email: 'ann@example.com' });
    expect(accounts.map(label).sort()).toEqual(['EMBEDDED_WALLET/EUR', 'INTERNAL_FIAT/EUR', 'INTERNAL_FIAT/USD']);
    for (const account of accounts) {
      if (account.type === 'EMBEDDED_WALLET') expect(account.privateEnabled).toBe(false);
      else expect(account, label(account)).not.toHaveProperty('privateEnabled');
    }
    // The platform's own accounts are never wallets, and carry no privateEnabled either.
    const own = ((await call(ctx, p, 'GET', '/platform/internal-accounts')).json() as { data: Json[] }).data;
    expect(own.map(label).sort()).toEqual(['INTERNAL_FIAT/EUR', 'INTERNAL_FIAT/USD']);
    for (const account of own) expect(account).not.toHaveProperty('privateEnabled');
  });
});

describe('requests the module does not take', () => {
  it('an unknown query parameter on either list, an empty or unknown wallet update, an unknown funding field: 400 INVALID_INPUT naming it', async () => {
    const p = await ctx.newPlatform();
    expect((await call(ctx, p, 'PATCH', '/config', { embeddedWalletConfig: { appName: 'Acme' } })).statusCode).toBe(200);
    const { customerId, accounts } = await customerAccounts(p, { email: 'ann@example.com' });
    const wallet = accounts.find((a) => a.type === 'EMBEDDED_WALLET')!;
    const fiat = accounts.find((a) => a.type === 'INTERNAL_FIAT')!;
    const fields = (body: { details?: Record<string, unknown> }) => (body.details!.errors as Array<{ field: string }>).map((e) => e.field);
    expect(fields(expectEnvelope(await call(ctx, p, 'GET', '/customers/internal-accounts?status=ACTIVE'), 400, 'INVALID_INPUT'))).toEqual(['status']);
    expect(fields(expectEnvelope(await call(ctx, p, 'GET', `/platform/internal-accounts?customerId=${customerId}`), 400, 'INVALID_INPUT'))).toEqual(['customerId']);
    expectEnvelope(await call(ctx, p, 'PATCH', `/internal-accounts/${wallet.id}`, {}), 400, 'INVALID_INPUT');
    expect(fields(expectEnvelope(await call(ctx, p, 'PATCH', `/internal-accounts/${wallet.id}`, { privateEnabled: true, hidden: true }), 400, 'INVALID_INPUT'))).toEqual(['hidden']);
    expect(fields(expectEnvelope(await call(ctx, p, 'POST', `/sandbox/internal-accounts/${fiat.id}/fund`, { amount: 100, currency: 'EUR' }), 400, 'INVALID_INPUT'))).toEqual(['currency']);
    expect(await balanceEvents(p, fiat.id)).toBe(0);
  });
});

describe('the two lists', () => {
  it("each show only their owners' accounts: the platform's its own, the customers' theirs, filtered or not", async () => {
    const p = await ctx.newPlatform();
    const own = ((await call(ctx, p, 'GET', '/platform/internal-accounts')).json() as { data: Json[] }).data;
    const { customerId } = await customerAccounts(p);
    for (const query of ['', '?currency=USD', '?type=INTERNAL_FIAT']) {
      const platformList = ((await call(ctx, p, 'GET', `/platform/internal-accounts${query}`)).json() as { data: Json[] }).data;
      expect(platformList.map((a) => a.id), query).toEqual(own.map((a) => a.id));
      for (const account of platformList) expect(account).not.toHaveProperty('customerId');
      const customerList = ((await call(ctx, p, 'GET', `/customers/internal-accounts${query}`)).json() as { data: Json[] }).data;
      expect(customerList.map((a) => `${a.customerId as string} ${label(a)}`), query).toEqual([`${customerId} INTERNAL_FIAT/USD`]);
    }
  });
});

describe('POST /sandbox/internal-accounts/{id}/fund refuses', () => {
  it('an account that is not ACTIVE: 409, nothing credited, no BALANCE_UPDATED', async () => {
    const p = await ctx.newPlatform();
    const c = await fundedCustomer(ctx, p, 0);
    // No route freezes an account: the provider's state, written as its sync would.
    await ctx.handle.db.updateTable('internal_accounts').set({ status: 'FROZEN' }).where('platform_id', '=', p.uuid).where('id', '=', c.accountId.slice('InternalAccount:'.length)).execute();
    const refused = expectEnvelope(await fund(p, c.accountId, 5_000), 409, 'CONFLICT');
    expect(refused.message).toContain('FROZEN');
    expect(await balances(ctx, p, c.customerId)).toEqual({ available: 0, total: 0 });
    expect(await balanceEvents(p, c.accountId)).toBe(0);
  });

  it('an account of a deleted customer: 409 naming the reason, the account and the customer; nothing credited', async () => {
    const p = await ctx.newPlatform();
    const c = await fundedCustomer(ctx, p, 0);
    expect((await call(ctx, p, 'DELETE', `/customers/${c.customerId}`)).statusCode).toBe(200);
    const refused = expectEnvelope(await fund(p, c.accountId, 5_000), 409, 'CONFLICT');
    expect(refused.details).toEqual({ reason: 'CUSTOMER_DELETED', accountId: c.accountId, customerId: c.customerId });
    expect(await balanceEvents(p, c.accountId)).toBe(0);
  });
});
