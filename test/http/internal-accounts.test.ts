import { readFileSync } from 'node:fs';
import bolt11 from 'bolt11';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkBolt11 } from '../../src/modules/external-accounts/formats.js';
import { findCustomerAccountIn, provisionCustomerAccounts } from '../../src/modules/internal-accounts/index.js';
import { invoiceExpiresAt } from '../../src/modules/internal-accounts/funding-instructions.js';
import { FundingDeposits } from '../../src/modules/transactions/index.js';
import { CRYPTO_CURRENCY_CODES } from '../../src/platform/currencies.js';
import { withTx } from '../../src/platform/db/tx.js';
import { OffsetPlatformClock } from '../../src/platform/platform-clock.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';

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

const currencyConfig = (code: string) => ({ currencyCode: code, minAmount: 1, maxAmount: 1_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] });
type Info = Record<string, string | string[]> & { accountType: string };
type FundedAccount = Account & { updatedAt: string; fundingPaymentInstructions: Array<{ accountOrWalletInfo: Info }> };
const platformAccounts = async (p: TestPlatform, query = '') => ((await call(p, 'GET', `/platform/internal-accounts${query}`)).json() as { data: FundedAccount[] }).data;
const label = (a: Account) => `${a.type}/${a.balance.currency.code}`;

describe('account types', () => {
  it('holds crypto currencies in INTERNAL_CRYPTO accounts and fiat ones in INTERNAL_FIAT, for customers and the platform, and filters by them', async () => {
    const p = await ctx.newPlatform();
    const configured = await call(p, 'PATCH', '/config', { supportedCurrencies: ['USD', 'BTC', 'USDC'].map(currencyConfig), embeddedWalletConfig: { appName: 'Acme' } });
    expect(configured.statusCode, configured.body).toBe(200);
    const customer = await createIndividual(p, { email: 'cy@example.com' });
    const all = await customerAccounts(p, `?customerId=${customer.id}`);
    expect(all.data.map(label).sort()).toEqual(['EMBEDDED_WALLET/USD', 'INTERNAL_CRYPTO/BTC', 'INTERNAL_CRYPTO/USDC', 'INTERNAL_FIAT/USD']);
    const crypto = await customerAccounts(p, `?customerId=${customer.id}&type=INTERNAL_CRYPTO`);
    expect(crypto.data.map(label).sort()).toEqual(['INTERNAL_CRYPTO/BTC', 'INTERNAL_CRYPTO/USDC']);
    expect(crypto.totalCount).toBe(2);
    // examples/first-payment.mjs finds the USD account this way.
    expect((await customerAccounts(p, `?customerId=${customer.id}&currency=USD&type=INTERNAL_FIAT`)).data.map(label)).toEqual(['INTERNAL_FIAT/USD']);
    expect((await customerAccounts(p, `?customerId=${customer.id}&type=INTERNAL_FIAT`)).data.map(label)).toEqual(['INTERNAL_FIAT/USD']);
    expect((await customerAccounts(p, '?type=INTERNAL_CRYPTO&currency=BTC')).data.map(label)).toEqual(['INTERNAL_CRYPTO/BTC']);

    expect((await platformAccounts(p)).map(label)).toEqual(['INTERNAL_FIAT/USD', 'INTERNAL_CRYPTO/BTC', 'INTERNAL_CRYPTO/USDC']);
    expect((await platformAccounts(p, '?type=INTERNAL_CRYPTO')).map(label)).toEqual(['INTERNAL_CRYPTO/BTC', 'INTERNAL_CRYPTO/USDC']);
    expect((await platformAccounts(p, '?type=INTERNAL_FIAT')).map(label)).toEqual(['INTERNAL_FIAT/USD']);

    // A payment to the customer in a crypto currency is credited to its INTERNAL_CRYPTO account (never the wallet).
    const btc = all.data.find((a) => a.type === 'INTERNAL_CRYPTO' && a.balance.currency.code === 'BTC')!;
    const usd = all.data.find((a) => a.type === 'INTERNAL_FIAT')!;
    const customerUuid = customer.id!.toString().replace('Customer:', '');
    expect((await findCustomerAccountIn(ctx.handle.db, p.uuid, customerUuid, 'BTC'))?.id).toBe(btc.id);
    expect((await findCustomerAccountIn(ctx.handle.db, p.uuid, customerUuid, 'USD'))?.id).toBe(usd.id);
  });

  it('migration 0036 re-types existing crypto accounts in place, and provisioning then opens no second one', async () => {
    const p = await ctx.newPlatform();
    const codes = ['USD', 'EUR', ...CRYPTO_CURRENCY_CODES];
    expect((await call(p, 'PATCH', '/config', { supportedCurrencies: codes.map(currencyConfig), embeddedWalletConfig: { appName: 'Acme' } })).statusCode).toBe(200);
    const ann = await createIndividual(p, { email: 'ann@example.com' });
    const bob = await createIndividual(p);
    const platformBefore = await platformAccounts(p);
    const before = (await customerAccounts(p)).data;
    // As every account was before the fix: INTERNAL_FIAT whatever its currency.
    await ctx.handle.db.updateTable('internal_accounts').set({ type: 'INTERNAL_FIAT' }).where('platform_id', '=', p.uuid).where('type', '=', 'INTERNAL_CRYPTO').execute();
    expect((await customerAccounts(p, '?type=INTERNAL_CRYPTO')).data).toEqual([]);
    // An owner that already has both (an old process wrote INTERNAL_FIAT, a new one INTERNAL_CRYPTO): left for the operator, not a failed migration.
    const bobUuid = String(bob.id).replace('Customer:', '');
    expect(await withTx(ctx.handle.db, (trx) => provisionCustomerAccounts(trx, ctx.clock, p.uuid, bobUuid, null))).toBe(CRYPTO_CURRENCY_CODES.size);

    await sql.raw(readFileSync(new URL('../../migrations/0036_internal_crypto_accounts.sql', import.meta.url), 'utf8')).execute(ctx.handle.db);

    const after = (await customerAccounts(p, `?customerId=${ann.id}`)).data;
    const annBefore = before.filter((a) => a.customerId === ann.id);
    // Same accounts (ids, instructions, balances), crypto ones now INTERNAL_CRYPTO; fiat and the wallet as they were.
    expect(after.map((a) => a.id).sort()).toEqual(annBefore.map((a) => a.id).sort());
    expect(after.map(label).sort()).toEqual(['EMBEDDED_WALLET/USD', 'INTERNAL_CRYPTO/BTC', 'INTERNAL_CRYPTO/USDC', 'INTERNAL_CRYPTO/USDT', 'INTERNAL_FIAT/EUR', 'INTERNAL_FIAT/USD']);
    for (const account of after) expect(account).toEqual(annBefore.find((a) => a.id === account.id));
    const platformAfter = await platformAccounts(p);
    expect(platformAfter).toEqual(platformBefore);
    expect(platformAfter.map(label)).toEqual(['INTERNAL_FIAT/USD', 'INTERNAL_FIAT/EUR', 'INTERNAL_CRYPTO/BTC', 'INTERNAL_CRYPTO/USDC', 'INTERNAL_CRYPTO/USDT']);
    const bobs = (await customerAccounts(p, `?customerId=${bob.id}`)).data.map(label).sort();
    expect(bobs).toEqual(['INTERNAL_CRYPTO/BTC', 'INTERNAL_CRYPTO/USDC', 'INTERNAL_CRYPTO/USDT', 'INTERNAL_FIAT/BTC', 'INTERNAL_FIAT/EUR', 'INTERNAL_FIAT/USD', 'INTERNAL_FIAT/USDC', 'INTERNAL_FIAT/USDT']);

    // Provisioning again (a new approval path, a config change) finds every account there.
    const annUuid = String(ann.id).replace('Customer:', '');
    expect(await withTx(ctx.handle.db, (trx) => provisionCustomerAccounts(trx, ctx.clock, p.uuid, annUuid, 'ann@example.com'))).toBe(0);
    expect((await platformAccounts(p)).map((a) => a.id)).toEqual(platformBefore.map((a) => a.id));
  });
});

describe('Lightning funding invoice', () => {
  const lightning = (account: FundedAccount) => account.fundingPaymentInstructions.find((i) => i.accountOrWalletInfo.accountType === 'LIGHTNING')!.accountOrWalletInfo.invoice as string;
  const description = (invoice: string) => bolt11.decode(invoice).tags.find((t) => t.tagName === 'description')!.data as string;
  const platformNow = async (p: TestPlatform) => new Date(((await call(p, 'GET', '/sandbox/clock')).json() as { now: string }).now);
  const advanceYear = async (p: TestPlatform) => expect((await call(p, 'POST', '/sandbox/clock/advance', { seconds: 366 * 86_400 })).statusCode).toBe(200);
  const btcAccount = async (p: TestPlatform, customerId: string) => (await customerAccounts(p, `?customerId=${customerId}&currency=BTC`)).data[0] as FundedAccount;
  const renewals = async (p: TestPlatform, accountId: string) =>
    (await ctx.handle.db.selectFrom('events').select('type').where('platform_id', '=', p.uuid).where('resource_id', '=', accountId).where('type', '=', 'INTERNAL_ACCOUNT.FUNDING_INSTRUCTIONS_UPDATED').execute()).length;

  it('is renewed when read after the sandbox clock passes its expiry, passes the BOLT11 check, keeps the reference, and deposits to old and new invoices reach the account', async () => {
    const p = await ctx.newPlatform();
    expect((await call(p, 'PATCH', '/config', { supportedCurrencies: ['USD', 'BTC'].map(currencyConfig) })).statusCode).toBe(200);
    const customer = await createIndividual(p);
    const ownBefore = (await platformAccounts(p, '?currency=BTC'))[0]!;
    const opened = await btcAccount(p, customer.id as string);
    const first = lightning(opened);
    expect(checkBolt11(first, 'mainnet', await platformNow(p))).toBeUndefined();
    expect(invoiceExpiresAt(first)).toBe(bolt11.decode(first).timeExpireDate! * 1000);
    // Reads before it is due write nothing.
    expect(await btcAccount(p, customer.id as string)).toEqual(opened);

    await advanceYear(p);
    const now = await platformNow(p);
    expect(checkBolt11(first, 'mainnet', now)).toBe('has expired');
    // Reads at once (on PostgreSQL, concurrent) store one new invoice and all serve it.
    const [renewed, ...others] = (await Promise.all([1, 2, 3].map(() => btcAccount(p, customer.id as string)))) as [FundedAccount, ...FundedAccount[]];
    for (const other of others) expect(other).toEqual(renewed);
    const second = lightning(renewed);
    expect(second).not.toBe(first);
    expect(checkBolt11(second, 'mainnet', now)).toBeUndefined();
    expect(bolt11.decode(second).timeExpireDate! * 1000).toBeGreaterThan(now.getTime() + 300 * 86_400_000);
    expect(invoiceExpiresAt(second)).toBe(bolt11.decode(second).timeExpireDate! * 1000);
    // The same account and reference; only the invoice changed, and the platform was told once.
    expect(description(second)).toBe(description(first));
    const withoutInvoice = (a: FundedAccount) => ({ ...a, updatedAt: undefined, fundingPaymentInstructions: a.fundingPaymentInstructions.filter((i) => i.accountOrWalletInfo.accountType !== 'LIGHTNING') });
    expect(withoutInvoice(renewed)).toEqual(withoutInvoice(opened));
    expect(await renewals(p, opened.id)).toBe(1);
    // Stored: every later read serves it, and writes nothing more.
    expect(await btcAccount(p, customer.id as string)).toEqual(renewed);
    expect((await customerAccounts(p, '?type=INTERNAL_CRYPTO')).data).toEqual([renewed]);
    expect(await renewals(p, opened.id)).toBe(1);

    // The platform's own BTC account too.
    const own = (await platformAccounts(p, '?currency=BTC'))[0]!;
    expect(own.id).toBe(ownBefore.id);
    expect(checkBolt11(lightning(ownBefore), 'mainnet', now)).toBe('has expired');
    expect(checkBolt11(lightning(own), 'mainnet', now)).toBeUndefined();
    expect(await renewals(p, own.id)).toBe(1);

    // A deposit to the current invoice, and one to the replaced invoice (paid before it expired, reported after), both credit the account.
    const deposits = new FundingDeposits({ clock: ctx.clock, platformClock: new OffsetPlatformClock(ctx.handle.db, ctx.clock), ledger: ctx.ledger });
    for (const [depositId, reference] of [['ln-new', second], ['ln-old', first]] as const) {
      const outcome = await withTx(ctx.handle.db, (trx) => deposits.receive(trx, { depositId, reference, currency: 'BTC', amount: 1_000n, rail: 'LIGHTNING' }, { platformId: p.uuid }));
      expect(outcome.credited, depositId).toBe(true);
      expect(outcome.credited && outcome.transaction.destination_account_id).toBe(opened.id.replace('InternalAccount:', ''));
    }
    expect((await btcAccount(p, customer.id as string)).balance).toMatchObject({ amount: 2_000 });
    // The sandbox's simulated deposit takes the replaced invoice too (a Lightning invoice runs past 256 characters).
    const viaSandbox = await call(p, 'POST', '/sandbox/deposits', { reference: first, amount: 500, depositId: 'ln-old-sandbox' });
    expect(viaSandbox.statusCode, viaSandbox.body).toBe(200);
    expect((await btcAccount(p, customer.id as string)).balance).toMatchObject({ amount: 2_500 });
    // An invoice naming the reference of an account not funded by Lightning (the USD one), or a corrupted one, names no account.
    const usd = (await customerAccounts(p, `?customerId=${customer.id}&currency=USD`)).data[0] as FundedAccount;
    const usdReference = usd.fundingPaymentInstructions[0]!.accountOrWalletInfo.reference as string;
    const unsigned = bolt11.encode({
      network: { bech32: 'bc', pubKeyHash: 0x00, scriptHash: 0x05, validWitnessVersions: [0, 1] },
      timestamp: Math.floor(now.getTime() / 1000),
      tags: [
        { tagName: 'payment_hash', data: '11'.repeat(32) },
        { tagName: 'payment_secret', data: '22'.repeat(32) },
        { tagName: 'description', data: `Deposit to Corridor account ${usdReference}` },
      ],
    });
    const foreign = bolt11.sign(unsigned, '33'.repeat(32)).paymentRequest!;
    const corrupted = first.slice(0, -1) + (first.endsWith('q') ? 'p' : 'q');
    for (const reference of [foreign, corrupted]) {
      const outcome = await withTx(ctx.handle.db, (trx) => deposits.receive(trx, { depositId: `ln-bad-${reference.length}`, reference, currency: 'BTC', amount: 1n, rail: 'LIGHTNING' }, { platformId: p.uuid }));
      expect(outcome).toEqual({ credited: false, reason: 'UNKNOWN_REFERENCE' });
    }

    // Sandbox funding answers current instructions too.
    await advanceYear(p);
    const funded = (await call(p, 'POST', `/sandbox/internal-accounts/${opened.id}/fund`, { amount: 5 })).json() as FundedAccount;
    expect(lightning(funded)).not.toBe(second);
    expect(checkBolt11(lightning(funded), 'mainnet', await platformNow(p))).toBeUndefined();
    expect(await renewals(p, opened.id)).toBe(2);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('of an account opened after the sandbox clock moved is dated by the platform’s time', async () => {
    const p = await ctx.newPlatform();
    expect((await call(p, 'PATCH', '/config', { supportedCurrencies: ['BTC'].map(currencyConfig) })).statusCode).toBe(200);
    await advanceYear(p);
    await advanceYear(p);
    const customer = await createIndividual(p);
    const account = await btcAccount(p, customer.id as string);
    expect(checkBolt11(lightning(account), 'mainnet', await platformNow(p))).toBeUndefined();
    expect(await renewals(p, account.id)).toBe(0);
  });
});
