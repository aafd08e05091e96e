import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';
import { postCsvImport } from '../helpers/multipart.js';

/**
 * The error report of a CSV import (GET /customers/bulk/jobs/{id}/errors) has every failed row
 * (the JSON job lists only the first 1,000): it is read 500 errors a page and streamed as it is
 * read, so a report longer than a page and than the stream's buffer must come out whole, each
 * row once, in order. An integrator fixes the file from it: a lost page is rows never fixed.
 */

const ROWS = 1_234;

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

describe('the error report of an import with more errors than a page', () => {
  it('lists every failed row once, in row order', async () => {
    const p = await ctx.newPlatform();
    const rows = Array.from({ length: ROWS }, (_, i) => `bad-${i + 1},INDIVIDUAL,Row ${i + 1},not-a-date`);
    const csv = ['platformCustomerId,customerType,fullName,birthDate', ...rows].join('\r\n');
    const accepted = await postCsvImport(ctx.app, p, csv);
    expect(accepted.statusCode, accepted.body).toBe(202);
    const { jobId } = accepted.json() as { jobId: string };
    await ctx.jobs.runDue();
    const job = (await ctx.app.inject({ method: 'GET', url: `${BASE}/customers/bulk/jobs/${jobId}`, headers: { authorization: p.auth } })).json() as Record<string, any>;
    expect(job).toMatchObject({ status: 'FAILED', progress: { total: ROWS, processed: ROWS, successful: 0, failed: ROWS } });

    const report = await ctx.app.inject({ method: 'GET', url: `${BASE}/customers/bulk/jobs/${jobId}/errors`, headers: { authorization: p.auth } });
    expect(report.statusCode).toBe(200);
    const records = parse(report.body, { columns: true }) as Array<Record<string, string>>;
    expect(records.map((r) => r.correlationId)).toEqual(Array.from({ length: ROWS }, (_, i) => `bad-${i + 1}`));
    expect(new Set(records.map((r) => `${r.code} ${r.field}`))).toEqual(new Set(['INVALID_INPUT birthDate']));
  });
});
