import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, basic, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const get = (authorization?: string) =>
  ctx.app.inject({ method: 'GET', url: `${BASE}/config`, headers: authorization === undefined ? {} : { authorization } });

describe('HTTP Basic authentication (spec §5)', () => {
  it('accepts the clientId and the Token:<uuid> id as user name', async () => {
    expect((await get(ctx.platform.auth)).statusCode).toBe(200);
    expect((await get(basic(ctx.platform.tokenId, ctx.platform.secret))).statusCode).toBe(200);
  });

  it('answers every kind of bad credential with the same 401 UNAUTHORIZED', async () => {
    const { clientId, secret } = ctx.platform;
    const cases: Array<[string, string | undefined]> = [
      ['missing header', undefined],
      ['wrong scheme', `Bearer ${secret}`],
      ['undecodable base64', 'Basic %%%not-base64%%%'],
      ['no colon', `Basic ${Buffer.from(clientId).toString('base64')}`],
      ['unknown id', basic('0'.repeat(32), secret)],
      ['unknown Token id', basic('Token:00000000-0000-7000-8000-000000000000', secret)],
      ['wrong secret', basic(clientId, `${secret.slice(0, -1)}${secret.endsWith('0') ? '1' : '0'}`)],
      ['secret of another token', basic(clientId, 'f'.repeat(64))],
      ['empty secret', basic(clientId, '')],
      ['absurdly long user', basic('a'.repeat(5000), secret)],
    ];
    const bodies = new Set<string>();
    for (const [name, header] of cases) {
      const response = await get(header);
      const body = expectEnvelope(response, 401, 'UNAUTHORIZED');
      expect(response.headers['www-authenticate'], name).toMatch(/^Basic/);
      bodies.add(JSON.stringify({ ...body }));
    }
    expect(bodies.size).toBe(1);
  });

  it('stops accepting a deleted token on the very next request', async () => {
    const extra = await ctx.newToken(ctx.platform, ['VIEW']);
    expect((await get(extra.auth)).statusCode).toBe(200);
    const deleted = await ctx.app.inject({ method: 'DELETE', url: `${BASE}/tokens/${extra.tokenId}`, headers: { authorization: ctx.platform.auth } });
    expect(deleted.statusCode).toBe(204);
    expectEnvelope(await get(extra.auth), 401, 'UNAUTHORIZED');
  });

  it('enforces permissions: a VIEW token reads but cannot create (403 FORBIDDEN)', async () => {
    const viewer = await ctx.newToken(ctx.platform, ['VIEW']);
    expect((await get(viewer.auth)).statusCode).toBe(200);
    const create = await ctx.app.inject({
      method: 'POST',
      url: `${BASE}/tokens`,
      headers: { authorization: viewer.auth },
      payload: { name: 'nope', permissions: ['MANAGE'] },
    });
    expectEnvelope(create, 403, 'FORBIDDEN');
    const patch = await ctx.app.inject({ method: 'PATCH', url: `${BASE}/config`, headers: { authorization: viewer.auth }, payload: { umaDomain: 'x.example' } });
    expectEnvelope(patch, 403, 'FORBIDDEN');
    const list = await ctx.app.inject({ method: 'GET', url: `${BASE}/tokens`, headers: { authorization: ctx.platform.auth } });
    expect((list.json() as { data: Array<{ name: string }> }).data.some((t) => t.name === 'nope')).toBe(false);
  });

  it('a TRANSACT-only token cannot manage tokens or config', async () => {
    const transact = await ctx.newToken(ctx.platform, ['TRANSACT']);
    const del = await ctx.app.inject({ method: 'DELETE', url: `${BASE}/tokens/${ctx.platform.tokenId}`, headers: { authorization: transact.auth } });
    expectEnvelope(del, 403, 'FORBIDDEN');
  });

  it('checks credentials before validating the request', async () => {
    const response = await ctx.app.inject({ method: 'POST', url: `${BASE}/tokens`, payload: { bogus: true } });
    expectEnvelope(response, 401, 'UNAUTHORIZED');
  });
});
