import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../src/platform/db/database.js';
import { listMigrations, migrate } from '../../src/platform/db/migrate.js';
import { uuidv7 } from '../../src/platform/ids.js';
import { openDatabaseBefore } from '../helpers/context.js';

/**
 * Migration 0044 on a database written before it: production platforms already sharing a
 * umaDomain (any case) lose it, all of them, since nothing says which is the owner; what each held
 * is kept in uma_domains_released. A production domain held once stays, sandbox platforms keep
 * what they share, and the unique index then refuses a second production holder.
 */
let handle: DbHandle;
let drop: () => Promise<void>;

beforeAll(async () => {
  ({ handle, drop } = await openDatabaseBefore(44));
}, 120_000);
afterAll(() => drop());

const at = (minutes: number) => new Date(Date.UTC(2025, 9, 13, 9, minutes));

/** A platform and its configuration as written before 0044 (`migrated`: as written after it). */
async function platform(environment: 'sandbox' | 'production', umaDomain: string | null, minute: number, migrated = false): Promise<string> {
  const id = uuidv7();
  await sql`insert into platforms (id, name, environment, created_at, updated_at) values (${id}, 'p', ${environment}, ${at(minute)}, ${at(minute)})`.execute(handle.db);
  if (migrated) {
    await sql`insert into platform_configs (id, platform_id, environment, supported_currencies, created_at, updated_at)
              values (${uuidv7()}, ${id}, ${environment}, '[]'::jsonb, ${at(minute)}, ${at(minute)})`.execute(handle.db);
  } else {
    await sql`insert into platform_configs (id, platform_id, uma_domain, supported_currencies, created_at, updated_at)
              values (${uuidv7()}, ${id}, ${umaDomain}, '[]'::jsonb, ${at(minute)}, ${at(minute)})`.execute(handle.db);
  }
  return id;
}

describe('migration 0044', () => {
  it('applies over production platforms sharing a domain: none keeps it, each one is recorded; the rest is kept and the index holds', async () => {
    const first = await platform('production', 'bank.example', 1);
    const second = await platform('production', 'Bank.Example', 2);
    const alone = await platform('production', 'alone.example', 3);
    const sandboxA = await platform('sandbox', 'bank.example', 4);
    const sandboxB = await platform('sandbox', 'ci.example', 5);
    const sandboxC = await platform('sandbox', 'ci.example', 6);
    const none = await platform('production', null, 7);

    await migrate(handle.db, listMigrations().filter((m) => m.version === 44));

    const rows = await sql<{ platform_id: string; environment: string; uma_domain: string | null; claimed: Date | null; updated_at: Date }>`
      select platform_id, environment, uma_domain, uma_domain_claimed_at as claimed, updated_at from platform_configs`.execute(handle.db);
    const byId = new Map(rows.rows.map((r) => [r.platform_id, r]));
    expect(byId.get(first)).toMatchObject({ environment: 'production', uma_domain: null, claimed: null });
    expect(byId.get(second)).toMatchObject({ environment: 'production', uma_domain: null, claimed: null });
    expect(byId.get(first)!.updated_at.getTime()).toBeGreaterThan(at(1).getTime());
    expect(byId.get(alone)).toMatchObject({ environment: 'production', uma_domain: 'alone.example', claimed: at(3) });
    expect(byId.get(sandboxA)).toMatchObject({ environment: 'sandbox', uma_domain: 'bank.example', claimed: at(4) });
    expect(byId.get(sandboxB)).toMatchObject({ uma_domain: 'ci.example', claimed: at(5) });
    expect(byId.get(sandboxC)).toMatchObject({ uma_domain: 'ci.example', claimed: at(6) });
    expect(byId.get(none)).toMatchObject({ uma_domain: null, claimed: null });

    const released = await sql<{ platform_id: string; uma_domain: string }>`select platform_id, uma_domain from uma_domains_released order by uma_domain`.execute(handle.db);
    expect(released.rows).toEqual(
      expect.arrayContaining([
        { platform_id: first, uma_domain: 'bank.example' },
        { platform_id: second, uma_domain: 'Bank.Example' },
      ]),
    );
    expect(released.rows).toHaveLength(2);

    // Another production platform cannot take the domain held once; one of the released may take theirs back.
    const late = await platform('production', null, 8, true);
    await expect(sql`update platform_configs set uma_domain = 'ALONE.example', uma_domain_claimed_at = ${at(9)} where platform_id = ${late}`.execute(handle.db)).rejects.toMatchObject({
      code: '23505',
    });
    await sql`update platform_configs set uma_domain = 'bank.example', uma_domain_claimed_at = ${at(9)} where platform_id = ${first}`.execute(handle.db);
    await expect(sql`update platform_configs set uma_domain = 'bank.example', uma_domain_claimed_at = ${at(9)} where platform_id = ${second}`.execute(handle.db)).rejects.toMatchObject({
      code: '23505',
    });
    // The config row's environment is the platform's, and a domain goes with its claim time.
    await expect(sql`update platform_configs set environment = 'sandbox' where platform_id = ${late}`.execute(handle.db)).rejects.toMatchObject({ code: '23503' });
    await expect(sql`update platform_configs set uma_domain = 'x.example' where platform_id = ${late}`.execute(handle.db)).rejects.toMatchObject({ code: '23514' });
  });
});
