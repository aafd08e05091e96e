import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

// A spreadsheet's CSV export may end every line with a separator: the header then has unnamed,
// empty columns at its end (customers/README.md, bulk import).

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Job = { status: string; progress: { total: number; successful: number; failed: number }; errors: Array<{ row: number; correlationId: string; code: string; message: string }> };

function upload(p: TestPlatform, content: string) {
  const boundary = '----corridor-trailing-boundary';
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="customers.csv"\r\nContent-Type: text/csv\r\n\r\n`;
  const payload = Buffer.concat([Buffer.from(head), Buffer.from(content), Buffer.from(`\r\n--${boundary}--\r\n`)]);
  return ctx.app.inject({
    method: 'POST',
    url: `${BASE}/customers/bulk/csv`,
    headers: { authorization: p.auth, 'content-type': `multipart/form-data; boundary=${boundary}` },
    payload,
  });
}

const job = async (p: TestPlatform, id: string) => (await ctx.app.inject({ method: 'GET', url: `${BASE}/customers/bulk/jobs/${id}`, headers: { authorization: p.auth } })).json() as Job;

describe('POST /customers/bulk/csv: a header ending in empty columns', () => {
  it('is accepted; rows whose trailing cells are empty are created, a value under an unnamed column fails its row alone', async () => {
    const p = await ctx.newPlatform();
    const file = [
      'platformCustomerId,customerType,fullName,,',
      'trail-1,INDIVIDUAL,Ann Lee,,',
      'trail-2,INDIVIDUAL,Bo Chen',
      'trail-3,INDIVIDUAL,Cy Diaz,, ',
      'trail-4,INDIVIDUAL,Di Eng,,stray',
      'trail-5,INDIVIDUAL,Ed Fox,,,',
    ].join('\r\n');
    const accepted = await upload(p, file);
    expect(accepted.statusCode, accepted.body).toBe(202);
    const { jobId } = accepted.json() as { jobId: string };
    expect(await ctx.jobs.runDue()).toBe(1);
    const done = await job(p, jobId);
    expect(done).toMatchObject({ status: 'COMPLETED', progress: { total: 5, successful: 3, failed: 2 } });
    expect(done.errors.map((e) => [e.row, e.correlationId, e.code, e.message])).toEqual([
      [5, 'trail-4', 'INVALID_INPUT', 'Row 5 (line 5) has a value under a column the header does not name.'],
      [6, 'trail-5', 'INVALID_INPUT', 'Row 6 (line 6) has more cells than the header.'],
    ]);
    const created = (await ctx.app.inject({ method: 'GET', url: `${BASE}/customers?limit=10`, headers: { authorization: p.auth } })).json() as { data: Array<{ platformCustomerId: string; fullName: string }> };
    expect(created.data.map((c) => [c.platformCustomerId, c.fullName]).sort()).toEqual([
      ['trail-1', 'Ann Lee'],
      ['trail-2', 'Bo Chen'],
      ['trail-3', 'Cy Diaz'],
    ]);
  });

  it('still refuses an unnamed column between named ones', async () => {
    const p = await ctx.newPlatform();
    const refused = expectEnvelope(await upload(p, 'platformCustomerId,,customerType\r\nx,,INDIVIDUAL'), 400, 'INVALID_INPUT');
    expect(refused.details!.errors).toEqual([expect.objectContaining({ field: 'columns.', message: 'is not a known column' })]);
  });
});
