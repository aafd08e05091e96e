import type { FastifyPluginAsync } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { canonicalJson, sha256Hex } from '../../src/platform/crypto/encoding.js';
import { sendWrite } from '../../src/platform/http/write.js';
import type { Db } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { CLAIM_ABANDONED_AFTER_MS, claimKey, releaseKey, RequestFingerprints, storeAnswer, type HeldKey, type IdempotencyScope } from '../../src/platform/idempotency.js';
import { AppError } from '../../src/platform/errors.js';
import { newId } from '../../src/platform/ids.js';
import { recordEvent } from '../../src/platform/outbox.js';
import { BASE, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';

let ctx: TestContext;
let executions = 0;

const fingerprints = new RequestFingerprints(randomBytes(32));

/** A write that records an event, so the test can count how often it really ran. */
const widgets: FastifyPluginAsync = async (api) => {
  api.post('/test/widgets', { config: { permission: 'MANAGE' } }, async (request, reply) =>
    sendWrite(
      { db: ctx.handle.db, clock: ctx.clock, fingerprints },
      request,
      reply,
      async (trx) => {
        executions++;
        const id = newId('Widget');
        await recordEvent(trx, ctx.clock, { platformId: request.principal.platformId, type: 'WIDGET.CREATED', resourceId: id, data: request.body });
        if ((request.body as { fail?: boolean }).fail) throw new Error('failed after writing');
        return { statusCode: 201, body: { id, ...(request.body as object) } };
      },
      { idempotent: true },
    ),
  );
};

beforeAll(async () => {
  ctx = await createTestContext({ extraRoutes: widgets });
});
afterAll(() => ctx.close());

const post = (payload: object, key?: string, auth = ctx.platform.auth) =>
  ctx.app.inject({ method: 'POST', url: `${BASE}/test/widgets`, headers: { authorization: auth, ...(key ? { 'idempotency-key': key } : {}) }, payload });

describe('Idempotency-Key', () => {
  it('replays the stored response without running the write again', async () => {
    executions = 0;
    const first = await post({ colour: 'red' }, 'key-1');
    expect(first.statusCode).toBe(201);
    const again = await post({ colour: 'red' }, 'key-1');
    expect(again.statusCode).toBe(201);
    expect(again.json()).toEqual(first.json());
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(executions).toBe(1);
  });

  it('answers 409 for the same key with a different body', async () => {
    await post({ colour: 'blue' }, 'key-2');
    const response = await post({ colour: 'green' }, 'key-2');
    expectEnvelope(response, 409, 'CONFLICT');
  });

  it('treats the same body with keys in another order as the same request', async () => {
    const a = await post({ colour: 'teal', size: 2 }, 'key-order');
    const b = await ctx.app.inject({
      method: 'POST', url: `${BASE}/test/widgets`,
      headers: { authorization: ctx.platform.auth, 'idempotency-key': 'key-order', 'content-type': 'application/json' },
      payload: '{"size":2,"colour":"teal"}',
    });
    expect(b.json()).toEqual(a.json());
  });

  it('scopes keys per platform', async () => {
    const other = await ctx.newPlatform();
    const mine = await post({ colour: 'red' }, 'shared-key');
    const theirs = await post({ colour: 'red' }, 'shared-key', other.auth);
    expect(theirs.statusCode).toBe(201);
    expect((theirs.json() as { id: string }).id).not.toBe((mine.json() as { id: string }).id);
  });

  it('replays each platform its own answer for a key both used, never the other platform’s', async () => {
    // Both rows are (platform, key); a retry that read the key's row without its platform would
    // answer one platform the other's response (another tenant's resource).
    const other = await ctx.newPlatform();
    const mine = await post({ colour: 'amber' }, 'shared-retried-key');
    const theirs = await post({ colour: 'amber' }, 'shared-retried-key', other.auth);
    const theirsAgain = await post({ colour: 'amber' }, 'shared-retried-key', other.auth);
    const mineAgain = await post({ colour: 'amber' }, 'shared-retried-key');
    expect(theirsAgain.headers['idempotent-replayed']).toBe('true');
    expect(theirsAgain.json()).toEqual(theirs.json());
    expect(mineAgain.json()).toEqual(mine.json());
  });

  it('frees the key when the write fails, and leaves nothing behind', async () => {
    const failed = await post({ colour: 'red', fail: true }, 'key-3');
    expectEnvelope(failed, 500, 'INTERNAL_ERROR');
    const stored = await ctx.handle.db.selectFrom('idempotency_keys').select('key').where('key', '=', 'key-3').execute();
    expect(stored).toEqual([]);
    const retried = await post({ colour: 'red' }, 'key-3');
    expect(retried.statusCode).toBe(201);
  });

  it('runs every request without a key', async () => {
    executions = 0;
    await post({ colour: 'red' });
    await post({ colour: 'red' });
    expect(executions).toBe(2);
  });

  const storedHash = async (key: string) =>
    (await ctx.handle.db.selectFrom('idempotency_keys').select('request_hash').where('platform_id', '=', ctx.platform.uuid).where('key', '=', key).executeTakeFirstOrThrow()).request_hash;
  const unkeyedHash = (path: string, body: object) => sha256Hex(`POST ${BASE}${path}\n${canonicalJson(body)}`);

  it('stores a keyed fingerprint, which a copy of the database cannot check a guessed body against', async () => {
    // A customer's tax identifier is the one part of its body the stored response does not give back.
    const body = { customerType: 'INDIVIDUAL', platformCustomerId: 'guess-1', fullName: 'Ada Guess', idType: 'SSN', identifier: '123-45-6789' };
    const created = await ctx.app.inject({ method: 'POST', url: `${BASE}/customers`, headers: { authorization: ctx.platform.auth, 'idempotency-key': 'keyed-customer' }, payload: body });
    expect(created.statusCode).toBe(201);
    const stored = await storedHash('keyed-customer');
    expect(stored).toMatch(/^[0-9a-f]{64}$/);
    expect(stored).not.toBe(unkeyedHash('/customers', body));
    const widget = { colour: 'amber' };
    await post(widget, 'keyed-widget');
    expect(await storedHash('keyed-widget')).toBe(fingerprints.of('POST', `${BASE}/test/widgets`, widget).fingerprint);
  });

  it('replays a key stored with an unkeyed fingerprint (before fingerprints were keyed), and still tells another request apart', async () => {
    const widget = { colour: 'violet' };
    await ctx.handle.db
      .insertInto('idempotency_keys')
      .values({ platform_id: ctx.platform.uuid, key: 'stored-unkeyed', request_hash: unkeyedHash('/test/widgets', widget), status_code: 201, response_body: JSON.stringify({ id: 'Widget:stored', ...widget }), created_at: ctx.clock.now() })
      .execute();
    executions = 0;
    const replayed = await post(widget, 'stored-unkeyed');
    expect(replayed.statusCode).toBe(201);
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(replayed.json()).toEqual({ id: 'Widget:stored', colour: 'violet' });
    expectEnvelope(await post({ colour: 'indigo' }, 'stored-unkeyed'), 409, 'CONFLICT');
    expect(executions).toBe(0);
  });

  it.each(['', 'x'.repeat(256), 'has space'])('rejects the malformed key %j', async (key) => {
    const response = await ctx.app.inject({
      method: 'POST', url: `${BASE}/test/widgets`, headers: { authorization: ctx.platform.auth, 'idempotency-key': key }, payload: { colour: 'red' },
    });
    const body = expectEnvelope(response, 400, 'INVALID_INPUT');
    expect((body.details!.errors as Array<{ field: string }>)[0]!.field).toBe('Idempotency-Key');
  });
});

describe('a key’s row is (platform, key), and a claim is its claim time', () => {
  const scope = (platformId: string, key: string): IdempotencyScope => ({ platformId, key, ...fingerprints.of('POST', '/direct', { key }) });
  const row = (platformId: string, key: string) =>
    ctx.handle.db.selectFrom('idempotency_keys').select(['status_code', 'response_body']).where('platform_id', '=', platformId).where('key', '=', key).executeTakeFirst();

  it('storing one platform’s answer and giving up one platform’s claim touch only that platform’s row', async () => {
    // Both claimed at the same instant (the clock stands still): only the platform tells the rows apart.
    const other = await ctx.newPlatform();
    const mine = scope(ctx.platform.uuid, 'direct-shared');
    const theirs = scope(other.uuid, 'direct-shared');
    const myClaim = (await claimKey(ctx.handle.db, ctx.clock, mine)) as HeldKey;
    const theirClaim = (await claimKey(ctx.handle.db, ctx.clock, theirs)) as HeldKey;
    expect(myClaim.since).toEqual(theirClaim.since);

    await withTx(ctx.handle.db, (trx) => storeAnswer(trx, mine, myClaim, { statusCode: 201, body: { mine: true } }));
    expect(await row(ctx.platform.uuid, 'direct-shared')).toEqual({ status_code: 201, response_body: { mine: true } });
    expect(await row(other.uuid, 'direct-shared')).toEqual({ status_code: null, response_body: null });

    // An answered claim is never given up, even by the claim that answered it.
    await releaseKey(ctx.handle.db, mine, myClaim);
    expect(await row(ctx.platform.uuid, 'direct-shared')).toEqual({ status_code: 201, response_body: { mine: true } });

    // Two claims in progress: giving up one platform's leaves the other's.
    const mineToo = scope(ctx.platform.uuid, 'direct-shared-released');
    const theirsToo = scope(other.uuid, 'direct-shared-released');
    await claimKey(ctx.handle.db, ctx.clock, mineToo);
    await releaseKey(ctx.handle.db, theirsToo, (await claimKey(ctx.handle.db, ctx.clock, theirsToo)) as HeldKey);
    expect(await row(other.uuid, 'direct-shared-released')).toBeUndefined();
    expect(await row(ctx.platform.uuid, 'direct-shared-released')).toEqual({ status_code: null, response_body: null });
  });

  /** `db`, but `work` runs (once) just before the first statement begun with `db[start]` (`selectFrom`: the read of a key's row after the claim's INSERT). */
  function withWorkBefore(start: 'selectFrom' | 'updateTable', db: Db, work: () => Promise<void>): Db {
    let ran = false;
    const wrap = <T extends object>(builder: T): T =>
      new Proxy(builder, {
        get(target, property) {
          const value: unknown = Reflect.get(target, property, target);
          if (typeof value !== 'function') return value;
          if (property === 'executeTakeFirst') {
            return async () => {
              if (!ran) {
                ran = true;
                await work();
              }
              return (value as () => Promise<unknown>).call(target);
            };
          }
          return (...args: unknown[]) => {
            const result: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
            return typeof result === 'object' && result !== null ? wrap(result) : result;
          };
        },
      });
    return new Proxy(db, {
      get(target, property) {
        const value: unknown = Reflect.get(target, property, target);
        if (property === start) return (...args: unknown[]) => wrap((value as (...a: unknown[]) => object).apply(target, args));
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  it('claims a key again when the claim it conflicted with was given up before it could be read', async () => {
    // Between the claim's INSERT (a conflict) and its read of the row, the request holding the
    // key fails and gives it up: the claim is tried again, not answered as still in progress.
    const mine = scope(ctx.platform.uuid, 'direct-vanishing');
    const first = (await claimKey(ctx.handle.db, ctx.clock, mine)) as HeldKey;
    ctx.clock.advance(1);
    const second = await claimKey(withWorkBefore('selectFrom', ctx.handle.db, () => releaseKey(ctx.handle.db, mine, first)), ctx.clock, mine);
    expect(second).toEqual({ claimed: true, since: ctx.clock.now() });
    expect(await row(ctx.platform.uuid, 'direct-vanishing')).toEqual({ status_code: null, response_body: null });
  });

  it('takes over an abandoned claim only if no other request took it over between its read and its update', async () => {
    const mine = scope(ctx.platform.uuid, 'direct-taken-meanwhile');
    await claimKey(ctx.handle.db, ctx.clock, mine);
    ctx.clock.advance(CLAIM_ABANDONED_AFTER_MS);
    let meanwhile: unknown;
    const late = claimKey(
      withWorkBefore('updateTable', ctx.handle.db, async () => {
        meanwhile = await claimKey(ctx.handle.db, ctx.clock, mine);
      }),
      ctx.clock,
      mine,
    );
    const refused = await late.then(() => undefined, (error: unknown) => error);
    expect(meanwhile).toEqual({ claimed: true, since: ctx.clock.now() });
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ code: 'CONFLICT', retryable: true });
  });
});
