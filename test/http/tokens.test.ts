import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { findLiveToken, listLiveTokens, TOKEN_DELETED_CHANNEL } from '../../src/modules/tokens/repo.js';
import { createToken } from '../../src/modules/tokens/service.js';
import type { DbHandle } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { JobWorker } from '../../src/platform/jobs/index.js';
import { BASE, basic, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

function call(method: 'GET' | 'POST' | 'DELETE', path: string, payload?: unknown, auth = ctx.platform.auth) {
  return ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: auth }, ...(payload === undefined ? {} : { payload: payload as object }) });
}

interface Token {
  id: string;
  name: string;
  permissions: string[];
  clientId: string;
  clientSecret?: string;
  createdAt: string;
  updatedAt: string;
}

describe('POST /tokens', () => {
  it('creates a token, returns its secret once, and the secret works', async () => {
    const response = await call('POST', '/tokens', { name: 'Reporting', permissions: ['VIEW'] });
    expect(response.statusCode).toBe(201);
    const token = response.json() as Token;
    expect(token.id).toMatch(/^Token:[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(token).toMatchObject({ name: 'Reporting', permissions: ['VIEW'] });
    expect(token.clientSecret).toMatch(/^[0-9a-f]{64}$/);
    expect(token.clientId).toBe(token.id.slice(6).replace(/-/g, ''));

    const read = await call('GET', `/tokens/${token.id}`);
    expect(read.statusCode).toBe(200);
    expect(read.json()).toEqual({ ...token, clientSecret: undefined });
    expect(read.json()).not.toHaveProperty('clientSecret');

    const works = await call('GET', '/config', undefined, basic(token.clientId, token.clientSecret!));
    expect(works.statusCode).toBe(200);
  });

  it('stores only a hash of the secret', async () => {
    const token = (await call('POST', '/tokens', { name: 'Hashed', permissions: ['VIEW'] })).json() as Token;
    const row = await ctx.handle.db.selectFrom('api_tokens').selectAll().where('client_id', '=', token.clientId).executeTakeFirstOrThrow();
    const stored = Buffer.from(row.secret_hash);
    expect(stored.length).toBe(32);
    expect(stored.toString('hex')).not.toBe(token.clientSecret);
    expect(JSON.stringify(row)).not.toContain(token.clientSecret);
  });

  it('reads and lists tokens without their secret hashes: only authentication loads one', async () => {
    const token = (await call('POST', '/tokens', { name: 'Unloaded', permissions: ['VIEW'] })).json() as Token;
    const uuid = token.id.slice('Token:'.length);
    const found = await findLiveToken(ctx.handle.db, ctx.platform.uuid, uuid);
    expect(found?.client_id).toBe(token.clientId);
    expect(found).not.toHaveProperty('secret_hash');
    const { rows } = await listLiveTokens(ctx.handle.db, ctx.platform.uuid, { name: 'Unloaded', timeRange: {} }, { limit: 10 });
    expect(rows.map((r) => r.id)).toEqual([uuid]);
    expect(rows[0]).not.toHaveProperty('secret_hash');
  });

  it('records an API_TOKEN.CREATED event in the outbox', async () => {
    const token = (await call('POST', '/tokens', { name: 'Evented', permissions: ['VIEW'] })).json() as Token;
    const events = await ctx.handle.db.selectFrom('events').selectAll().where('resource_id', '=', token.id).execute();
    expect(events.map((e) => e.type)).toEqual(['API_TOKEN.CREATED']);
    expect(JSON.stringify(events[0]!.data)).not.toContain(token.clientSecret);
  });

  it('reports every invalid field at once and creates nothing', async () => {
    const before = ((await call('GET', '/tokens')).json() as { totalCount: number }).totalCount;
    const response = await call('POST', '/tokens', { name: 'x'.repeat(300), permissions: ['VIEW', 'ROOT'], extra: 1, other: 'y' });
    const body = expectEnvelope(response, 400, 'INVALID_INPUT');
    const errors = body.details!.errors as Array<{ field: string; constraint?: Record<string, unknown> }>;
    const byField = Object.fromEntries(errors.map((e) => [e.field, e]));
    expect(Object.keys(byField).sort()).toEqual(['extra', 'name', 'other', 'permissions.1']);
    expect(byField.name!.constraint).toEqual({ maxLength: 255 });
    expect(byField['permissions.1']!.constraint).toEqual({ enum: ['VIEW', 'TRANSACT', 'MANAGE'] });
    const after = ((await call('GET', '/tokens')).json() as { totalCount: number }).totalCount;
    expect(after).toBe(before);
  });

  it.each([
    ['empty body', undefined, ['name', 'permissions']],
    ['empty object', {}, ['name', 'permissions']],
    ['wrong types', { name: 12, permissions: 'VIEW' }, ['name', 'permissions']],
    ['empty name and no permissions', { name: '', permissions: [] }, ['name', 'permissions']],
    ['repeated permission', { name: 'a', permissions: ['VIEW', 'VIEW'] }, ['permissions']],
    ['blank name', { name: ' \t ', permissions: ['VIEW'] }, ['name']],
    ['control characters in the name', { name: 'Reports\u001b[2J\u0085', permissions: ['VIEW'] }, ['name']],
    ['lower-case enum', { name: 'a', permissions: ['view'] }, ['permissions.0']],
    ['array body', [1, 2], ['(body)']],
  ])('rejects %s with 400 naming each field', async (_name, payload, fields) => {
    const response = await call('POST', '/tokens', payload);
    const body = expectEnvelope(response, 400, 'INVALID_INPUT');
    expect((body.details!.errors as Array<{ field: string }>).map((e) => e.field).sort()).toEqual(fields);
  });

  it('accepts unicode names', async () => {
    const response = await call('POST', '/tokens', { name: 'Relatórios 📊 日本', permissions: ['VIEW'] });
    expect(response.statusCode).toBe(201);
    expect((response.json() as Token).name).toBe('Relatórios 📊 日本');
  });
});

describe('createToken for the command line', () => {
  it('stores each permission once, though `corridor tokens create --permissions` may repeat one', async () => {
    const created = await withTx(ctx.handle.db, (trx) => createToken(trx, ctx.clock, ctx.platform.uuid, { name: 'CLI repeated', permissions: ['VIEW', 'MANAGE', 'VIEW'] }));
    expect(created.token.permissions).toEqual(['VIEW', 'MANAGE']);
    expect(((await call('GET', `/tokens/${created.token.id}`)).json() as Token).permissions).toEqual(['VIEW', 'MANAGE']);
  });
});

describe('GET /tokens', () => {
  it('pages newest first with an opaque cursor, without repeats, stable under inserts', async () => {
    const other = await ctx.newPlatform();
    const created: string[] = [];
    for (let i = 0; i < 5; i++) {
      created.push(((await call('POST', '/tokens', { name: `page-${i}`, permissions: ['VIEW'] }, other.auth)).json() as Token).id);
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const response = await call('GET', `/tokens?limit=2${cursor ? `&cursor=${cursor}` : ''}`, undefined, other.auth);
      expect(response.statusCode).toBe(200);
      const page = response.json() as { data: Token[]; hasMore: boolean; nextCursor?: string; totalCount: number };
      expect(page.totalCount).toBe(6 + pages);
      seen.push(...page.data.map((t) => t.id));
      expect(page.hasMore).toBe(page.nextCursor !== undefined);
      cursor = page.nextCursor;
      // A token created mid-walk is newer than the cursor and never shows up on later pages.
      await call('POST', '/tokens', { name: `late-${pages}`, permissions: ['VIEW'] }, other.auth);
      pages++;
    } while (cursor);
    expect(seen).toEqual([...created.reverse(), other.tokenId]);
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('filters by name and creation time', async () => {
    const other = await ctx.newPlatform();
    await call('POST', '/tokens', { name: 'alpha', permissions: ['VIEW'] }, other.auth);
    const byName = (await call('GET', '/tokens?name=alpha', undefined, other.auth)).json() as { data: Token[]; totalCount: number };
    expect(byName.data.map((t) => t.name)).toEqual(['alpha']);
    expect(byName.totalCount).toBe(1);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const none = (await call('GET', `/tokens?createdAfter=${encodeURIComponent(future)}`, undefined, other.auth)).json() as { data: Token[] };
    expect(none.data).toEqual([]);
  });

  it('only lists the calling platform’s tokens', async () => {
    const other = await ctx.newPlatform();
    const list = (await call('GET', '/tokens?limit=100', undefined, other.auth)).json() as { data: Token[] };
    expect(list.data.map((t) => t.id)).toEqual([other.tokenId]);
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=abc', 'limit'],
    ['cursor=not-a-cursor', 'cursor'],
    ['createdAfter=yesterday', 'createdAfter'],
    ['unknownFilter=1', 'unknownFilter'],
  ])('rejects %s', async (query, field) => {
    const body = expectEnvelope(await call('GET', `/tokens?${query}`), 400, 'INVALID_INPUT');
    expect((body.details!.errors as Array<{ field: string }>).map((e) => e.field)).toEqual([field]);
  });
});

describe('POST /tokens: no escalation (issue 12 A6)', () => {
  it('lets a token create only tokens whose permissions it holds itself', async () => {
    const manageOnly = await ctx.newToken(ctx.platform, ['MANAGE']);
    const refused = expectEnvelope(await call('POST', '/tokens', { name: 'escalated', permissions: ['VIEW', 'TRANSACT'] }, manageOnly.auth), 403, 'FORBIDDEN');
    expect(refused.details).toEqual({ missingPermissions: ['TRANSACT'] });
    expect(refused.message).toContain('TRANSACT');
    const refusedAll = expectEnvelope(await call('POST', '/tokens', { name: 'escalated', permissions: ['MANAGE', 'TRANSACT'] }, manageOnly.auth), 403, 'FORBIDDEN');
    expect(refusedAll.details).toEqual({ missingPermissions: ['TRANSACT'] });
    const list = (await call('GET', '/tokens?name=escalated')).json() as { data: Token[] };
    expect(list.data).toEqual([]);

    // VIEW is every token's; MANAGE it holds.
    for (const permissions of [['VIEW'], ['MANAGE'], ['VIEW', 'MANAGE']]) {
      const created = await call('POST', '/tokens', { name: 'subset', permissions }, manageOnly.auth);
      expect(created.statusCode).toBe(201);
      expect((created.json() as Token).permissions).toEqual(permissions);
    }
    const full = await ctx.newToken(ctx.platform, ['VIEW', 'TRANSACT', 'MANAGE']);
    expect((await call('POST', '/tokens', { name: 'all', permissions: ['VIEW', 'TRANSACT', 'MANAGE'] }, full.auth)).statusCode).toBe(201);
  });
});

describe('GET and DELETE /tokens/{tokenId}', () => {
  it('deletes a token: 204, then 404 TOKEN_NOT_FOUND, and gone from the list', async () => {
    const token = (await call('POST', '/tokens', { name: 'doomed', permissions: ['VIEW'] })).json() as Token;
    const del = await call('DELETE', `/tokens/${token.id}`);
    expect(del.statusCode).toBe(204);
    expect(del.body).toBe('');
    expectEnvelope(await call('GET', `/tokens/${token.id}`), 404, 'TOKEN_NOT_FOUND');
    expectEnvelope(await call('DELETE', `/tokens/${token.id}`), 404, 'TOKEN_NOT_FOUND');
    const list = (await call('GET', '/tokens?limit=100')).json() as { data: Token[] };
    expect(list.data.some((t) => t.id === token.id)).toBe(false);
    const events = await ctx.handle.db.selectFrom('events').select('type').where('resource_id', '=', token.id).execute();
    expect(events.map((e) => e.type).sort()).toEqual(['API_TOKEN.CREATED', 'API_TOKEN.DELETED']);
  });

  it('stops a deleted token at once in the deleting process, without waiting for the notification', async () => {
    // A process whose LISTEN has not heard the delete yet (notifications arrive when they do): its own delete evicts the token.
    const silent = pino({ level: 'silent' });
    const deaf: DbHandle = {
      ...ctx.handle,
      listen: (channel, onMessage, onReset, onListening) => ctx.handle.listen(channel, channel === TOKEN_DELETED_CHANNEL ? () => {} : onMessage, onReset, onListening),
    };
    const other = await buildApp({ db: ctx.handle.db, handle: deaf, clock: ctx.clock, config: ctx.config, jobs: new JobWorker(ctx.handle.db, ctx.clock, silent), logger: silent });
    try {
      const doomed = await ctx.newToken(ctx.platform, ['VIEW']);
      const readConfig = () => other.inject({ method: 'GET', url: `${BASE}/config`, headers: { authorization: doomed.auth } });
      expect((await readConfig()).statusCode).toBe(200); // now in that process's token cache
      const deleted = await other.inject({ method: 'DELETE', url: `${BASE}/tokens/${doomed.tokenId}`, headers: { authorization: ctx.platform.auth } });
      expect(deleted.statusCode, deleted.body).toBe(204);
      expectEnvelope(await readConfig(), 401, 'UNAUTHORIZED');
    } finally {
      await other.close();
    }
  });

  it('answers 404 for a well-formed unknown id and for another platform’s token', async () => {
    expectEnvelope(await call('GET', '/tokens/Token:00000000-0000-7000-8000-000000000000'), 404, 'TOKEN_NOT_FOUND');
    const other = await ctx.newPlatform();
    expectEnvelope(await call('GET', `/tokens/${other.tokenId}`), 404, 'TOKEN_NOT_FOUND');
    expectEnvelope(await call('DELETE', `/tokens/${other.tokenId}`), 404, 'TOKEN_NOT_FOUND');
    expect((await call('GET', '/config', undefined, other.auth)).statusCode).toBe(200);
  });

  it.each(['Customer:00000000-0000-7000-8000-000000000000', 'Token:not-a-uuid', 'Token:', '00000000-0000-7000-8000-000000000000'])(
    'answers the malformed id %s like an unknown one: 404 TOKEN_NOT_FOUND',
    async (id) => {
      expectEnvelope(await call('GET', `/tokens/${encodeURIComponent(id)}`), 404, 'TOKEN_NOT_FOUND');
      expectEnvelope(await call('DELETE', `/tokens/${encodeURIComponent(id)}`), 404, 'TOKEN_NOT_FOUND');
    },
  );
});
