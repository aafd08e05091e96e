import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMPORT_JOB, runImport, type ImportJobPayload } from '../../src/modules/customers/import.js';
import { getEndUserTerms } from '../../src/modules/customers/validation.js';
import { TenantSecretBox } from '../../src/platform/crypto/secret-box.js';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';
import { postCsvImport } from '../helpers/multipart.js';

/**
 * One bulk import run by two workers at once (the first's lease ran out while it was still
 * writing, and another claimed the job): each batch is counted by exactly one of them, compared
 * on the job's `processed` (countImportBatch), and the one that finds it moved rolls its whole
 * batch back and stops (ImportTakenOver). Rows without a platformCustomerId get a generated one,
 * so nothing but that rollback keeps a batch written twice from creating its customers twice.
 * A run after the import ended (its worker stopped before recording the job done) does nothing.
 */

type Body = Record<string, any>;
const ROWS = 30;

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

describe('a bulk import run by two workers at once', () => {
  it('creates each row once, counts it once and announces the import once, also when run again after it ended', async () => {
    const p = await ctx.newPlatform();
    const rows = Array.from({ length: ROWS }, (_, i) => (i % 2 ? `twice-${i},INDIVIDUAL,Row ${i}` : `,INDIVIDUAL,Row ${i}`));
    const csv = ['platformCustomerId,customerType,fullName', ...rows].join('\r\n');
    const accepted = await postCsvImport(ctx.app, p, csv);
    expect(accepted.statusCode, accepted.body).toBe(202);
    const jobId = (accepted.json() as Body).jobId as string;
    const job = await ctx.handle.db.selectFrom('jobs').select(['payload']).where('kind', '=', IMPORT_JOB).where('platform_id', '=', p.uuid).executeTakeFirstOrThrow();
    const payload = (typeof job.payload === 'string' ? JSON.parse(job.payload) : job.payload) as ImportJobPayload;

    // No row carries a tax identifier: the secret box is never used.
    const identifiers = new TenantSecretBox(randomBytes(32), 'tax-identifier');
    const terms = getEndUserTerms(ctx.config);
    const worker = () => runImport(ctx.handle.db, ctx.clock, identifiers, p.uuid, payload, terms, async () => {});
    await Promise.all([worker(), worker()]);

    const customers = await ctx.handle.db.selectFrom('customers').select('profile').where('platform_id', '=', p.uuid).execute();
    const names = customers.map((c) => (typeof c.profile === 'string' ? JSON.parse(c.profile) : c.profile).fullName as string).sort();
    expect(names).toEqual(Array.from({ length: ROWS }, (_, i) => `Row ${i}`).sort());
    const report = (await ctx.app.inject({ method: 'GET', url: `${BASE}/customers/bulk/jobs/${jobId}`, headers: { authorization: p.auth } })).json() as Body;
    expect(report).toMatchObject({ status: 'COMPLETED', progress: { total: ROWS, processed: ROWS, successful: ROWS, failed: 0 } });
    const events = await ctx.handle.db.selectFrom('events').select('type').where('platform_id', '=', p.uuid).where('type', 'like', 'BULK_UPLOAD.%').execute();
    expect(events.map((e) => e.type)).toEqual(['BULK_UPLOAD.COMPLETED']);

    // Run again after it ended (a worker that stopped before recording the job done): nothing moves, nothing is announced again.
    await worker();
    expect(await ctx.handle.db.selectFrom('customers').select('id').where('platform_id', '=', p.uuid).execute()).toHaveLength(ROWS);
    expect((await ctx.app.inject({ method: 'GET', url: `${BASE}/customers/bulk/jobs/${jobId}`, headers: { authorization: p.auth } })).json()).toEqual(report);
    expect(await ctx.handle.db.selectFrom('events').select('type').where('platform_id', '=', p.uuid).where('type', 'like', 'BULK_UPLOAD.%').execute()).toHaveLength(1);
  });
});
