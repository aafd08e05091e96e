import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTx } from '../../src/platform/db/tx.js';
import { parseId } from '../../src/platform/ids.js';
import { BASE, createTestContext, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';
import { evmWallet } from '../helpers/external-accounts.js';
import { CapturingMessages, stamp, WalletClient } from '../helpers/wallet.js';

/**
 * Quotes ask two outside systems: the rate provider (production: CORRIDOR_RATES_URL) and the
 * withdrawal fee model (a deployment's may ask a gas oracle). Neither is asked with a database
 * transaction open: on the embedded engine (one connection for every request) that would stall
 * every other request for as long as the provider takes; on PostgreSQL it would hold a pooled
 * connection and the quote's (or the Idempotency-Key's) row lock. Here each provider blocks
 * until released, and another platform's request must be answered meanwhile.
 */
const WINDOW_MS = 5 * 60_000;

let ctx: TestContext;
let rates: Server;
let bystander: TestPlatform;
const messages = new CapturingMessages();

/** A provider that, while blocked, holds every call until released. */
function gate() {
  let opened: (() => void) | undefined;
  let closed: Promise<void> | undefined;
  return {
    calls: 0,
    block() {
      closed = new Promise((resolve) => (opened = resolve));
    },
    release() {
      opened?.();
      closed = undefined;
    },
    async pass() {
      this.calls++;
      await closed;
    },
  };
}
const rateGate = gate();
const feeGate = gate();

const call = (platform: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown, headers: Record<string, string> = {}) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: platform.auth, ...headers }, ...(payload === undefined ? {} : { payload: payload as object }) });

const until = async (what: () => boolean) => {
  const end = Date.now() + 10_000;
  while (!what()) {
    if (Date.now() > end) throw new Error('neither answered nor called the provider');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

/** Whether another platform's read (which needs the database) is answered 200 within a few seconds. */
async function anotherRequestAnswered(): Promise<boolean> {
  const read = call(bystander, 'GET', '/customers').then((r) => r.statusCode);
  const late = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), 5_000));
  return (await Promise.race([read, late])) === 200;
}

/** Moves the shared clock into a rate window no one has priced in yet, `offsetMs` into it. */
function nextWindow(offsetMs: number) {
  const now = ctx.clock.now().getTime();
  ctx.clock.set(new Date(now - (now % WINDOW_MS) + WINDOW_MS + offsetMs));
}

const currencyConfig = (code: string) => ({ currencyCode: code, minAmount: 1, maxAmount: 1_000_000_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] });

async function platformAccounts(p: TestPlatform): Promise<Record<string, string>> {
  const list = (await call(p, 'GET', '/platform/internal-accounts')).json() as { data: Array<{ id: string; balance: { currency: { code: string } } }> };
  return Object.fromEntries(list.data.map((a) => [a.balance.currency.code, a.id]));
}

async function fund(p: TestPlatform, accountId: string, amount: bigint) {
  await withTx(ctx.handle.db, (trx) =>
    ctx.ledger.transfer(trx, {
      platformId: p.uuid,
      reference: `fund-${accountId}`,
      postings: [{ from: { kind: 'SANDBOX_FUNDING', currency: 'USD' }, to: { kind: 'INTERNAL_ACCOUNT', id: parseId('InternalAccount', accountId)! }, amount, currency: 'USD' }],
    }),
  );
}

beforeAll(async () => {
  rates = createServer(async (request, response) => {
    let text = '';
    for await (const chunk of request) text += chunk;
    await rateGate.pass();
    const { currencies } = JSON.parse(text) as { currencies: string[] };
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify({ asOf: new Date().toISOString(), rates: Object.fromEntries(currencies.map((c) => [c, c === 'BTC' ? '0.00001' : '1'])) }));
  });
  await new Promise<void>((resolve) => rates.listen(0, '127.0.0.1', resolve));
  ctx = await createTestContext({
    // The provider's deadline is past the test's: an execution that asked it would still be waiting.
    env: { CORRIDOR_RATES_URL: `http://127.0.0.1:${(rates.address() as AddressInfo).port}/rates`, CORRIDOR_RATES_TIMEOUT_MS: '60000' },
    messages,
    withdrawalFees: {
      carries: () => ['USDC'],
      estimate: async () => {
        await feeGate.pass();
        return { networkFee: 9_750_000_000_000_000n, networkFeeAsset: 'ETH', networkFeeInCurrency: 29_250_000n };
      },
    },
  });
  bystander = await ctx.newPlatform('sandbox');
}, 120_000);

afterAll(async () => {
  rateGate.release();
  feeGate.release();
  await ctx?.close();
  rates?.closeAllConnections();
  await new Promise((resolve) => rates?.close(resolve));
});

describe(`no provider is asked inside a quote's transaction (${onPostgres ? 'PostgreSQL' : 'PGlite'})`, () => {
  it('executing a quote uses the rates it was priced with: signed (embedded wallet) or not, a later window the provider has not answered yet is never asked for', async () => {
    const p = await ctx.newPlatform('production');
    const client = new WalletClient(ctx, p);
    await client.enableWallets();
    const wallet = await client.newWallet({ endUserTermsConsent: { acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' } });
    const { key } = await client.login(wallet.credentialId, () => messages.lastCode());
    const fiat = (await call(p, 'GET', `/customers/internal-accounts?customerId=${wallet.customerId}&type=INTERNAL_FIAT`)).json() as { data: Array<{ id: string }> };
    const customerUsd = fiat.data[0]!.id;
    await fund(p, wallet.accountId, 100_000n);
    await fund(p, customerUsd, 100_000n);
    const payee = (await platformAccounts(p)).USD!;

    // Priced 10 s before its window ends (book transfers live 300 s), executed in the next one.
    nextWindow(WINDOW_MS - 10_000);
    const quoteFrom = async (accountId: string) => {
      const created = await call(p, 'POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId }, destination: { destinationType: 'ACCOUNT', accountId: payee }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 10_000 });
      expect(created.statusCode, created.body).toBe(201);
      return created.json() as { id: string; paymentInstructions?: Array<{ accountOrWalletInfo: { payloadToSign: string } }> };
    };
    const signedQuote = await quoteFrom(wallet.accountId);
    const plainQuote = await quoteFrom(customerUsd);
    ctx.clock.advance(20_000);

    rateGate.block();
    try {
      const asked = rateGate.calls;
      for (const execute of [
        async () => call(p, 'POST', `/quotes/${signedQuote.id}/execute`, undefined, { 'service-wallet-signature': await stamp(key, signedQuote.paymentInstructions![0]!.accountOrWalletInfo.payloadToSign) }),
        async () => call(p, 'POST', `/quotes/${plainQuote.id}/execute`),
      ]) {
        let answer: { statusCode: number; body: string } | undefined;
        const executing = execute().then((r) => (answer = r));
        await until(() => answer !== undefined || rateGate.calls > asked);
        // The execution did not ask the provider for the new window (the signed one asked it in its transaction).
        expect(rateGate.calls).toBe(asked);
        await executing;
        expect(answer!.statusCode, answer!.body).toBe(200);
        expect((JSON.parse(answer!.body) as { status: string }).status).not.toBe('PENDING');
      }
      expect(await anotherRequestAnswered()).toBe(true);
    } finally {
      rateGate.release();
    }
  }, 60_000);

  it('the network fee of a payout onto a crypto network is asked before the quote’s transaction (with an Idempotency-Key) and POST /transfer-out’s', async () => {
    const p = await ctx.newPlatform('production');
    expect((await call(p, 'PATCH', '/config', { supportedCurrencies: ['USD', 'USDC'].map(currencyConfig) })).statusCode).toBe(200);
    const usdc = (await platformAccounts(p)).USDC!;
    const created = await call(p, 'POST', '/platform/external-accounts', { currency: 'USDC', accountInfo: { accountType: 'ETHEREUM_WALLET', address: evmWallet().address } });
    expect(created.statusCode, created.body).toBe(201);
    const destination = (created.json() as { id: string }).id;

    const requests = [
      () =>
        call(p, 'POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: usdc }, destination: { destinationType: 'ACCOUNT', accountId: destination }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 100_000_000 }, { 'idempotency-key': `fee-${p.id}` }),
      () => call(p, 'POST', '/transfer-out', { source: { accountId: usdc }, destination: { accountId: destination }, amount: 100_000_000 }),
    ];
    for (const [index, send] of requests.entries()) {
      feeGate.block();
      try {
        const asked = feeGate.calls;
        const sending = send();
        await until(() => feeGate.calls > asked);
        expect(await anotherRequestAnswered()).toBe(true);
        feeGate.release();
        const answer = await sending;
        // The quote is priced with the fee; the transfer-out then needs a rail provider this deployment has not (501, nothing moved).
        if (index === 0) {
          expect(answer.statusCode, answer.body).toBe(201);
          expect(answer.json()).toMatchObject({ feesIncluded: 30_250_000, totalReceivingAmount: 69_750_000 });
        } else {
          expect(answer.statusCode, answer.body).toBe(501);
        }
      } finally {
        feeGate.release();
      }
    }
  }, 60_000);
});
