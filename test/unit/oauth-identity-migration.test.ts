import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../src/platform/db/database.js';
import { listMigrations, migrate } from '../../src/platform/db/migrate.js';
import { uuidv7 } from '../../src/platform/ids.js';
import { openDatabaseBefore } from '../helpers/context.js';

/**
 * Migration 0039 on a database written before it: an account holding one OIDC identity twice
 * (two concurrent adds could both succeed), and a platform config naming its own JWKS for
 * Google. It applies; the oldest credential of the identity stays, the later one is revoked
 * with its sessions, the unique index then refuses another; the known issuer's jwksUri is dropped.
 */
let handle: DbHandle;
let drop: () => Promise<void>;

beforeAll(async () => {
  ({ handle, drop } = await openDatabaseBefore(39));
}, 120_000);
afterAll(() => drop());

const at = (minutes: number) => new Date(Date.UTC(2025, 9, 13, 9, minutes));
const GOOGLE = { iss: 'https://accounts.google.com', aud: 'acme-web', sub: 'victim' };

async function walletAccount(platformId: string): Promise<string> {
  const customer = uuidv7();
  await sql`insert into customers (id, platform_id, platform_customer_id, customer_type, review_status, uma_address, profile, created_at, updated_at)
            values (${customer}, ${platformId}, ${'c-' + customer.slice(-6)}, 'INDIVIDUAL', 'APPROVED', ${'$c' + customer.slice(-6) + '@corridor.test'}, '{}'::jsonb, ${at(0)}, ${at(0)})`.execute(handle.db);
  const account = uuidv7();
  await sql`insert into internal_accounts (id, platform_id, customer_id, type, currency, status, funding_payment_instructions, funding_reference, created_at, updated_at)
            values (${account}, ${platformId}, ${customer}, 'EMBEDDED_WALLET', 'USDC', 'ACTIVE', '[]'::jsonb, ${'ref-' + account.slice(-8)}, ${at(0)}, ${at(0)})`.execute(handle.db);
  return account;
}

async function credential(platformId: string, accountId: string, type: string, details: Record<string, unknown>, minute: number): Promise<string> {
  const id = uuidv7();
  await sql`insert into auth_credentials (id, platform_id, account_id, type, nickname, details, created_at, updated_at)
            values (${id}, ${platformId}, ${accountId}, ${type}, 'n', ${JSON.stringify(details)}::jsonb, ${at(minute)}, ${at(minute)})`.execute(handle.db);
  return id;
}

async function session(platformId: string, accountId: string, credentialId: string): Promise<string> {
  const id = uuidv7();
  await sql`insert into auth_sessions (id, platform_id, account_id, credential_id, public_key, created_at, updated_at, expires_at)
            values (${id}, ${platformId}, ${accountId}, ${credentialId}, ${'02' + 'ab'.repeat(32)}, ${at(5)}, ${at(5)}, ${at(600)})`.execute(handle.db);
  return id;
}

describe('migration 0039', () => {
  it('keeps the oldest credential of a duplicated OIDC identity, revokes the rest with their sessions, and adds the unique index; drops jwksUri on known issuers', async () => {
    const platformId = uuidv7();
    await sql`insert into platforms (id, name, environment, created_at, updated_at) values (${platformId}, 'p', 'production', ${at(0)}, ${at(0)})`.execute(handle.db);
    const config = {
      appName: 'Acme',
      oidcIssuers: [
        { issuer: 'https://accounts.google.com', audiences: ['acme-web'], jwksUri: 'https://keys.platform.example/jwks' },
        { issuer: 'accounts.google.com', audiences: ['acme-web'], jwksUri: 'https://keys.platform.example/jwks' },
        { issuer: 'https://id.platform.example', jwksUri: 'https://id.platform.example/jwks' },
      ],
    };
    await sql`insert into platform_configs (id, platform_id, supported_currencies, embedded_wallet_config, created_at, updated_at)
              values (${uuidv7()}, ${platformId}, '[]'::jsonb, ${JSON.stringify(config)}::jsonb, ${at(0)}, ${at(0)})`.execute(handle.db);
    const account = await walletAccount(platformId);
    const other = await walletAccount(platformId);
    const email = await credential(platformId, account, 'EMAIL_OTP', {}, 1);
    const oldest = await credential(platformId, account, 'OAUTH', GOOGLE, 2);
    const later = await credential(platformId, account, 'OAUTH', GOOGLE, 3);
    const distinct = await credential(platformId, account, 'OAUTH', { ...GOOGLE, sub: 'someone-else' }, 4);
    // The same identity on another account is another wallet's credential: kept.
    const elsewhere = await credential(platformId, other, 'OAUTH', GOOGLE, 5);
    const keptSession = await session(platformId, account, oldest);
    const laterSession = await session(platformId, account, later);

    await migrate(handle.db, listMigrations().filter((m) => m.version === 39));

    const rows = await sql<{ id: string; revoked: boolean }>`select id, revoked_at is not null as revoked from auth_credentials where platform_id = ${platformId}`.execute(handle.db);
    const revoked = Object.fromEntries(rows.rows.map((r) => [r.id, r.revoked]));
    expect(revoked).toEqual({ [email]: false, [oldest]: false, [later]: true, [distinct]: false, [elsewhere]: false });
    const sessions = await sql<{ id: string; revoked: boolean }>`select id, revoked_at is not null as revoked from auth_sessions where platform_id = ${platformId}`.execute(handle.db);
    expect(Object.fromEntries(sessions.rows.map((r) => [r.id, r.revoked]))).toEqual({ [keptSession]: false, [laterSession]: true });

    await expect(credential(platformId, account, 'OAUTH', GOOGLE, 6)).rejects.toMatchObject({ code: '23505' });
    // A revoked credential of the identity does not count: it may be added again after a revocation.
    await sql`update auth_credentials set revoked_at = ${at(7)} where id = ${oldest}`.execute(handle.db);
    await credential(platformId, account, 'OAUTH', GOOGLE, 8);

    const stored = await sql<{ c: { oidcIssuers: unknown[] } }>`select embedded_wallet_config as c from platform_configs where platform_id = ${platformId}`.execute(handle.db);
    expect(stored.rows[0]!.c).toEqual({
      appName: 'Acme',
      oidcIssuers: [
        { issuer: 'https://accounts.google.com', audiences: ['acme-web'] },
        { issuer: 'accounts.google.com', audiences: ['acme-web'] },
        { issuer: 'https://id.platform.example', jwksUri: 'https://id.platform.example/jwks' },
      ],
    });
  });
});
