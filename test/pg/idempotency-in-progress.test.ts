import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { BASE, createTestContext, expectEnvelope, onPostgres, type TestContext } from '../helpers/context.js';

/**
 * One Idempotency-Key sent to two processes at once, for a write with work outside its
 * transaction (an external account's name check): the provider is asked once, every other
 * request is 409 retryable, and a retry through either process replays the one answer.
 */
describe.runIf(onPostgres)('Idempotency-Key in progress across processes on PostgreSQL', () => {
  let ctx: TestContext;
  let second: App;
  let institution: Server;
  const nameChecks: unknown[] = [];
  let release: () => void = () => {};
  let released: Promise<void> = Promise.resolve();

  beforeAll(async () => {
    institution = createServer((request, response) => {
      let text = '';
      request.on('data', (chunk) => (text += chunk));
      request.on('end', () => {
        nameChecks.push(JSON.parse(text));
        void released.then(() => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ holderName: 'JOHN DOE' })));
      });
    });
    await new Promise<void>((resolve) => institution.listen(0, '127.0.0.1', resolve));
    const { port } = institution.address() as { port: number };
    ctx = await createTestContext({ env: { CORRIDOR_BENEFICIARY_URL: `http://127.0.0.1:${port}/names` } });
    second = await ctx.secondApp();
  });
  afterAll(async () => {
    await ctx?.close();
    await new Promise((resolve) => institution.close(resolve));
  });

  it('asks the name-check provider once for concurrent requests with one key through two processes', async () => {
    const production = await ctx.newPlatform('production');
    released = new Promise<void>((resolve) => (release = resolve));
    const account = {
      currency: 'USD',
      accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '2345678901239', routingNumber: '021000021', beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'John Doe' } },
    };
    const send = (app: App) =>
      app.inject({ method: 'POST', url: `${BASE}/platform/external-accounts`, headers: { authorization: production.auth, 'idempotency-key': 'pg-name-check-once' }, payload: account });
    const answers = [ctx.app, second, ctx.app, second].map(send);
    for (let i = 0; i < 400 && nameChecks.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    // Give every other request time to reach the key before the first one finishes.
    await new Promise((resolve) => setTimeout(resolve, 200));
    release();
    const settled = await Promise.all(answers);
    const created = settled.filter((a) => a.statusCode === 201);
    expect(created).toHaveLength(1);
    for (const refused of settled.filter((a) => a.statusCode !== 201)) {
      expectEnvelope(refused, 409, 'CONFLICT');
      expect(refused.headers['x-should-retry']).toBe('true');
    }
    expect(nameChecks).toHaveLength(1);
    for (const app of [ctx.app, second]) {
      const retried = await send(app);
      expect(retried.statusCode).toBe(201);
      expect(retried.headers['idempotent-replayed']).toBe('true');
      expect(retried.json()).toEqual(created[0]!.json());
    }
    expect(nameChecks).toHaveLength(1);
    const listed = await second.inject({ method: 'GET', url: `${BASE}/platform/external-accounts`, headers: { authorization: production.auth } });
    expect((listed.json() as { data: unknown[] }).data).toHaveLength(1);
  });
});
