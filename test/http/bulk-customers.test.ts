import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
type Job = {
  id: string;
  status: string;
  progress: { total: number; processed: number; successful: number; failed: number };
  errors: Array<{ row: number; correlationId: string; code: string; message: string; details?: { errors?: Array<{ field: string; constraint?: unknown }> } }>;
  completedAt?: string;
};

function multipart(content: string | Buffer, options: { name?: string; type?: string } = {}) {
  const boundary = '----corridor-test-boundary';
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="${options.name ?? 'file'}"; filename="customers.csv"\r\nContent-Type: ${options.type ?? 'text/csv'}\r\n\r\n`;
  const payload = Buffer.concat([Buffer.from(head), Buffer.isBuffer(content) ? content : Buffer.from(content), Buffer.from(`\r\n--${boundary}--\r\n`)]);
  return { payload, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

const upload = (p: TestPlatform, content: string | Buffer, options: { name?: string; type?: string } = {}) => {
  const { payload, headers } = multipart(content, options);
  return ctx.app.inject({ method: 'POST', url: `${BASE}/customers/bulk/csv`, headers: { authorization: p.auth, ...headers }, payload });
};
const job = async (p: TestPlatform, id: string) => (await ctx.app.inject({ method: 'GET', url: `${BASE}/customers/bulk/jobs/${id}`, headers: { authorization: p.auth } })).json() as Job;
const customersNamed = async (p: TestPlatform, platformCustomerId: string) =>
  ((await ctx.app.inject({ method: 'GET', url: `${BASE}/customers?platformCustomerId=${platformCustomerId}`, headers: { authorization: p.auth } })).json() as { data: Body[] }).data;
const totalCustomers = async (p: TestPlatform) =>
  ((await ctx.app.inject({ method: 'GET', url: `${BASE}/customers?limit=1`, headers: { authorization: p.auth } })).json() as { totalCount: number }).totalCount;

const FILE = [
  'umaAddress,platformCustomerId,customerType,fullName,birthDate,addressLine1,city,state,postalCode,country,platformAccountId,businessLegalName,businessTaxId,businessIncorporatedOn,email,currencies',
  'john.doe@uma.example.com,customer123,INDIVIDUAL,John Doe,1990-01-15,123 Main St,San Francisco,CA,94105,US,acc1,,,,john@example.com,USD;EUR',
  ',bad-dates,INDIVIDUAL,Bad Row,2023-02-30,1 Main St,Austin,TX,78701,US,,,,,not-an-email,',
  'acme@uma.example.com,biz456,BUSINESS,,,400 Commerce Way,Austin,TX,78701,US,,"Acme, Inc.",12-3456789,2010-06-01,,',
  ',biz-no-date,BUSINESS,,,1 Way,Austin,TX,78701,US,,Nodate LLC,12-3456789,,,',
  ',ragged,INDIVIDUAL,Too,1990-01-01,1 St,A,B,1,US,,,,,,,extra',
  ',customer123,INDIVIDUAL,Duplicate In File,1990-01-15,1 St,A,B,1,US,,,,,,',
].join('\r\n');

describe('POST /customers/bulk/csv', () => {
  it('creates the good rows, reports each bad row with its number and columns, and completes', async () => {
    const p = await ctx.newPlatform();
    const accepted = await upload(p, FILE);
    expect(accepted.statusCode, accepted.body).toBe(202);
    const { jobId, status } = accepted.json() as { jobId: string; status: string };
    expect(status).toBe('PENDING');
    expect(jobId).toMatch(/^Job:[0-9a-f-]{36}$/);
    expect(await job(p, jobId)).toEqual({ id: jobId, status: 'PENDING', progress: { total: 6, processed: 0, successful: 0, failed: 0 }, errors: [] });

    expect(await ctx.jobs.runDue()).toBe(1);
    const done = await job(p, jobId);
    expect(done).toMatchObject({ id: jobId, status: 'COMPLETED', progress: { total: 6, processed: 6, successful: 2, failed: 4 }, completedAt: ctx.clock.now().toISOString() });
    expect(done.errors.map((e) => [e.row, e.correlationId, e.code])).toEqual([
      [3, 'bad-dates', 'INVALID_INPUT'],
      [5, 'biz-no-date', 'INVALID_INPUT'],
      [6, 'ragged', 'INVALID_INPUT'],
      [7, 'customer123', 'CONFLICT'],
    ]);
    expect(done.errors[0]!.details!.errors).toEqual([
      { field: 'email', constraint: { format: 'email' }, message: 'must be a valid email' },
      { field: 'birthDate', constraint: { format: 'date' }, message: 'must be a valid date' },
    ]);
    expect(done.errors[1]!.details!.errors).toEqual([{ field: 'businessIncorporatedOn', message: 'is required' }]);

    const [john] = await customersNamed(p, 'customer123');
    expect(john).toMatchObject({
      customerType: 'INDIVIDUAL',
      fullName: 'John Doe',
      umaAddress: '$john.doe@uma.example.com',
      currencies: ['USD', 'EUR'],
      address: { line1: '123 Main St', city: 'San Francisco', state: 'CA', postalCode: '94105', country: 'US' },
      kycStatus: 'APPROVED',
    });
    const [acme] = await customersNamed(p, 'biz456');
    expect(acme).toMatchObject({ businessInfo: { legalName: 'Acme, Inc.', country: 'US', taxId: '12-3456789', incorporatedOn: '2010-06-01' } });
    expect(await totalCustomers(p)).toBe(2);
    const events = await ctx.handle.db.selectFrom('events').select('type').where('platform_id', '=', p.uuid).where('resource_id', '=', jobId).execute();
    expect(events.map((e) => e.type)).toEqual(['BULK_UPLOAD.COMPLETED']);
  });

  it('uploading the same file again creates no duplicates', async () => {
    const p = await ctx.newPlatform();
    const first = (await upload(p, FILE)).json() as { jobId: string };
    await ctx.jobs.runDue();
    expect((await job(p, first.jobId)).progress.successful).toBe(2);
    const second = (await upload(p, FILE)).json() as { jobId: string };
    await ctx.jobs.runDue();
    const again = await job(p, second.jobId);
    expect(again.progress).toEqual({ total: 6, processed: 6, successful: 0, failed: 6 });
    expect(again.errors.filter((e) => e.code === 'CONFLICT').map((e) => e.correlationId)).toEqual(['customer123', 'biz456', 'customer123']);
    expect(await totalCustomers(p)).toBe(2);
  });

  it('works through a large file in several runs, reporting progress between them', async () => {
    const p = await ctx.newPlatform();
    const rows = Array.from({ length: 520 }, (_, i) => `many-${i},INDIVIDUAL,Person ${i}`);
    const { jobId } = (await upload(p, ['platformCustomerId,customerType,fullName', ...rows].join('\n'))).json() as { jobId: string };
    await ctx.jobs.runDue();
    expect(await job(p, jobId)).toMatchObject({ status: 'PROCESSING', progress: { total: 520, processed: 500, successful: 500, failed: 0 } });
    await ctx.jobs.runDue();
    expect(await job(p, jobId)).toMatchObject({ status: 'COMPLETED', progress: { total: 520, processed: 520, successful: 520, failed: 0 } });
    expect(await totalCustomers(p)).toBe(520);
  }, 120_000);

  it('refuses files it cannot read, naming the problem, and starts no job', async () => {
    const p = await ctx.newPlatform();
    const fieldsOf = (body: { details?: Record<string, unknown> }) => (body.details!.errors as Array<{ field: string }>).map((e) => e.field);
    let body = expectEnvelope(await upload(p, 'customerType,shoeSize,fullName,shoeSize\nINDIVIDUAL,9,A,9'), 400, 'INVALID_INPUT');
    expect(fieldsOf(body)).toEqual(['columns.shoeSize', 'columns.shoeSize']);
    body = expectEnvelope(await upload(p, 'fullName\nA'), 400, 'INVALID_INPUT');
    expect(fieldsOf(body)).toEqual(['columns.customerType']);
    body = expectEnvelope(await upload(p, 'customerType,fullName\n'), 400, 'INVALID_INPUT');
    expect(body.details!.errors).toEqual([{ field: 'file', message: 'has a header but no rows' }]);
    body = expectEnvelope(await upload(p, 'customerType,fullName\nINDIVIDUAL,"unterminated'), 400, 'INVALID_INPUT');
    expect(fieldsOf(body)).toEqual(['file']);
    body = expectEnvelope(await upload(p, 'customerType\nINDIVIDUAL', { type: 'image/png' }), 400, 'INVALID_INPUT');
    expect(fieldsOf(body)).toEqual(['file']);
    body = expectEnvelope(await upload(p, 'customerType\nINDIVIDUAL', { name: 'upload' }), 400, 'INVALID_INPUT');
    expect(fieldsOf(body)).toEqual(['file']);
    body = expectEnvelope(await upload(p, Buffer.from([0x63, 0x75, 0xff, 0xfe, 0x0a])), 400, 'INVALID_INPUT');
    expect(body.details!.errors).toEqual([{ field: 'file', message: 'must be UTF-8 text' }]);
    const big = Buffer.alloc(10 * 1024 * 1024 + 1, 'a');
    body = expectEnvelope(await upload(p, big), 400, 'INVALID_INPUT');
    expect(body.details!.errors).toEqual([{ field: 'file', message: 'must be at most 10 MB' }]);
    const json = await ctx.app.inject({ method: 'POST', url: `${BASE}/customers/bulk/csv`, headers: { authorization: p.auth }, payload: { file: 'x' } });
    expectEnvelope(json, 400, 'INVALID_INPUT');
    expect(await ctx.jobs.runDue()).toBe(0);
    expect(await totalCustomers(p)).toBe(0);
  });

  it('accepts a file just under 10 MB', async () => {
    const p = await ctx.newPlatform();
    const header = 'customerType,fullName,platformCustomerId\n';
    const filler = 'x'.repeat(9 * 1024 * 1024);
    const response = await upload(p, `${header}INDIVIDUAL,"${filler}",big-1\n`);
    expect(response.statusCode).toBe(202);
    await ctx.jobs.runDue();
    const { jobId } = response.json() as { jobId: string };
    expect((await job(p, jobId)).errors).toEqual([
      expect.objectContaining({ row: 2, correlationId: 'big-1', code: 'INVALID_INPUT', details: { errors: [expect.objectContaining({ field: 'fullName', constraint: { maxLength: 255 } })] } }),
    ]);
  });
});

describe('GET /customers/bulk/jobs/{jobId}', () => {
  it("answers 404 BULK_UPLOAD_JOB_NOT_FOUND for unknown ids and another platform's job", async () => {
    const [p1, p2] = [await ctx.newPlatform(), await ctx.newPlatform()];
    const { jobId } = (await upload(p2, 'customerType,fullName\nINDIVIDUAL,A')).json() as { jobId: string };
    for (const id of [jobId, 'Job:019542f5-b3e7-7d02-8000-000000000001']) {
      expectEnvelope(await ctx.app.inject({ method: 'GET', url: `${BASE}/customers/bulk/jobs/${id}`, headers: { authorization: p1.auth } }), 404, 'BULK_UPLOAD_JOB_NOT_FOUND');
    }
    expect((await job(p2, jobId)).status).toBe('PENDING');
    await ctx.jobs.runDue();
  });
});
