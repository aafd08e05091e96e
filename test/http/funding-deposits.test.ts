import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventCatalogue } from '../../src/app.js';
import { accountBalance } from '../../src/modules/ledger/index.js';
import { DepositFeed, DEPOSIT_POLL_INTERVAL_MS, DEPOSIT_POLL_JOB, FundingDeposits, HttpRails } from '../../src/modules/transactions/index.js';
import { OffsetPlatformClock } from '../../src/platform/platform-clock.js';
import { createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { balances, call, depositableCustomer, drainJobs, eventTypes, type Json } from '../helpers/payments.js';

/**
 * Deposits to internal accounts' funding instructions: POST /sandbox/deposits, and the
 * production rail provider's feed polled by one durable job. Each credits the account once per
 * deposit id through the ledger, as an INCOMING transaction.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());
afterEach(async () => {
  await expectLedgerConsistent(ctx.handle.db);
});

type Instruction = { accountOrWalletInfo: Record<string, unknown> };

const deposit = (p: TestPlatform, body: Json) => call(ctx, p, 'POST', '/sandbox/deposits', body);

describe('POST /sandbox/deposits', () => {
  it('credits the account of the reference: an INCOMING transaction, COMPLETED, with its events and the balance update', async () => {
    const p = await ctx.newPlatform();
    const ann = await depositableCustomer(ctx, p);
    const response = await deposit(p, {
      reference: ann.reference,
      amount: 25_000,
      depositId: 'ach-0001',
      sender: { accountHolderName: 'Ann Lee', bankName: 'First Example Bank', accountIdentifier: '****6789', traceNumber: '021000021234567' },
    });
    expect(response.statusCode, response.body).toBe(200);
    const tx = response.json() as Json;
    expect(tx).toMatchObject({
      type: 'INCOMING',
      direction: 'CREDIT',
      status: 'COMPLETED',
      customerId: ann.customerId,
      platformCustomerId: ann.platformCustomerId,
      source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', paymentRail: 'ACH', accountHolderName: 'Ann Lee', bankName: 'First Example Bank', traceNumber: '021000021234567' },
      destination: { destinationType: 'ACCOUNT', accountId: ann.accountId, currency: 'USD' },
      receivedAmount: { amount: 25_000, currency: { code: 'USD' } },
      reconciliationInstructions: { reference: ann.reference },
    });
    expect(tx.settledAt).toEqual(expect.any(String));
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 25_000, total: 25_000 });
    // Informational PENDING (no approval round trip), then COMPLETED, in the transaction of the credit.
    expect(await eventTypes(ctx, tx.id)).toEqual(['INCOMING_PAYMENT.PENDING', 'INCOMING_PAYMENT.COMPLETED']);
    expect(await eventTypes(ctx, ann.accountId)).toContain('INTERNAL_ACCOUNT.BALANCE_UPDATED');
    const catalogue = eventCatalogue();
    const rows = await ctx.handle.db.selectFrom('events').select(['type', 'data']).where('resource_id', 'in', [tx.id, ann.accountId]).execute();
    for (const row of rows) expect(catalogue.validate(row.type, row.data), row.type).toMatchObject({ valid: true });
    expect(rows.find((r) => r.type === 'INCOMING_PAYMENT.PENDING')!.data).toMatchObject({ id: tx.id, status: 'PENDING' });
    // GET and the list by the account find it.
    expect((await call(ctx, p, 'GET', `/transactions/${tx.id}`)).json()).toMatchObject({ id: tx.id, status: 'COMPLETED' });
    const listed = (await call(ctx, p, 'GET', `/transactions?type=INCOMING&customerId=${ann.customerId}`)).json() as { data: Json[] };
    expect(listed.data.map((t) => t.id)).toEqual([tx.id]);
  });

  it('credits once per deposit id: the same id answers the same transaction; with another amount 409', async () => {
    const p = await ctx.newPlatform();
    const ann = await depositableCustomer(ctx, p);
    const first = (await deposit(p, { reference: ann.reference, amount: 700, depositId: 'wire-7', rail: 'WIRE' })).json() as Json;
    const again = await deposit(p, { reference: ann.reference, amount: 700, depositId: 'wire-7', rail: 'WIRE' });
    expect(again.statusCode, again.body).toBe(200);
    expect((again.json() as Json).id).toBe(first.id);
    expectEnvelope(await deposit(p, { reference: ann.reference, amount: 701, depositId: 'wire-7' }), 409, 'CONFLICT');
    // Banks may change the reference's case and add separators: it still matches.
    const spaced = `${ann.reference.slice(0, 3).toLowerCase()}-${ann.reference.slice(3)}`;
    const other = (await deposit(p, { reference: spaced, amount: 300 })).json() as Json;
    expect(other.id).not.toBe(first.id);
    // The first deposit reported again with the reference spelt so: the same deposit, not a conflict.
    const respelt = await deposit(p, { reference: spaced, amount: 700, depositId: 'wire-7', rail: 'WIRE' });
    expect(respelt.statusCode, respelt.body).toBe(200);
    expect((respelt.json() as Json).id).toBe(first.id);
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 1_000, total: 1_000 });
    // Each deposit comes from the settlement account of the rail it arrived on (the operator reconciles per rail).
    const settled = async (rail: string) => (await accountBalance(ctx.handle.db, p.uuid, { kind: 'SETTLEMENT', rail, currency: 'USD' })).total;
    expect([await settled('WIRE'), await settled('ACH')]).toEqual([-700n, -300n]);
    expect(await eventTypes(ctx, first.id)).toEqual(['INCOMING_PAYMENT.PENDING', 'INCOMING_PAYMENT.COMPLETED']);
    // Another platform may use the same deposit id for its own deposit.
    const q = await ctx.newPlatform();
    const bob = await depositableCustomer(ctx, q);
    const theirs = await deposit(q, { reference: bob.reference, amount: 50, depositId: 'wire-7' });
    expect(theirs.statusCode).toBe(200);
    // Reported again there, it answers that platform's own credit, whatever the other platform holds under the id.
    const theirsAgain = await deposit(q, { reference: bob.reference, amount: 50, depositId: 'wire-7' });
    expect(theirsAgain.statusCode, theirsAgain.body).toBe(200);
    expect((theirsAgain.json() as Json).id).toBe((theirs.json() as Json).id);
    expect(await balances(ctx, q, bob.customerId)).toEqual({ available: 50, total: 50 });
  });

  it('an account no longer ACTIVE takes no new deposit (409, nothing credited), while a deposit it took before is still answered', async () => {
    const p = await ctx.newPlatform();
    const ann = await depositableCustomer(ctx, p);
    const first = (await deposit(p, { reference: ann.reference, amount: 600, depositId: 'before-freeze' })).json() as Json;
    const accountUuid = ann.accountId.slice(ann.accountId.indexOf(':') + 1);
    // No route freezes an account yet: the provider's state, written as its sync would.
    await ctx.handle.db.updateTable('internal_accounts').set({ status: 'FROZEN' }).where('platform_id', '=', p.uuid).where('id', '=', accountUuid).execute();
    const refused = expectEnvelope(await deposit(p, { reference: ann.reference, amount: 900, depositId: 'after-freeze' }), 409, 'CONFLICT');
    expect(refused.details).toEqual({ status: 'FROZEN' });
    const again = await deposit(p, { reference: ann.reference, amount: 600, depositId: 'before-freeze' });
    expect(again.statusCode, again.body).toBe(200);
    expect((again.json() as Json).id).toBe(first.id);
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 600, total: 600 });
    const listed = (await call(ctx, p, 'GET', `/transactions?type=INCOMING&customerId=${ann.customerId}`)).json() as { data: Json[] };
    expect(listed.data.map((t) => t.id)).toEqual([first.id]);
  });

  it('a bank deposit shows its rail, never an on-chain transaction, whatever the sender tells', async () => {
    const p = await ctx.newPlatform();
    const ann = await depositableCustomer(ctx, p);
    const response = await deposit(p, { reference: ann.reference, amount: 200, rail: 'ACH', sender: { transactionHash: '0xabc123', bankName: 'First Example Bank' } });
    expect(response.statusCode, response.body).toBe(200);
    const source = (response.json() as Json).source as Json;
    expect(source).toMatchObject({ sourceType: 'REALTIME_FUNDING', paymentRail: 'ACH', bankName: 'First Example Bank' });
    expect(source).not.toHaveProperty('onChainTransaction');
  });

  it('the same deposit reported five times at once credits once', async () => {
    const p = await ctx.newPlatform();
    const ann = await depositableCustomer(ctx, p);
    const answers = await Promise.all(Array.from({ length: 5 }, () => deposit(p, { reference: ann.reference, amount: 400, depositId: 'rtp-race' })));
    for (const answer of answers) expect(answer.statusCode, answer.body).toBe(200);
    expect(new Set(answers.map((a) => (a.json() as Json).id)).size).toBe(1);
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 400, total: 400 });
  });

  it('takes Idempotency-Key, and declares it in the OpenAPI document as every write that takes one does (docs/conventions.md)', async () => {
    const p = await ctx.newPlatform();
    const ann = await depositableCustomer(ctx, p);
    const first = await call(ctx, p, 'POST', '/sandbox/deposits', { reference: ann.reference, amount: 250 }, { 'idempotency-key': 'deposit-once' });
    const replay = await call(ctx, p, 'POST', '/sandbox/deposits', { reference: ann.reference, amount: 250 }, { 'idempotency-key': 'deposit-once' });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(first.json());
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 250, total: 250 });
    const { paths } = ctx.app.swagger() as { paths: Record<string, Record<string, { parameters?: Array<{ in: string; name: string }> }>> };
    for (const path of ['/sandbox/deposits', '/sandbox/send']) {
      expect(paths[path]!.post!.parameters?.map((h) => `${h.in}:${h.name}`), path).toContain('header:idempotency-key');
    }
  });

  it('credits the platform’s own account and crypto deposit addresses (rail = the network)', async () => {
    const p = await ctx.newPlatform();
    const usdc = { currencyCode: 'USDC', minAmount: 1, maxAmount: 1000, requiredCounterpartyFields: [], enabledTransactionTypes: ['OUTGOING'] };
    const usd = { ...usdc, currencyCode: 'USD' };
    const patched = await ctx.app.inject({ method: 'PATCH', url: '/2025-10-13/config', headers: { authorization: p.auth }, payload: { supportedCurrencies: [usd, usdc] } });
    expect(patched.statusCode, patched.body).toBe(200);
    const own = ((await call(ctx, p, 'GET', '/platform/internal-accounts')).json() as { data: Json[] }).data;
    const usdAccount = own.find((a) => a.balance.currency.code === 'USD')!;
    const usdcAccount = own.find((a) => a.balance.currency.code === 'USDC')!;
    const reference = (usdAccount.fundingPaymentInstructions as Instruction[])[0]!.accountOrWalletInfo.reference as string;
    const platformTx = (await deposit(p, { reference, amount: 9_000 })).json() as Json;
    expect(platformTx).toMatchObject({ status: 'COMPLETED', destination: { accountId: usdAccount.id } });
    expect(platformTx.customerId).toBeUndefined();

    const solana = (usdcAccount.fundingPaymentInstructions as Instruction[]).find((i) => i.accountOrWalletInfo.accountType === 'SOLANA_WALLET')!;
    const address = solana.accountOrWalletInfo.address as string;
    expectEnvelope(await deposit(p, { reference: address, amount: 5, rail: 'ACH' }), 400, 'INVALID_INPUT');
    const onChain = await deposit(p, { reference: address, amount: 1_500_000, sender: { transactionHash: '5h6xBEauJ3PK6SWCZ1PGjBvj8vDdWG3KpwATGy1ARAXF' } });
    expect(onChain.statusCode, onChain.body).toBe(200);
    expect(onChain.json()).toMatchObject({
      status: 'COMPLETED',
      source: { sourceType: 'REALTIME_FUNDING', currency: 'USDC', onChainTransaction: { network: 'SOLANA', transactionHash: '5h6xBEauJ3PK6SWCZ1PGjBvj8vDdWG3KpwATGy1ARAXF' } },
      destination: { accountId: usdcAccount.id, currency: 'USDC' },
    });
    // An EVM address in another case than its EIP-55 checksum is the same address, and arrives on its network.
    const ethereum = (usdcAccount.fundingPaymentInstructions as Instruction[]).find((i) => i.accountOrWalletInfo.accountType === 'ETHEREUM_WALLET')!;
    const lowerCase = (ethereum.accountOrWalletInfo.address as string).toLowerCase();
    const hash = `0x${'ab'.repeat(32)}`;
    const onEthereum = await deposit(p, { reference: lowerCase, amount: 500, sender: { transactionHash: hash } });
    expect(onEthereum.statusCode, onEthereum.body).toBe(200);
    expect(onEthereum.json()).toMatchObject({ status: 'COMPLETED', source: { onChainTransaction: { network: 'ETHEREUM', transactionHash: hash } }, destination: { accountId: usdcAccount.id } });
    const after = ((await call(ctx, p, 'GET', '/platform/internal-accounts')).json() as { data: Json[] }).data;
    expect(after.find((a) => a.id === usdcAccount.id)!.balance.amount).toBe(1_500_500);
    expect(after.find((a) => a.id === usdAccount.id)!.balance.amount).toBe(9_000);
  });

  it('refuses what credits nothing: unknown reference 404, another platform’s 404, another currency, bad input, production', async () => {
    const p = await ctx.newPlatform();
    const ann = await depositableCustomer(ctx, p);
    expectEnvelope(await deposit(p, { reference: 'CDR0000000000000', amount: 100 }), 404, 'REFERENCE_NOT_FOUND');
    const q = await ctx.newPlatform();
    expectEnvelope(await deposit(q, { reference: ann.reference, amount: 100 }), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await deposit(p, { reference: ann.reference, amount: 100, currency: 'EUR' }), 400, 'INVALID_CURRENCY');
    expectEnvelope(await deposit(p, { reference: ann.reference, amount: 100, currency: 'XYZ' }), 400, 'INVALID_CURRENCY');
    expectEnvelope(await deposit(p, { reference: ann.reference, amount: 100, rail: 'SEPA' }), 400, 'INVALID_INPUT');
    expectEnvelope(await deposit(p, { reference: ann.reference, amount: 0 }), 400, 'INVALID_INPUT');
    expectEnvelope(await deposit(p, { reference: ann.reference, amount: 100_000_000_001 }), 400, 'INVALID_INPUT');
    expectEnvelope(await deposit(p, { amount: 100 }), 400, 'INVALID_INPUT');
    expectEnvelope(await deposit(p, { reference: ann.reference, amount: 100, depositId: 'has space' }), 400, 'INVALID_INPUT');
    expectEnvelope(await deposit(p, { reference: ann.reference, amount: 100, sender: { iban: 'x' } }), 400, 'INVALID_INPUT');
    expectEnvelope(await deposit(p, { reference: ann.reference, amount: '100' }), 400, 'INVALID_INPUT');
    const production = await ctx.newPlatform('production');
    expectEnvelope(await deposit(production, { reference: ann.reference, amount: 100 }), 403, 'FORBIDDEN');
    expect(await balances(ctx, p, ann.customerId)).toEqual({ available: 0, total: 0 });
    const count = await ctx.handle.db.selectFrom('transactions').select((eb) => eb.fn.countAll<string>().as('n')).where('platform_id', '=', p.uuid).executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(0);
  });
});

describe('production: the rail provider’s deposit feed', () => {
  it('polls with one durable job from the stored cursor, credits each deposit id once, keeps unknown references for the operator', async () => {
    const seen: Array<{ path: string; body: Json; auth: string | undefined }> = [];
    let answer: (cursor: string | null) => { status: number; body: unknown } = () => ({ status: 200, body: { deposits: [], nextCursor: null } });
    const server: Server = createServer(async (request: IncomingMessage, response) => {
      let text = '';
      for await (const chunk of request) text += chunk;
      const body = JSON.parse(text) as Json;
      seen.push({ path: request.url!, body, auth: request.headers.authorization });
      const { status, body: out } = answer(body.cursor as string | null);
      response.statusCode = status;
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(out));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/rails`;
    const prod = await createTestContext({ env: { CORRIDOR_RAILS_URL: url, CORRIDOR_RAILS_TOKEN: 'rail-secret' } });
    try {
      const p = await prod.newPlatform('production');
      const own = ((await call(prod, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!;
      const reference = (own.fundingPaymentInstructions as Instruction[])[0]!.accountOrWalletInfo.reference as string;
      const balance = async () => (((await call(prod, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!.balance.amount as number);
      const incoming = async () => ((await call(prod, p, 'GET', '/transactions?type=INCOMING')).json() as { data: Json[] }).data;
      const queuedPolls = async () =>
        (await prod.handle.db.selectFrom('jobs').select('id').where('kind', '=', DEPOSIT_POLL_JOB).where('status', 'in', ['queued', 'running']).execute()).length;

      const d1 = { id: 'dep-1', reference, currency: 'USD', amount: '5000', rail: 'WIRE', sender: { accountHolderName: 'Acme Treasury', bankName: 'Example Bank' } };
      const stray = { id: 'dep-stray', reference: 'CDRNOSUCHREF0000', currency: 'USD', amount: '42', rail: 'ACH' };
      // Real money never credits a sandbox platform's simulated instructions.
      const sandbox = await prod.newPlatform();
      const sandboxOwn = ((await call(prod, sandbox, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!;
      const toSandbox = { ...d1, id: 'dep-sandbox', reference: (sandboxOwn.fundingPaymentInstructions as Instruction[])[0]!.accountOrWalletInfo.reference };
      answer = (cursor) => (cursor === null ? { status: 200, body: { deposits: [d1, stray, toSandbox, { ...d1, id: 'dep-eur', currency: 'EUR' }], nextCursor: 'c1' } } : { status: 200, body: { deposits: [], nextCursor: cursor } });
      await drainJobs(prod);
      expect(seen[0]).toMatchObject({ path: '/rails/deposits/list', auth: 'Bearer rail-secret', body: { cursor: null } });
      expect(await balance()).toBe(5000);
      const [tx] = await incoming();
      expect(tx).toMatchObject({ type: 'INCOMING', status: 'COMPLETED', source: { sourceType: 'REALTIME_FUNDING', paymentRail: 'WIRE', accountHolderName: 'Acme Treasury' }, destination: { accountId: own.id } });
      expect(await eventTypes(prod, tx!.id as string)).toEqual(['INCOMING_PAYMENT.PENDING', 'INCOMING_PAYMENT.COMPLETED']);
      const unmatched = await prod.handle.db.selectFrom('unmatched_deposits').selectAll().orderBy('deposit_id').execute();
      expect(unmatched).toMatchObject([
        { deposit_id: 'dep-eur', reason: 'CURRENCY_MISMATCH', account_id: (own.id as string).slice('InternalAccount:'.length), platform_id: p.uuid },
        { deposit_id: 'dep-sandbox', reason: 'UNKNOWN_REFERENCE' },
        { deposit_id: 'dep-stray', reason: 'UNKNOWN_REFERENCE', reference: 'CDRNOSUCHREF0000', rail: 'ACH' },
      ]);
      const sandboxAfter = ((await call(prod, sandbox, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!;
      expect(sandboxAfter.balance.amount).toBe(0);
      expect(await queuedPolls()).toBe(1);

      // The next poll resumes from the stored cursor; the provider repeats dep-1 (credited once) and reports dep-2.
      answer = (cursor) =>
        cursor === 'c1'
          ? { status: 200, body: { deposits: [d1, { ...d1, id: 'dep-2', amount: '250' }, stray], nextCursor: 'c2' } }
          : { status: 200, body: { deposits: [], nextCursor: cursor } };
      prod.clock.advance(DEPOSIT_POLL_INTERVAL_MS);
      await drainJobs(prod);
      expect(seen.at(-1)!.body).toEqual({ cursor: 'c1' });
      expect(await balance()).toBe(5250);
      expect((await incoming()).length).toBe(2);
      expect((await prod.handle.db.selectFrom('unmatched_deposits').selectAll().execute()).length).toBe(3);

      // A provider failure or an answer outside the contract moves nothing; the cursor stays and the job comes back.
      for (const bad of [{ status: 500, body: {} }, { status: 200, body: { deposits: [{ ...d1, id: 'dep-3', amount: '-5' }], nextCursor: 'c3' } }, { status: 200, body: { deposits: 'x' } },
        // Past the contract's bounds: more than 100 deposits, more than 1 MiB.
        { status: 200, body: { deposits: Array.from({ length: 101 }, (_, i) => ({ ...d1, id: `bulk-${i}` })), nextCursor: 'c3' } },
        { status: 200, body: { deposits: [], nextCursor: 'c3', padding: 'x'.repeat(1024 * 1024) } },
      ]) {
        answer = () => bad;
        prod.clock.advance(DEPOSIT_POLL_INTERVAL_MS);
        await drainJobs(prod);
        expect(seen.at(-1)!.body).toEqual({ cursor: 'c2' });
      }
      expect(await balance()).toBe(5250);
      expect(await queuedPolls()).toBe(1);
      expect((await prod.handle.db.selectFrom('deposit_feeds').select('cursor').executeTakeFirstOrThrow()).cursor).toBe('c2');

      // Another process starting its feed (same database) finds the job queued and adds none.
      const second = new DepositFeed({
        db: prod.handle.db,
        clock: prod.clock,
        jobs: prod.jobs,
        logger: prod.app.log as never,
        deposits: new FundingDeposits({ clock: prod.clock, platformClock: new OffsetPlatformClock(prod.handle.db, prod.clock), ledger: prod.ledger }),
        source: new HttpRails({ url, token: 'rail-secret', timeoutMs: 5_000 } as never),
      });
      await second.start();
      expect(await queuedPolls()).toBe(1);
      await expectLedgerConsistent(prod.handle.db);
    } finally {
      await prod.close();
      server.close();
    }
    // A second application (and database) of its own: slow to start on the embedded engine.
  }, 120_000);
});
