import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Ledger, LedgerError } from '../../src/modules/ledger/index.js';
import { DEPOSIT_POLL_INTERVAL_MS, DEPOSIT_POLL_JOB, FundingDeposits } from '../../src/modules/transactions/index.js';
import { withTx } from '../../src/platform/db/tx.js';
import { OffsetPlatformClock } from '../../src/platform/platform-clock.js';
import { createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { call, drainJobs, type Json } from '../helpers/payments.js';

/**
 * The production deposit feed is global (one provider, every production platform): a provider
 * deposit id credits at most once across all platforms, and one deposit the ledger cannot take
 * never stops the feed for everyone else (docs/payments.md, "Deposits to funding instructions").
 */

let prod: TestContext;
let server: Server;
/** The page the stub answers for a cursor: the next page is set by each test. */
let pages: Record<string, { deposits: Json[]; nextCursor: string | null }> = {};
const asked: Array<string | null> = [];

beforeAll(async () => {
  server = createServer(async (request: IncomingMessage, response) => {
    let text = '';
    for await (const chunk of request) text += chunk;
    const cursor = (JSON.parse(text) as Json).cursor as string | null;
    asked.push(cursor);
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify(pages[cursor ?? ''] ?? { deposits: [], nextCursor: null }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  prod = await createTestContext({ env: { CORRIDOR_RAILS_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/rails`, CORRIDOR_RAILS_TOKEN: 'rail-secret' } });
}, 120_000);
afterAll(async () => {
  await prod.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
afterEach(async () => {
  vi.restoreAllMocks();
  await expectLedgerConsistent(prod.handle.db);
});

type Instruction = { accountOrWalletInfo: Record<string, unknown> };

async function platformAccount(p: TestPlatform): Promise<{ id: string; reference: string }> {
  const own = ((await call(prod, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!;
  return { id: own.id as string, reference: (own.fundingPaymentInstructions as Instruction[])[0]!.accountOrWalletInfo.reference as string };
}

const balance = async (p: TestPlatform) => ((await call(prod, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!.balance.amount as number;
const incoming = async (p: TestPlatform) => ((await call(prod, p, 'GET', '/transactions?type=INCOMING')).json() as { data: Json[] }).data;
const unmatched = (depositId: string) => prod.handle.db.selectFrom('unmatched_deposits').selectAll().where('deposit_id', '=', depositId).executeTakeFirst();
const uuidOf = (id: string) => id.slice(id.indexOf(':') + 1);

let pageNo = 0;
/** Lists `deposits` as the feed's next page and runs the poll that reads it. */
async function listed(...deposits: Json[]) {
  const cursor = pageNo === 0 ? '' : `p${pageNo}`;
  pageNo++;
  pages[cursor] = { deposits, nextCursor: `p${pageNo}` };
  prod.clock.advance(DEPOSIT_POLL_INTERVAL_MS);
  await drainJobs(prod);
  expect(asked.at(-1) ?? '').toBe(cursor);
  // The page was taken: the cursor moved on, and the chain goes on with one live job.
  expect((await prod.handle.db.selectFrom('deposit_feeds').select('cursor').executeTakeFirstOrThrow()).cursor).toBe(`p${pageNo}`);
  const live = await prod.handle.db.selectFrom('jobs').select('status').where('kind', '=', DEPOSIT_POLL_JOB).where('status', 'in', ['queued', 'running', 'dead']).execute();
  expect(live.map((j) => j.status)).toEqual(['queued']);
}

const usd = (id: string, reference: string, amount: string) => ({ id, reference, currency: 'USD', amount, rail: 'WIRE' });

describe('one provider deposit id across production platforms', () => {
  it('credits once: re-listed with another platform’s reference or another amount it is kept as conflicting, not credited', async () => {
    const a = await prod.newPlatform('production');
    const b = await prod.newPlatform('production');
    const [accountA, accountB] = [await platformAccount(a), await platformAccount(b)];

    await listed(usd('dup-1', accountA.reference, '5000'));
    await listed(usd('dup-1', accountB.reference, '5000'));
    expect(await balance(a)).toBe(5000);
    expect(await balance(b)).toBe(0);
    expect(await incoming(b)).toEqual([]);
    const [credit] = await incoming(a);
    expect(await unmatched('dup-1')).toMatchObject({
      reason: 'CONFLICTING_DEPOSIT',
      reference: accountB.reference,
      platform_id: b.uuid,
      account_id: uuidOf(accountB.id),
      credited_platform_id: a.uuid,
      credited_transaction_id: uuidOf(credit!.id as string),
      resolved_at: null,
    });

    // The same deposit listed again as it was credited: nothing more. Another amount on the same reference: conflicting.
    await listed(usd('dup-1', accountA.reference, '5000'), usd('dup-2', accountA.reference, '700'), usd('dup-2', accountA.reference, '7000'));
    expect(await balance(a)).toBe(5700);
    expect(await unmatched('dup-2')).toMatchObject({ reason: 'CONFLICTING_DEPOSIT', amount: expect.anything(), credited_platform_id: a.uuid });
    expect(Number((await unmatched('dup-2'))!.amount)).toBe(7000);
    expect((await incoming(a)).length).toBe(2);
  });

  it('re-listed on another rail (same reference, currency and amount) it is conflicting, not the same deposit', async () => {
    const a = await prod.newPlatform('production');
    const accountA = await platformAccount(a);
    await listed(usd('rail-1', accountA.reference, '800'));
    await listed({ ...usd('rail-1', accountA.reference, '800'), rail: 'ACH' });
    expect(await balance(a)).toBe(800);
    const [credit] = await incoming(a);
    expect(await unmatched('rail-1')).toMatchObject({ reason: 'CONFLICTING_DEPOSIT', credited_platform_id: a.uuid, credited_transaction_id: uuidOf(credit!.id as string), resolved_at: null });
    expect((await incoming(a)).length).toBe(1);
  });

  it('a deposit kept unmatched and credited when re-listed leaves no open unmatched row; a later conflicting listing reopens it', async () => {
    const a = await prod.newPlatform('production');
    const b = await prod.newPlatform('production');
    const [accountA, accountB] = [await platformAccount(a), await platformAccount(b)];
    await listed(usd('late-1', 'CDRNOSUCHREF0000', '300'));
    expect(await unmatched('late-1')).toMatchObject({ reason: 'UNKNOWN_REFERENCE', resolved_at: null });

    // The provider corrects the reference: credited, and the operator's row says so.
    await listed(usd('late-1', accountB.reference, '300'));
    expect(await balance(b)).toBe(300);
    const [credit] = await incoming(b);
    expect(await unmatched('late-1')).toMatchObject({ reason: 'UNKNOWN_REFERENCE', resolved_at: expect.any(Date), credited_platform_id: b.uuid, credited_transaction_id: uuidOf(credit!.id as string) });
    const open = await prod.handle.db.selectFrom('unmatched_deposits').select('deposit_id').where('resolved_at', 'is', null).where('deposit_id', '=', 'late-1').execute();
    expect(open).toEqual([]);

    await listed(usd('late-1', accountA.reference, '300'));
    expect(await balance(a)).toBe(0);
    expect(await unmatched('late-1')).toMatchObject({ reason: 'CONFLICTING_DEPOSIT', reference: accountA.reference, resolved_at: null, credited_platform_id: b.uuid });
  });
});

describe('one provider deposit id reported twice at once', () => {
  it('naming two platforms: the database key lets one credit, the other is conflicting', async () => {
    const a = await prod.newPlatform('production');
    const b = await prod.newPlatform('production');
    const [accountA, accountB] = [await platformAccount(a), await platformAccount(b)];
    const deposits = new FundingDeposits({ clock: prod.clock, platformClock: new OffsetPlatformClock(prod.handle.db, prod.clock), ledger: prod.ledger });
    const report = (reference: string) =>
      withTx(prod.handle.db, (trx) => deposits.receive(trx, { depositId: 'race-1', reference, currency: 'USD', amount: 900n, rail: 'WIRE' }, 'production'));
    const outcomes = await Promise.all([report(accountA.reference), report(accountB.reference), report(accountA.reference), report(accountB.reference)]);
    expect(outcomes.filter((o) => o.credited && !o.repeated)).toHaveLength(1);
    expect((await balance(a)) + (await balance(b))).toBe(900);
    const winner = (await balance(a)) === 900 ? accountA : accountB;
    for (const [i, outcome] of outcomes.entries()) {
      const reference = i % 2 === 0 ? accountA.reference : accountB.reference;
      if (reference === winner.reference) expect(outcome.credited).toBe(true);
      else expect(outcome).toMatchObject({ credited: false, reason: 'CONFLICTING_DEPOSIT' });
    }
  });
});

describe('a deposit the ledger cannot take', () => {
  it('a deposit paying a Lightning invoice (a reference of some 325 characters) is taken, and the feed goes on', async () => {
    const invoice = `lnbc25u1p${'q'.repeat(316)}`;
    expect(invoice.length).toBeGreaterThan(256);
    // `listed` checks the page was taken: before, a reference over 256 characters made the whole
    // page off-contract, and the feed asked for the same cursor for ever.
    await listed({ id: 'ln-1', reference: invoice, currency: 'BTC', amount: '2500', rail: 'LIGHTNING' });
    expect(await unmatched('ln-1')).toMatchObject({ reason: 'UNKNOWN_REFERENCE', reference: invoice });
  });

  it('an amount above 2^53 − 1 is kept unmatched (AMOUNT_OUT_OF_RANGE) and the feed goes on for every platform', async () => {
    const a = await prod.newPlatform('production');
    const b = await prod.newPlatform('production');
    const [accountA, accountB] = [await platformAccount(a), await platformAccount(b)];
    await listed(usd('huge-1', accountA.reference, '9007199254740992'), usd('after-huge', accountB.reference, '100'), usd('huge-2', accountB.reference, '999999999999999999'));
    expect(await unmatched('huge-1')).toMatchObject({ reason: 'AMOUNT_OUT_OF_RANGE', platform_id: a.uuid, account_id: uuidOf(accountA.id) });
    expect(String((await unmatched('huge-1'))!.amount)).toBe('9007199254740992');
    expect(await unmatched('huge-2')).toMatchObject({ reason: 'AMOUNT_OUT_OF_RANGE' });
    expect(await balance(a)).toBe(0);
    expect(await balance(b)).toBe(100);
    await listed(usd('next-page', accountA.reference, '42'));
    expect(await balance(a)).toBe(42);
  });

  it('an amount of exactly 2^53 − 1 (the largest posting) is credited, not kept as AMOUNT_OUT_OF_RANGE', async () => {
    const a = await prod.newPlatform('production');
    const accountA = await platformAccount(a);
    await listed(usd('max-1', accountA.reference, '9007199254740991'));
    expect(await unmatched('max-1')).toBeUndefined();
    expect(await balance(a)).toBe(Number.MAX_SAFE_INTEGER);
    expect(await incoming(a)).toMatchObject([{ status: 'COMPLETED', receivedAmount: { amount: Number.MAX_SAFE_INTEGER } }]);
  });

  it('any other refusal by the ledger keeps the deposit with its reason, and the rest of the page is credited', async () => {
    const a = await prod.newPlatform('production');
    const accountA = await platformAccount(a);
    const transfer = Ledger.prototype.transfer;
    vi.spyOn(Ledger.prototype, 'transfer').mockImplementation(function (this: Ledger, trx, input) {
      if (input.metadata?.depositId === 'refused-1') throw new LedgerError('INVALID_POSTING', 'refused for the test');
      return transfer.call(this, trx, input);
    });
    await listed(usd('refused-1', accountA.reference, '10'), usd('taken-1', accountA.reference, '20'));
    expect(await unmatched('refused-1')).toMatchObject({ reason: 'REFUSED', detail: expect.stringContaining('INVALID_POSTING'), platform_id: a.uuid });
    expect(await balance(a)).toBe(20);
  });
});

describe('deposits to crypto addresses', () => {
  async function usdcAccount(p: TestPlatform): Promise<{ balance: number; addresses: Record<string, string> }> {
    const response = await call(prod, p, 'GET', '/platform/internal-accounts?currency=USDC');
    expect(response.statusCode, response.body).toBe(200);
    const account = (response.json() as { data: Json[] }).data[0]!;
    const addresses = Object.fromEntries(
      (account.fundingPaymentInstructions as Array<{ accountOrWalletInfo: Json }>).map((i) => [i.accountOrWalletInfo.accountType, i.accountOrWalletInfo.address]),
    );
    return { balance: account.balance.amount as number, addresses };
  }
  const usdc = (id: string, reference: string, amount: string, rail: string) => ({ id, reference, currency: 'USDC', amount, rail });

  it('credit an EVM address written in lower case or upper-case hex (its case is only the EIP-55 checksum); a Solana address in another case stays unmatched', async () => {
    const p = await prod.newPlatform('production');
    const usdcConfig = { currencyCode: 'USDC', minAmount: 1, maxAmount: 1_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] };
    const configured = await call(prod, p, 'PATCH', '/config', { supportedCurrencies: [usdcConfig] });
    expect(configured.statusCode, configured.body).toBe(200);
    const { addresses } = await usdcAccount(p);
    const ethereum = addresses.ETHEREUM_WALLET!;
    const base = addresses.BASE_WALLET!;
    const solana = addresses.SOLANA_WALLET!;
    // Held EIP-55 checksummed: mixed case, so a lower-case spelling differs from it.
    expect(ethereum).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(ethereum).not.toBe(ethereum.toLowerCase());
    expect(solana).not.toBe(solana.toLowerCase());

    await listed(
      usdc('evm-lower', ethereum.toLowerCase(), '1500', 'ETHEREUM'),
      usdc('evm-upper', `0x${base.slice(2).toUpperCase()}`, '250', 'BASE'),
      usdc('evm-exact', ethereum, '5', 'ETHEREUM'),
      usdc('sol-lower', solana.toLowerCase(), '40', 'SOLANA'),
    );
    expect((await usdcAccount(p)).balance).toBe(1755);
    expect(await unmatched('evm-lower')).toBeUndefined();
    expect(await unmatched('evm-upper')).toBeUndefined();
    expect(await unmatched('sol-lower')).toMatchObject({ reason: 'UNKNOWN_REFERENCE', resolved_at: null });
    expect((await incoming(p)).map((t) => t.receivedAmount.amount).sort((x, y) => x - y)).toEqual([5, 250, 1500]);
  });
});
