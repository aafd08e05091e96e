import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LONG_PENDING_SECONDS } from '../../src/modules/uma/simulated-vasp.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * The hosted sandbox's UMA test addresses, paid from a sandbox platform with no network: the
 * test VASP is simulated inside Corridor, behind the same transport as any other VASP.
 * Production platforms reach the real domain (here: a resolver that records the names asked).
 */
let ctx: TestContext;
let hooks: WebhookReceiver;
const resolved: string[] = [];

type Body = Record<string, unknown>;
interface Sender {
  platform: TestPlatform;
  id: string;
  umaAddress: string;
  accountId: string;
}

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

const lookup = (sender: Sender, address: string) => call(sender.platform, 'GET', `/receiver/uma/${encodeURIComponent(address)}?customerId=${sender.id}`);

const balanceOf = async (sender: Sender) => {
  const accounts = (await call(sender.platform, 'GET', `/customers/internal-accounts?customerId=${sender.id}&currency=USD`)).json() as { data: Body[] };
  return (accounts.data[0]!.balance as { amount: number }).amount;
};

const drain = async () => {
  for (let i = 0; i < 50; i++) if ((await ctx.jobs.runDue(50)) === 0) return;
  throw new Error('jobs kept coming');
};

/**
 * A platform of its own (its test clock moves alone) with a USD customer holding $10,000. The
 * sandbox platforms share one umaDomain, as a CI fleet does; a production platform's domain is
 * its own (no other platform may hold it, modules/config README).
 */
async function newSender(environment: 'sandbox' | 'production' = 'sandbox'): Promise<Sender> {
  const platform = await ctx.newPlatform(environment);
  const usd = { currencyCode: 'USD', minAmount: 1, maxAmount: 10_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] };
  const umaDomain = environment === 'sandbox' ? 'ci-platform.example' : 'ci-production.example';
  const configured = await call(platform, 'PATCH', '/config', { umaDomain, supportedCurrencies: [usd], ...(environment === 'sandbox' ? { webhookEndpoint: hooks.url } : {}) });
  expect(configured.statusCode, configured.body).toBe(200);
  const consent = { acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' };
  const created = await call(platform, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'ci-sender', fullName: 'Casey Sender', currencies: ['USD'], endUserTermsConsent: consent });
  expect(created.statusCode, created.body).toBe(201);
  const customer = created.json() as { id: string; umaAddress: string };
  // A production customer's accounts open with its verification: its lookup needs none.
  if (environment === 'production') return { platform, ...customer, accountId: '' };
  const accounts = (await call(platform, 'GET', `/customers/internal-accounts?customerId=${customer.id}&currency=USD`)).json() as { data: Body[] };
  const accountId = accounts.data[0]!.id as string;
  expect((await call(platform, 'POST', `/sandbox/internal-accounts/${accountId}/fund`, { amount: 1_000_000 })).statusCode).toBe(200);
  return { platform, ...customer, accountId };
}

/** Lookup, quote (the receiver gets `amount` minor units of `currency`), execute; the quote as answered. */
async function pay(sender: Sender, address: string, currency: string, amount = 10_000) {
  const looked = await lookup(sender, address);
  expect(looked.statusCode, looked.body).toBe(200);
  const quoted = await call(sender.platform, 'POST', '/quotes', {
    lookupId: looked.json().lookupId,
    source: { sourceType: 'ACCOUNT', accountId: sender.accountId },
    destination: { destinationType: 'UMA_ADDRESS', umaAddress: address, currency },
    lockedCurrencySide: 'RECEIVING',
    lockedCurrencyAmount: amount,
  });
  expect(quoted.statusCode, quoted.body).toBe(201);
  const quote = quoted.json();
  expect(quote).toMatchObject({ sendingCurrency: { code: 'USD' }, receivingCurrency: { code: currency }, totalReceivingAmount: amount });
  const executed = await call(sender.platform, 'POST', `/quotes/${quote.id}/execute`, {});
  expect(executed.statusCode, executed.body).toBe(200);
  await drain();
  return quote as { id: string; transactionId: string; totalSendingAmount: number };
}

const transactionOf = async (sender: Sender, id: string) => (await call(sender.platform, 'GET', `/transactions/${id}`)).json();

/** The rail's settlement time (60 s) passes on the platform's test clock. */
const settle = async (sender: Sender, seconds = 61) => {
  expect((await call(sender.platform, 'POST', '/sandbox/clock/advance', { seconds })).statusCode).toBe(200);
  await drain();
};

beforeAll(async () => {
  ctx = await createTestContext({
    webhookResolver: async (hostname) => {
      resolved.push(hostname);
      return [{ address: '127.0.0.1', family: 4 }];
    },
  });
  hooks = await WebhookReceiver.start();
}, 300_000);

// The SDK stamps the messages it signs with the system time; the manual clock that judges them follows it.
beforeEach(() => ctx.clock.set(new Date()));

afterAll(async () => {
  await hooks?.close();
  await ctx?.close();
});

describe('GET /receiver/uma/{address}: the test VASP answers like a receiving VASP', () => {
  it.each([
    ['$success.usd@sandbox.uma.money', 'USD', 'US Dollar'],
    ['$success.eur@sandbox.uma.money', 'EUR', 'Euro'],
    ['$success.mxn@sandbox.uma.money', 'MXN', 'Mexican Peso'],
    ['$pending.long.usd@sandbox.uma.money', 'USD', 'US Dollar'],
    ['$fail.compliance.usd@sandbox.uma.money', 'USD', 'US Dollar'],
  ])('%s receives %s', async (address, code, name) => {
    const sender = await newSender();
    const response = await lookup(sender, address);
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(body).toMatchObject({
      receiverUmaAddress: address,
      supportedCurrencies: [{ currency: { code, name, decimals: 2 }, min: 1, max: 100_000_000 }],
      requiredPayerDataFields: expect.arrayContaining([{ name: 'IDENTIFIER', mandatory: true }, { name: 'FULL_NAME', mandatory: false }]),
    });
    expect(body.supportedCurrencies[0].estimatedExchangeRate).toBeGreaterThan(0);
    if (code === 'USD') expect(body.supportedCurrencies[0].estimatedExchangeRate).toBeCloseTo(1, 6);
    expect(body.lookupId).toMatch(/^Lookup:/);
  });

  it('UMA_NOT_FOUND for a user the test VASP does not have', async () => {
    expectEnvelope(await lookup(await newSender(), '$nobody@sandbox.uma.money'), 404, 'UMA_NOT_FOUND');
  });
});

describe('paying the test addresses: quote, execute, settle', () => {
  it.each([
    ['$success.usd@sandbox.uma.money', 'USD'],
    ['$success.eur@sandbox.uma.money', 'EUR'],
    ['$success.mxn@sandbox.uma.money', 'MXN'],
  ])('%s: the payment completes and the sender is debited what the quote said', async (address, currency) => {
    const sender = await newSender();
    const before = await balanceOf(sender);
    const quote = await pay(sender, address, currency);
    if (currency === 'USD') expect(quote.totalSendingAmount).toBe(10_000);
    await settle(sender);
    expect(await transactionOf(sender, quote.transactionId)).toMatchObject({
      type: 'OUTGOING',
      status: 'COMPLETED',
      destination: { destinationType: 'UMA_ADDRESS', umaAddress: address },
      receivedAmount: { amount: 10_000, currency: { code: currency } },
    });
    expect(await balanceOf(sender)).toBe(before - quote.totalSendingAmount);
    // The preimage the test VASP's node released is kept as the proof of payment.
    const paid = await ctx.handle.db.selectFrom('uma_outgoing_payments').select('preimage').where('transaction_id', '=', quote.transactionId.slice('Transaction:'.length)).executeTakeFirstOrThrow();
    expect(paid.preimage).toMatch(/^[0-9a-f]{64}$/);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it(`$pending.long.usd: in flight for ${LONG_PENDING_SECONDS} s of the platform's time, then completes; the test clock skips the wait`, async () => {
    const sender = await newSender();
    const before = await balanceOf(sender);
    const quote = await pay(sender, '$pending.long.usd@sandbox.uma.money', 'USD');
    await settle(sender);
    expect(await transactionOf(sender, quote.transactionId)).toMatchObject({ status: 'PROCESSING' });
    expect(await balanceOf(sender)).toBe(before - quote.totalSendingAmount);
    await settle(sender, LONG_PENDING_SECONDS - 200);
    expect(await transactionOf(sender, quote.transactionId)).toMatchObject({ status: 'PROCESSING' });
    await expectLedgerConsistent(ctx.handle.db);
    await settle(sender, 200);
    expect(await transactionOf(sender, quote.transactionId)).toMatchObject({ status: 'COMPLETED' });
    expect(await balanceOf(sender)).toBe(before - quote.totalSendingAmount);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('$fail.compliance.usd: the payment fails COMPLIANCE_REJECTED and the sender is refunded', async () => {
    const sender = await newSender();
    const before = await balanceOf(sender);
    const quote = await pay(sender, '$fail.compliance.usd@sandbox.uma.money', 'USD');
    await settle(sender);
    expect(await transactionOf(sender, quote.transactionId)).toMatchObject({ status: 'FAILED', failureReason: 'COMPLIANCE_REJECTED' });
    expect(await balanceOf(sender)).toBe(before);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('the test VASP enforces its limits like any receiver: AMOUNT_OUT_OF_RANGE, nothing moves', async () => {
    const sender = await newSender();
    const looked = (await lookup(sender, '$success.usd@sandbox.uma.money')).json();
    const quoted = await call(sender.platform, 'POST', '/quotes', {
      lookupId: looked.lookupId,
      source: { sourceType: 'ACCOUNT', accountId: sender.accountId },
      destination: { destinationType: 'UMA_ADDRESS', umaAddress: '$success.usd@sandbox.uma.money', currency: 'USD' },
      lockedCurrencySide: 'RECEIVING',
      lockedCurrencyAmount: 100_000_001,
    });
    expectEnvelope(quoted, 400, 'AMOUNT_OUT_OF_RANGE');
    expect(await balanceOf(sender)).toBe(1_000_000);
  });
});

describe("the platform's fee on UMA payments", () => {
  const address = '$success.eur@sandbox.uma.money';

  async function quote(sender: Sender, side: 'SENDING' | 'RECEIVING', amount: number, extra: Body = {}) {
    const looked = await lookup(sender, address);
    expect(looked.statusCode, looked.body).toBe(200);
    return call(sender.platform, 'POST', '/quotes', {
      lookupId: looked.json().lookupId,
      source: { sourceType: 'ACCOUNT', accountId: sender.accountId },
      destination: { destinationType: 'UMA_ADDRESS', umaAddress: address, currency: 'EUR' },
      lockedCurrencySide: side,
      lockedCurrencyAmount: amount,
      ...extra,
    });
  }

  /** Executes and settles the quote: the sender pays exactly its total, the platform's fee account gets exactly its fee. */
  async function payAndCheck(sender: Sender, answered: Body) {
    const before = await balanceOf(sender);
    const fees = () => ctx.handle.db.selectFrom('ledger_accounts').innerJoin('ledger_balances', 'ledger_balances.account_id', 'ledger_accounts.id')
      .select((eb) => eb.fn.sum<string>('ledger_balances.credits_posted').as('credits'))
      .where('ledger_accounts.platform_id', '=', sender.platform.uuid).where('ledger_accounts.kind', '=', 'PLATFORM_FEES').executeTakeFirst();
    const feesBefore = BigInt((await fees())?.credits ?? 0);
    expect((await call(sender.platform, 'POST', `/quotes/${answered.id as string}/execute`, {})).statusCode).toBe(200);
    await drain();
    await settle(sender);
    expect(await transactionOf(sender, answered.transactionId as string)).toMatchObject({ status: 'COMPLETED', receivedAmount: { amount: answered.totalReceivingAmount } });
    expect(await balanceOf(sender)).toBe(before - (answered.totalSendingAmount as number));
    expect(BigInt((await fees())?.credits ?? 0) - feesBefore).toBe(BigInt(answered.platformFeesIncluded as number));
    await expectLedgerConsistent(ctx.handle.db);
  }

  it('feeConfigs: on top of a RECEIVING lock, out of a SENDING lock before the msats are bought', async () => {
    const sender = await newSender();
    const feeConfigs = [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', fixedFee: { amount: 30, currency: 'USD' }, variableFeeBps: 100 }];
    expect((await call(sender.platform, 'PATCH', '/config', { feeConfigs })).statusCode).toBe(200);

    const receiving = await quote(sender, 'RECEIVING', 10_000);
    expect(receiving.statusCode, receiving.body).toBe(201);
    const r = receiving.json();
    expect(r.totalReceivingAmount).toBe(10_000);
    // 1 % of what the invoice costs (half up, as every basis-point fee), plus 30.
    const sentR = r.totalSendingAmount - r.platformFeesIncluded;
    expect(r.platformFeesIncluded).toBe(30 + Math.round(sentR / 100));
    expect(r.feesIncluded).toBe(r.platformFeesIncluded);
    await payAndCheck(sender, r);

    const sending = await quote(sender, 'SENDING', 20_000);
    expect(sending.statusCode, sending.body).toBe(201);
    const s = sending.json();
    expect(s.totalSendingAmount).toBe(20_000);
    // The fee on what is converted, the rest converted: at most one unit of rounding left, to the service fee.
    const sentS = 20_000 - s.feesIncluded;
    expect(s.platformFeesIncluded).toBe(30 + Math.round(sentS / 100));
    expect(s.feesIncluded - s.platformFeesIncluded).toBeLessThanOrEqual(1);
    // Without the fee the same lock buys more: the receiver gets less by about the fee's worth.
    // (feeConfigs merge by key: a fee of 0 and 0 removes it.)
    const none = [{ feeType: 'CROSS_CURRENCY_TRANSACTION', sourceCurrency: 'USD', fixedFee: { amount: 0, currency: 'USD' }, variableFeeBps: 0 }];
    expect((await call(sender.platform, 'PATCH', '/config', { feeConfigs: none })).statusCode).toBe(200);
    const free = (await quote(sender, 'SENDING', 20_000)).json();
    expect(free.platformFeesIncluded).toBe(0);
    expect(free.totalReceivingAmount).toBeGreaterThan(s.totalReceivingAmount);
    await payAndCheck(sender, s);
  });

  it('platformFeeOverride applies (USD sources only); a fee that leaves nothing to send is INVALID_AMOUNT, before any pay request', async () => {
    const sender = await newSender();
    const override = { platformFeeOverride: { platformFixedFee: { amount: 50, currency: 'USD' }, platformVariableFeeBps: 0 } };
    const answered = await quote(sender, 'RECEIVING', 5_000, override);
    expect(answered.statusCode, answered.body).toBe(201);
    expect(answered.json().platformFeesIncluded).toBe(50);
    await payAndCheck(sender, answered.json());
    expectEnvelope(await quote(sender, 'SENDING', 50, override), 400, 'INVALID_AMOUNT');
    const eurFee = { platformFeeOverride: { platformFixedFee: { amount: 50, currency: 'EUR' }, platformVariableFeeBps: 0 } };
    expectEnvelope(await quote(sender, 'RECEIVING', 5_000, eurFee), 400, 'INVALID_INPUT');
  });
});

describe('POST /sandbox/uma/receive from a test address', () => {
  it('$success.usd@sandbox.uma.money pays a customer: approved, credited', async () => {
    const receiver = await newSender();
    const before = await balanceOf(receiver);
    const response = await call(receiver.platform, 'POST', '/sandbox/uma/receive', {
      senderUmaAddress: '$success.usd@sandbox.uma.money',
      receiverUmaAddress: receiver.umaAddress,
      receivingCurrencyCode: 'USD',
      receivingCurrencyAmount: 2_500,
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({ type: 'INCOMING', status: 'COMPLETED', receivedAmount: { amount: 2_500 } });
    expect(await balanceOf(receiver)).toBe(before + 2_500);
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('production platforms', () => {
  it('do not simulate the test VASP: the lookup goes to the real domain, through the network guard', async () => {
    const sender = await newSender('production');
    resolved.length = 0;
    const response = await lookup(sender, '$success.usd@sandbox.uma.money');
    expect(expectEnvelope(response, 400, 'LOOKUP_REQUEST_FAILED').details).toMatchObject({ vaspDomain: 'sandbox.uma.money', reason: expect.stringMatching(/loopback/) });
    expect(resolved).toContain('sandbox.uma.money');
  });
});
