import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTx } from '../../src/platform/db/tx.js';
import { formatId, parseId } from '../../src/platform/ids.js';
import { setReviewStatus } from '../../src/modules/customers/index.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { solanaWallet, validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { drainJobs } from '../helpers/payments.js';

type Body = Record<string, unknown>;
type Quote = {
  id: string;
  status: string;
  createdAt: string;
  expiresAt: string;
  source: Body;
  destination: Body;
  sendingCurrency: { code: string; decimals: number };
  receivingCurrency: { code: string };
  totalSendingAmount: number;
  totalReceivingAmount: number;
  exchangeRate: number;
  feesIncluded: number;
  platformFeesIncluded: number;
  paymentInstructions?: Array<{ isPlatformAccount?: boolean; accountOrWalletInfo: Body & { accountType: string } }>;
  transactionId: string;
  rateDetails: Record<string, number>;
};
type Account = { id: string; currency?: string; balance: { amount: number }; totalBalance: { amount: number } };

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({
    env: {
      CORRIDOR_MAX_TRANSACTION: JSON.stringify({ 'USD:MXN': 50_000, USD: 10_000_000 }),
      CORRIDOR_DAILY_VOLUME_LIMIT: JSON.stringify({ EUR: 100_000 }),
    },
  });
});
afterAll(() => ctx.close());

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: unknown, headers: Record<string, string> = {}) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth, ...headers }, ...(payload === undefined ? {} : { payload: payload as object }) });

const consent = () => ({ acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' });
const currencyConfig = (code: string, extra: Body = {}) => ({ currencyCode: code, minAmount: 1, maxAmount: 100_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'], ...extra });

let seq = 0;
async function customer(p: TestPlatform, options: { terms?: boolean } = {}): Promise<{ id: string; accounts: Account[] }> {
  const created = await call(p, 'POST', '/customers', {
    customerType: 'INDIVIDUAL',
    platformCustomerId: `q-${++seq}`,
    fullName: 'Ann Lee',
    ...(options.terms === false ? {} : { endUserTermsConsent: consent() }),
  });
  expect(created.statusCode, created.body).toBe(201);
  const id = (created.json() as { id: string }).id;
  const accounts = ((await call(p, 'GET', `/customers/internal-accounts?customerId=${id}`)).json() as { data: Array<Account & { balance: { currency: { code: string } } }> }).data;
  return { id, accounts: accounts.map((a) => ({ ...a, currency: a.balance.currency.code })) };
}

async function fund(p: TestPlatform, accountId: string, amount: number) {
  const funded = await call(p, 'POST', `/sandbox/internal-accounts/${accountId}/fund`, { amount });
  expect(funded.statusCode, funded.body).toBe(200);
}

async function externalAccount(p: TestPlatform, type: string, extra: Body = {}, info: Body = {}): Promise<string> {
  const sample = validSamples(ctx.clock.now())[type]!;
  const created = await call(p, 'POST', '/platform/external-accounts', { ...sample, ...extra, accountInfo: { ...sample.accountInfo, ...(extra.accountInfo as Body), ...info } });
  expect(created.statusCode, created.body).toBe(201);
  return (created.json() as { id: string }).id;
}

async function account(p: TestPlatform, id: string): Promise<Account> {
  const list = ((await call(p, 'GET', '/customers/internal-accounts?limit=100')).json() as { data: Account[] }).data;
  const own = ((await call(p, 'GET', '/platform/internal-accounts')).json() as { data: Account[] }).data;
  return [...list, ...own].find((a) => a.id === id)!;
}

const quote = (p: TestPlatform, body: Body, headers: Record<string, string> = {}) => call(p, 'POST', '/quotes', body, headers);
const execute = (p: TestPlatform, id: string, headers: Record<string, string> = {}) => call(p, 'POST', `/quotes/${id}/execute`, undefined, headers);
const fromAccount = (accountId: string) => ({ sourceType: 'ACCOUNT', accountId });
const toAccount = (accountId: string, paymentRail?: string) => ({ destinationType: 'ACCOUNT', accountId, ...(paymentRail ? { paymentRail } : {}) });

/** A sandbox platform with a funded customer and payout accounts in EUR, MXN and USD. */
async function world(funding = 1_000_000) {
  const p = await ctx.newPlatform();
  const sender = await customer(p);
  const usd = sender.accounts[0]!;
  if (funding > 0) await fund(p, usd.id, funding);
  return { p, sender, usd, eur: await externalAccount(p, 'EUR_ACCOUNT'), mxn: await externalAccount(p, 'MXN_ACCOUNT'), usdOut: await externalAccount(p, 'USD_ACCOUNT') };
}

describe('POST /quotes, GET /quotes/{id}', () => {
  it('fixes a cross-currency price (SENDING locked): every field upstream requires, the listing’s numbers, expiry per rail', async () => {
    const { p, usd, eur } = await world();
    const listed = ((await call(p, 'GET', '/exchange-rates?destinationCurrency=EUR&sendingAmount=10000')).json() as { data: Array<Body> }).data.find(
      (r) => r.destinationPaymentRail === 'SEPA_INSTANT',
    )!;
    const created = await quote(p, { source: fromAccount(usd.id), destination: toAccount(eur, 'SEPA_INSTANT'), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 10000, description: 'Invoice 7', remittanceInformation: 'INV-7', purposeOfPayment: 'GOODS_OR_SERVICES' });
    expect(created.statusCode, created.body).toBe(201);
    const q = created.json() as Quote;
    for (const key of ['id', 'status', 'expiresAt', 'createdAt', 'source', 'destination', 'sendingCurrency', 'receivingCurrency', 'totalSendingAmount', 'totalReceivingAmount', 'exchangeRate', 'feesIncluded', 'transactionId']) {
      expect(q).toHaveProperty(key);
    }
    expect(q).toMatchObject({
      status: 'PENDING',
      source: { sourceType: 'ACCOUNT', accountId: usd.id },
      destination: { destinationType: 'ACCOUNT', accountId: eur, paymentRail: 'SEPA_INSTANT' },
      sendingCurrency: { code: 'USD', decimals: 2 },
      receivingCurrency: { code: 'EUR' },
      totalSendingAmount: 10000,
      totalReceivingAmount: listed.receivingAmount,
      exchangeRate: listed.exchangeRate,
      feesIncluded: (listed.fees as { total: number }).total,
      platformFeesIncluded: 0,
      rateDetails: { counterpartyMultiplier: 0.866, gridApiMultiplier: 0.863835, gridApiFixedFee: 30, gridApiVariableFeeRate: 0.0005, counterpartyFixedFee: 0 },
    });
    expect(q.id).toMatch(/^Quote:/);
    expect(q.transactionId).toMatch(/^Transaction:/);
    expect(q.paymentInstructions).toBeUndefined();
    // SEPA Instant holds its rate 60 s.
    expect(Date.parse(q.expiresAt) - ctx.clock.now().getTime()).toBe(60_000);
    expect(q.rateDetails.gridApiFixedFee + q.rateDetails.gridApiVariableFeeAmount).toBe(q.feesIncluded);
    expect((await call(p, 'GET', `/quotes/${q.id}`)).json()).toEqual(q);
    // Nothing moved.
    expect((await account(p, usd.id)).balance.amount).toBe(1_000_000);
  });

  it('RECEIVING locked: the receiver gets exactly the amount; the default rail is the account’s first; the total is sent + fees', async () => {
    const { p, usd, mxn } = await world();
    const q = (await quote(p, { source: fromAccount(usd.id), destination: toAccount(mxn), lockedCurrencySide: 'RECEIVING', lockedCurrencyAmount: 100_000 })).json() as Quote;
    expect(q).toMatchObject({ totalReceivingAmount: 100_000, destination: { paymentRail: 'SPEI' }, exchangeRate: 18.311625 });
    // 1000 MXN at 18.311625 (18.45 less 75 bps) is 5461.0… USD cents, rounded up; SPEI: 30 + 10 bps of it.
    const sent = Math.ceil((100_000 * 1e6) / 18_311_625);
    expect(q.totalSendingAmount).toBe(sent + 30 + Math.round(sent * 0.001));
    expect(q.feesIncluded).toBe(30 + Math.round(sent * 0.001));
  });

  it('takes the destination account’s own currency in destination.currency, as the upstream’s wallet walkthrough sends it, and no other', async () => {
    const { p, usd, mxn } = await world();
    const request = (currency: string) => ({ source: fromAccount(usd.id), destination: { ...toAccount(mxn), currency }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 10_000 });
    const same = await quote(p, request('MXN'));
    expect(same.statusCode, same.body).toBe(201);
    expect(same.json()).toMatchObject({ receivingCurrency: { code: 'MXN' }, destination: { accountId: mxn } });
    const other = expectEnvelope(await quote(p, request('USD')), 400, 'INVALID_INPUT');
    expect(other.details).toMatchObject({ errors: [{ field: 'destination.currency' }] });
  });

  it('same currency: rate 1, the rail’s fee only, no cross-currency platform fee', async () => {
    const { p, usd, usdOut } = await world();
    await call(p, 'PATCH', '/config', { feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 100, fixedFee: { amount: 50, currency: 'USD' } }] });
    const q = (await quote(p, { source: fromAccount(usd.id), destination: toAccount(usdOut, 'ACH'), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 5000 })).json() as Quote;
    expect(q).toMatchObject({ exchangeRate: 1, totalSendingAmount: 5000, totalReceivingAmount: 4975, feesIncluded: 25, platformFeesIncluded: 0 });
  });

  it('adds the platform’s configured fee to cross-currency quotes, or the per-quote override (USD sources only)', async () => {
    const { p, usd, eur } = await world();
    await call(p, 'PATCH', '/config', { feeConfigs: [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', variableFeeBps: 100, fixedFee: { amount: 50, currency: 'USD' } }] });
    const body = { source: fromAccount(usd.id), destination: toAccount(eur, 'SEPA'), lockedCurrencySide: 'RECEIVING', lockedCurrencyAmount: 86_383 };
    const configured = (await quote(p, body)).json() as Quote;
    const sent = configured.totalSendingAmount - configured.feesIncluded;
    expect(configured.platformFeesIncluded).toBe(50 + Math.round(sent * 0.01));
    expect(configured.feesIncluded).toBe(configured.platformFeesIncluded + 20 + Math.round(sent * 0.0005));
    const overridden = (await quote(p, { ...body, platformFeeOverride: { platformFixedFee: { amount: 0, currency: 'USD' }, platformVariableFeeBps: 30 } })).json() as Quote;
    expect(overridden.platformFeesIncluded).toBe(Math.round(sent * 0.003));
    expectEnvelope(await quote(p, { ...body, platformFeeOverride: { platformFixedFee: { amount: 5, currency: 'EUR' }, platformVariableFeeBps: 30 } }), 400, 'INVALID_INPUT');
  });

  it('REALTIME_FUNDING: the quote carries the platform’s payment instructions; crypto needs a network', async () => {
    const { p, sender, eur } = await world(0);
    const created = await quote(p, { source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: sender.id }, destination: toAccount(eur), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 20_000 });
    expect(created.statusCode, created.body).toBe(201);
    const q = created.json() as Quote;
    expect(q.paymentInstructions).toEqual([expect.objectContaining({ isPlatformAccount: true, accountOrWalletInfo: expect.objectContaining({ accountType: 'USD_ACCOUNT', routingNumber: '260073990' }) })]);
    expect((await call(p, 'GET', `/quotes/${q.id}`)).json()).toEqual(q);
    expect((await call(p, 'PATCH', '/config', { supportedCurrencies: [currencyConfig('USD'), currencyConfig('USDC', { maxAmount: 1_000_000_000 })] })).statusCode).toBe(200);
    const usdc = (await quote(p, { source: { sourceType: 'REALTIME_FUNDING', currency: 'USDC', cryptoNetwork: 'SOLANA' }, destination: toAccount(eur), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 20_000_000 })).json() as Quote;
    expect(usdc.paymentInstructions!.map((i) => i.accountOrWalletInfo.accountType)).toEqual(['SOLANA_WALLET']);
    expectEnvelope(await quote(p, { source: { sourceType: 'REALTIME_FUNDING', currency: 'USDC' }, destination: toAccount(eur), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 100 }), 400, 'INVALID_INPUT');
    expectEnvelope(await quote(p, { source: { sourceType: 'REALTIME_FUNDING', currency: 'USDC', cryptoNetwork: 'TRON' }, destination: toAccount(eur), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 100 }), 400, 'INVALID_INPUT');
    // Creating it opened its payment: PENDING, nothing held until the platform pays in; the quote waits PENDING.
    expect(q.status).toBe('PENDING');
    expect((await call(p, 'GET', `/transactions/${q.transactionId}`)).json()).toMatchObject({ status: 'PENDING', quoteId: q.id, source: { sourceType: 'REALTIME_FUNDING', currency: 'USD' } });
    // It is paid, not executed (upstream's execute takes account sources only): 400, whatever the key, and nothing changes.
    for (const headers of [{}, { 'idempotency-key': `rt-${q.id}` }] as Array<Record<string, string>>) {
      const refused = expectEnvelope(await execute(p, q.id, headers), 400, 'INVALID_INPUT');
      expect(refused.details).toEqual({ reason: 'REALTIME_FUNDING_NOT_EXECUTABLE', quoteId: q.id, transactionId: q.transactionId });
    }
    expect((await call(p, 'GET', `/quotes/${q.id}`)).json()).toEqual(q);
    // The platform pays in (sandbox), and the payment goes on from that money.
    const sent = await call(p, 'POST', '/sandbox/send', { quoteId: q.id, currencyCode: 'USD' });
    expect(sent.statusCode, sent.body).toBe(200);
    expect(sent.json()).toMatchObject({ id: q.transactionId, quoteId: q.id, sentAmount: { amount: 20_000 - q.feesIncluded } });
    await drainJobs(ctx);
    expect(((await call(p, 'GET', `/quotes/${q.id}`)).json() as Quote).status).toBe('PROCESSING');
    expectEnvelope(await execute(p, q.id), 400, 'INVALID_INPUT');
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('REALTIME_FUNDING with immediatelyExecute: the same as plain creation (201, PENDING, its payment waiting)', async () => {
    const { p, sender, eur } = await world(0);
    const body = { source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: sender.id }, destination: toAccount(eur), lockedCurrencySide: 'RECEIVING', lockedCurrencyAmount: 10_000 };
    const plain = (await quote(p, body)).json() as Quote;
    const created = await quote(p, { ...body, immediatelyExecute: true });
    expect(created.statusCode, created.body).toBe(201);
    const q = created.json() as Quote;
    const price = (one: Quote) => ({ status: one.status, total: one.totalSendingAmount, received: one.totalReceivingAmount, fees: one.feesIncluded, rate: one.exchangeRate, instructions: one.paymentInstructions!.length });
    expect(price(q)).toEqual({ ...price(plain), status: 'PENDING' });
    expect(plain.status).toBe('PENDING');
    for (const one of [plain, q]) expect((await call(p, 'GET', `/transactions/${one.transactionId}`)).json()).toMatchObject({ status: 'PENDING' });
    const sent = await call(p, 'POST', '/sandbox/send', { quoteId: q.id, currencyCode: 'USD' });
    expect(sent.statusCode, sent.body).toBe(200);
    await drainJobs(ctx);
    expect(((await call(p, 'GET', `/quotes/${q.id}`)).json() as Quote).status).toBe('PROCESSING');
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('pays between internal accounts of the platform, and from a pull-capable external account', async () => {
    const { p, usd, eur } = await world();
    const other = await customer(p);
    const book = (await quote(p, { source: fromAccount(usd.id), destination: toAccount(other.accounts[0]!.id), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 777 })).json() as Quote;
    expect(book).toMatchObject({ totalSendingAmount: 777, totalReceivingAmount: 777, feesIncluded: 0 });
    // A book transfer: no rail, the other customer's account is credited once the job runs.
    const executedBook = await execute(p, book.id);
    expect(executedBook.statusCode, executedBook.body).toBe(200);
    await drainJobs(ctx);
    expect(((await call(p, 'GET', `/quotes/${book.id}`)).json() as Quote).status).toBe('COMPLETED');
    const credited = (await call(p, 'GET', `/customers/internal-accounts?customerId=${other.id}&currency=USD`)).json() as { data: { balance: { amount: number } }[] };
    expect(credited.data[0]!.balance.amount).toBe(777);
    await expectLedgerConsistent(ctx.handle.db);
    expectEnvelope(await quote(p, { source: fromAccount(usd.id), destination: toAccount(other.accounts[0]!.id, 'ACH'), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 777 }), 400, 'INVALID_INPUT');

    const pullable = await externalAccount(p, 'USD_ACCOUNT', { ownershipType: 'FIRST_PARTY' }, { accountNumber: '98765432101' });
    const pulled = await quote(p, { source: fromAccount(pullable), destination: toAccount(eur), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 5000 });
    expect(pulled.statusCode, pulled.body).toBe(201);
    const thirdParty = await externalAccount(p, 'GBP_ACCOUNT');
    expectEnvelope(await quote(p, { source: fromAccount(thirdParty), destination: toAccount(eur), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 5000 }), 400, 'INVALID_INPUT');
  });
});

describe('refusals (spec §7), on create and through immediatelyExecute', () => {
  it('END_USER_TERMS_NOT_ACCEPTED until the customer’s consent is on file', async () => {
    const { p, eur } = await world(0);
    const noTerms = await customer(p, { terms: false });
    const body = { source: fromAccount(noTerms.accounts[0]!.id), destination: toAccount(eur), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1000 };
    expectEnvelope(await quote(p, body), 403, 'END_USER_TERMS_NOT_ACCEPTED');
    expectEnvelope(await quote(p, { ...body, immediatelyExecute: true }), 403, 'END_USER_TERMS_NOT_ACCEPTED');
    const patched = await call(p, 'PATCH', `/customers/${noTerms.id}`, { customerType: 'INDIVIDUAL', endUserTermsConsent: consent() });
    expect(patched.statusCode, patched.body).toBe(200);
    expect((await quote(p, body)).statusCode).toBe(201);
  });

  it('USER_NOT_READY while the customer’s KYC is not approved; USER_NOT_FOUND for another platform’s customer', async () => {
    const { p, eur } = await world(0);
    const pending = await customer(p);
    await withTx(ctx.handle.db, (trx) => setReviewStatus(trx, ctx.clock, p.uuid, parseId('Customer', pending.id)!, 'PENDING'));
    const body = { source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: pending.id }, destination: toAccount(eur), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1000 };
    expectEnvelope(await quote(p, body), 403, 'USER_NOT_READY');
    expectEnvelope(await quote(p, { ...body, immediatelyExecute: true }), 403, 'USER_NOT_READY');
    const stranger = await customer(await ctx.newPlatform());
    expectEnvelope(await quote(p, { ...body, source: { ...body.source, customerId: stranger.id } }), 404, 'USER_NOT_FOUND');
  });

  it('AMOUNT_OUT_OF_RANGE outside the platform’s min/max, INVALID_AMOUNT when fees eat it all', async () => {
    const { p, usd, eur } = await world();
    expect((await call(p, 'PATCH', '/config', { supportedCurrencies: [currencyConfig('USD', { minAmount: 500, maxAmount: 50_000 })] })).statusCode).toBe(200);
    const body = (amount: number, extra: Body = {}) => ({ source: fromAccount(usd.id), destination: toAccount(eur, 'SEPA'), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: amount, ...extra });
    const low = expectEnvelope(await quote(p, body(499)), 400, 'AMOUNT_OUT_OF_RANGE');
    expect(low.details).toMatchObject({ minAmount: 500, maxAmount: 50_000, currency: 'USD' });
    expectEnvelope(await quote(p, body(50_001, { immediatelyExecute: true })), 400, 'AMOUNT_OUT_OF_RANGE');
    expect((await quote(p, body(50_000))).statusCode).toBe(201);
    expect((await call(p, 'PATCH', '/config', { supportedCurrencies: [currencyConfig('USD')] })).statusCode).toBe(200);
    // SEPA's fixed fee is 20 cents: 20 leaves nothing to send.
    expectEnvelope(await quote(p, body(20)), 400, 'INVALID_AMOUNT');
    expectEnvelope(await quote(p, body(20, { immediatelyExecute: true })), 400, 'INVALID_AMOUNT');
  });

  it('TRANSACTION_SIZE_LIMIT_EXCEEDED above the corridor’s configured maximum (here USD→MXN 500.00)', async () => {
    const { p, usd, mxn, eur } = await world();
    const body = (destination: string, amount: number, extra: Body = {}) => ({ source: fromAccount(usd.id), destination: toAccount(destination), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: amount, ...extra });
    const refused = expectEnvelope(await quote(p, body(mxn, 50_001)), 400, 'TRANSACTION_SIZE_LIMIT_EXCEEDED');
    expect(refused.details).toMatchObject({ limit: 50_000, corridor: 'USD:MXN' });
    expectEnvelope(await quote(p, body(mxn, 50_001, { immediatelyExecute: true })), 400, 'TRANSACTION_SIZE_LIMIT_EXCEEDED');
    expect((await quote(p, body(mxn, 50_000))).statusCode).toBe(201);
    // Other corridors keep the default (USD 1,000,000.00).
    expect((await quote(p, body(eur, 50_001))).statusCode).toBe(201);
  });

  it('INVALID_CURRENCY for a currency the platform does not send or receive, or has not enabled in that direction', async () => {
    const { p, usd, eur } = await world();
    const body = { source: fromAccount(usd.id), destination: toAccount(eur), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1000 };
    expect((await call(p, 'PATCH', '/config', { supportedCurrencies: [currencyConfig('USD', { enabledTransactionTypes: ['INCOMING'] })] })).statusCode).toBe(200);
    // details.field is the dot path of the request field the currency came from.
    expect(expectEnvelope(await quote(p, body), 400, 'INVALID_CURRENCY').details).toMatchObject({ field: 'source.accountId', currency: 'USD', direction: 'OUTGOING' });
    expectEnvelope(await quote(p, { ...body, immediatelyExecute: true }), 400, 'INVALID_CURRENCY');
    expect(expectEnvelope(await quote(p, { ...body, source: { sourceType: 'REALTIME_FUNDING', currency: 'CHF' } }), 400, 'INVALID_CURRENCY').details).toEqual({ field: 'source.currency', currency: 'CHF' });
    expectEnvelope(await quote(p, { ...body, source: { sourceType: 'REALTIME_FUNDING', currency: 'ABC' } }), 400, 'INVALID_CURRENCY');
    // An internal destination needs INCOMING in its currency.
    expect((await call(p, 'PATCH', '/config', { supportedCurrencies: [currencyConfig('USD', { enabledTransactionTypes: ['OUTGOING'] })] })).statusCode).toBe(200);
    const other = await customer(p);
    const refusedAccount = expectEnvelope(await quote(p, { ...body, destination: toAccount(other.accounts[0]!.id) }), 400, 'INVALID_CURRENCY');
    expect(refusedAccount.details).toMatchObject({ field: 'destination.accountId', currency: 'USD', direction: 'INCOMING' });
    const refusedCurrency = expectEnvelope(await quote(p, { ...body, destination: { ...toAccount(other.accounts[0]!.id), currency: 'USD' } }), 400, 'INVALID_CURRENCY');
    expect(refusedCurrency.details).toMatchObject({ field: 'destination.currency', currency: 'USD', direction: 'INCOMING' });
  });

  it('SELF_PAYMENT from an account to itself', async () => {
    const { p, usd } = await world();
    const body = { source: fromAccount(usd.id), destination: toAccount(usd.id), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1000 };
    expectEnvelope(await quote(p, body), 400, 'SELF_PAYMENT');
    expectEnvelope(await quote(p, { ...body, immediatelyExecute: true }), 400, 'SELF_PAYMENT');
  });

  it('EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED above EUR 1,000 to a self-custody wallet whose ownership is not proven', async () => {
    const p = await ctx.newPlatform();
    const own = ((await call(p, 'GET', '/platform/internal-accounts')).json() as { data: Account[] }).data[0]!;
    await fund(p, own.id, 10_000_000);
    const wallet = await externalAccount(p, 'SOLANA_WALLET', { ownershipType: 'FIRST_PARTY', accountInfo: { accountType: 'SOLANA_WALLET', address: solanaWallet().address } });
    const body = (amount: number, extra: Body = {}) => ({ source: fromAccount(own.id), destination: toAccount(wallet), lockedCurrencySide: 'RECEIVING', lockedCurrencyAmount: amount, ...extra });
    // 1,000 USDC is below EUR 1,000; 1,200 USDC is above.
    expect((await quote(p, body(1_000_000_000))).statusCode).toBe(201);
    const refused = expectEnvelope(await quote(p, body(1_200_000_000)), 400, 'EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED');
    expect(refused.details).toMatchObject({ externalAccountId: wallet, status: 'PENDING_OWNERSHIP_VERIFICATION' });
    expectEnvelope(await quote(p, body(1_200_000_000, { immediatelyExecute: true })), 400, 'EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED');
    expectEnvelope(await quote(p, { ...body(1_000), destination: toAccount(wallet, 'ACH') }), 400, 'INVALID_INPUT');
  });

  it('QUOTE_NOT_FOUND for an unknown, malformed or another platform’s quote; a UMA destination needs its lookupId (test/http/uma.test.ts pays one); reading needs no TRANSACT, writing does', async () => {
    const { p, usd, eur } = await world();
    const q = (await quote(p, { source: fromAccount(usd.id), destination: toAccount(eur), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1000 })).json() as Quote;
    const other = await ctx.newPlatform();
    for (const id of [formatId('Quote', '019542f5-b3e7-7d02-8000-000000000001'), 'Quote:nope', q.id]) {
      expectEnvelope(await call(other, 'GET', `/quotes/${id}`), 404, 'QUOTE_NOT_FOUND');
      expectEnvelope(await execute(other, id), 404, 'QUOTE_NOT_FOUND');
    }
    expectEnvelope(await quote(p, { source: fromAccount(usd.id), destination: { destinationType: 'UMA_ADDRESS', umaAddress: '$bob@uma.example.com' }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1000 }), 400, 'INVALID_INPUT');
    expectEnvelope(await quote(p, { source: fromAccount(formatId('InternalAccount', '019542f5-b3e7-7d02-8000-000000000001')), destination: toAccount(eur), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1000 }), 404, 'REFERENCE_NOT_FOUND');
    const viewer = await ctx.newToken(p, ['VIEW']);
    expect((await call(viewer, 'GET', `/quotes/${q.id}`)).statusCode).toBe(200);
    expectEnvelope(await execute(viewer, q.id), 403, 'FORBIDDEN');
    expectEnvelope(await quote(viewer, { source: fromAccount(usd.id), destination: toAccount(eur), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1000 }), 403, 'FORBIDDEN');
  });

  it('a lookupId to an account is a receiver lookup’s (LookupRequest:…) or 400 INVALID_INPUT; the quote keeps it', async () => {
    const { p, sender, usd, eur } = await world();
    const looked = await call(p, 'GET', `/receiver/external-account/${eur}?customerId=${sender.id}`);
    expect(looked.statusCode, looked.body).toBe(200);
    const lookupId = (looked.json() as { lookupId: string }).lookupId;
    const body = (lookupId: string) => ({ lookupId, source: fromAccount(usd.id), destination: toAccount(eur), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1000 });
    // A UMA lookup's id, or anything else, is not a receiver lookup: nothing is written.
    for (const wrong of [formatId('Lookup', '019542f5-b3e7-7d02-8000-000000000001'), 'anything at all']) {
      const refused = expectEnvelope(await quote(p, body(wrong)), 400, 'INVALID_INPUT');
      expect(refused.details).toMatchObject({ errors: [{ field: 'lookupId' }] });
    }
    const created = await quote(p, body(lookupId));
    expect(created.statusCode, created.body).toBe(201);
    const row = await ctx.handle.db.selectFrom('quotes').select('lookup_id').where('id', '=', parseId('Quote', (created.json() as Quote).id)!).executeTakeFirstOrThrow();
    expect(row.lookup_id).toBe(lookupId);
    expect(await ctx.handle.db.selectFrom('quotes').select('id').where('platform_id', '=', p.uuid).execute()).toHaveLength(1);
  });

  it('the receiver lookup must exist, be this platform’s, be for the destination account and the source’s customer, and not have expired; a replay outlives it', async () => {
    const { p, sender, usd, eur, mxn } = await world();
    const lookUp = async (platform: TestPlatform, accountId: string, customerId: string) => {
      const looked = await call(platform, 'GET', `/receiver/external-account/${accountId}?customerId=${customerId}`);
      expect(looked.statusCode, looked.body).toBe(200);
      return (looked.json() as { lookupId: string }).lookupId;
    };
    const body = (lookupId: string, extra: Body = {}) => ({ lookupId, source: fromAccount(usd.id), destination: toAccount(eur), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1000, ...extra });
    const quotesOf = async () => (await ctx.handle.db.selectFrom('quotes').select('id').where('platform_id', '=', p.uuid).execute()).length;

    // Another platform's lookup (of its own account, its own customer) answers as one that never existed.
    const other = await ctx.newPlatform();
    const otherSender = await customer(other);
    const foreign = await lookUp(other, await externalAccount(other, 'EUR_ACCOUNT'), otherSender.id);
    const unknown = formatId('LookupRequest', '019542f5-b3e7-7d02-8000-000000000001');
    const answers = [];
    for (const id of [foreign, unknown]) {
      const refused = expectEnvelope(await quote(p, body(id)), 404, 'LOOKUP_REQUEST_NOT_FOUND');
      answers.push(JSON.stringify(refused).replace(id, '<id>'));
    }
    expect(answers[0]).toBe(answers[1]);

    // A lookup of another account of the platform: the quote is not to what was looked up.
    const ofMxn = await lookUp(p, mxn, sender.id);
    const misdirected = expectEnvelope(await quote(p, body(ofMxn)), 400, 'INVALID_RECEIVER');
    expect(misdirected.details).toMatchObject({ lookupAccountId: mxn });
    // A lookup made for another customer of the platform prices nothing for this sender, as a UMA lookup.
    const forSomeoneElse = await lookUp(p, eur, (await customer(p)).id);
    const notTheSender = expectEnvelope(await quote(p, body(forSomeoneElse)), 400, 'INVALID_INPUT');
    expect(notTheSender.details).toMatchObject({ errors: [{ field: 'lookupId' }] });
    expect(await quotesOf()).toBe(0);

    // Fresh, it carries immediatelyExecute and an Idempotency-Key like any quote.
    const lookupId = await lookUp(p, eur, sender.id);
    const executed = await quote(p, body(lookupId, { immediatelyExecute: true }), { 'idempotency-key': `lookup-${lookupId}` });
    expect(executed.statusCode, executed.body).toBe(201);
    expect((executed.json() as Quote).status).not.toBe('PENDING');

    // Past its five minutes the lookup is refused as an unknown one, through immediatelyExecute too,
    // and nothing is written; the key's replay answers what was created while it was fresh.
    ctx.clock.advance(5 * 60_000);
    for (const extra of [{}, { immediatelyExecute: true }]) expectEnvelope(await quote(p, body(lookupId, extra)), 404, 'LOOKUP_REQUEST_NOT_FOUND');
    expect(await quotesOf()).toBe(1);
    const replayed = await quote(p, body(lookupId, { immediatelyExecute: true }), { 'idempotency-key': `lookup-${lookupId}` });
    expect(replayed.statusCode).toBe(201);
    expect(replayed.json()).toEqual(executed.json());
  });
});

describe('POST /quotes/{id}/execute', () => {
  it('holds the total at once, exactly once: a second execution is 409, a retry with the same Idempotency-Key replays', async () => {
    const { p, usd, eur } = await world();
    const q = (await quote(p, { source: fromAccount(usd.id), destination: toAccount(eur), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 25_000 })).json() as Quote;
    const executed = await execute(p, q.id, { 'idempotency-key': `exec-${q.id}` });
    expect(executed.statusCode, executed.body).toBe(200);
    const body = executed.json() as Quote;
    expect(body).toEqual({ ...q, status: 'PROCESSING' });
    const after = await account(p, usd.id);
    expect(after.balance.amount).toBe(1_000_000 - 25_000);
    expect(after.totalBalance.amount).toBe(1_000_000);
    const replay = await execute(p, q.id, { 'idempotency-key': `exec-${q.id}` });
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(body);
    const again = expectEnvelope(await execute(p, q.id), 409, 'CONFLICT');
    expect(again.details).toMatchObject({ transactionId: q.transactionId });
    expect((await account(p, usd.id)).balance.amount).toBe(1_000_000 - 25_000);
    expect(((await call(p, 'GET', `/quotes/${q.id}`)).json() as Quote).status).toBe('PROCESSING');
    // The transaction carries the quote's numbers; once the rail settles, the quote is COMPLETED.
    const transaction = (await call(p, 'GET', `/transactions/${q.transactionId}`)).json() as Body;
    expect(transaction).toMatchObject({ quoteId: q.id, sentAmount: { amount: 25_000 - q.feesIncluded }, receivedAmount: { amount: q.totalReceivingAmount }, exchangeRate: q.exchangeRate });
    await drainJobs(ctx);
    ctx.clock.advance(2 * 86_400_000);
    await drainJobs(ctx);
    expect(((await call(p, 'GET', `/quotes/${q.id}`)).json() as Quote).status).toBe('COMPLETED');
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('refuses an expired quote (409 QUOTE_EXPIRED), records its transaction EXPIRED and moves nothing', async () => {
    const { p, usd, eur } = await world();
    const q = (await quote(p, { source: fromAccount(usd.id), destination: toAccount(eur, 'SEPA'), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 25_000 })).json() as Quote;
    expect(((await call(p, 'GET', `/quotes/${q.id}`)).json() as Quote).status).toBe('PENDING');
    ctx.clock.advance(300_000);
    expect(((await call(p, 'GET', `/quotes/${q.id}`)).json() as Quote).status).toBe('EXPIRED');
    const refused = expectEnvelope(await execute(p, q.id), 409, 'CONFLICT');
    expect(refused.details).toMatchObject({ reason: 'QUOTE_EXPIRED', transactionId: q.transactionId });
    const row = await ctx.handle.db.selectFrom('transactions').select(['status', 'failure_reason']).where('id', '=', parseId('Transaction', q.transactionId)!).executeTakeFirst();
    expect(row).toEqual({ status: 'EXPIRED', failure_reason: 'QUOTE_EXPIRED' });
    expect(((await call(p, 'GET', `/quotes/${q.id}`)).json() as Quote).status).toBe('EXPIRED');
    expect((await account(p, usd.id)).balance.amount).toBe(1_000_000);
    expectEnvelope(await execute(p, q.id), 409, 'CONFLICT');
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('refuses more than the available balance, writing nothing; the same quote executes once funded', async () => {
    const { p, usd, eur } = await world(10_000);
    const q = (await quote(p, { source: fromAccount(usd.id), destination: toAccount(eur), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 10_001 })).json() as Quote;
    const refused = expectEnvelope(await execute(p, q.id), 400, 'AMOUNT_OUT_OF_RANGE');
    expect(refused.details).toMatchObject({ reason: 'INSUFFICIENT_BALANCE' });
    expect(((await call(p, 'GET', `/quotes/${q.id}`)).json() as Quote).status).toBe('PENDING');
    expectEnvelope(await quote(p, { source: fromAccount(usd.id), destination: toAccount(eur), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 10_001, immediatelyExecute: true }), 400, 'AMOUNT_OUT_OF_RANGE');
    await fund(p, usd.id, 1);
    expect((await execute(p, q.id)).statusCode).toBe(200);
    expect((await account(p, usd.id)).balance.amount).toBe(0);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('holds the sender and the destination to the quote’s rules again at execution: review withdrawn, customer deleted, destination deleted', async () => {
    // No money: a customer holding some cannot be deleted (customers README); every refusal here comes before the hold.
    const { p, sender, usd, eur, mxn } = await world(0);
    const pending = async (destination = eur) =>
      ((await quote(p, { source: fromAccount(usd.id), destination: toAccount(destination), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 10_000 })).json() as Quote).id;
    const before = await ctx.handle.db.selectFrom('transactions').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();

    const rejected = await pending();
    await withTx(ctx.handle.db, (trx) => setReviewStatus(trx, ctx.clock, p.uuid, parseId('Customer', sender.id)!, 'REJECTED'));
    expect(expectEnvelope(await execute(p, rejected), 403, 'USER_NOT_READY').details).toMatchObject({ customerId: sender.id, status: 'REJECTED' });
    await withTx(ctx.handle.db, (trx) => setReviewStatus(trx, ctx.clock, p.uuid, parseId('Customer', sender.id)!, 'APPROVED'));

    const toDeleted = await pending(mxn);
    expect((await call(p, 'DELETE', `/platform/external-accounts/${mxn}`)).statusCode).toBe(204);
    expectEnvelope(await execute(p, toDeleted), 404, 'REFERENCE_NOT_FOUND');

    const deleted = await pending();
    expect((await call(p, 'DELETE', `/customers/${sender.id}`)).statusCode).toBe(200);
    expectEnvelope(await execute(p, deleted), 410, 'CUSTOMER_DELETED');
    // And a new quote from the deleted customer's account is refused the same way.
    expectEnvelope(await quote(p, { source: fromAccount(usd.id), destination: toAccount(eur), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 10_000 }), 410, 'CUSTOMER_DELETED');

    // Every refusal rolled back: no transaction, the quotes still PENDING, the balance untouched.
    const after = await ctx.handle.db.selectFrom('transactions').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));
    for (const id of [rejected, toDeleted, deleted]) expect(((await call(p, 'GET', `/quotes/${id}`)).json() as Quote).status).toBe('PENDING');
    expect((await account(p, usd.id)).balance.amount).toBe(0);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('immediatelyExecute creates and executes in one request (201, PROCESSING), idempotently', async () => {
    const { p, usd, mxn } = await world();
    const body = { source: fromAccount(usd.id), destination: toAccount(mxn), lockedCurrencySide: 'RECEIVING', lockedCurrencyAmount: 50_000, immediatelyExecute: true };
    const created = await quote(p, body, { 'idempotency-key': 'imm-1' });
    expect(created.statusCode, created.body).toBe(201);
    const q = created.json() as Quote;
    expect(q.status).toBe('PROCESSING');
    const replay = await quote(p, body, { 'idempotency-key': 'imm-1' });
    expect(replay.json()).toEqual(q);
    expect((await account(p, usd.id)).balance.amount).toBe(1_000_000 - q.totalSendingAmount);
    await expectLedgerConsistent(ctx.handle.db);
  });

  /**
   * A new platform (USD and EUR) whose customer pays from its EUR account, funded EUR 10,000.00,
   * to an external account of `payeeType`: `body(amount)` is a SENDING quote of that payment.
   */
  async function eurPayer(payeeType: string) {
    const p = await ctx.newPlatform();
    expect((await call(p, 'PATCH', '/config', { supportedCurrencies: [currencyConfig('USD'), currencyConfig('EUR')] })).statusCode).toBe(200);
    const sender = await customer(p);
    const eurAccount = sender.accounts.find((a) => a.currency === 'EUR')!;
    await fund(p, eurAccount.id, 1_000_000);
    const payee = await externalAccount(p, payeeType);
    const body = (amount: number, extra: Body = {}) => ({ source: fromAccount(eurAccount.id), destination: toAccount(payee), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: amount, ...extra });
    return { p, sender, payee, body };
  }

  it('DAILY_VOLUME_LIMIT_EXCEEDED past the customer’s daily volume (here EUR 1,000.00), also through immediatelyExecute; the next day starts afresh', async () => {
    const { p, body } = await eurPayer('EUR_ACCOUNT');
    const first = (await quote(p, body(60_000))).json() as Quote;
    const second = (await quote(p, body(40_001))).json() as Quote;
    expect((await execute(p, first.id)).statusCode).toBe(200);
    const refused = expectEnvelope(await execute(p, second.id), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
    expect(refused.details).toMatchObject({ limit: 100_000, currency: 'EUR' });
    expectEnvelope(await quote(p, body(40_001, { immediatelyExecute: true })), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
    expect((await quote(p, body(40_000, { immediatelyExecute: true }))).statusCode).toBe(201);
    ctx.clock.advance(24 * 3600_000);
    expect((await quote(p, body(40_001, { immediatelyExecute: true }))).statusCode).toBe(201);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('counts the daily volume in the sending currency, whatever the destination’s: a EUR account paying a USD account is held to the EUR limit', async () => {
    const { p, body } = await eurPayer('USD_ACCOUNT');
    const first = (await quote(p, body(60_000))).json() as Quote;
    expect(first.receivingCurrency.code).toBe('USD');
    expect((await execute(p, first.id)).statusCode).toBe(200);
    const second = (await quote(p, body(40_001))).json() as Quote;
    const refused = expectEnvelope(await execute(p, second.id), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
    expect(refused.details).toMatchObject({ limit: 100_000, currency: 'EUR' });
    expect((await quote(p, body(40_000, { immediatelyExecute: true }))).statusCode).toBe(201);
    const counted = await ctx.handle.db.selectFrom('daily_volumes').select(['currency', 'amount']).where('platform_id', '=', p.uuid).execute();
    expect(counted.map((row) => ({ currency: row.currency, amount: Number(row.amount) }))).toEqual([{ currency: 'EUR', amount: 100_000 }]);
  });

  it('gives the daily volume back when a payment ends before money left the sender (cancelled, paid the wrong amount, expired unpaid); keeps it once money left', async () => {
    const { p, sender, payee, body: fromEur } = await eurPayer('EUR_ACCOUNT');
    // Summed over days: what the customer has counted, whatever UTC day the test runs in.
    const counted = async () => {
      const row = await ctx.handle.db.selectFrom('daily_volumes').select((eb) => eb.fn.sum<string>('amount').as('total')).where('platform_id', '=', p.uuid).executeTakeFirstOrThrow();
      return Number(row.total ?? 0);
    };
    const realtime = (amount: number) => ({ source: { sourceType: 'REALTIME_FUNDING', currency: 'EUR', customerId: sender.id }, destination: toAccount(payee), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: amount });

    // Cancelled while PENDING (the hold released): the whole limit is free again at once.
    const held = (await quote(p, fromEur(100_000, { immediatelyExecute: true }))).json() as Quote;
    expect(await counted()).toBe(100_000);
    expectEnvelope(await quote(p, fromEur(1_000, { immediatelyExecute: true })), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
    expect((await call(p, 'POST', `/transactions/${held.transactionId}/cancel`)).statusCode).toBe(200);
    expect(await counted()).toBe(0);

    // Paid in with another amount: FUNDING_AMOUNT_MISMATCH, the money returned, the volume too.
    const mismatched = (await quote(p, realtime(100_000))).json() as Quote;
    expect(await counted()).toBe(100_000);
    expect(((await call(p, 'POST', '/sandbox/send', { quoteId: mismatched.id, currencyCode: 'EUR', currencyAmount: 99_999 })).json() as Body).failureReason).toBe('FUNDING_AMOUNT_MISMATCH');
    expect(await counted()).toBe(0);

    // Money that left and came back (the rail refused the payout after the debit) stays counted: the transfer was made.
    const refused = (await quote(p, { ...fromEur(10_905, { immediatelyExecute: true }), lockedCurrencySide: 'RECEIVING' })).json() as Quote;
    await drainJobs(ctx);
    expect((await call(p, 'GET', `/transactions/${refused.transactionId}`)).json()).toMatchObject({ status: 'FAILED', failureReason: 'ACCOUNT_INVALID', refund: { status: 'COMPLETED' } });
    expect(await counted()).toBe(refused.totalSendingAmount);

    // Expired unpaid: given back when the expiry job ends it.
    const unpaid = (await quote(p, realtime(50_000))).json() as Quote;
    expect(await counted()).toBe(refused.totalSendingAmount + 50_000);
    expect((await call(p, 'POST', '/sandbox/clock/advance', { seconds: 600 })).statusCode).toBe(200);
    await drainJobs(ctx);
    expect((await call(p, 'GET', `/transactions/${unpaid.transactionId}`)).json()).toMatchObject({ status: 'EXPIRED' });
    expect(await counted()).toBe(refused.totalSendingAmount);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('a REALTIME_FUNDING quote counts toward the daily volume when it is created (its payment opens then): 429 past the limit, nothing written', async () => {
    const p = await ctx.newPlatform();
    expect((await call(p, 'PATCH', '/config', { supportedCurrencies: [currencyConfig('USD'), currencyConfig('EUR')] })).statusCode).toBe(200);
    const sender = await customer(p);
    const payee = await externalAccount(p, 'EUR_ACCOUNT');
    const body = (amount: number) => ({ source: { sourceType: 'REALTIME_FUNDING', currency: 'EUR', customerId: sender.id }, destination: toAccount(payee), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: amount });
    expect((await quote(p, body(60_000))).statusCode).toBe(201);
    const before = await ctx.handle.db.selectFrom('transactions').select((eb) => eb.fn.countAll<string>().as('n')).where('platform_id', '=', p.uuid).executeTakeFirstOrThrow();
    expectEnvelope(await quote(p, body(40_001)), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
    const after = await ctx.handle.db.selectFrom('transactions').select((eb) => eb.fn.countAll<string>().as('n')).where('platform_id', '=', p.uuid).executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));
    expect((await quote(p, body(40_000))).statusCode).toBe(201);
    await expectLedgerConsistent(ctx.handle.db);
  });
});
