import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { HAS_FULL_DISK, spoolToFullDisk } from '../helpers/multipart.js';

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
    expect(acme).toMatchObject({ businessInfo: { legalName: 'Acme, Inc.', country: 'US', incorporatedOn: '2010-06-01' } });
    expect(await totalCustomers(p)).toBe(2);
    const events = await ctx.handle.db.selectFrom('events').select('type').where('platform_id', '=', p.uuid).where('resource_id', '=', jobId).execute();
    expect(events.map((e) => e.type)).toEqual(['BULK_UPLOAD.COMPLETED']);
  });

  it('with embedded wallets enabled, opens a wallet per imported customer with an e-mail: its EMAIL_OTP credential, and its secret from one job for the batch', async () => {
    const p = await ctx.newPlatform();
    const configured = await ctx.app.inject({ method: 'PATCH', url: `${BASE}/config`, headers: { authorization: p.auth }, payload: { embeddedWalletConfig: { appName: 'Bulk' } } });
    expect(configured.statusCode, configured.body).toBe(200);
    const rows = Array.from({ length: 30 }, (_, i) => `wallet-${i},INDIVIDUAL,Wallet Owner ${i},owner${i}@example.com`);
    const accepted = await upload(p, ['platformCustomerId,customerType,fullName,email', ...rows, 'no-mail,INDIVIDUAL,No Mail,'].join('\n'));
    expect(accepted.statusCode, accepted.body).toBe(202);
    // The import, then the one job that makes the batch's wallet secrets.
    while ((await ctx.jobs.runDue()) > 0);
    expect((await job(p, (accepted.json() as { jobId: string }).jobId)).progress).toMatchObject({ successful: 31, failed: 0 });

    const platformUuid = p.id.slice('Platform:'.length);
    const wallets = await ctx.handle.db
      .selectFrom('internal_accounts as a')
      .innerJoin('customers as c', 'c.id', 'a.customer_id')
      .leftJoin('auth_credentials as k', 'k.account_id', 'a.id')
      .select(['a.id', 'c.email', 'k.type', 'k.nickname'])
      .where('a.platform_id', '=', platformUuid)
      .where('a.type', '=', 'EMBEDDED_WALLET')
      .execute();
    expect(wallets).toHaveLength(30);
    for (const wallet of wallets) expect(wallet).toMatchObject({ type: 'EMAIL_OTP', nickname: wallet.email });
    const secretJobs = await ctx.handle.db.selectFrom('jobs').select(['status']).where('platform_id', '=', platformUuid).where('kind', '=', 'wallet.create-secret').execute();
    expect(secretJobs).toEqual([{ status: 'done' }]);
    const sealed = await ctx.handle.db.selectFrom('wallets').select('account_id').where('platform_id', '=', platformUuid).execute();
    expect(sealed.map((w) => w.account_id).sort()).toEqual(wallets.map((w) => w.id).sort());
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

  it('with an Idempotency-Key, the same file again answers the first job and imports nothing twice; another file under the key is 409', async () => {
    const p = await ctx.newPlatform();
    // Rows without a platformCustomerId: only the key stops a retried upload from creating them twice.
    const file = [
      'customerType,fullName,birthDate,addressLine1,city,state,postalCode,country',
      'INDIVIDUAL,Ann Key,1990-01-01,1 Main St,Austin,TX,78701,US',
      'INDIVIDUAL,Bob Key,1991-02-02,2 Main St,Austin,TX,78701,US',
    ].join('\n');
    const keyed = (content: string) => {
      const { payload, headers } = multipart(content);
      return ctx.app.inject({ method: 'POST', url: `${BASE}/customers/bulk/csv`, headers: { authorization: p.auth, 'idempotency-key': 'import-once', ...headers }, payload });
    };
    const first = await keyed(file);
    expect(first.statusCode, first.body).toBe(202);
    const again = await keyed(file);
    expect(again.statusCode, again.body).toBe(202);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    expectEnvelope(await keyed(`${file}\nINDIVIDUAL,Cy Key,1992-03-03,3 Main St,Austin,TX,78701,US`), 409, 'CONFLICT');
    while ((await ctx.jobs.runDue()) > 0);
    expect(await totalCustomers(p)).toBe(2);
  });

  it('refuses a second part beside the file, starting no job', async () => {
    const p = await ctx.newPlatform();
    const boundary = '----corridor-test-boundary';
    const part = (name: string, content: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="customers.csv"\r\nContent-Type: text/csv\r\n\r\n${content}\r\n`;
    const file = 'customerType,fullName,birthDate,country\nINDIVIDUAL,Two Parts,1990-01-01,US';
    for (const second of [part('file', file), part('other', file), `--${boundary}\r\nContent-Disposition: form-data; name="note"\r\n\r\nhello\r\n`]) {
      const response = await ctx.app.inject({
        method: 'POST',
        url: `${BASE}/customers/bulk/csv`,
        headers: { authorization: p.auth, 'content-type': `multipart/form-data; boundary=${boundary}` },
        payload: `${part('file', file)}${second}--${boundary}--\r\n`,
      });
      const body = expectEnvelope(response, 400, 'INVALID_INPUT');
      expect(body.details!.errors).toEqual([{ field: 'file', message: 'must be the only part of the upload (one file, no other parts)' }]);
    }
    expect(await ctx.jobs.runDue()).toBe(0);
    expect(await totalCustomers(p)).toBe(0);
  });

  it('answers 400 when the multipart parser drops the file part and stalls, instead of never answering', async () => {
    const p = await ctx.newPlatform();
    const boundary = '----corridor-test-boundary';
    // A line break in the file name (RFC 5987) makes busboy drop the part; 100 KB of it left it paused for good.
    const payload = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename*=UTF-8''a%0D%0Ab.csv\r\nContent-Type: text/csv\r\n\r\n`),
      Buffer.alloc(100_000, 0x41),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const response = await ctx.app.inject({
      method: 'POST',
      url: `${BASE}/customers/bulk/csv`,
      headers: { authorization: p.auth, 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload,
    });
    expect(expectEnvelope(response, 400, 'INVALID_INPUT').details!.errors).toEqual([{ field: 'body', message: 'is not well-formed multipart/form-data (a part could not be read)' }]);
    expect(await ctx.jobs.runDue()).toBe(0);
  }, 30_000);

  it('imports in batches, and a job that died resumes after the last committed batch', async () => {
    const p = await ctx.newPlatform();
    const rows = Array.from({ length: 250 }, (_, i) => `many-${i},INDIVIDUAL,Person ${i}`);
    const { jobId } = (await upload(p, ['platformCustomerId,customerType,fullName', ...rows].join('\n'))).json() as { jobId: string };
    const uuid = jobId.slice('Job:'.length);
    // As a worker leaves a job when it dies after committing two batches of 100 rows.
    await ctx.handle.db.updateTable('customer_import_jobs').set({ processed: 200, successful: 200, status: 'PROCESSING' }).where('id', '=', uuid).execute();
    await ctx.handle.db.updateTable('jobs').set({ status: 'running', attempts: 1, locked_until: new Date(ctx.clock.now().getTime() - 1) }).where('kind', '=', 'customers.bulk-import').where('platform_id', '=', p.uuid).execute();
    expect(await ctx.jobs.runDue()).toBe(1);
    expect(await job(p, jobId)).toMatchObject({ status: 'COMPLETED', progress: { total: 250, processed: 250, successful: 250, failed: 0 } });
    // Only the 50 rows after the checkpoint were created by this run.
    expect(await totalCustomers(p)).toBe(50);
    expect(await customersNamed(p, 'many-199')).toEqual([]);
    expect(await customersNamed(p, 'many-200')).toHaveLength(1);
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
    // UTF-8, but with U+0000, which the stored file cannot hold (was 500).
    body = expectEnvelope(await upload(p, 'customerType,fullName\nINDIVIDUAL,Ann\u0000Lee'), 400, 'INVALID_INPUT');
    expect(body.details!.errors).toEqual([{ field: 'file', message: 'must not contain U+0000' }]);
    // Names of Object.prototype members are unknown columns (were accepted, then failed the job).
    body = expectEnvelope(await upload(p, 'customerType,constructor,__proto__,toString\nINDIVIDUAL,a,b,c'), 400, 'INVALID_INPUT');
    expect(fieldsOf(body)).toEqual(['columns.constructor', 'columns.__proto__', 'columns.toString']);
    const big = Buffer.alloc(10 * 1024 * 1024 + 1, 'a');
    body = expectEnvelope(await upload(p, big), 400, 'INVALID_INPUT');
    expect(body.details!.errors).toEqual([{ field: 'file', message: 'must be at most 10 MB' }]);
    const json = await ctx.app.inject({ method: 'POST', url: `${BASE}/customers/bulk/csv`, headers: { authorization: p.auth }, payload: { file: 'x' } });
    expectEnvelope(json, 400, 'INVALID_INPUT');
    // A multipart Content-Type without its boundary (busboy throws a plain Error, not an FST_ code).
    const noBoundary = await ctx.app.inject({ method: 'POST', url: `${BASE}/customers/bulk/csv`, headers: { authorization: p.auth, 'content-type': 'multipart/form-data' }, payload: '{}' });
    body = expectEnvelope(noBoundary, 400, 'INVALID_INPUT');
    expect(body.details!.errors).toEqual([{ field: 'body', message: 'is not well-formed multipart/form-data' }]);
    expect(await ctx.jobs.runDue()).toBe(0);
    expect(await totalCustomers(p)).toBe(0);
  });

  it('accepts a file just under 10 MB, and bounds records, columns and rows', async () => {
    const p = await ctx.newPlatform();
    const header = 'customerType,fullName,platformCustomerId\n';
    const row = (i: number) => `INDIVIDUAL,${'x'.repeat(160)},big-${i}\n`;
    const count = Math.floor((10 * 1024 * 1024 - header.length - 300) / row(99999).length);
    const big = header + Array.from({ length: count }, (_, i) => row(i)).join('');
    const accepted = await upload(p, big);
    expect(accepted.statusCode, accepted.body).toBe(202);
    expect((await job(p, (accepted.json() as { jobId: string }).jobId)).progress.total).toBe(count);

    let body = expectEnvelope(await upload(p, `${header}INDIVIDUAL,"${'x'.repeat(70_000)}",long-1\n`), 400, 'INVALID_INPUT');
    expect(body.details!.errors).toEqual([{ field: 'file', message: 'has a record longer than 65536 characters at line 2' }]);
    const wide = Array.from({ length: 101 }, (_, i) => (i === 0 ? 'customerType' : `c${i}`)).join(',');
    body = expectEnvelope(await upload(p, `${wide}\nINDIVIDUAL\n`), 400, 'INVALID_INPUT');
    expect(body.details!.errors).toEqual([{ field: 'file', message: 'has 101 columns; at most 100 are read' }]);
    body = expectEnvelope(await upload(p, `customerType\n${'INDIVIDUAL\n'.repeat(100_001)}`), 400, 'INVALID_INPUT');
    expect(body.details!.errors).toEqual([{ field: 'file', message: 'has more than 100000 rows; split it into several files' }]);
    expect((await upload(p, `customerType\n${'INDIVIDUAL\n'.repeat(100_000)}`)).statusCode).toBe(202);
    // Not run: the big files above are about reading, not creating.
    await ctx.handle.db.deleteFrom('jobs').where('platform_id', '=', p.uuid).execute();
  }, 120_000);

  it('refuses a data row with more cells than the column cap at upload, however empty its cells', async () => {
    const p = await ctx.newPlatform();
    const started = Date.now();
    const body = expectEnvelope(await upload(p, `customerType,fullName\r\nINDIVIDUAL,${','.repeat(200_000)}\r\n`), 400, 'INVALID_INPUT');
    expect(body.details!.errors).toEqual([{ field: 'file', message: 'has a record of 200002 cells at line 2; at most 100 are read' }]);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await ctx.jobs.runDue()).toBe(0);
    expect(await totalCustomers(p)).toBe(0);
    // 100 cells is within the cap: the row reaches the job, which judges it against the header.
    expect((await upload(p, `customerType,fullName\nINDIVIDUAL,${','.repeat(98)}\n`)).statusCode).toBe(202);
  });

  it('fails a row with fewer or more cells than the header, naming its row and line', async () => {
    const p = await ctx.newPlatform();
    const file = [
      'platformCustomerId,customerType,purposeOfAccount,purposeOfAccountOtherDescription',
      'ok-1,INDIVIDUAL,OTHER,"Payouts',
      'by line"',
      '',
      'short-1,INDIVIDUAL',
      'long-1,INDIVIDUAL,,,extra',
      'ok-2,INDIVIDUAL,,',
    ].join('\n');
    const { jobId } = (await upload(p, file)).json() as { jobId: string };
    await ctx.jobs.runDue();
    const done = await job(p, jobId);
    expect(done.progress).toEqual({ total: 4, processed: 4, successful: 2, failed: 2 });
    expect(done.errors).toEqual([
      {
        row: 3,
        line: 5,
        correlationId: 'short-1',
        code: 'INVALID_INPUT',
        message: 'Row 3 (line 5) has fewer cells than the header.',
        details: { errors: [{ field: 'file', message: 'row 3 (line 5) has 2 cells; the header has 4' }] },
      },
      {
        row: 4,
        line: 6,
        correlationId: 'long-1',
        code: 'INVALID_INPUT',
        message: 'Row 4 (line 6) has more cells than the header.',
        details: { errors: [{ field: 'file', message: 'row 4 (line 6) has 5 cells; the header has 4' }] },
      },
    ]);
    expect((await customersNamed(p, 'ok-1'))[0]).toMatchObject({ purposeOfAccountOtherDescription: 'Payouts\nby line' });
  });

  it('skips a row of only commas or spaces like a blank line; the rows after it keep the row and line they have in the file', async () => {
    const p = await ctx.newPlatform();
    const file = [
      'platformCustomerId,customerType,fullName',
      'blank-ok-1,INDIVIDUAL,First',
      ',,',
      '',
      ' , ,\t',
      '"",""," "',
      'blank-bad,SOMEONE,Second',
      'blank-ok-2,INDIVIDUAL,Third',
      ',,,',
    ].join('\r\n');
    const accepted = await upload(p, file);
    expect(accepted.statusCode, accepted.body).toBe(202);
    await ctx.jobs.runDue();
    const done = await job(p, (accepted.json() as { jobId: string }).jobId);
    expect(done.progress).toEqual({ total: 3, processed: 3, successful: 2, failed: 1 });
    expect(done.errors).toMatchObject([{ row: 3, line: 7, correlationId: 'blank-bad', code: 'INVALID_INPUT', details: { errors: [{ field: 'customerType' }] } }]);

    // A file whose rows are all empty has no rows, as one of blank lines has none.
    const empty = expectEnvelope(await upload(p, 'customerType,fullName\n,\n ,  \n\n'), 400, 'INVALID_INPUT');
    expect(empty.details!.errors).toEqual([{ field: 'file', message: 'has a header but no rows' }]);
  });

  it('stores formula-like cells as given, and neutralises them in every report it writes back', async () => {
    const p = await ctx.newPlatform();
    const hostile = ['=HYPERLINK("http://evil.example","x")', '+1+2', '-3+4', '@SUM(A1)', '\tTAB', '\rCR'];
    const file = [
      'platformCustomerId,customerType,fullName,birthDate',
      ...hostile.map((v, i) => `"${v.replace(/"/g, '""')}",INDIVIDUAL,"${i === 0 ? v.replace(/"/g, '""') : 'Name'}",${i === 0 ? '1990-01-01' : 'not-a-date'}`),
    ].join('\n');
    const { jobId } = (await upload(p, file)).json() as { jobId: string };
    await ctx.jobs.runDue();
    const [stored] = await customersNamed(p, encodeURIComponent(hostile[0]!));
    expect(stored).toMatchObject({ platformCustomerId: hostile[0], fullName: hostile[0] });
    const done = await job(p, jobId);
    // Cells are trimmed, so a leading tab or CR never reaches the report; the others are prefixed with '.
    const reported = hostile.slice(1).map((v) => (/^[\t\r]/.test(v) ? v.trim() : `'${v}`));
    expect(done.errors.map((e) => e.correlationId)).toEqual(reported);

    const response = await ctx.app.inject({ method: 'GET', url: `${BASE}/customers/bulk/jobs/${jobId}/errors`, headers: { authorization: p.auth } });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/csv; charset=utf-8');
    const lines = response.body.split('\r\n');
    expect(lines[0]).toBe('"row","line","correlationId","code","field","message"');
    const { parse } = await import('csv-parse/sync');
    const records = parse(response.body, { columns: true }) as Array<Record<string, string>>;
    expect(records.map((r) => [r.row, r.correlationId, r.field])).toEqual(reported.map((v, i) => [String(i + 3), v, 'birthDate']));
    for (const record of records) expect(Object.values(record).every((cell) => !/^[=+\-@\t\r]/.test(cell))).toBe(true);
    expect(await ctx.app.inject({ method: 'GET', url: `${BASE}/customers/bulk/jobs/${jobId}/errors`, headers: { authorization: (await ctx.newPlatform()).auth } })).toMatchObject({ statusCode: 404 });
  });

  it('accepts the columns of the upstream template, and every business field as business<Field>', async () => {
    const p = await ctx.newPlatform();
    const file = [
      'umaAddress,platformCustomerId,customerType,fullName,birthDate,addressLine1,city,state,postalCode,country,platformAccountId,description,email,' +
        'businessLegalName,businessRegistrationNumber,businessTaxId,businessDoingBusinessAs,businessIncorporatedOn,businessEntityType,businessType,' +
        'businessNaicsCode,businessCountriesOfOperation,businessPurposeOfAccount,businessSourceOfFundsCategories,businessPrimaryContactFirstName',
      'acme@uma.example.com,biz-1,BUSINESS,,,400 Commerce Way,Austin,TX,78701,US,acc-9,Our biggest client,,Acme Corp,5523041,47-1234567,Acme,2018-03-14,LLC,' +
        'RETAIL_TRADE,4541,US;CA,SUPPLIER_PAYMENTS,OPERATING_REVENUE;LOANS,Ada',
    ].join('\n');
    const { jobId } = (await upload(p, file)).json() as { jobId: string };
    await ctx.jobs.runDue();
    expect(await job(p, jobId)).toMatchObject({ status: 'COMPLETED', progress: { successful: 1, failed: 0 } });
    const [acme] = await customersNamed(p, 'biz-1');
    expect(acme).toMatchObject({
      umaAddress: '$acme@uma.example.com',
      address: { line1: '400 Commerce Way', city: 'Austin', state: 'TX', postalCode: '78701', country: 'US' },
      businessInfo: {
        legalName: 'Acme Corp',
        registrationNumber: '5523041',
        doingBusinessAs: 'Acme',
        country: 'US',
        incorporatedOn: '2018-03-14',
        entityType: 'LLC',
        businessType: 'RETAIL_TRADE',
        naicsCode: '4541',
        countriesOfOperation: ['US', 'CA'],
        purposeOfAccount: 'SUPPLIER_PAYMENTS',
        sourceOfFundsCategories: ['OPERATING_REVENUE', 'LOANS'],
        primaryContactFirstName: 'Ada',
      },
    });
  });

  it('ends FAILED with BULK_UPLOAD.FAILED when no row could be created, or when the job gives up', async () => {
    const p = await ctx.newPlatform();
    const events = async (id: string) => (await ctx.handle.db.selectFrom('events').select(['type', 'data']).where('resource_id', '=', id).execute());
    const allBad = (await upload(p, `customerType,fullName\nMARTIAN,A\nINDIVIDUAL,${'x'.repeat(300)}`)).json() as { jobId: string };
    await ctx.jobs.runDue();
    const failed = await job(p, allBad.jobId);
    expect(failed).toMatchObject({ status: 'FAILED', progress: { total: 2, processed: 2, successful: 0, failed: 2 }, completedAt: expect.any(String) });
    expect(await events(allBad.jobId)).toEqual([{ type: 'BULK_UPLOAD.FAILED', data: failed }]);

    // A job that fails on every attempt (here: its stored file was damaged) ends FAILED instead of staying PROCESSING.
    const damaged = (await upload(p, 'customerType,fullName\nINDIVIDUAL,A')).json() as { jobId: string };
    await ctx.handle.db.updateTable('customer_import_jobs').set({ csv: 'customerType\n"never closed' }).where('id', '=', damaged.jobId.slice(4)).execute();
    await ctx.handle.db.updateTable('jobs').set({ max_attempts: 1 }).where('platform_id', '=', p.uuid).where('status', '=', 'queued').execute();
    await ctx.jobs.runDue();
    const gaveUp = await job(p, damaged.jobId);
    expect(gaveUp).toMatchObject({
      status: 'FAILED',
      progress: { total: 1, processed: 0 },
      errors: [{ correlationId: damaged.jobId, code: 'INTERNAL_ERROR', message: expect.stringContaining('stopped after 0 of 1 rows') }],
    });
    expect((await events(damaged.jobId)).map((e) => e.type)).toEqual(['BULK_UPLOAD.FAILED']);

    const good = (await upload(p, 'customerType,fullName\nINDIVIDUAL,A')).json() as { jobId: string };
    await ctx.jobs.runDue();
    expect((await events(good.jobId)).map((e) => e.type)).toEqual(['BULK_UPLOAD.COMPLETED']);
  });
});

describe('POST /customers/bulk/csv on a full upload spool disk', () => {
  // The file (at most 10 MB, stored as text in the database) is read into memory and never
  // spooled, so a spool disk with no room (the documents' 503 STORAGE_FULL) does not refuse it.
  // /dev/full answers every write with ENOSPC; a spool file linked to it would fail.
  it.skipIf(!HAS_FULL_DISK)('is accepted without touching the spool', async () => {
    const p = await ctx.newPlatform();
    const spoolTo = spoolToFullDisk();
    let accepted;
    try {
      accepted = await upload(p, 'customerType,fullName\nINDIVIDUAL,Spool Free');
      expect(spoolTo).not.toHaveBeenCalled();
    } finally {
      spoolTo.mockRestore();
    }
    expect(accepted.statusCode, accepted.body).toBe(202);
    await ctx.jobs.runDue();
    expect(await job(p, (accepted.json() as { jobId: string }).jobId)).toMatchObject({ status: 'COMPLETED', progress: { successful: 1 } });
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
