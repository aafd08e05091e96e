import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../src/platform/db/database.js';
import { listMigrations, migrate } from '../../src/platform/db/migrate.js';
import { uuidv7 } from '../../src/platform/ids.js';
import { openDatabaseBefore } from '../helpers/context.js';

/**
 * Migration 0040 on a database written before it: documents a review read are marked submitted
 * (DELETE is then 409) with the verdict of the latest review that read their current file, and
 * customers with an open review are held. A review that stopped at missing requirements read no
 * document; a document uploaded after the last review, or replaced after its verdict, has none.
 */
let handle: DbHandle;
let drop: () => Promise<void>;

beforeAll(async () => {
  ({ handle, drop } = await openDatabaseBefore(40));
}, 120_000);
afterAll(() => drop());

const at = (minute: number) => new Date(Date.UTC(2025, 9, 13, 9, minute));

async function customer(platformId: string, type: 'INDIVIDUAL' | 'BUSINESS' = 'INDIVIDUAL'): Promise<string> {
  const id = uuidv7();
  await sql`insert into customers (id, platform_id, platform_customer_id, customer_type, review_status, uma_address, profile, created_at, updated_at)
            values (${id}, ${platformId}, ${'c-' + id.slice(-8)}, ${type}, 'UNVERIFIED', ${'$c' + id.slice(-8) + '@corridor.test'}, '{}'::jsonb, ${at(0)}, ${at(0)})`.execute(handle.db);
  return id;
}

async function owner(platformId: string, customerId: string): Promise<string> {
  const id = uuidv7();
  await sql`insert into beneficial_owners (id, platform_id, customer_id, roles, ownership_percentage, personal_info, kyc_status, created_at, updated_at)
            values (${id}, ${platformId}, ${customerId}, ${['UBO']}, 50, '{}'::jsonb, 'UNVERIFIED', ${at(0)}, ${at(0)})`.execute(handle.db);
  return id;
}

async function document(platformId: string, holder: { type: 'Customer' | 'BeneficialOwner'; id: string }, created: number, updated = created): Promise<string> {
  const id = uuidv7();
  await sql`insert into documents (id, platform_id, holder_type, holder_id, document_type, country, file_name, created_at, updated_at)
            values (${id}, ${platformId}, ${holder.type}, ${holder.id}, 'PASSPORT', 'US', 'p.pdf', ${at(created)}, ${at(updated)})`.execute(handle.db);
  return id;
}

async function verification(platformId: string, customerId: string, status: string, errors: unknown[], created: number, updated = created): Promise<void> {
  await sql`insert into verifications (id, platform_id, customer_id, status, errors, created_at, updated_at)
            values (${uuidv7()}, ${platformId}, ${customerId}, ${status}, ${JSON.stringify(errors)}::jsonb, ${at(created)}, ${at(updated)})`.execute(handle.db);
}

describe('migration 0040', () => {
  it('records what earlier reviews read and decided, and holds customers under an open review', async () => {
    const platformId = uuidv7();
    await sql`insert into platforms (id, name, environment, created_at, updated_at) values (${platformId}, 'p', 'sandbox', ${at(0)}, ${at(0)})`.execute(handle.db);

    // Approved: the document it read is ACCEPTED; one uploaded afterwards was never submitted.
    const approved = await customer(platformId);
    const approvedOn = await document(platformId, { type: 'Customer', id: approved }, 1);
    await verification(platformId, approved, 'APPROVED', [], 2, 3);
    const afterwards = await document(platformId, { type: 'Customer', id: approved }, 4);

    // Asked for more: the named document REJECTED, the other ACCEPTED, one replaced since the verdict unjudged.
    const resolve = await customer(platformId);
    const named = await document(platformId, { type: 'Customer', id: resolve }, 1);
    const fine = await document(platformId, { type: 'Customer', id: resolve }, 1);
    const replacedSince = await document(platformId, { type: 'Customer', id: resolve }, 1, 9);
    await verification(platformId, resolve, 'RESOLVE_ERRORS', [{ resourceId: `Document:${named}`, type: 'INVALID_DOCUMENT', code: 'DATA_MISMATCH', reason: 'r' }], 5, 6);

    // Stopped at missing requirements: read nothing.
    const missing = await customer(platformId);
    const unread = await document(platformId, { type: 'Customer', id: missing }, 1);
    await verification(platformId, missing, 'RESOLVE_ERRORS', [{ resourceId: `Customer:${missing}`, type: 'MISSING_FIELD', field: 'customer.address', reason: 'r' }], 2);

    // A business waiting for manual review: its owner's document is submitted and not judged; the business is held.
    const business = await customer(platformId, 'BUSINESS');
    const ownerId = await owner(platformId, business);
    const ownersDocument = await document(platformId, { type: 'BeneficialOwner', id: ownerId }, 7);
    await verification(platformId, business, 'PENDING_MANUAL_REVIEW', [], 2, 8);

    await migrate(handle.db, listMigrations().filter((m) => m.version === 40));

    const documents = await sql<{ id: string; submitted_at: Date | null; review_verdict: string | null }>`
      select id, submitted_at, review_verdict from documents where platform_id = ${platformId}`.execute(handle.db);
    const byId = Object.fromEntries(documents.rows.map((d) => [d.id, [d.submitted_at?.toISOString() ?? null, d.review_verdict]]));
    expect(byId).toEqual({
      [approvedOn]: [at(2).toISOString(), 'ACCEPTED'],
      [afterwards]: [null, null],
      [named]: [at(5).toISOString(), 'REJECTED'],
      [fine]: [at(5).toISOString(), 'ACCEPTED'],
      [replacedSince]: [at(5).toISOString(), null],
      [unread]: [null, null],
      [ownersDocument]: [at(7).toISOString(), null],
    });
    const customers = await sql<{ id: string; under_review_since: Date | null }>`select id, under_review_since from customers where platform_id = ${platformId}`.execute(handle.db);
    expect(Object.fromEntries(customers.rows.map((c) => [c.id, c.under_review_since?.toISOString() ?? null]))).toEqual({
      [approved]: null,
      [resolve]: null,
      [missing]: null,
      [business]: at(2).toISOString(),
    });
  });
});
