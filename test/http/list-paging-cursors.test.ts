import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { fundedCustomer, paymentInput, startPayment } from '../helpers/payments.js';

/**
 * GET /transactions as an integrator's SDK walks it: pages follow `nextCursor` in createdAt order,
 * whatever order the ids were minted in, ties included, and a cursor the list did not give is
 * refused rather than read as the end of the list.
 */

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
interface ListBody {
  data: Body[];
  hasMore: boolean;
  nextCursor?: string;
}

const call = (p: TestPlatform, method: 'GET' | 'POST', path: string, payload?: object) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload ? { payload } : {}) });

async function list(p: TestPlatform, path: string): Promise<ListBody> {
  const response = await call(p, 'GET', path);
  expect(response.statusCode, `${path}: ${response.body}`).toBe(200);
  return response.json() as ListBody;
}

/** Every id of `path` read `limit` at a time by following nextCursor, as an SDK's auto-pagination does. */
async function walk(p: TestPlatform, path: string, limit: number): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const page = await list(p, `${path}${path.includes('?') ? '&' : '?'}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
    seen.push(...page.data.map((t) => t.id as string));
    if (!page.hasMore) return seen;
    cursor = page.nextCursor;
  }
  throw new Error(`${path} never ended`);
}

const uuidOf = (id: string) => id.slice(id.indexOf(':') + 1);

describe('GET /transactions in createdAt order', () => {
  it('lists a quote executed after a later quote by when it was executed: above it newest first, reached by a cursor already past it', async () => {
    const p = await ctx.newPlatform();
    const created = await call(p, 'POST', '/customers', {
      customerType: 'INDIVIDUAL',
      platformCustomerId: 'cursor-payer',
      fullName: 'Ann Lee',
      endUserTermsConsent: { acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const customerId = (created.json() as Body).id as string;
    const account = (await list(p, `/customers/internal-accounts?customerId=${customerId}`)).data[0]!.id as string;
    expect((await call(p, 'POST', `/sandbox/internal-accounts/${account}/fund`, { amount: 1_000_000 })).statusCode).toBe(200);
    const payee = await call(p, 'POST', '/platform/external-accounts', validSamples(ctx.clock.now()).USD_ACCOUNT!);
    expect(payee.statusCode, payee.body).toBe(201);
    const quote = async () => {
      const response = await call(p, 'POST', '/quotes', {
        source: { sourceType: 'ACCOUNT', accountId: account },
        destination: { destinationType: 'ACCOUNT', accountId: (payee.json() as Body).id, paymentRail: 'ACH' },
        lockedCurrencySide: 'SENDING',
        lockedCurrencyAmount: 1000,
      });
      expect(response.statusCode, response.body).toBe(201);
      return response.json() as { id: string; transactionId: string };
    };
    const execute = async (quoteId: string) => {
      const response = await call(p, 'POST', `/quotes/${quoteId}/execute`);
      expect(response.statusCode, response.body).toBe(200);
      ctx.clock.advance(10_000);
    };

    // Three quotes, each transaction's id minted in quote order; executed first, third, second.
    const [first, second, third] = [await quote(), await quote(), await quote()];
    ctx.clock.advance(10_000);
    await execute(first.id);
    await execute(third.id);
    // An oldest-first reader stops here, its cursor on the first quote's transaction.
    const read = await list(p, '/transactions?sortOrder=asc&limit=1');
    expect(read.data.map((t) => t.id)).toEqual([first.transactionId]);
    // A newest-first reader syncs from the top down to the first id it has.
    expect((await list(p, '/transactions')).data.map((t) => t.id)).toEqual([third.transactionId, first.transactionId]);
    await execute(second.id);

    const executedOrder = [first.transactionId, third.transactionId, second.transactionId];
    const newestFirst = await list(p, '/transactions');
    expect(newestFirst.data.map((t) => t.id)).toEqual([...executedOrder].reverse());
    const createdAts = newestFirst.data.map((t) => t.createdAt as string);
    expect([...createdAts].sort().reverse()).toEqual(createdAts);
    // The newest-first reader meets the late execution before the id it already has.
    expect(newestFirst.data[0]!.id).toBe(second.transactionId);
    // The oldest-first reader's cursor, taken before the late execution, still reaches it.
    expect((await list(p, `/transactions?sortOrder=asc&cursor=${read.nextCursor}`)).data.map((t) => t.id)).toEqual([third.transactionId, second.transactionId]);
    for (const limit of [1, 2]) {
      expect(await walk(p, '/transactions?sortOrder=asc', limit)).toEqual(executedOrder);
      expect(await walk(p, '/transactions', limit)).toEqual([...executedOrder].reverse());
    }
  });

  it('pages through transactions with one createdAt, or a microsecond apart against their id order, each once in both orders', async () => {
    const p = await ctx.newPlatform();
    const payer = await fundedCustomer(ctx, p, 1_000_000);
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const input = paymentInput(p, payer, { sentAmount: 100n, fees: 0n, platformFees: 0n });
      await startPayment(ctx, input);
      ids.push(input.transactionId);
    }
    const at = ctx.clock.now().toISOString();
    // Five share one instant; the two newest ids are stored a microsecond before and after it, the newer id earlier.
    await sql`update transactions set created_at = ${at}::timestamptz where platform_id = ${p.uuid}`.execute(ctx.handle.db);
    await sql`update transactions set created_at = created_at + interval '1 microsecond' where id = ${uuidOf(ids[5]!)}`.execute(ctx.handle.db);
    await sql`update transactions set created_at = created_at - interval '1 microsecond' where id = ${uuidOf(ids[6]!)}`.execute(ctx.handle.db);
    const oldestFirst = [ids[6]!, ...ids.slice(0, 5), ids[5]!];
    for (const limit of [1, 2, 3, 7]) {
      expect(await walk(p, '/transactions?sortOrder=asc', limit), `asc limit=${limit}`).toEqual(oldestFirst);
      expect(await walk(p, '/transactions', limit), `desc limit=${limit}`).toEqual([...oldestFirst].reverse());
      // Under a time filter around them all.
      const range = `startDate=${new Date(Date.parse(at) - 1).toISOString()}&endDate=${at}`;
      expect(await walk(p, `/transactions?${range}`, limit), `filtered limit=${limit}`).toEqual([...oldestFirst].reverse());
    }
  });
});

describe('GET /transactions cursors', () => {
  it('refuses with 400 naming `cursor` a cursor of another platform’s transactions or of another list, never reading it as the end of the list', async () => {
    const mine = await ctx.newPlatform();
    const theirs = await ctx.newPlatform();
    const fill = async (p: TestPlatform) => {
      const payer = await fundedCustomer(ctx, p, 10_000);
      for (let i = 0; i < 2; i++) await startPayment(ctx, paymentInput(p, payer, { sentAmount: 100n, fees: 0n, platformFees: 0n }));
    };
    await fill(mine);
    await fill(theirs);
    expect((await call(mine, 'POST', '/tokens', { name: 'second', permissions: ['VIEW'] })).statusCode).toBe(201);
    // Another platform's transaction list, and this platform's token list.
    const foreign = [(await list(theirs, '/transactions?limit=1')).nextCursor!, (await list(mine, '/tokens?limit=1')).nextCursor!];
    for (const cursor of foreign) {
      expect(cursor).toEqual(expect.any(String));
      for (const query of ['', '&sortOrder=asc', '&status=PENDING']) {
        const body = expectEnvelope(await call(mine, 'GET', `/transactions?cursor=${cursor}${query}`), 400, 'INVALID_INPUT');
        expect((body.details!.errors as Array<{ field: string }>).map((e) => e.field)).toEqual(['cursor']);
        expect(body.message).toBe('The request query parameters are invalid.');
      }
    }
    // Its own cursor under filters matching nothing below it: an empty last page, not a refusal.
    const own = (await list(mine, '/transactions?limit=1')).nextCursor!;
    expect(await list(mine, `/transactions?cursor=${own}&status=REFUNDED`)).toEqual({ data: [], hasMore: false });
  });
});
