import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { setReviewStatus } from '../../src/modules/customers/index.js';
import { withTx } from '../../src/platform/db/tx.js';
import { parseId } from '../../src/platform/ids.js';
import { createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { solanaWallet, validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { call as callOn, drainJobs, readySender, type Json } from '../helpers/payments.js';

/**
 * The quotes README's rules a second mutation audit found unpinned: the order and the details of
 * creation's refusals, the platform's amount range at exactly its bounds, every review status but
 * APPROVED, the fee override's USD-only rule for real-time funding, each rail's quote lifetime,
 * the platform's own clock (expiry, status, execution, the day a volume is counted in), and the
 * fields of the answer.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ env: { CORRIDOR_DAILY_VOLUME_LIMIT: JSON.stringify({ USD: 1_000_000 }), CORRIDOR_MAX_TRANSACTION: JSON.stringify({ 'USD:MXN': 20_000 }) } });
});
afterAll(() => ctx.close());

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: unknown) => callOn(ctx, p, method, path, payload);
const currencyConfig = (code: string, extra: Json = {}) => ({ currencyCode: code, minAmount: 1, maxAmount: 100_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'], ...extra });
const fromAccount = (accountId: string) => ({ sourceType: 'ACCOUNT', accountId });
const toAccount = (accountId: string, paymentRail?: string) => ({ destinationType: 'ACCOUNT', accountId, ...(paymentRail ? { paymentRail } : {}) });
const sending = (source: string, destination: Json, amount: number, extra: Json = {}) => ({ source: fromAccount(source), destination, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: amount, ...extra });

async function payee(p: TestPlatform, type: string, extra: Json = {}): Promise<string> {
  const created = await call(p, 'POST', '/platform/external-accounts', { ...validSamples(ctx.clock.now())[type]!, ...extra });
  expect(created.statusCode, created.body).toBe(201);
  return (created.json() as Json).id as string;
}

/** The platform's time (its sandbox test clock). */
const platformNow = async (p: TestPlatform): Promise<number> => Date.parse(((await call(p, 'GET', '/sandbox/clock')).json() as Json).now as string);
const quoteCount = async (p: TestPlatform) => (await ctx.handle.db.selectFrom('quotes').select('id').where('platform_id', '=', p.uuid).execute()).length;
const asDay = (day: string | Date) => (typeof day === 'string' ? day.slice(0, 10) : day.toISOString().slice(0, 10));

describe('creation’s refusals: order and details', () => {
  it('SELF_PAYMENT comes before the sender’s checks (a customer without terms paying its account to itself) and names the account; END_USER_TERMS_NOT_ACCEPTED names the customer', async () => {
    const p = await ctx.newPlatform();
    const created = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'no-terms', fullName: 'Ann Lee' });
    expect(created.statusCode, created.body).toBe(201);
    const customerId = (created.json() as Json).id as string;
    const account = (((await call(p, 'GET', `/customers/internal-accounts?customerId=${customerId}&currency=USD`)).json() as Json).data as Json[])[0]!.id as string;
    const eur = await payee(p, 'EUR_ACCOUNT');
    for (const extra of [{}, { immediatelyExecute: true }]) {
      const self = expectEnvelope(await call(p, 'POST', '/quotes', sending(account, toAccount(account), 1_000, extra)), 400, 'SELF_PAYMENT');
      expect(self.details).toEqual({ accountId: account });
      const terms = expectEnvelope(await call(p, 'POST', '/quotes', sending(account, toAccount(eur), 1_000, extra)), 403, 'END_USER_TERMS_NOT_ACCEPTED');
      expect(terms.details).toEqual({ customerId });
    }
    expect(await quoteCount(p)).toBe(0);
  });

  it('USER_NOT_READY for every review status but APPROVED (UNVERIFIED, PENDING, HOLD, REJECTED), also through immediatelyExecute; APPROVED sends', async () => {
    const p = await ctx.newPlatform();
    const sender = await readySender(ctx, p, 100_000);
    const eur = await payee(p, 'EUR_ACCOUNT');
    for (const status of ['UNVERIFIED', 'PENDING', 'HOLD', 'REJECTED'] as const) {
      await withTx(ctx.handle.db, (trx) => setReviewStatus(trx, ctx.clock, p.uuid, parseId('Customer', sender.customerId)!, status));
      for (const extra of [{}, { immediatelyExecute: true }]) {
        const refused = expectEnvelope(await call(p, 'POST', '/quotes', sending(sender.accountId, toAccount(eur), 1_000, extra)), 403, 'USER_NOT_READY');
        expect(refused.details).toEqual({ customerId: sender.customerId, status });
      }
    }
    expect(await quoteCount(p)).toBe(0);
    await withTx(ctx.handle.db, (trx) => setReviewStatus(trx, ctx.clock, p.uuid, parseId('Customer', sender.customerId)!, 'APPROVED'));
    expect((await call(p, 'POST', '/quotes', sending(sender.accountId, toAccount(eur), 1_000, { immediatelyExecute: true }))).statusCode).toBe(201);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('the platform’s range holds at its bounds: exactly minAmount and maxAmount are quoted and executed, one unit outside is AMOUNT_OUT_OF_RANGE', async () => {
    const p = await ctx.newPlatform();
    expect((await call(p, 'PATCH', '/config', { supportedCurrencies: [currencyConfig('USD', { minAmount: 500, maxAmount: 50_000 })] })).statusCode).toBe(200);
    const sender = await readySender(ctx, p, 100_000);
    const eur = await payee(p, 'EUR_ACCOUNT');
    const quote = (amount: number, extra: Json = {}) => call(p, 'POST', '/quotes', sending(sender.accountId, toAccount(eur, 'SEPA'), amount, extra));
    for (const amount of [499, 50_001]) {
      for (const extra of [{}, { immediatelyExecute: true }]) {
        const refused = expectEnvelope(await quote(amount, extra), 400, 'AMOUNT_OUT_OF_RANGE');
        expect(refused.details).toEqual({ totalSendingAmount: amount, minAmount: 500, maxAmount: 50_000, currency: 'USD' });
      }
    }
    for (const amount of [500, 50_000]) {
      const executed = await quote(amount, { immediatelyExecute: true });
      expect(executed.statusCode, executed.body).toBe(201);
      expect(executed.json()).toMatchObject({ status: 'PROCESSING', totalSendingAmount: amount });
    }
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('the default single-transaction maximum (USD 1,000,000.00) is converted at the mid-market rate: EUR 866,000.00 is quoted, one cent more is TRANSACTION_SIZE_LIMIT_EXCEEDED', async () => {
    const p = await ctx.newPlatform();
    expect((await call(p, 'PATCH', '/config', { supportedCurrencies: [currencyConfig('USD'), currencyConfig('EUR', { maxAmount: 1_000_000_000 })] })).statusCode).toBe(200);
    const sender = await readySender(ctx, p, 0);
    const eurAccount = ((await call(p, 'GET', `/customers/internal-accounts?customerId=${sender.customerId}&currency=EUR`)).json() as { data: Json[] }).data[0]!.id as string;
    const eur = await payee(p, 'EUR_ACCOUNT');
    expect((await call(p, 'POST', '/quotes', sending(eurAccount, toAccount(eur, 'SEPA'), 86_600_000))).statusCode).toBe(201);
    const refused = expectEnvelope(await call(p, 'POST', '/quotes', sending(eurAccount, toAccount(eur, 'SEPA'), 86_600_001)), 400, 'TRANSACTION_SIZE_LIMIT_EXCEEDED');
    expect(refused.details).toEqual({ totalSendingAmount: 86_600_001, limit: 86_600_000, currency: 'EUR', corridor: 'EUR:EUR' });
  });

  it('platformFeeOverride from real-time funding in EUR is 501 NOT_IMPLEMENTED (USD sources only), as from a EUR account; in USD it prices the fee', async () => {
    const p = await ctx.newPlatform();
    expect((await call(p, 'PATCH', '/config', { supportedCurrencies: [currencyConfig('USD'), currencyConfig('EUR')] })).statusCode).toBe(200);
    const eur = await payee(p, 'EUR_ACCOUNT');
    const override = { platformFeeOverride: { platformFixedFee: { amount: 7, currency: 'USD' }, platformVariableFeeBps: 0 } };
    const realtime = (currency: string) => ({ source: { sourceType: 'REALTIME_FUNDING', currency }, destination: toAccount(eur, 'SEPA'), lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 10_000, ...override });
    for (const extra of [{}, { immediatelyExecute: true }]) expectEnvelope(await call(p, 'POST', '/quotes', { ...realtime('EUR'), ...extra }), 501, 'NOT_IMPLEMENTED');
    expect(await quoteCount(p)).toBe(0);
    const usd = await call(p, 'POST', '/quotes', realtime('USD'));
    expect(usd.statusCode, usd.body).toBe(201);
    expect((usd.json() as Json).platformFeesIncluded).toBe(7);
  });
});

describe('the sending customer', () => {
  it('source.customerId: another customer’s internal account is 400 (not its owner); the platform’s own account sends on the named customer’s behalf, held to its rules', async () => {
    const p = await ctx.newPlatform();
    const owner = await readySender(ctx, p, 0);
    const created = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'no-terms', fullName: 'Bo Lee' });
    expect(created.statusCode, created.body).toBe(201);
    const noTerms = (created.json() as Json).id as string;
    const eur = await payee(p, 'EUR_ACCOUNT');
    const refused = expectEnvelope(await call(p, 'POST', '/quotes', { ...sending(owner.accountId, toAccount(eur), 1_000), source: { ...fromAccount(owner.accountId), customerId: noTerms } }), 400, 'INVALID_INPUT');
    expect(refused.details).toMatchObject({ errors: [{ field: 'source.customerId' }] });
    const own = ((await call(p, 'GET', '/platform/internal-accounts')).json() as { data: Json[] }).data.find((a) => a.balance.currency.code === 'USD')!.id as string;
    const onBehalf = expectEnvelope(await call(p, 'POST', '/quotes', { ...sending(own, toAccount(eur), 1_000), source: { ...fromAccount(own), customerId: noTerms } }), 403, 'END_USER_TERMS_NOT_ACCEPTED');
    expect(onBehalf.details).toEqual({ customerId: noTerms });
    expect(await quoteCount(p)).toBe(0);
  });

  it('an internal account of a deleted customer is refused at creation (410 CUSTOMER_DELETED), nothing written', async () => {
    const p = await ctx.newPlatform();
    const sender = await readySender(ctx, p, 10_000);
    const gone = await readySender(ctx, p, 0);
    expect((await call(p, 'DELETE', `/customers/${gone.customerId}`)).statusCode).toBe(200);
    for (const extra of [{}, { immediatelyExecute: true }]) expectEnvelope(await call(p, 'POST', '/quotes', sending(sender.accountId, toAccount(gone.accountId), 1_000, extra)), 410, 'CUSTOMER_DELETED');
    expect(await quoteCount(p)).toBe(0);
  });
});

describe('expiresAt and the platform’s clock', () => {
  it('each rail’s quote lifetime: 60 s instant rails, 120 s mobile money and crypto networks, 300 s other rails and book transfers; createdAt is the creation time', async () => {
    const p = await ctx.newPlatform();
    const own = ((await call(p, 'GET', '/platform/internal-accounts')).json() as { data: Json[] }).data.find((a) => a.balance.currency.code === 'USD')!.id as string;
    const other = await readySender(ctx, p, 0);
    const wallet = await payee(p, 'SOLANA_WALLET', { ownershipType: 'FIRST_PARTY', accountInfo: { accountType: 'SOLANA_WALLET', address: solanaWallet().address } });
    const eur = await payee(p, 'EUR_ACCOUNT');
    const cases: Array<[Json, number]> = [
      [toAccount(await payee(p, 'MXN_ACCOUNT'), 'SPEI'), 60],
      [toAccount(eur, 'SEPA_INSTANT'), 60],
      [toAccount(eur, 'SEPA'), 300],
      [toAccount(await payee(p, 'USD_ACCOUNT'), 'ACH'), 300],
      [toAccount(await payee(p, 'KES_ACCOUNT')), 120],
      [toAccount(wallet), 120],
      [toAccount(other.accountId), 300],
    ];
    for (const [destination, seconds] of cases) {
      const created = await call(p, 'POST', '/quotes', { source: fromAccount(own), destination, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 10_000 });
      expect(created.statusCode, created.body).toBe(201);
      const q = created.json() as Json;
      expect(q.createdAt).toBe(ctx.clock.now().toISOString());
      expect([destination.accountId, destination.paymentRail, Date.parse(q.expiresAt as string) - Date.parse(q.createdAt as string)]).toEqual([destination.accountId, destination.paymentRail, seconds * 1000]);
    }
  });

  it('a platform whose sandbox clock runs ahead: expiresAt, the quote’s status, its execution and the day its volume is counted in all follow the platform’s time', async () => {
    const p = await ctx.newPlatform();
    // A day and a half ahead: the platform's UTC day is never the shared clock's.
    expect((await call(p, 'POST', '/sandbox/clock/advance', { seconds: 36 * 3600 })).statusCode).toBe(200);
    const sender = await readySender(ctx, p, 2_000_000);
    const eur = await payee(p, 'EUR_ACCOUNT');
    const quote = async (amount: number) => {
      const created = await call(p, 'POST', '/quotes', sending(sender.accountId, toAccount(eur, 'SEPA_INSTANT'), amount));
      expect(created.statusCode, created.body).toBe(201);
      return created.json() as Json;
    };
    const now = await platformNow(p);
    const late = await quote(10_000);
    expect(Date.parse(late.expiresAt as string)).toBe(now + 60_000);
    const onTime = await quote(600_000);
    const refused = await quote(400_001);

    // Counted in the platform's day; past the limit the refusal names that day.
    const day = new Date(now).toISOString().slice(0, 10);
    expect((await call(p, 'POST', `/quotes/${onTime.id}/execute`)).statusCode).toBe(200);
    const volumes = await ctx.handle.db.selectFrom('daily_volumes').select(['day', 'amount']).where('platform_id', '=', p.uuid).execute();
    expect(volumes.map((v) => ({ day: asDay(v.day), amount: Number(v.amount) }))).toEqual([{ day, amount: 600_000 }]);
    expect(expectEnvelope(await call(p, 'POST', `/quotes/${refused.id}/execute`), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED').details).toEqual({ limit: 1_000_000, currency: 'USD', day });

    // Its 60 s pass on the platform's clock only: EXPIRED when read, 409 QUOTE_EXPIRED when executed.
    expect(((await call(p, 'GET', `/quotes/${late.id}`)).json() as Json).status).toBe('PENDING');
    expect((await call(p, 'POST', '/sandbox/clock/advance', { seconds: 60 })).statusCode).toBe(200);
    expect(((await call(p, 'GET', `/quotes/${late.id}`)).json() as Json).status).toBe('EXPIRED');
    expect(expectEnvelope(await call(p, 'POST', `/quotes/${late.id}/execute`), 409, 'CONFLICT').details).toMatchObject({ reason: 'QUOTE_EXPIRED' });
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('the destination’s verification threshold, at creation and at execution', () => {
  /** A platform paying from its own USD account (USD 100,000.00) to a FIRST_PARTY Solana wallet whose ownership is not proven. */
  async function toUnprovenWallet() {
    const p = await ctx.newPlatform();
    const own = ((await call(p, 'GET', '/platform/internal-accounts')).json() as { data: Json[] }).data.find((a) => a.balance.currency.code === 'USD')!.id as string;
    expect((await call(p, 'POST', `/sandbox/internal-accounts/${own}/fund`, { amount: 10_000_000 })).statusCode).toBe(200);
    const wallet = await payee(p, 'SOLANA_WALLET', { ownershipType: 'FIRST_PARTY', accountInfo: { accountType: 'SOLANA_WALLET', address: solanaWallet().address } });
    const quote = (amount: number, extra: Json = {}) => call(p, 'POST', '/quotes', { source: fromAccount(own), destination: toAccount(wallet), lockedCurrencySide: 'RECEIVING', lockedCurrencyAmount: amount, ...extra });
    return { p, wallet, quote };
  }

  it('EUR 1,000.00 exactly, at the mid-market rate (USDC→EUR 0.866), may go to it; one EUR cent more is EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED, also through immediatelyExecute', async () => {
    const { p, wallet, quote } = await toUnprovenWallet();
    // 1,154.745958 USDC is EUR 1,000.00 at 0.866 (rounded down); 1,154.745959 USDC is EUR 1,000.01.
    for (const extra of [{}, { immediatelyExecute: true }]) {
      const refused = expectEnvelope(await quote(1_154_745_959, extra), 400, 'EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED');
      expect(refused.details).toEqual({ externalAccountId: wallet, status: 'PENDING_OWNERSHIP_VERIFICATION' });
    }
    expect(await quoteCount(p)).toBe(0);
    const executed = await quote(1_154_745_958, { immediatelyExecute: true });
    expect(executed.statusCode, executed.body).toBe(201);
    expect(executed.json()).toMatchObject({ status: 'PROCESSING', totalReceivingAmount: 1_154_745_958 });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('a destination that may no longer receive it when the quote is executed: 400 EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED, nothing moves, the quote stays PENDING and runs once it may', async () => {
    const { p, wallet, quote } = await toUnprovenWallet();
    const created = await quote(10_000_000);
    expect(created.statusCode, created.body).toBe(201);
    const q = created.json() as Json;
    // A failed ownership attempt leaves the wallet UNVERIFIED, which receives nothing (external-accounts' receiveDecision).
    await ctx.handle.db.updateTable('external_accounts').set({ status: 'UNVERIFIED' }).where('id', '=', parseId('ExternalAccount', wallet)!).execute();
    const refused = expectEnvelope(await call(p, 'POST', `/quotes/${q.id}/execute`), 400, 'EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED');
    expect(refused.details).toEqual({ externalAccountId: wallet, status: 'UNVERIFIED' });
    expect(((await call(p, 'GET', `/quotes/${q.id}`)).json() as Json).status).toBe('PENDING');
    expect(await ctx.handle.db.selectFrom('transactions').select('id').where('platform_id', '=', p.uuid).execute()).toEqual([]);
    await ctx.handle.db.updateTable('external_accounts').set({ status: 'ACTIVE' }).where('id', '=', parseId('ExternalAccount', wallet)!).execute();
    expect((await call(p, 'POST', `/quotes/${q.id}/execute`)).statusCode).toBe(200);
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('what the quote hands on', () => {
  it('its description, remittanceInformation and purposeOfPayment reach its transaction; a payout that fails shows FAILED on the quote', async () => {
    const p = await ctx.newPlatform();
    const sender = await readySender(ctx, p, 100_000);
    // Account numbers ending 002 fail at the sandbox rail (docs/payments.md).
    const failing = await payee(p, 'USD_ACCOUNT', { accountInfo: { ...validSamples(ctx.clock.now()).USD_ACCOUNT!.accountInfo, accountNumber: '12345678002' } });
    const passed = { description: 'Invoice 7', remittanceInformation: 'INV-7', purposeOfPayment: 'GOODS_OR_SERVICES' };
    const created = await call(p, 'POST', '/quotes', sending(sender.accountId, toAccount(failing, 'ACH'), 10_000, { ...passed, immediatelyExecute: true }));
    expect(created.statusCode, created.body).toBe(201);
    const q = created.json() as Json;
    expect((await call(p, 'GET', `/transactions/${q.transactionId}`)).json()).toMatchObject({ description: 'Invoice 7' });
    const stored = await ctx.handle.db.selectFrom('transactions').select(['remittance_information', 'purpose_of_payment']).where('id', '=', parseId('Transaction', q.transactionId as string)!).executeTakeFirstOrThrow();
    expect(stored).toEqual({ remittance_information: 'INV-7', purpose_of_payment: 'GOODS_OR_SERVICES' });
    await drainJobs(ctx);
    expect((await call(p, 'GET', `/transactions/${q.transactionId}`)).json()).toMatchObject({ status: 'FAILED' });
    expect(((await call(p, 'GET', `/quotes/${q.id}`)).json() as Json).status).toBe('FAILED');
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('the answer', () => {
  it('names both currencies in full (code, name, symbol, decimals)', async () => {
    const p = await ctx.newPlatform();
    const own = ((await call(p, 'GET', '/platform/internal-accounts')).json() as { data: Json[] }).data.find((a) => a.balance.currency.code === 'USD')!.id as string;
    const created = await call(p, 'POST', '/quotes', sending(own, toAccount(await payee(p, 'EUR_ACCOUNT')), 10_000));
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({
      sendingCurrency: { code: 'USD', name: 'US Dollar', symbol: '$', decimals: 2 },
      receivingCurrency: { code: 'EUR', name: 'Euro', symbol: '€', decimals: 2 },
    });
  });
});

describe('every account type a platform can create', () => {
  it('can be quoted to, on each rail its account lists (DKK on SEPA, mobile money in BDT, BWP, COP, HTG, USD, …)', async () => {
    const p = await ctx.newPlatform();
    const own = ((await call(p, 'GET', '/platform/internal-accounts')).json() as { data: Json[] }).data.find((a) => a.balance.currency.code === 'USD')!.id as string;
    const refused: string[] = [];
    for (const [type, sample] of Object.entries(validSamples(ctx.clock.now()))) {
      const created = await call(p, 'POST', '/platform/external-accounts', sample);
      expect(created.statusCode, `${type}: ${created.body}`).toBe(201);
      const account = created.json() as Json;
      const rails = (account.accountInfo.paymentRails as string[] | undefined) ?? [undefined];
      for (const rail of rails) {
        const quoted = await call(p, 'POST', '/quotes', sending(own, toAccount(account.id as string, rail), 15_000));
        if (quoted.statusCode !== 201) refused.push(`${type} on ${rail ?? 'its network'}: ${quoted.body}`);
      }
    }
    expect(refused).toEqual([]);
  });

  it('is paid through to COMPLETED: a DKK account on SEPA_INSTANT, a BWP mobile-money account, an El Salvador USD one by mobile money', async () => {
    const p = await ctx.newPlatform();
    const sender = await readySender(ctx, p, 100_000);
    const transactions: string[] = [];
    for (const [type, rail] of [['DKK_ACCOUNT', 'SEPA_INSTANT'], ['BWP_ACCOUNT', 'MOBILE_MONEY'], ['SLV_ACCOUNT', 'MOBILE_MONEY']] as const) {
      const sample = validSamples(ctx.clock.now())[type]!;
      const mobile = type === 'SLV_ACCOUNT' ? { accountInfo: { ...sample.accountInfo, phoneNumber: '+50371234567' } } : {};
      const created = await call(p, 'POST', '/quotes', sending(sender.accountId, toAccount(await payee(p, type, mobile), rail), 10_000, { immediatelyExecute: true }));
      expect(created.statusCode, `${type}: ${created.body}`).toBe(201);
      transactions.push((created.json() as Json).transactionId as string);
    }
    expect((await call(p, 'POST', '/sandbox/clock/advance', { seconds: 3_600 })).statusCode).toBe(200);
    await drainJobs(ctx);
    for (const id of transactions) expect(((await call(p, 'GET', `/transactions/${id}`)).json() as Json).status).toBe('COMPLETED');
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('to a UMA address (the sandbox’s test VASP)', () => {
  // The SDK stamps what it signs with the system time; the manual clock that judges it follows.
  beforeEach(() => ctx.clock.set(new Date()));

  /** A sandbox platform (USD 1.00–500.00, and EUR) whose ready customer holds USD and EUR: `quote` looks `address` up and quotes it. */
  async function umaSender() {
    const p = await ctx.newPlatform();
    const configured = await call(p, 'PATCH', '/config', { umaDomain: 'quotes-rules.example', supportedCurrencies: [currencyConfig('USD', { minAmount: 100, maxAmount: 50_000 }), currencyConfig('EUR')] });
    expect(configured.statusCode, configured.body).toBe(200);
    const sender = await readySender(ctx, p, 100_000);
    const accounts = ((await call(p, 'GET', `/customers/internal-accounts?customerId=${sender.customerId}`)).json() as { data: Json[] }).data;
    const eurAccount = accounts.find((a) => a.balance.currency.code === 'EUR')!.id as string;
    expect((await call(p, 'POST', `/sandbox/internal-accounts/${eurAccount}/fund`, { amount: 100_000 })).statusCode).toBe(200);
    const quote = async (address: string, currency: string, side: 'SENDING' | 'RECEIVING', amount: number, extra: Json = {}, from = sender.accountId) => {
      const looked = await call(p, 'GET', `/receiver/uma/${encodeURIComponent(address)}?customerId=${sender.customerId}`);
      expect(looked.statusCode, looked.body).toBe(200);
      return call(p, 'POST', '/quotes', {
        lookupId: (looked.json() as Json).lookupId,
        source: fromAccount(from),
        destination: { destinationType: 'UMA_ADDRESS', umaAddress: address, currency },
        lockedCurrencySide: side,
        lockedCurrencyAmount: amount,
        ...extra,
      });
    };
    return { p, sender, eurAccount, quote };
  }

  it('lives 120 s, though its invoice lives longer', async () => {
    const { quote } = await umaSender();
    const created = await quote('$success.usd@sandbox.uma.money', 'USD', 'RECEIVING', 10_000);
    expect(created.statusCode, created.body).toBe(201);
    const q = created.json() as Json;
    expect(Date.parse(q.expiresAt as string) - ctx.clock.now().getTime()).toBe(120_000);
  });

  it('a RECEIVING lock’s total is held to the platform’s range and the corridor maximum (here USD→MXN 200.00) once priced, also through immediatelyExecute; nothing is written', async () => {
    const { p, sender, quote } = await umaSender();
    for (const extra of [{}, { immediatelyExecute: true }]) {
      const above = expectEnvelope(await quote('$success.usd@sandbox.uma.money', 'USD', 'RECEIVING', 50_001, extra), 400, 'AMOUNT_OUT_OF_RANGE');
      expect(above.details).toMatchObject({ totalSendingAmount: 50_001, maxAmount: 50_000, currency: 'USD' });
      const corridor = expectEnvelope(await quote('$success.mxn@sandbox.uma.money', 'MXN', 'RECEIVING', 400_000, extra), 400, 'TRANSACTION_SIZE_LIMIT_EXCEEDED');
      expect(corridor.details).toMatchObject({ limit: 20_000, currency: 'USD', corridor: 'USD:MXN' });
    }
    expect(await quoteCount(p)).toBe(0);
    const atMax = await quote('$success.usd@sandbox.uma.money', 'USD', 'RECEIVING', 50_000, { immediatelyExecute: true });
    expect(atMax.statusCode, atMax.body).toBe(201);
    expect(atMax.json()).toMatchObject({ totalSendingAmount: 50_000, status: 'PROCESSING' });
    expect((await call(p, 'GET', `/customers/internal-accounts?customerId=${sender.customerId}&currency=USD`)).json()).toMatchObject({ data: [{ balance: { amount: 50_000 } }] });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('platformFeeOverride: its fee on a USD source; 501 NOT_IMPLEMENTED from a EUR account', async () => {
    const { p, eurAccount, quote } = await umaSender();
    const override = { platformFeeOverride: { platformFixedFee: { amount: 40, currency: 'USD' }, platformVariableFeeBps: 100 } };
    const created = await quote('$success.usd@sandbox.uma.money', 'USD', 'RECEIVING', 10_000, override);
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({ totalReceivingAmount: 10_000, platformFeesIncluded: 140, feesIncluded: 140, totalSendingAmount: 10_140 });
    expectEnvelope(await quote('$success.eur@sandbox.uma.money', 'EUR', 'SENDING', 10_000, override, eurAccount), 501, 'NOT_IMPLEMENTED');
    expect(await quoteCount(p)).toBe(1);
  });
});
