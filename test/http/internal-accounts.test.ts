import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
type Account = Body & { id: string; type: string; customerId?: string; balance: { currency: { code: string } } };

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

let seq = 0;
async function createIndividual(p: TestPlatform, extra: Body = {}): Promise<Body> {
  const response = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `acc-${++seq}`, fullName: 'Ann Lee', ...extra });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Body;
}

const customerAccounts = async (p: TestPlatform, query = '') =>
  (await call(p, 'GET', `/customers/internal-accounts${query}`)).json() as { data: Account[]; hasMore: boolean; totalCount: number; nextCursor?: string };

const zero = (code: string, name: string, symbol: string) => ({ amount: 0, currency: { code, name, symbol, decimals: 2 } });

describe('customer internal accounts', () => {
  it('opens one USD fiat account when a sandbox individual is approved at creation', async () => {
    const p = await ctx.newPlatform();
    const customer = await createIndividual(p);
    expect(customer.kycStatus).toBe('APPROVED');
    const list = await customerAccounts(p);
    expect(list).toMatchObject({ hasMore: false, totalCount: 1 });
    const [account] = list.data;
    expect(account).toEqual({
      id: expect.stringMatching(/^InternalAccount:[0-9a-f-]{36}$/),
      customerId: customer.id,
      type: 'INTERNAL_FIAT',
      status: 'ACTIVE',
      balance: zero('USD', 'US Dollar', '$'),
      totalBalance: zero('USD', 'US Dollar', '$'),
      fundingPaymentInstructions: [
        {
          instructionsNotes: expect.any(String),
          isPlatformAccount: false,
          accountOrWalletInfo: {
            accountType: 'USD_ACCOUNT',
            accountNumber: expect.stringMatching(/^[1-9]\d{11}$/),
            routingNumber: '260073990',
            bankName: 'Corridor Partner Bank, N.A.',
            bankAddress: expect.any(String),
            paymentRails: ['ACH', 'WIRE', 'RTP', 'FEDNOW'],
            reference: expect.stringMatching(/^CDR[0-9A-Z]{13}$/),
          },
        },
      ],
      createdAt: customer.createdAt,
      updatedAt: customer.createdAt,
    });
    const events = await ctx.handle.db.selectFrom('events').select(['type', 'resource_id']).where('platform_id', '=', p.uuid).execute();
    expect(events.filter((e) => e.type.startsWith('CUSTOMER.'))).toEqual([{ type: 'CUSTOMER.KYC_APPROVED', resource_id: customer.id }]);
  });

  it('opens one fiat account per supported currency plus an embedded wallet when configured', async () => {
    const p = await ctx.newPlatform();
    const currency = (code: string) => ({ currencyCode: code, minAmount: 1, maxAmount: 1000, requiredCounterpartyFields: [], enabledTransactionTypes: ['OUTGOING'] });
    const configured = await call(p, 'PATCH', '/config', { supportedCurrencies: [currency('USD'), currency('EUR')], embeddedWalletConfig: { appName: 'Acme' } });
    expect(configured.statusCode).toBe(200);
    const customer = await createIndividual(p, { email: 'ann@example.com' });
    const list = await customerAccounts(p, `?customerId=${customer.id}`);
    expect(list.data.map((a) => `${a.type}/${a.balance.currency.code}`).sort()).toEqual(['EMBEDDED_WALLET/USD', 'INTERNAL_FIAT/EUR', 'INTERNAL_FIAT/USD']);
    const wallet = list.data.find((a) => a.type === 'EMBEDDED_WALLET')!;
    expect(wallet.fundingPaymentInstructions).toEqual([]);
    const eur = list.data.find((a) => a.balance.currency.code === 'EUR')!;
    const wallets = await customerAccounts(p, '?type=EMBEDDED_WALLET');
    expect(wallets.data).toHaveLength(1);
    expect(wallets).not.toHaveProperty('totalCount');
    expect((await customerAccounts(p, '?currency=EUR')).data.map((a) => a.id)).toEqual([eur.id]);
    const page = await customerAccounts(p, '?limit=2');
    expect(page).toMatchObject({ hasMore: true, totalCount: 3 });
    const rest = await customerAccounts(p, `?limit=2&cursor=${page.nextCursor}`);
    expect([...page.data, ...rest.data].map((a) => a.id).sort()).toEqual(list.data.map((a) => a.id).sort());
  });

  it('opens nothing for businesses, production individuals, or when sandbox auto-approval is off', async () => {
    const p = await ctx.newPlatform();
    const biz = await call(p, 'POST', '/customers', {
      customerType: 'BUSINESS',
      businessInfo: { legalName: 'Acme', country: 'GB', incorporatedOn: '2020-01-01', taxId: 'GB123' },
    });
    expect((biz.json() as Body).kybStatus).toBe('UNVERIFIED');
    const settings = await call(p, 'PATCH', '/customers/settings', { sandboxAutoApprove: false });
    expect(settings.json()).toEqual({ sandboxAutoApprove: false, platformKyc: false });
    expect((await call(p, 'GET', '/customers/settings')).json()).toEqual({ sandboxAutoApprove: false, platformKyc: false });
    expect((await createIndividual(p)).kycStatus).toBe('UNVERIFIED');
    const production = await ctx.newPlatform('production');
    expect((await createIndividual(production)).kycStatus).toBe('UNVERIFIED');
    expect((await customerAccounts(p)).data).toEqual([]);
    expect((await customerAccounts(production)).data).toEqual([]);
  });

  it("never shows another platform's accounts, even when filtering by its customer id", async () => {
    const [p1, p2] = [await ctx.newPlatform(), await ctx.newPlatform()];
    const theirs = await createIndividual(p2);
    expect((await customerAccounts(p1, `?customerId=${theirs.id}`)).data).toEqual([]);
    expect((await customerAccounts(p2, `?customerId=${theirs.id}`)).data).toHaveLength(1);
  });

  it('rejects bad filters, naming each', async () => {
    const body = expectEnvelope(await call(ctx.platform, 'GET', '/customers/internal-accounts?type=SAVINGS&customerId=abc&currency=usd'), 400, 'INVALID_INPUT');
    expect((body.details!.errors as Array<{ field: string }>).map((e) => e.field).sort()).toEqual(['currency', 'customerId', 'type']);
  });
});

describe('platform internal accounts', () => {
  it('holds one fiat account per supported currency, the same on every read', async () => {
    const p = await ctx.newPlatform();
    const first = (await call(p, 'GET', '/platform/internal-accounts')).json() as { data: Account[] };
    expect(first.data).toHaveLength(1);
    expect(first.data[0]).toMatchObject({ type: 'INTERNAL_FIAT', status: 'ACTIVE', balance: zero('USD', 'US Dollar', '$') });
    expect(first.data[0]).not.toHaveProperty('customerId');
    expect((first.data[0]!.fundingPaymentInstructions as Body[])[0]!.isPlatformAccount).toBe(true);
    expect((await call(p, 'GET', '/platform/internal-accounts')).json()).toEqual(first);
    expect((await customerAccounts(p)).data).toEqual([]);

    const currency = (code: string) => ({ currencyCode: code, minAmount: 1, maxAmount: 1000, requiredCounterpartyFields: [], enabledTransactionTypes: ['OUTGOING'] });
    await call(p, 'PATCH', '/config', { supportedCurrencies: [currency('USD'), currency('MXN')] });
    const after = (await call(p, 'GET', '/platform/internal-accounts')).json() as { data: Account[] };
    expect(after.data.map((a) => a.balance.currency.code)).toEqual(['USD', 'MXN']);
    expect(after.data[0]).toEqual(first.data[0]);
    expect(((await call(p, 'GET', '/platform/internal-accounts?currency=MXN')).json() as { data: Account[] }).data).toHaveLength(1);
    expect(((await call(p, 'GET', '/platform/internal-accounts?type=EMBEDDED_WALLET')).json() as { data: Account[] }).data).toEqual([]);

    const other = await ctx.newPlatform();
    const theirs = (await call(other, 'GET', '/platform/internal-accounts')).json() as { data: Account[] };
    expect(theirs.data.map((a) => a.id)).not.toContain(first.data[0]!.id);
  });
});
