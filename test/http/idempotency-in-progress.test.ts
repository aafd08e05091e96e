import type { FastifyPluginAsync } from 'fastify';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/platform/errors.js';
import { sendWrite } from '../../src/platform/http/write.js';
import { CLAIM_ABANDONED_AFTER_MS, RequestFingerprints } from '../../src/platform/idempotency.js';
import { newId } from '../../src/platform/ids.js';
import { recordEvent } from '../../src/platform/outbox.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

/**
 * Concurrent requests with one Idempotency-Key whose write has work outside its transaction
 * (`sendWrite`'s `prepare`: a pay request to a receiving VASP, a name check): the work runs once,
 * a request arriving meanwhile is 409 CONFLICT with `x-should-retry: true`, and its retry
 * replays the first request's answer.
 */
let ctx: TestContext;

/** How often the test route's `prepare` and write ran; `held` keeps the next `prepare`s waiting until released. */
const runs = { prepared: 0, written: 0 };
let held: Array<Promise<void>> = [];
let failPrepare = false;
let failWrite = false;
const fingerprints = new RequestFingerprints(randomBytes(32));

const slowPrepare: FastifyPluginAsync = async (api) => {
  api.post('/test/prepared-widgets', { config: { permission: 'MANAGE' } }, async (request, reply) =>
    sendWrite(
      { db: ctx.handle.db, clock: ctx.clock, fingerprints },
      request,
      reply,
      async (trx, preparedAt: number) => {
        runs.written++;
        const id = newId('Widget');
        await recordEvent(trx, ctx.clock, { platformId: request.principal.platformId, type: 'WIDGET.CREATED', resourceId: id, data: request.body });
        if (failWrite) throw new AppError('SERVICE_UNAVAILABLE', 'The write failed.');
        return { statusCode: 201, body: { id, preparedAt, ...(request.body as object) } };
      },
      {
        idempotent: true,
        prepare: async () => {
          const prepared = ++runs.prepared;
          const wait = held.shift();
          if (wait) await wait;
          if (failPrepare) throw new AppError('SERVICE_UNAVAILABLE', 'The provider is down.');
          return prepared;
        },
      },
    ),
  );
  api.post('/test/plain-widgets', { config: { permission: 'MANAGE' } }, async (request, reply) =>
    sendWrite({ db: ctx.handle.db, clock: ctx.clock, fingerprints }, request, reply, async () => ({ statusCode: 201, body: { ...(request.body as object) } }), { idempotent: true }),
  );
};

/** The name-check provider of production platforms: answers once released. */
const nameChecks: Array<Record<string, unknown>> = [];
let nameChecksReleased: Promise<void> = Promise.resolve();
let institution: Server;

beforeAll(async () => {
  institution = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk) => (text += chunk));
    request.on('end', () => {
      nameChecks.push(JSON.parse(text) as Record<string, unknown>);
      void nameChecksReleased.then(() => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ holderName: 'JOHN DOE' })));
    });
  });
  await new Promise<void>((resolve) => institution.listen(0, '127.0.0.1', resolve));
  const { port } = institution.address() as { port: number };
  ctx = await createTestContext({ extraRoutes: slowPrepare, env: { CORRIDOR_BENEFICIARY_URL: `http://127.0.0.1:${port}/names` } });
});
afterAll(async () => {
  await ctx.close();
  await new Promise((resolve) => institution.close(resolve));
});

function gate(): { wait: Promise<void>; release: () => void } {
  let release!: () => void;
  const wait = new Promise<void>((resolve) => (release = resolve));
  return { wait, release };
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(condition()).toBe(true);
}

const post = (path: string, payload: object, key: string, platform: TestPlatform = ctx.platform) =>
  ctx.app.inject({ method: 'POST', url: `${BASE}${path}`, headers: { authorization: platform.auth, 'idempotency-key': key }, payload });

const widgetEvents = async () => (await ctx.handle.db.selectFrom('events').select('id').where('type', '=', 'WIDGET.CREATED').execute()).length;

const storedKeys = (key: string) => ctx.handle.db.selectFrom('idempotency_keys').select(['status_code']).where('key', '=', key).execute();

describe('Idempotency-Key while the first request is in progress', () => {
  it('runs prepare once: a concurrent request is 409 retryable, and its retry replays the first answer', async () => {
    Object.assign(runs, { prepared: 0, written: 0 });
    const first = gate();
    held = [first.wait];
    const firstAnswer = post('/test/prepared-widgets', { colour: 'red' }, 'slow-1');
    await until(() => runs.prepared === 1);
    const concurrent = await post('/test/prepared-widgets', { colour: 'red' }, 'slow-1');
    const refused = expectEnvelope(concurrent, 409, 'CONFLICT');
    expect(concurrent.headers['x-should-retry']).toBe('true');
    expect(refused.details).toEqual({ idempotencyKey: 'slow-1' });
    first.release();
    const created = await firstAnswer;
    expect(created.statusCode).toBe(201);
    const retried = await post('/test/prepared-widgets', { colour: 'red' }, 'slow-1');
    expect(retried.statusCode).toBe(201);
    expect(retried.headers['idempotent-replayed']).toBe('true');
    expect(retried.json()).toEqual(created.json());
    expect(runs).toEqual({ prepared: 1, written: 1 });
  });

  it('runs prepare once among many concurrent requests', async () => {
    Object.assign(runs, { prepared: 0, written: 0 });
    const first = gate();
    held = [first.wait];
    let answered = 0;
    const answers = Array.from({ length: 5 }, () => post('/test/prepared-widgets', { colour: 'blue' }, 'slow-many').finally(() => answered++));
    await until(() => runs.prepared === 1);
    // Every other request has met the claim in progress (on PostgreSQL each waits for a pooled connection first).
    await until(() => answered === 4);
    first.release();
    const codes = (await Promise.all(answers)).map((a) => a.statusCode).sort();
    expect(codes).toEqual([201, 409, 409, 409, 409]);
    expect(runs).toEqual({ prepared: 1, written: 1 });
  });

  it('refuses another request with the key as a conflict, not as a retry, while the first is in progress', async () => {
    const first = gate();
    held = [first.wait];
    const firstAnswer = post('/test/prepared-widgets', { colour: 'red' }, 'slow-other-body');
    await until(() => held.length === 0);
    const other = await post('/test/prepared-widgets', { colour: 'green' }, 'slow-other-body');
    expectEnvelope(other, 409, 'CONFLICT');
    expect(other.headers['x-should-retry']).toBe('false');
    first.release();
    expect((await firstAnswer).statusCode).toBe(201);
  });

  it('gives the key up when prepare fails, so a retry runs it again', async () => {
    Object.assign(runs, { prepared: 0, written: 0 });
    failPrepare = true;
    try {
      expectEnvelope(await post('/test/prepared-widgets', { colour: 'red' }, 'slow-prepare-fails'), 503, 'SERVICE_UNAVAILABLE');
    } finally {
      failPrepare = false;
    }
    expect(await storedKeys('slow-prepare-fails')).toEqual([]);
    expect((await post('/test/prepared-widgets', { colour: 'red' }, 'slow-prepare-fails')).statusCode).toBe(201);
    expect(runs).toEqual({ prepared: 2, written: 1 });
  });

  it('gives the key up when the write fails after prepare, so a retry runs again', async () => {
    Object.assign(runs, { prepared: 0, written: 0 });
    failWrite = true;
    try {
      expectEnvelope(await post('/test/prepared-widgets', { colour: 'red' }, 'slow-write-fails'), 503, 'SERVICE_UNAVAILABLE');
    } finally {
      failWrite = false;
    }
    expect(await storedKeys('slow-write-fails')).toEqual([]);
    const retried = await post('/test/prepared-widgets', { colour: 'red' }, 'slow-write-fails');
    expect(retried.statusCode).toBe(201);
    expect(runs).toEqual({ prepared: 2, written: 2 });
    expect(await storedKeys('slow-write-fails')).toEqual([{ status_code: 201 }]);
  });

  it('takes over a claim abandoned for longer than CLAIM_ABANDONED_AFTER_MS; the request that claimed it then changes nothing', async () => {
    Object.assign(runs, { prepared: 0, written: 0 });
    const widgetsBefore = await widgetEvents();
    const first = gate();
    held = [first.wait];
    const abandoned = post('/test/prepared-widgets', { colour: 'red' }, 'slow-abandoned');
    await until(() => runs.prepared === 1);
    ctx.clock.advance(CLAIM_ABANDONED_AFTER_MS - 1);
    expectEnvelope(await post('/test/prepared-widgets', { colour: 'red' }, 'slow-abandoned'), 409, 'CONFLICT');
    ctx.clock.advance(1);
    const takenOver = await post('/test/prepared-widgets', { colour: 'red' }, 'slow-abandoned');
    expect(takenOver.statusCode).toBe(201);
    expect((takenOver.json() as { preparedAt: number }).preparedAt).toBe(2);
    first.release();
    const late = await abandoned;
    expectEnvelope(late, 409, 'CONFLICT');
    expect(late.headers['x-should-retry']).toBe('true');
    // Both wrote; only the write of the request that took over committed.
    expect(runs).toEqual({ prepared: 2, written: 2 });
    expect(await widgetEvents()).toBe(widgetsBefore + 1);
    const retried = await post('/test/prepared-widgets', { colour: 'red' }, 'slow-abandoned');
    expect(retried.headers['idempotent-replayed']).toBe('true');
    expect(retried.json()).toEqual(takenOver.json());
  });

  it('a request whose claim was taken over and then fails leaves the new claim alone: a retry meanwhile is 409 retryable, not a second run', async () => {
    Object.assign(runs, { prepared: 0, written: 0 });
    const first = gate();
    const second = gate();
    held = [first.wait, second.wait];
    const abandoned = post('/test/prepared-widgets', { colour: 'red' }, 'slow-abandoned-fails');
    await until(() => runs.prepared === 1);
    ctx.clock.advance(CLAIM_ABANDONED_AFTER_MS);
    const takingOver = post('/test/prepared-widgets', { colour: 'red' }, 'slow-abandoned-fails');
    await until(() => runs.prepared === 2);
    // The first request's work fails now: giving its claim up must not give up the one that replaced it.
    failPrepare = true;
    try {
      first.release();
      expectEnvelope(await abandoned, 503, 'SERVICE_UNAVAILABLE');
    } finally {
      failPrepare = false;
    }
    const retried = await post('/test/prepared-widgets', { colour: 'red' }, 'slow-abandoned-fails');
    expectEnvelope(retried, 409, 'CONFLICT');
    expect(retried.headers['x-should-retry']).toBe('true');
    expect(runs.prepared).toBe(2);
    second.release();
    const takenOver = await takingOver;
    expect(takenOver.statusCode, takenOver.body).toBe(201);
    expect((await post('/test/prepared-widgets', { colour: 'red' }, 'slow-abandoned-fails')).json()).toEqual(takenOver.json());
    expect(runs).toEqual({ prepared: 2, written: 1 });
  });

  it('a write without prepare finds a claim in progress 409 retryable, and takes an abandoned one over', async () => {
    const payload = { colour: 'red' };
    await ctx.handle.db
      .insertInto('idempotency_keys')
      .values({
        platform_id: ctx.platform.uuid,
        key: 'plain-claimed',
        request_hash: fingerprints.of('POST', `${BASE}/test/plain-widgets`, payload).fingerprint,
        status_code: null,
        response_body: null,
        created_at: ctx.clock.now(),
      })
      .execute();
    const refused = await post('/test/plain-widgets', payload, 'plain-claimed');
    expectEnvelope(refused, 409, 'CONFLICT');
    expect(refused.headers['x-should-retry']).toBe('true');
    ctx.clock.advance(CLAIM_ABANDONED_AFTER_MS);
    const created = await post('/test/plain-widgets', payload, 'plain-claimed');
    expect(created.statusCode).toBe(201);
    expect(await storedKeys('plain-claimed')).toEqual([{ status_code: 201 }]);
  });

  it('creating an external account asks the name-check provider once for concurrent requests with one key', async () => {
    const production = await ctx.newPlatform('production');
    nameChecks.length = 0;
    const provider = gate();
    nameChecksReleased = provider.wait;
    const account = {
      currency: 'USD',
      accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '1234567890129', routingNumber: '021000021', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'John Doe' } },
    };
    const firstAnswer = post('/platform/external-accounts', account, 'name-check-once', production);
    await until(() => nameChecks.length === 1);
    const concurrent = await post('/platform/external-accounts', account, 'name-check-once', production);
    expectEnvelope(concurrent, 409, 'CONFLICT');
    expect(concurrent.headers['x-should-retry']).toBe('true');
    provider.release();
    const created = await firstAnswer;
    expect(created.statusCode).toBe(201);
    const retried = await post('/platform/external-accounts', account, 'name-check-once', production);
    expect(retried.statusCode).toBe(201);
    expect(retried.headers['idempotent-replayed']).toBe('true');
    expect(retried.json()).toEqual(created.json());
    expect(nameChecks).toHaveLength(1);
  });
});
