import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILT_IN_RATES_PER_USD } from '../../src/modules/rates/table.js';
import { withTx } from '../../src/platform/db/tx.js';
import { parseId } from '../../src/platform/ids.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { sparkWallet, validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { drainJobs } from '../helpers/payments.js';

// The money paths at numeric and currency extremes, as an integrator moving real money probes
// them: 0-, 2-, 6- and 8-decimal currencies on either side, rates far from 1 both ways, amounts at
// 1, at the limits and one past, and the rounding rule (modules/quotes README) checked exactly
// against an independent integer model of the documented formulas.

type Body = Record<string, any>;
const MAX = Number.MAX_SAFE_INTEGER;
const FUND = 100_000_000_000;

let ctx: TestContext;
let p: TestPlatform;
const internal: Record<string, string> = {};
const external: Record<string, string> = {};

const call = (method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({
    method,
    url: `${BASE}${path}`,
    headers: { authorization: p.auth, 'content-type': 'application/json' },
    // A string is sent as it is: JSON numbers a serializer would never write (1e3, 9007199254740993).
    ...(payload === undefined ? {} : { payload: typeof payload === 'string' ? payload : JSON.stringify(payload) }),
  });
const currencyConfig = (code: string, extra: Body = {}) => ({
  currencyCode: code, minAmount: 1, maxAmount: MAX, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'], ...extra,
});

/** A SWIFT account (any fiat currency) of the platform, its account number told apart by the currency. */
async function swiftAccount(currency: string): Promise<string> {
  const { iban: _iban, ...info } = validSamples(ctx.clock.now()).SWIFT_ACCOUNT!.accountInfo;
  const accountNumber = `77${[...currency].map((c) => c.charCodeAt(0)).join('')}`;
  const created = await call('POST', '/platform/external-accounts', { currency, accountInfo: { ...info, accountNumber } });
  expect(created.statusCode, created.body).toBe(201);
  return (created.json() as Body).id;
}

async function platformAccounts(): Promise<Record<string, Body>> {
  const own = (await call('GET', '/platform/internal-accounts')).json() as { data: Body[] };
  return Object.fromEntries(own.data.map((a) => [a.balance.currency.code, a]));
}

beforeAll(async () => {
  // Only the platform's own limits and the corridor overrides below bound these quotes.
  ctx = await createTestContext({ env: { CORRIDOR_MAX_TRANSACTION: JSON.stringify({ default: MAX, 'BTC:KRW': 1_000_000 }) } });
  p = ctx.platform;
  const codes = ['USD', 'JPY', 'KRW', 'BTC', 'USDC', 'IDR', 'KWD'];
  const config = await call('PATCH', '/config', { supportedCurrencies: codes.map((code) => currencyConfig(code, code === 'KRW' ? { minAmount: 30_000, maxAmount: 5_000_000 } : {})) });
  expect(config.statusCode, config.body).toBe(200);
  for (const [code, account] of Object.entries(await platformAccounts())) internal[code] = account.id;
  for (const code of ['USD', 'JPY', 'KRW', 'BTC', 'USDC']) {
    const funded = await call('POST', `/sandbox/internal-accounts/${internal[code]}/fund`, { amount: FUND });
    expect(funded.statusCode, funded.body).toBe(200);
  }
  for (const code of ['JPY', 'KRW', 'IDR', 'KWD']) external[code] = await swiftAccount(code);
  const spark = await call('POST', '/platform/external-accounts', { currency: 'BTC', accountInfo: { accountType: 'SPARK_WALLET', address: sparkWallet().address } });
  expect(spark.statusCode, spark.body).toBe(201);
  external.BTC = (spark.json() as Body).id;
}, 60_000);
afterAll(() => ctx.close());

const quoteBody = (from: string, to: string, side: 'SENDING' | 'RECEIVING', amount: number, options: { book?: boolean; extra?: Body } = {}) => ({
  source: { sourceType: 'ACCOUNT', accountId: internal[from] },
  destination: { destinationType: 'ACCOUNT', accountId: options.book ? internal[to] : external[to] },
  lockedCurrencySide: side,
  lockedCurrencyAmount: amount,
  ...options.extra,
});

// ---- The documented rule, computed independently (rates and quotes READMEs) ----

const ONE = 10n ** 18n;
const DECIMALS: Record<string, number> = { USD: 2, JPY: 0, KRW: 0, BTC: 8, USDC: 6, IDR: 2 };
const SPREAD_BPS: Record<string, bigint> = { 'USD:JPY': 25n, 'JPY:USD': 25n, 'BTC:JPY': 50n, 'JPY:BTC': 50n, 'USD:KRW': 75n, 'KRW:BTC': 50n, 'USD:IDR': 75n, 'USDC:JPY': 75n, 'USD:BTC': 50n, 'BTC:KRW': 50n };

function decimal(text: string): { num: bigint; den: bigint } {
  const [whole, fraction = ''] = text.split('.');
  return { num: BigInt(whole! + fraction), den: 10n ** BigInt(fraction.length) };
}

/** Receiving units per sending unit × 10^18, less the corridor's spread, rounded down. */
function exactRate(from: string, to: string): bigint {
  const f = decimal(BUILT_IN_RATES_PER_USD[from]!);
  const t = decimal(BUILT_IN_RATES_PER_USD[to]!);
  const spread = SPREAD_BPS[`${from}:${to}`]!;
  return (t.num * f.den * (10_000n - spread) * ONE) / (t.den * f.num * 10_000n);
}

const convertDown = (sent: bigint, rate: bigint, from: string, to: string) => (sent * rate * 10n ** BigInt(DECIMALS[to]!)) / (ONE * 10n ** BigInt(DECIMALS[from]!));
const halfUp = (amount: bigint, bps: bigint) => (amount * bps * 2n + 10_000n) / 20_000n;

/** The rate as the API shows it: the exact 18-digit decimal, as a JSON number. */
function shown(rate: bigint): number {
  const digits = rate.toString().padStart(19, '0');
  return Number(`${digits.slice(0, -18)}.${digits.slice(-18)}`);
}

/** Corridor's fixed fee of the routes below (modules/rates README): SWIFT 1500 US cents, a Spark wallet 5, a book transfer none. */
const routeFee = (to: string, book: boolean) => (book ? 0n : to === 'BTC' ? 5n : 1500n);

/**
 * Checks a quote's numbers against the rule: `totalSendingAmount = sent + feesIncluded`; fees are
 * the fixed part plus basis points of the amount sent, rounded half up (SENDING: the 0–2 units of
 * remainder go to the service fee); SENDING sends the most whose cost fits and delivers it
 * converted rounded down; RECEIVING sends the fewest units that buy the amount.
 */
function expectRule(quote: Body, from: string, to: string, side: 'SENDING' | 'RECEIVING', locked: number, routeFeeUsdCents: bigint): bigint {
  const rate = from === to ? ONE : exactRate(from, to);
  expect(quote.exchangeRate).toBe(shown(rate));
  // The route's fixed fee: US cents at the mid-market rate, in sending minor units, rounded up.
  const perUsd = decimal(BUILT_IN_RATES_PER_USD[from]!);
  const fixed = (routeFeeUsdCents * perUsd.num * 10n ** BigInt(DECIMALS[from]!) + perUsd.den * 100n - 1n) / (perUsd.den * 100n);
  expect(BigInt(quote.rateDetails.gridApiFixedFee)).toBe(fixed);
  const bps = BigInt(Math.round(quote.rateDetails.gridApiVariableFeeRate * 10_000));
  const total = BigInt(quote.totalSendingAmount);
  const fees = BigInt(quote.feesIncluded);
  const received = BigInt(quote.totalReceivingAmount);
  const sent = total - fees;
  expect(sent > 0n).toBe(true);
  expect(quote.platformFeesIncluded).toBe(0);
  const cost = (s: bigint) => s + fixed + halfUp(s, bps);
  if (side === 'SENDING') {
    expect(total).toBe(BigInt(locked));
    expect(cost(sent)).toBeLessThanOrEqual(total);
    expect(cost(sent + 1n)).toBeGreaterThan(total);
    expect(fees - (fixed + halfUp(sent, bps))).toBeLessThanOrEqual(2n);
    expect(received).toBe(convertDown(sent, rate, from, to));
  } else {
    expect(received).toBe(BigInt(locked));
    expect(convertDown(sent, rate, from, to)).toBeGreaterThanOrEqual(received);
    expect(convertDown(sent - 1n, rate, from, to)).toBeLessThan(received);
    expect(fees).toBe(fixed + halfUp(sent, bps));
  }
  return sent;
}

describe('POST /quotes at currency extremes: the rounding rule holds exactly', () => {
  const cases: Array<[string, string, 'SENDING' | 'RECEIVING', number, boolean?]> = [
    // 2 → 0 decimals, and back; rates ~150 and ~1/150.
    ['USD', 'JPY', 'SENDING', 1_501, false],
    ['USD', 'JPY', 'RECEIVING', 1, false],
    ['USD', 'JPY', 'RECEIVING', FUND, false],
    ['JPY', 'USD', 'RECEIVING', 1, true],
    ['JPY', 'USD', 'SENDING', FUND, true],
    // Rates of thousands to units of 0 (KRW) and 2 (IDR: 1 USD cent buys 16 500 IDR minor units) decimals.
    ['USD', 'KRW', 'SENDING', 1_501, false],
    ['USD', 'IDR', 'SENDING', FUND, false],
    ['USD', 'IDR', 'RECEIVING', 1, false],
    // Satoshis (8 decimals) against yen: ~17 million yen per bitcoin, ~6e-8 bitcoin per yen.
    ['BTC', 'JPY', 'SENDING', FUND, false],
    ['BTC', 'JPY', 'RECEIVING', 1, false],
    ['BTC', 'JPY', 'SENDING', 40, true],
    ['BTC', 'JPY', 'RECEIVING', 1, true],
    ['JPY', 'BTC', 'SENDING', 9, false],
    ['JPY', 'BTC', 'RECEIVING', FUND, false],
    ['JPY', 'BTC', 'SENDING', 1, true],
    ['KRW', 'BTC', 'RECEIVING', 1_000_000, true],
    // USDC's millionths paying yen.
    ['USDC', 'JPY', 'RECEIVING', 1, false],
    ['USDC', 'JPY', 'SENDING', FUND, false],
  ];
  for (const [from, to, side, amount, book] of cases) {
    it(`${from} → ${to}${book ? ' (book transfer)' : ''}, ${side} ${amount}`, async () => {
      const created = await call('POST', '/quotes', quoteBody(from, to, side, amount, { book: Boolean(book) }));
      expect(created.statusCode, created.body).toBe(201);
      expectRule(created.json() as Body, from, to, side, amount, routeFee(to, Boolean(book)));
    });
  }

  it('shows each currency as {code, name, symbol, decimals}: yen 0, satoshis 8, USDC 6, dinar 3', async () => {
    const quote = (await call('POST', '/quotes', quoteBody('BTC', 'JPY', 'RECEIVING', 1))).json() as Body;
    expect(quote.sendingCurrency).toEqual({ code: 'BTC', name: 'Bitcoin', symbol: '₿', decimals: 8 });
    expect(quote.receivingCurrency).toEqual({ code: 'JPY', name: 'Yen', symbol: '¥', decimals: 0 });
    const usdc = (await call('POST', '/quotes', quoteBody('USDC', 'JPY', 'RECEIVING', 1))).json() as Body;
    expect(usdc.sendingCurrency).toEqual({ code: 'USDC', name: 'USD Coin', symbol: 'USDC', decimals: 6 });
    const accounts = await platformAccounts();
    expect(accounts.KWD!.balance.currency).toMatchObject({ code: 'KWD', decimals: 3 });
    expect(accounts.KRW!.balance.currency).toMatchObject({ code: 'KRW', decimals: 0 });
  });

  it('executed, the ledger moves exactly the quote’s amounts and stays consistent', async () => {
    const before = await platformAccounts();
    const executed = await call('POST', '/quotes', quoteBody('BTC', 'JPY', 'SENDING', 123_456_789, { book: true, extra: { immediatelyExecute: true } }));
    expect(executed.statusCode, executed.body).toBe(201);
    const quote = executed.json() as Body;
    const sent = expectRule(quote, 'BTC', 'JPY', 'SENDING', 123_456_789, 0n);
    const payout = await call('POST', '/quotes', quoteBody('USD', 'IDR', 'RECEIVING', 1, { extra: { immediatelyExecute: true } }));
    expect(payout.statusCode, payout.body).toBe(201);
    await drainJobs(ctx);
    const after = await platformAccounts();
    expect(after.BTC!.balance.amount).toBe(before.BTC!.balance.amount - 123_456_789);
    expect(after.JPY!.balance.amount).toBe(before.JPY!.balance.amount + quote.totalReceivingAmount);
    expect(after.USD!.balance.amount).toBe(before.USD!.balance.amount - (payout.json() as Body).totalSendingAmount);
    const transaction = (await call('GET', `/transactions/${quote.transactionId}`)).json() as Body;
    expect(transaction).toMatchObject({ status: 'COMPLETED', sentAmount: { amount: Number(sent) }, receivedAmount: { amount: quote.totalReceivingAmount }, fees: 0 });
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('POST /quotes refusals at the edges', () => {
  it('an amount that buys nothing, or that fees eat, is INVALID_AMOUNT', async () => {
    // 1 yen buys 0.006 US cents; 2 satoshis buy 0.3 yen; the SWIFT fee alone is USD 15.
    expectEnvelope(await call('POST', '/quotes', quoteBody('JPY', 'USD', 'SENDING', 1, { book: true })), 400, 'INVALID_AMOUNT');
    expectEnvelope(await call('POST', '/quotes', quoteBody('BTC', 'JPY', 'SENDING', 2, { book: true })), 400, 'INVALID_AMOUNT');
    expectEnvelope(await call('POST', '/quotes', quoteBody('USD', 'JPY', 'SENDING', 1_500)), 400, 'INVALID_AMOUNT');
  });

  it('the platform’s min/max bound totalSendingAmount, on either locked side', async () => {
    // KRW: 30 000 – 5 000 000 won. SWIFT's fee in won: USD 15 at the mid rate (1431) rounded up, 21 465, plus 10 bps.
    for (const [amount, status] of [[29_999, 400], [30_000, 201], [5_000_000, 201], [5_000_001, 400]] as const) {
      const answer = await call('POST', '/quotes', quoteBody('KRW', 'KRW', 'SENDING', amount));
      if (status === 400) expectEnvelope(answer, 400, 'AMOUNT_OUT_OF_RANGE');
      else expect(answer.statusCode, answer.body).toBe(201);
    }
    // RECEIVING: the fees go on top. 4 973 561 + 21 465 + 4 974 is exactly the maximum; one won more is past it.
    const atMax = (await call('POST', '/quotes', quoteBody('KRW', 'KRW', 'RECEIVING', 4_973_561))).json() as Body;
    expect(atMax).toMatchObject({ totalSendingAmount: 5_000_000, feesIncluded: 21_465 + 4_974 });
    const refused = expectEnvelope(await call('POST', '/quotes', quoteBody('KRW', 'KRW', 'RECEIVING', 4_973_562)), 400, 'AMOUNT_OUT_OF_RANGE');
    expect(refused.details).toEqual({ totalSendingAmount: 5_000_001, minAmount: 30_000, maxAmount: 5_000_000, currency: 'KRW' });
  });

  it('a RECEIVING amount whose sending side passes a limit is refused with that limit’s code', async () => {
    // The corridor maximum BTC:KRW, 1 000 000 satoshis: 1 000 000 won cost some 600 000, 2 000 000 won some 1.2 million.
    expect((await call('POST', '/quotes', quoteBody('BTC', 'KRW', 'RECEIVING', 1_000_000))).statusCode).toBe(201);
    const sized = expectEnvelope(await call('POST', '/quotes', quoteBody('BTC', 'KRW', 'RECEIVING', 2_000_000)), 400, 'TRANSACTION_SIZE_LIMIT_EXCEEDED');
    expect(sized.details).toMatchObject({ limit: 1_000_000, currency: 'BTC', corridor: 'BTC:KRW' });
    // Past 2^53 − 1 sending minor units: 9e15 satoshis (9e7 BTC) cost some 1.6e19 IDR minor units.
    expectEnvelope(await call('POST', '/quotes', quoteBody('IDR', 'BTC', 'RECEIVING', 9_000_000_000_000_000, { book: true })), 400, 'AMOUNT_OUT_OF_RANGE');
    // SENDING whose receiving side passes 2^53 − 1: 1e12 US cents buy 1.65e17 IDR minor units.
    expectEnvelope(await call('POST', '/quotes', quoteBody('USD', 'IDR', 'SENDING', 1_000_000_000_000)), 400, 'AMOUNT_OUT_OF_RANGE');
  });

  it('lockedCurrencyAmount is a JSON integer from 1 to 9e15 (upstream’s bound); other forms are INVALID_INPUT', async () => {
    const raw = (amount: string) =>
      `{"source":{"sourceType":"ACCOUNT","accountId":"${internal.USD}"},"destination":{"destinationType":"ACCOUNT","accountId":"${internal.JPY}"},"lockedCurrencySide":"SENDING","lockedCurrencyAmount":${amount}}`;
    for (const amount of ['0', '-1', '100.5', '"1000"', 'null', '9000000000000001', '9007199254740993', '1e20']) {
      const refused = expectEnvelope(await call('POST', '/quotes', raw(amount)), 400, 'INVALID_INPUT');
      expect(refused.details!.errors, amount).toEqual([expect.objectContaining({ field: 'lockedCurrencyAmount' })]);
    }
    // JSON has one number type: 1e3 and 1000.0 are the integer 1000.
    for (const amount of ['1e3', '1000.0']) {
      const created = await call('POST', '/quotes', raw(amount));
      expect(created.statusCode, created.body).toBe(201);
      expect((created.json() as Body).totalSendingAmount).toBe(1000);
    }
  });

  it('a currency Corridor has no rate for (KWD, 3 decimals) is INVALID_CURRENCY naming the field it came from', async () => {
    const to = expectEnvelope(await call('POST', '/quotes', quoteBody('USD', 'KWD', 'SENDING', 10_000)), 400, 'INVALID_CURRENCY');
    expect(to.details).toEqual({ field: 'destination.accountId', currency: 'KWD' });
    const given = expectEnvelope(await call('POST', '/quotes', quoteBody('USD', 'KWD', 'SENDING', 10_000, { extra: { destination: { destinationType: 'ACCOUNT', accountId: external.KWD, currency: 'KWD' } } })), 400, 'INVALID_CURRENCY');
    expect(given.details).toEqual({ field: 'destination.currency', currency: 'KWD' });
    const from = expectEnvelope(await call('POST', '/quotes', quoteBody('KWD', 'USD', 'RECEIVING', 10_000, { book: true })), 400, 'INVALID_CURRENCY');
    expect(from.details).toEqual({ field: 'source.accountId', currency: 'KWD' });
  });
});

/**
 * The USD account of platform `p`, holding 1,000 minor units less than 2^53 − 1: what 90,072
 * sandbox fundings of 1e11 would add up to, in one ledger posting.
 */
async function accountNearTheLimit(): Promise<string> {
  const usd = (await platformAccounts()).USD!.id as string;
  await withTx(ctx.handle.db, (trx) =>
    ctx.ledger.transfer(trx, {
      platformId: p.uuid,
      reference: 'near-the-limit',
      postings: [{ from: { kind: 'SANDBOX_FUNDING', currency: 'USD' }, to: { kind: 'INTERNAL_ACCOUNT', id: parseId('InternalAccount', usd)! }, amount: BigInt(MAX - 1_000), currency: 'USD' }],
    }),
  );
  return usd;
}

describe('a credit past what an account holds (2^53 − 1 minor units)', () => {
  it('is 400 AMOUNT_OUT_OF_RANGE (reason BALANCE_LIMIT), not 500; nothing moves and the quote can still run', async () => {
    // 1e11 US cents buy 1.65e15 IDR minor units: the sixth such book transfer cannot be credited.
    for (let i = 0; i < 6; i++) expect((await call('POST', `/sandbox/internal-accounts/${internal.USD}/fund`, { amount: FUND })).statusCode).toBe(200);
    for (let i = 0; i < 5; i++) {
      const credited = await call('POST', '/quotes', quoteBody('USD', 'IDR', 'SENDING', FUND, { book: true, extra: { immediatelyExecute: true } }));
      expect(credited.statusCode, credited.body).toBe(201);
    }
    await drainJobs(ctx);
    const before = await platformAccounts();
    expect(before.IDR!.balance.amount).toBeGreaterThan(MAX - 1_652_512_500_000_000);
    const refused = expectEnvelope(await call('POST', '/quotes', quoteBody('USD', 'IDR', 'SENDING', FUND, { book: true, extra: { immediatelyExecute: true } })), 400, 'AMOUNT_OUT_OF_RANGE');
    expect(refused.details).toMatchObject({ reason: 'BALANCE_LIMIT', accountId: internal.IDR });
    // Created first, executed later: the refusal rolls the execution back and the quote stays PENDING.
    const quote = (await call('POST', '/quotes', quoteBody('USD', 'IDR', 'SENDING', FUND, { book: true }))).json() as Body;
    expectEnvelope(await call('POST', `/quotes/${quote.id}/execute`), 400, 'AMOUNT_OUT_OF_RANGE');
    expect(((await call('GET', `/quotes/${quote.id}`)).json() as Body).status).toBe('PENDING');
    const after = await platformAccounts();
    expect([after.USD!.balance.amount, after.IDR!.balance.amount]).toEqual([before.USD!.balance.amount, before.IDR!.balance.amount]);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('a transfer-in (a pull held towards the account) is refused the same way', async () => {
    const main = p;
    p = await ctx.newPlatform();
    try {
      const usd = await accountNearTheLimit();
      const sample = validSamples(ctx.clock.now()).USD_ACCOUNT!;
      const pullable = (await call('POST', '/platform/external-accounts', { ...sample, ownershipType: 'FIRST_PARTY' })).json() as Body;
      expect((await call('POST', '/transfer-in', { source: { accountId: pullable.id }, destination: { accountId: usd }, amount: 1_000 })).statusCode).toBe(201);
      const refused = expectEnvelope(await call('POST', '/transfer-in', { source: { accountId: pullable.id }, destination: { accountId: usd }, amount: 1 }), 400, 'AMOUNT_OUT_OF_RANGE');
      expect(refused.details).toMatchObject({ reason: 'BALANCE_LIMIT', accountId: usd });
      await drainJobs(ctx);
      expect((await platformAccounts()).USD!.balance.amount).toBe(MAX);
      await expectLedgerConsistent(ctx.handle.db);
    } finally {
      p = main;
    }
  });
});

describe('a credit past what an account holds, paid in (REALTIME_FUNDING)', () => {
  it('POST /sandbox/send is refused 400 AMOUNT_OUT_OF_RANGE (BALANCE_LIMIT), not 500; nothing moves and the payment still waits', async () => {
    const main = p;
    p = await ctx.newPlatform();
    try {
      const usd = await accountNearTheLimit();
      const created = await call('POST', '/quotes', {
        source: { sourceType: 'REALTIME_FUNDING', currency: 'USD' },
        destination: { destinationType: 'ACCOUNT', accountId: usd },
        lockedCurrencySide: 'SENDING',
        lockedCurrencyAmount: 5_000,
      });
      expect(created.statusCode, created.body).toBe(201);
      const quote = created.json() as Body;
      const refused = expectEnvelope(await call('POST', '/sandbox/send', { quoteId: quote.id, currencyCode: 'USD' }), 400, 'AMOUNT_OUT_OF_RANGE');
      expect(refused.details).toMatchObject({ reason: 'BALANCE_LIMIT', accountId: usd });
      expect(((await call('GET', `/quotes/${quote.id}`)).json() as Body).status).toBe('PENDING');
      expect((await platformAccounts()).USD!.balance.amount).toBe(MAX - 1_000);
      await expectLedgerConsistent(ctx.handle.db);
    } finally {
      p = main;
    }
  });
});

describe('GET /exchange-rates at the extremes', () => {
  it('sendingAmount 1: nothing arrives, and the total fees are never below their fixed part', async () => {
    const { data } = (await call('GET', '/exchange-rates?sourceCurrency=USD&destinationCurrency=JPY&sendingAmount=1')).json() as { data: Body[] };
    expect(data.length).toBeGreaterThan(0);
    for (const rate of data) {
      expect(rate.receivingAmount).toBe(0);
      expect(rate.fees.total).toBeGreaterThanOrEqual(rate.fees.fixed);
    }
  });

  it('prices a large amount as the SENDING quote does, to the unit', async () => {
    const { data } = (await call('GET', `/exchange-rates?sourceCurrency=BTC&destinationCurrency=JPY&sendingAmount=${FUND}`)).json() as { data: Body[] };
    const swift = data.find((r) => r.destinationPaymentRail === 'SWIFT')!;
    const quote = (await call('POST', '/quotes', quoteBody('BTC', 'JPY', 'SENDING', FUND))).json() as Body;
    expect(swift).toMatchObject({ sendingAmount: FUND, receivingAmount: quote.totalReceivingAmount, exchangeRate: quote.exchangeRate, fees: { total: quote.feesIncluded } });
    expect(swift.destinationCurrency).toEqual({ code: 'JPY', name: 'Yen', symbol: '¥', decimals: 0 });
  });

  it('an amount whose price the answer cannot carry is AMOUNT_OUT_OF_RANGE; one past 2^53 − 1 or not in plain digits is INVALID_INPUT', async () => {
    expectEnvelope(await call('GET', `/exchange-rates?sourceCurrency=USD&destinationCurrency=IDR&sendingAmount=${MAX}`), 400, 'AMOUNT_OUT_OF_RANGE');
    for (const amount of [String(MAX + 1), '1e3', '-1', '1.5']) {
      expectEnvelope(await call('GET', `/exchange-rates?sourceCurrency=USD&sendingAmount=${amount}`), 400, 'INVALID_INPUT');
    }
  });

  it('an unknown code is INVALID_CURRENCY, a lowercase one INVALID_INPUT (docs/conventions.md), an unrated one lists nothing', async () => {
    expectEnvelope(await call('GET', '/exchange-rates?destinationCurrency=XYZ'), 400, 'INVALID_CURRENCY');
    expectEnvelope(await call('GET', '/exchange-rates?sourceCurrency=usd'), 400, 'INVALID_INPUT');
    expect(((await call('GET', '/exchange-rates?sourceCurrency=KWD')).json() as Body).data).toEqual([]);
  });
});
