import { createPublicKey, verify } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/platform/db/database.js';
import { BASE, basic, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * Second security review of what Corridor signs and keeps (2026-11-30): API token secrets, Basic
 * parsing, webhook signing keys. What held is pinned here so it keeps holding; the master key
 * file's permissions and the log's redaction are in test/unit/master-key.test.ts and logger.test.ts.
 */
let ctx: TestContext;
const logLines: string[] = [];
let receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  ctx = await createTestContext({ logLines, env: { CORRIDOR_WEBHOOK_TIMEOUT_MS: '1500' } });
});
afterAll(() => ctx.close());
afterEach(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  receivers = [];
});

const call = (p: TestPlatform | string, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown, headers: Record<string, string> = {}) =>
  ctx.app.inject({
    method,
    url: `${BASE}${path}`,
    headers: { authorization: typeof p === 'string' ? p : p.auth, ...headers },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

/** Every row of every table of the test's schema as text: what a database dump shows. */
async function dump(db: Db): Promise<string> {
  const tables = await sql<{ table_name: string }>`
    select table_name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(db);
  const rows = await sql<{ row: string }>`${sql.join(
    tables.rows.map(({ table_name }) => sql`select t::text as row from ${sql.table(table_name)} t`),
    sql` union all `,
  )}`.execute(db);
  return rows.rows.map((r) => r.row).join('\n');
}

async function drain(): Promise<void> {
  while ((await ctx.jobs.runDue(100)) > 0);
}

interface Key {
  id: string;
  publicKey: string;
}

async function keysOf(p: TestPlatform): Promise<Key[]> {
  const response = await call(p, 'GET', '/webhooks/signing-keys');
  expect(response.statusCode).toBe(200);
  return (response.json() as { data: Key[] }).data;
}

async function connected(): Promise<{ platform: TestPlatform; receiver: WebhookReceiver; keys: Key[] }> {
  const receiver = await WebhookReceiver.start();
  receivers.push(receiver);
  const platform = await ctx.newPlatform();
  expect((await call(platform, 'PATCH', '/config', { webhookEndpoint: receiver.url })).statusCode).toBe(200);
  const keys = await keysOf(platform);
  receiver.trust(keys.map((k) => k.publicKey));
  return { platform, receiver, keys };
}

describe('API token secrets', () => {
  it('are shown once and kept nowhere in clear: no table holds one, an Idempotency-Key included, and no log line', async () => {
    const created = await call(ctx.platform, 'POST', '/tokens', { name: 'Shown once', permissions: ['VIEW'] }, { 'idempotency-key': 'secrets-review-token' });
    expect(created.statusCode).toBe(201);
    const { id, clientSecret } = created.json() as { id: string; clientSecret: string };
    expect(clientSecret).toMatch(/^[0-9a-f]{64}$/);
    await drain();
    const everything = await dump(ctx.handle.db);
    expect(everything).toContain(id.slice('Token:'.length));
    expect(everything).not.toContain(clientSecret);
    expect(everything).not.toContain(ctx.platform.secret);
    expect((await call(ctx.platform, 'GET', `/tokens/${id}`)).json()).not.toHaveProperty('clientSecret');
    expect(JSON.stringify((await call(ctx.platform, 'GET', '/tokens')).json())).not.toContain(clientSecret);
    expect(logLines.join('\n')).not.toContain(clientSecret);
  });

  it('answers every malformed, foreign or oversized Basic header 401 UNAUTHORIZED, never a 500, and the same for a known and an unknown id', async () => {
    const p = ctx.platform;
    const unknownClientId = '0'.repeat(32);
    const headers = [
      basic(p.clientId, `${p.secret}:more`), // a colon inside the secret
      basic(p.clientId, `:${p.secret}`),
      basic('', p.secret), // empty user
      basic(p.clientId, ''), // empty secret
      basic(p.tokenId, 'wrong'),
      basic(`${p.tokenId}`, `${p.secret}:`),
      basic('Token:abc', p.secret),
      basic(p.clientId.toUpperCase(), p.secret),
      basic(`${p.clientId}\u0000`, p.secret),
      basic('ümlaut', 'ß€💳'), // non-ASCII, as UTF-8
      `Basic ${Buffer.from([0xff, 0xfe, 0x3a, 0xc3]).toString('base64')}`, // not UTF-8
      'Basic ü', // non-ASCII outside base64
      `Basic ${'A'.repeat(15_000)}`, // very long
      basic(p.clientId, 'a'.repeat(10_000)),
      basic('x'.repeat(5_000), p.secret),
      'Basic',
      'Basic ',
      'Basic ****',
      'Bearer abc',
      '',
      basic(unknownClientId, p.secret),
      basic(p.clientId, 'f'.repeat(64)),
    ];
    for (const authorization of headers) {
      const response = await call(authorization, 'GET', '/config');
      expect(response.statusCode, authorization.slice(0, 80)).toBe(401);
      expect(response.json(), authorization.slice(0, 80)).toMatchObject({ code: 'UNAUTHORIZED', message: 'Missing or invalid API credentials.' });
    }
    // Both names of the token, Basic in any case, authenticate.
    for (const authorization of [basic(p.tokenId, p.secret), `basic ${Buffer.from(`${p.clientId}:${p.secret}`).toString('base64')}`]) {
      expect((await call(authorization, 'GET', '/config')).statusCode).toBe(200);
    }
  });
});

describe('webhook signing keys', () => {
  it('sign each platform’s deliveries with its own key only: another platform’s keys verify none, and each lists only its own', async () => {
    const a = await connected();
    const b = await connected();
    expect(a.keys.map((k) => k.id)).not.toEqual(expect.arrayContaining(b.keys.map((k) => k.id)));
    for (const side of [a, b]) {
      expect((await call(side.platform, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: `Zoë 💳 Of ${side.platform.id}` })).statusCode).toBe(201);
    }
    await drain();
    for (const [own, other] of [
      [a, b],
      [b, a],
    ] as const) {
      expect(own.receiver.received.length).toBeGreaterThanOrEqual(2); // TEST and CUSTOMER.CREATED at least
      for (const webhook of own.receiver.received) {
        expect(webhook.verified).toBe(true);
        expect(webhook.headers['x-service-signature-key-id']).toBe(own.keys[0]!.id);
        const signature = Buffer.from(String(webhook.headers['x-service-signature']), 'base64');
        expect(verify('sha256', Buffer.from(webhook.raw), createPublicKey(other.keys[0]!.publicKey), signature)).toBe(false);
        // Nothing of the other platform's: neither its customer nor its id.
        expect(webhook.raw).not.toContain(`Of ${other.platform.id}`);
      }
    }
  });

  it('keep private keys sealed: never in an answer or a log line, and a sealed key copied onto another key’s row does not open', async () => {
    const a = await connected();
    const b = await connected();
    const rows = await ctx.handle.db.selectFrom('webhook_signing_keys').selectAll().where('platform_id', 'in', [a.platform.uuid, b.platform.uuid]).execute();
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.sealed_private_key).toMatch(/^v1\.[A-Za-z0-9_-]+$/);
      expect(row.sealed_private_key).not.toContain('PRIVATE KEY');
    }
    const listed = JSON.stringify((await call(a.platform, 'GET', '/webhooks/signing-keys')).json());
    expect(listed).not.toMatch(/PRIVATE|sealed|v1\./i);

    // B's key row given A's sealed private key (a database write without the master key): B's
    // next delivery is not signed with A's key; it fails on Corridor's side and is retried.
    const [rowA, rowB] = [rows.find((r) => r.platform_id === a.platform.uuid)!, rows.find((r) => r.platform_id === b.platform.uuid)!];
    await ctx.handle.db.updateTable('webhook_signing_keys').set({ sealed_private_key: rowA.sealed_private_key }).where('platform_id', '=', rowB.platform_id).where('id', '=', rowB.id).execute();
    const before = b.receiver.received.length;
    const test = await call(b.platform, 'POST', '/sandbox/webhooks/test');
    expect(test.statusCode).toBe(500);
    expect(b.receiver.received).toHaveLength(before);

    await drain();
    const log = logLines.join('\n');
    for (const webhook of [...a.receiver.received, ...b.receiver.received]) {
      expect(log).not.toContain(String(webhook.headers['x-service-signature']));
      expect(log).not.toContain(webhook.raw);
    }
    expect(log).not.toContain(rowA.sealed_private_key);
  });
});

describe('identifiers at rest', () => {
  it('keep tax identifiers out of every table, the events and webhooks that carry their customers, and the log', async () => {
    const { platform, receiver } = await connected();
    const ssn = '321-54-9876';
    const ein = '58-7654321';
    const person = await call(platform, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Ida Sealed', idType: 'SSN', identifier: ssn }, { 'idempotency-key': 'secrets-review-ssn' });
    expect(person.statusCode, person.body).toBe(201);
    const business = await call(platform, 'POST', '/customers', {
      customerType: 'BUSINESS',
      businessInfo: { legalName: 'Sealed Inc', country: 'US', incorporatedOn: '2015-01-01', taxId: ein },
    });
    expect(business.statusCode, business.body).toBe(201);
    await drain();
    expect(receiver.received.map((w) => w.raw).join('\n')).toContain('Ida Sealed');
    const everywhere = [await dump(ctx.handle.db), receiver.received.map((w) => w.raw).join('\n'), logLines.join('\n')];
    for (const text of everywhere) {
      for (const value of [ssn, ein, '321549876', '587654321']) expect(text).not.toContain(value);
    }
  });
});
