import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DbHandle } from '../../src/platform/db/database.js';
import { withTx } from '../../src/platform/db/tx.js';
import { BASE, basic, onPostgres } from '../helpers/context.js';
import { type CorridorProcess, createSandboxPlatform, startCorridor } from '../helpers/process.js';

/**
 * A server whose defaults are not PostgreSQL's: initdb writes the machine's own zone into
 * postgresql.conf, and a DBA may `ALTER DATABASE`/`ALTER ROLE … SET` a DateStyle or a stricter
 * isolation. Corridor connects as a role with such defaults (role settings apply on every
 * connection, as database ones do) and must answer as it does anywhere else.
 */
describe.runIf(onPostgres)('Corridor on a role whose session defaults are not PostgreSQL’s', () => {
  const role = `corridor_settings_${process.pid}_${randomBytes(3).toString('hex')}`;
  let admin: DbHandle;
  let env: Record<string, string>;
  let server: CorridorProcess | undefined;

  beforeAll(async () => {
    const url = process.env.TEST_DATABASE_URL!;
    admin = await openDatabase({ databaseUrl: url, poolSize: 1 });
    await sql.raw(`create role ${role} login superuser`).execute(admin.db);
    for (const setting of ["DateStyle = 'SQL, DMY'", "TimeZone = 'Pacific/Chatham'", "default_transaction_isolation = 'serializable'"]) {
      await sql.raw(`alter role ${role} set ${setting}`).execute(admin.db);
    }
    await sql.raw(`create schema ${role} authorization ${role}`).execute(admin.db);
    const asRole = new URL(url);
    asRole.username = role;
    asRole.password = '';
    asRole.searchParams.set('options', `-c search_path=${role}`);
    env = { DATABASE_URL: asRole.toString(), CORRIDOR_MASTER_KEY: randomBytes(32).toString('hex') };
  });
  afterAll(async () => {
    await server?.stop();
    await sql.raw(`drop schema if exists ${role} cascade`).execute(admin.db);
    await sql.raw(`drop role if exists ${role}`).execute(admin.db);
    await admin.close();
  });

  it('every connection is ISO, UTC and read committed, the URL’s own options kept', async () => {
    const handle = await openDatabase({ databaseUrl: env.DATABASE_URL!, poolSize: 1 });
    try {
      const settings = await withTx(handle.db, async (trx) => {
        const { rows } = await sql<{ datestyle: string; timezone: string; isolation: string; schema: string }>`
          select current_setting('DateStyle') as datestyle, current_setting('TimeZone') as timezone,
                 current_setting('transaction_isolation') as isolation, current_setting('search_path') as schema`.execute(trx);
        return rows[0]!;
      });
      expect(settings).toEqual({ datestyle: expect.stringMatching(/^ISO,/), timezone: 'UTC', isolation: 'read committed', schema: role });
    } finally {
      await handle.close();
    }
  });

  it('serves a customer whose instants are written and read back as the API writes them', async () => {
    server = await startCorridor(env);
    const platform = await createSandboxPlatform(env);
    const api = (method: string, path: string, body?: unknown) =>
      fetch(`http://127.0.0.1:${server!.port}${BASE}${path}`, {
        method,
        headers: { authorization: basic(platform.clientId, platform.clientSecret), 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const before = Date.now();
    const created = await api('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Ana Zone', platformCustomerId: 'zone-1' });
    expect(created.status, await created.clone().text()).toBe(201);
    const customer = (await created.json()) as { id: string; createdAt: string; updatedAt: string };
    expect(customer.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Math.abs(Date.parse(customer.createdAt) - before)).toBeLessThan(60_000);

    const read = await api('GET', `/customers/${customer.id}`);
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ id: customer.id, createdAt: customer.createdAt, updatedAt: customer.updatedAt });
  }, 180_000);
});
