import type { FastifyPluginAsync } from 'fastify';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendWrite } from '../../src/platform/http/write.js';
import { CLAIM_ABANDONED_AFTER_MS, RequestFingerprints } from '../../src/platform/idempotency.js';
import { BASE, createTestContext, expectEnvelope, onPostgres, type TestContext } from '../helpers/context.js';
import { holdLocks, openSide, waiterBehind } from '../helpers/lock-queue.js';

/**
 * An abandoned claim (its request died holding the key) taken over by many requests with the key
 * at once: exactly one takes it (the takeover is conditional on the claim it read), runs its work
 * once, and every other is 409 CONFLICT retryable while it runs, then replays its answer.
 */
const RACERS = 8;
let ctx: TestContext;
const fingerprints = new RequestFingerprints(randomBytes(32));
let prepared = 0;
let release: () => void = () => {};
let held: Promise<void> = Promise.resolve();

const widgets: FastifyPluginAsync = async (api) => {
  api.post('/test/taken-over-widgets', { config: { permission: 'MANAGE' } }, async (request, reply) =>
    sendWrite({ db: ctx.handle.db, clock: ctx.clock, fingerprints }, request, reply, async (_trx, run: number) => ({ statusCode: 201, body: { run } }), {
      idempotent: true,
      prepare: async () => {
        const run = ++prepared;
        await held;
        return run;
      },
    }),
  );
};

beforeAll(async () => {
  ctx = await createTestContext({ extraRoutes: widgets });
});
afterAll(() => ctx?.close());

const post = (key: string) =>
  ctx.app.inject({ method: 'POST', url: `${BASE}/test/taken-over-widgets`, headers: { authorization: ctx.platform.auth, 'idempotency-key': key }, payload: { colour: 'blue' } });

/** An abandoned claim of `key` for the test's request, as a request that died holding it leaves it. */
async function abandonedClaim(key: string): Promise<void> {
  await ctx.handle.db
    .insertInto('idempotency_keys')
    .values({
      platform_id: ctx.platform.uuid,
      key,
      request_hash: fingerprints.of('POST', `${BASE}/test/taken-over-widgets`, { colour: 'blue' }).fingerprint,
      status_code: null,
      response_body: null,
      created_at: ctx.clock.now(),
    })
    .execute();
  ctx.clock.advance(CLAIM_ABANDONED_AFTER_MS);
}

describe('an abandoned Idempotency-Key claim taken over by many requests at once', () => {
  it('one takes it over and runs once; the rest are 409 retryable, and replay its answer afterwards', async () => {
    const key = 'abandoned-raced';
    await abandonedClaim(key);
    held = new Promise<void>((resolve) => (release = resolve));
    const settled: Array<Awaited<ReturnType<typeof post>>> = [];
    const answers = Array.from({ length: RACERS }, () => post(key).then((answer) => (settled.push(answer), answer)));
    // Every request but the one that took the claim over answers while its work is held.
    for (let i = 0; i < 2000 && settled.length < RACERS - 1; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(prepared).toBe(1);
    expect(settled).toHaveLength(RACERS - 1);
    for (const refused of settled) {
      expectEnvelope(refused, 409, 'CONFLICT');
      expect(refused.headers['x-should-retry']).toBe('true');
    }
    release();
    const all = await Promise.all(answers);
    const winner = all.find((a) => a.statusCode === 201)!;
    expect(winner.json()).toEqual({ run: 1 });
    const replayed = await post(key);
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(replayed.json()).toEqual({ run: 1 });
    expect(prepared).toBe(1);
  });

  it.runIf(onPostgres)('of two requests that both read the claim as abandoned, the one that takes it over second finds it taken: one runs (PostgreSQL)', async () => {
    // The claim's row is held by a side transaction, so both requests read it abandoned and then
    // queue their takeovers behind the hold; released, the takeover that runs second must see
    // the first's (it is conditional on the claim it read), not take the key over again.
    const key = 'abandoned-read-twice';
    await abandonedClaim(key);
    prepared = 0;
    held = Promise.resolve();
    const side = await openSide(ctx.handle.db, 2);
    const claimRow = await holdLocks(side.db, (trx) => trx.selectFrom('idempotency_keys').select('key').where('platform_id', '=', ctx.platform.uuid).where('key', '=', key).forUpdate().execute());
    try {
      const first = post(key);
      const firstPid = await waiterBehind(side.db, [claimRow.pid]);
      const second = post(key);
      await waiterBehind(side.db, [claimRow.pid, firstPid], { besides: [firstPid] });
      await claimRow.release();
      const answers = await Promise.all([first, second]);
      expect(prepared).toBe(1);
      for (const answer of answers) {
        if (answer.statusCode === 201) {
          expect(answer.json()).toEqual({ run: 1 });
        } else {
          expectEnvelope(answer, 409, 'CONFLICT');
          expect(answer.headers['x-should-retry']).toBe('true');
        }
      }
      expect((await post(key)).json()).toEqual({ run: 1 });
    } finally {
      await claimRow.release();
      await side.close();
    }
  });
});
