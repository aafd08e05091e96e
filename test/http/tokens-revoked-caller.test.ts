import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

/**
 * A token deleted while one of its requests runs: the request authenticated before the delete
 * committed, and must not leave behind a token of its making, nor delete one. Simulated by
 * deleting the row without the notification, so the process's verified-token cache (as a request
 * already past authentication) still takes the token.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const call = (caller: TestPlatform, method: 'GET' | 'POST' | 'DELETE', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: caller.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

async function revokedUnderway(p: TestPlatform): Promise<TestPlatform> {
  const leaked = await ctx.newToken(p, ['VIEW', 'TRANSACT', 'MANAGE']);
  // Verified once: the process now knows it, as a request past authentication does.
  expect((await call(leaked, 'GET', '/tokens?limit=1')).statusCode).toBe(200);
  await ctx.handle.db.updateTable('api_tokens').set({ deleted_at: ctx.clock.now() }).where('id', '=', leaked.tokenId.slice('Token:'.length)).execute();
  return leaked;
}

const liveTokens = (p: TestPlatform) => ctx.handle.db.selectFrom('api_tokens').select(['id', 'name']).where('platform_id', '=', p.uuid).where('deleted_at', 'is', null).orderBy('id').execute();

describe('a token deleted while its request runs', () => {
  it('creates no token (401 UNAUTHORIZED), and records nothing', async () => {
    const p = await ctx.newPlatform();
    const leaked = await revokedUnderway(p);
    const before = await liveTokens(p);
    expectEnvelope(await call(leaked, 'POST', '/tokens', { name: 'left behind', permissions: ['VIEW', 'TRANSACT', 'MANAGE'] }), 401, 'UNAUTHORIZED');
    expect(await liveTokens(p)).toEqual(before);
    const events = await ctx.handle.db.selectFrom('events').select('data').where('platform_id', '=', p.uuid).where('type', '=', 'API_TOKEN.CREATED').execute();
    expect(events.map((e) => (e.data as { name: string }).name)).not.toContain('left behind');
  });

  it('deletes no token (401 UNAUTHORIZED)', async () => {
    const p = await ctx.newPlatform();
    const kept = await ctx.newToken(p, ['VIEW']);
    const leaked = await revokedUnderway(p);
    expectEnvelope(await call(leaked, 'DELETE', `/tokens/${kept.tokenId}`), 401, 'UNAUTHORIZED');
    expect((await call(kept, 'GET', `/tokens/${kept.tokenId}`)).statusCode).toBe(200);
  });

  it('leaves live tokens as they were: they create and delete as before', async () => {
    const p = await ctx.newPlatform();
    const created = await call(p, 'POST', '/tokens', { name: 'fresh', permissions: ['VIEW'] });
    expect(created.statusCode, created.body).toBe(201);
    expect((await call(p, 'DELETE', `/tokens/${(created.json() as { id: string }).id}`)).statusCode).toBe(204);
  });
});
