import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEPOSIT_POLL_INTERVAL_MS } from '../../src/modules/transactions/index.js';
import { BASE, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { drainJobs, type Json } from '../helpers/payments.js';

/**
 * Production deposits to an EVM address match it in any case (its case is only the EIP-55
 * checksum); other networks' addresses are case-sensitive and match only as written.
 */

let prod: TestContext;
let server: Server;
/** The feed's pages, by cursor: each test lists its deposits as the next one. */
const pages: Record<string, { deposits: Json[]; nextCursor: string | null }> = {};
let pageNo = 0;

beforeAll(async () => {
  server = createServer(async (request: IncomingMessage, response) => {
    let text = '';
    for await (const chunk of request) text += chunk;
    const cursor = (JSON.parse(text) as Json).cursor as string | null;
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

const call = (p: TestPlatform, method: 'GET' | 'PATCH', path: string, payload?: unknown) =>
  prod.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

/** Lists `deposits` as the feed's next page and runs the poll that reads it. */
async function listed(...deposits: Json[]): Promise<void> {
  const cursor = pageNo === 0 ? '' : `p${pageNo}`;
  pageNo++;
  pages[cursor] = { deposits, nextCursor: `p${pageNo}` };
  prod.clock.advance(DEPOSIT_POLL_INTERVAL_MS);
  await drainJobs(prod);
}

async function usdcAccount(p: TestPlatform): Promise<{ balance: number; addresses: Record<string, string> }> {
  const response = await call(p, 'GET', '/platform/internal-accounts?currency=USDC');
  expect(response.statusCode, response.body).toBe(200);
  const account = (response.json() as { data: Json[] }).data[0]!;
  const addresses = Object.fromEntries(
    (account.fundingPaymentInstructions as Array<{ accountOrWalletInfo: Json }>).map((i) => [i.accountOrWalletInfo.accountType, i.accountOrWalletInfo.address]),
  );
  return { balance: account.balance.amount as number, addresses };
}

const unmatched = (depositId: string) => prod.handle.db.selectFrom('unmatched_deposits').selectAll().where('deposit_id', '=', depositId).executeTakeFirst();
const usdc = (id: string, reference: string, amount: string, rail: string) => ({ id, reference, currency: 'USDC', amount, rail });

describe('production deposits to crypto addresses', () => {
  it('credit an EVM address written in lower case or upper-case hex; a Solana address in another case stays unmatched', async () => {
    const p = await prod.newPlatform('production');
    const usdcConfig = { currencyCode: 'USDC', minAmount: 1, maxAmount: 1_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] };
    const configured = await call(p, 'PATCH', '/config', { supportedCurrencies: [usdcConfig] });
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

    const incoming = ((await call(p, 'GET', '/transactions?type=INCOMING')).json() as { data: Json[] }).data;
    expect(incoming.map((t) => t.receivedAmount.amount).sort((x, y) => x - y)).toEqual([5, 250, 1500]);
    await expectLedgerConsistent(prod.handle.db);
  });
});
