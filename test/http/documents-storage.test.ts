import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseBlobStore, type LocalFile } from '../../src/platform/blob-store.js';
import type { Tx } from '../../src/platform/db/database.js';
import { cardPhotoJpeg, grayscaleJpeg } from '../helpers/document-files.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { HAS_FULL_DISK, sendDocumentForm, spoolToFullDisk, textParts } from '../helpers/multipart.js';

type Body = Record<string, unknown>;

async function newCustomer(ctx: TestContext, platform: TestPlatform, ref: string): Promise<string> {
  const response = await ctx.app.inject({
    method: 'POST',
    url: `${BASE}/customers`,
    headers: { authorization: platform.auth },
    payload: { customerType: 'INDIVIDUAL', platformCustomerId: ref, fullName: 'Jane Doe' },
  });
  expect(response.statusCode, response.body).toBe(201);
  return (response.json() as Body).id as string;
}

async function uploadCard(ctx: TestContext, platform: TestPlatform, holder: string, data: Buffer, fileName = 'passport.jpg') {
  return sendDocumentForm(ctx.app, platform, 'POST', '/documents', [
    ...textParts({ documentHolder: holder, documentType: 'PASSPORT', country: 'US', documentNumber: 'X1' }),
    { name: 'file', filename: fileName, contentType: 'image/jpeg', data },
  ]);
}

async function storedRows(ctx: TestContext) {
  const count = async (table: 'documents' | 'document_files' | 'blobs' | 'blob_chunks') =>
    Number((await ctx.handle.db.selectFrom(table).select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n);
  return { documents: await count('documents'), files: await count('document_files'), blobs: await count('blobs'), chunks: await count('blob_chunks') };
}

describe('a failure in the middle of storing a file', () => {
  /** Writes the chunks, then fails as a crashed disk or process would, before the commit. */
  class FailingBlobStore extends DatabaseBlobStore {
    override async put(trx: Tx, file: LocalFile): Promise<void> {
      await super.put(trx, file);
      const written = await trx.selectFrom('blob_chunks').select('seq').where('sha256', '=', file.sha256).execute();
      expect(written.length).toBeGreaterThan(0);
      throw new Error('storage went away mid-upload');
    }
  }

  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext({ blobStore: new FailingBlobStore(() => new Date()) });
  });
  afterAll(() => ctx.close());

  it('leaves no document, no file row and no bytes', async () => {
    const holder = await newCustomer(ctx, ctx.platform, 'crash-1');
    const before = await storedRows(ctx);
    const response = await uploadCard(ctx, ctx.platform, holder, await cardPhotoJpeg());
    expectEnvelope(response, 500, 'INTERNAL_ERROR');
    expect(await storedRows(ctx)).toEqual(before);
    expect(before).toEqual({ documents: 0, files: 0, blobs: 0, chunks: 0 });
  });
});

describe('a full spool disk', () => {
  let ctx: TestContext;
  let uploadRoot: string;
  const logLines: string[] = [];
  beforeAll(async () => {
    uploadRoot = await mkdtemp(join(tmpdir(), 'documents-disk-full-'));
    ctx = await createTestContext({ env: { CORRIDOR_UPLOAD_DIR: uploadRoot }, logLines });
  });
  afterAll(async () => {
    await ctx.close();
    await rm(uploadRoot, { recursive: true, force: true });
  });

  // /dev/full answers every write with ENOSPC, as a disk with no room left does. The spool file
  // is a link to it (removing the link leaves the device alone).
  it.skipIf(!HAS_FULL_DISK)('refuses the upload with a retryable 503, leaves nothing behind and tells the operator', async () => {
    const holder = await newCustomer(ctx, ctx.platform, 'disk-full-1');
    const before = await storedRows(ctx);
    const spoolTo = spoolToFullDisk();
    let response;
    try {
      response = await uploadCard(ctx, ctx.platform, holder, await cardPhotoJpeg());
    } finally {
      spoolTo.mockRestore();
    }
    const body = expectEnvelope(response, 503, 'SERVICE_UNAVAILABLE') as unknown as { message: string; details: { reason: string } };
    expect(body.details.reason).toBe('STORAGE_FULL');
    expect(body.message).toMatch(/try again later/);
    expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
    expect(response.headers['x-should-retry']).toBe('true');
    expect(await storedRows(ctx)).toEqual(before);
    const [spoolDir] = await readdir(uploadRoot);
    expect(await readdir(join(uploadRoot, spoolDir!))).toEqual([]);
    // One operator line per refusal, with the disk's own error (the platform's; neither the module
    // nor the error handler adds another).
    const logged = logLines.map((line) => JSON.parse(line) as { level: number; msg: string; err?: { code?: string } });
    expect(logged.filter((line) => line.level >= 40).map((line) => [line.level, line.msg, line.err?.code])).toEqual([
      [50, 'upload refused: the upload spool disk is full', 'ENOSPC'],
    ]);

    // With room again, the same upload is stored.
    expect((await uploadCard(ctx, ctx.platform, holder, await cardPhotoJpeg())).statusCode).toBe(201);
  });
});

describe('an external screening provider', () => {
  let provider: Server;
  let received: { headers: IncomingMessage['headers']; body: Body }[] = [];
  let answer: { status: number; body: string; delayMs?: number } = { status: 200, body: '{"precheckErrors":[]}' };
  let ctx: TestContext;
  let production: TestPlatform;
  let holder: string;

  beforeAll(async () => {
    provider = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (c: Buffer) => chunks.push(c));
      request.on('end', () => {
        received.push({ headers: request.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Body });
        setTimeout(() => {
          response.writeHead(answer.status, { 'content-type': 'application/json' });
          response.end(answer.body);
        }, answer.delayMs ?? 0);
      });
    });
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
    const { port } = provider.address() as AddressInfo;
    ctx = await createTestContext({
      env: { CORRIDOR_SCREENING_URL: `http://127.0.0.1:${port}/screen`, CORRIDOR_SCREENING_TOKEN: 'vendor-secret', CORRIDOR_SCREENING_TIMEOUT_MS: '500' },
    });
    production = await ctx.newPlatform('production');
    holder = await newCustomer(ctx, production, 'ext-1');
  });
  afterAll(async () => {
    await ctx.close();
    await new Promise((resolve) => provider.close(resolve));
  });

  it('receives the file and its metadata under the documented JSON contract', async () => {
    received = [];
    answer = { status: 200, body: '{"precheckErrors":[]}' };
    const data = await cardPhotoJpeg();
    const response = await uploadCard(ctx, production, holder, data, 'front.jpg');
    expect(response.statusCode, response.body).toBe(201);
    expect(received).toHaveLength(1);
    const [{ headers, body }] = received as [{ headers: IncomingMessage['headers']; body: Body }];
    expect(headers.authorization).toBe('Bearer vendor-secret');
    expect(headers['content-type']).toBe('application/json');
    expect(body).toEqual({
      contentType: 'image/jpeg',
      sizeBytes: data.length,
      sha256: createHash('sha256').update(data).digest('hex'),
      fileName: 'front.jpg',
      documentType: 'PASSPORT',
      country: 'US',
      documentNumber: 'X1',
      content: data.toString('base64'),
    });
  });

  it('receives the side and the issuing authority too, when the upload names them', async () => {
    received = [];
    answer = { status: 200, body: '{"precheckErrors":[]}' };
    const data = await cardPhotoJpeg();
    const response = await sendDocumentForm(ctx.app, production, 'POST', '/documents', [
      ...textParts({ documentHolder: holder, documentType: 'DRIVERS_LICENSE', side: 'FRONT', country: 'US', issuingAuthority: 'Illinois SOS' }),
      { name: 'file', filename: 'licence-front.jpg', contentType: 'image/jpeg', data },
    ]);
    expect(response.statusCode, response.body).toBe(201);
    expect(received).toHaveLength(1);
    const { content: _content, ...described } = received[0]!.body;
    expect(described).toEqual({
      contentType: 'image/jpeg',
      sizeBytes: data.length,
      sha256: createHash('sha256').update(data).digest('hex'),
      fileName: 'licence-front.jpg',
      documentType: 'DRIVERS_LICENSE',
      side: 'FRONT',
      country: 'US',
      issuingAuthority: 'Illinois SOS',
    });
  });

  it('passes its precheck errors through verbatim and stores nothing', async () => {
    answer = { status: 200, body: '{"precheckErrors":["documentExpired","vendorSpecificFinding"]}' };
    const before = await storedRows(ctx);
    const response = await uploadCard(ctx, production, holder, await cardPhotoJpeg());
    expect(expectEnvelope(response, 422, 'DOCUMENT_REJECTED')).toMatchObject({ precheckErrors: ['documentExpired', 'vendorSpecificFinding'] });
    expect(await storedRows(ctx)).toEqual(before);
  });

  it.each([
    ['fails', { status: 500, body: '{}' }],
    ['answers outside the contract', { status: 200, body: '{"precheckErrors":"no"}' }],
    ['answers something that is not JSON', { status: 200, body: '<html>' }],
    ['answers more than 20 precheck errors', { status: 200, body: JSON.stringify({ precheckErrors: Array.from({ length: 21 }, (_, i) => `finding${i}`) }) }],
    ['answers an empty precheck error', { status: 200, body: '{"precheckErrors":[""]}' }],
    ['answers a precheck error over 100 characters', { status: 200, body: JSON.stringify({ precheckErrors: ['x'.repeat(101)] }) }],
    ['is too slow', { status: 200, body: '{"precheckErrors":[]}', delayMs: 1500 }],
  ])('answers 503 and stores nothing when the provider %s', async (_name, next) => {
    answer = next;
    const before = await storedRows(ctx);
    expectEnvelope(await uploadCard(ctx, production, holder, await cardPhotoJpeg()), 503, 'SERVICE_UNAVAILABLE');
    expect(await storedRows(ctx)).toEqual(before);
  });

  it('is not used for sandbox platforms, which keep the built-in screener', async () => {
    received = [];
    answer = { status: 200, body: '{"precheckErrors":["glare"]}' };
    const sandboxHolder = await newCustomer(ctx, ctx.platform, 'ext-sandbox');
    // Sandbox: the file decodes, so it passes, whatever the provider would have said.
    expect((await uploadCard(ctx, ctx.platform, sandboxHolder, await grayscaleJpeg())).statusCode).toBe(201);
    const truncated = await uploadCard(ctx, ctx.platform, sandboxHolder, (await grayscaleJpeg()).subarray(0, 2000));
    expect(expectEnvelope(truncated, 422, 'DOCUMENT_REJECTED')).toMatchObject({ precheckErrors: ['dataNotReadable'] });
    expect(received).toEqual([]);
  });
});
