/**
 * Hostile and malformed uploads (documents audit): every one is refused with a clear 400 or
 * 422 in the spec's envelope, never a 500 or a hang, stores nothing, and leaves the process
 * answering other requests; an external screening provider cannot make Corridor read an answer
 * of any size. The documented bounds are held at their edges (documents/README.md, spec §8): the
 * longest document number and issuing authority, and a provider's answer of 64 KiB in all with
 * 20 precheck errors of 100 characters.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ANSWER_BYTES } from '../../src/modules/documents/screening/http.js';
import { cardPhotoJpeg, validPdf } from '../helpers/document-files.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { sendDocumentForm, textParts, type Part } from '../helpers/multipart.js';

type FieldErrors = { field: string; constraint?: Record<string, unknown>; message?: string }[];

let seq = 0;
async function newCustomer(ctx: TestContext, platform: TestPlatform): Promise<string> {
  const response = await ctx.app.inject({
    method: 'POST',
    url: `${BASE}/customers`,
    headers: { authorization: platform.auth },
    payload: { customerType: 'INDIVIDUAL', platformCustomerId: `hostile-${++seq}`, fullName: 'Jane Doe', birthDate: '1990-01-15', nationality: 'US' },
  });
  expect(response.statusCode, response.body).toBe(201);
  return (response.json() as { id: string }).id;
}

async function storedRows(ctx: TestContext) {
  const count = async (table: 'documents' | 'document_files' | 'blobs') =>
    Number((await ctx.handle.db.selectFrom(table).select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n);
  return { documents: await count('documents'), files: await count('document_files'), blobs: await count('blobs') };
}

const fileOf = (data: Buffer, filename: string, contentType = 'image/jpeg'): Part => ({ name: 'file', filename, data, contentType });

describe('the parts of an upload', () => {
  let ctx: TestContext;
  let uploadRoot: string;
  let holder: string;
  beforeAll(async () => {
    uploadRoot = await mkdtemp(join(tmpdir(), 'documents-hostile-'));
    ctx = await createTestContext({ env: { CORRIDOR_UPLOAD_DIR: uploadRoot } });
    holder = await newCustomer(ctx, ctx.platform);
  });
  afterAll(async () => {
    await ctx.close();
    await rm(uploadRoot, { recursive: true, force: true });
  });

  const upload = (file: Part, fields: Record<string, string> = {}) =>
    sendDocumentForm(ctx.app, ctx.platform, 'POST', '/documents', [...textParts({ documentHolder: holder, documentType: 'PASSPORT', country: 'US', ...fields }), file]);

  it('refuses an empty file with 400 INVALID_INPUT (an invalid size), on upload and on replace, storing nothing', async () => {
    const before = await storedRows(ctx);
    for (const name of ['passport.jpg', 'passport.precheck-glare.jpg']) {
      const body = expectEnvelope(await upload(fileOf(Buffer.alloc(0), name)), 400, 'INVALID_INPUT');
      expect(body.details!.errors).toEqual([{ field: 'file', message: 'must not be empty' }]);
    }
    expect(await storedRows(ctx)).toEqual(before);

    const created = await upload(fileOf(await cardPhotoJpeg(), 'passport.jpg'));
    expect(created.statusCode, created.body).toBe(201);
    const { id } = created.json() as { id: string };
    const replaced = await sendDocumentForm(ctx.app, ctx.platform, 'PUT', `/documents/${id}`, [
      ...textParts({ documentType: 'PASSPORT', country: 'US' }),
      fileOf(Buffer.alloc(0), 'passport.pdf', 'application/pdf'),
    ]);
    expect((expectEnvelope(replaced, 400, 'INVALID_INPUT').details!.errors as FieldErrors)).toEqual([{ field: 'file', message: 'must not be empty' }]);
  });

  it('takes a document number of 64 characters and an issuing authority of 255, and refuses one more of either, storing nothing', async () => {
    const photo = fileOf(await cardPhotoJpeg(), 'passport.jpg');
    const longest = await upload(photo, { documentNumber: 'N'.repeat(64), issuingAuthority: 'A'.repeat(255) });
    expect(longest.statusCode, longest.body).toBe(201);
    expect(longest.json()).toMatchObject({ documentNumber: 'N'.repeat(64), issuingAuthority: 'A'.repeat(255) });

    const before = await storedRows(ctx);
    const errors = expectEnvelope(await upload(photo, { documentNumber: 'N'.repeat(65), issuingAuthority: 'A'.repeat(256) }), 400, 'INVALID_INPUT').details!.errors as FieldErrors;
    expect(errors.map((e) => [e.field, e.constraint])).toEqual([
      ['documentNumber', { maxLength: 64 }],
      ['issuingAuthority', { maxLength: 255 }],
    ]);
    expect(await storedRows(ctx)).toEqual(before);
  });

  it('refuses a file name with control characters, however they are encoded, storing nothing', async () => {
    const jpeg = await cardPhotoJpeg();
    const before = await storedRows(ctx);
    for (const name of ['pass\u0001port.jpg', 'pass\tport.jpg', 'pass\u001b[31mport.jpg', 'pass\u007fport.jpg', 'pass\u0085port.jpg']) {
      const body = expectEnvelope(await upload(fileOf(jpeg, name)), 400, 'INVALID_INPUT');
      expect(body.details!.errors, JSON.stringify(name)).toEqual([
        { field: 'file', message: 'file name must not contain control characters (U+0000–U+001F, U+007F–U+009F) or an unpaired UTF-16 surrogate' },
      ]);
    }
    expect(await storedRows(ctx)).toEqual(before);
  });

  /** A form whose file part's name holds a line break, RFC 5987-encoded (it cannot stand raw in a header): the parser drops that part. */
  function formWithDroppedFilePart(file: Buffer): { payload: Buffer; contentType: string } {
    const boundary = 'hostile-boundary';
    const text = (name: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
    return {
      contentType: `multipart/form-data; boundary=${boundary}`,
      payload: Buffer.concat([
        Buffer.from(text('documentHolder', holder) + text('documentType', 'PASSPORT') + text('country', 'US')),
        Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename*=UTF-8''pass%0D%0Aport.jpg\r\nContent-Type: image/jpeg\r\n\r\n`),
        file,
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ]),
    };
  }

  it('answers 400 when the multipart parser drops a part and stalls, instead of never answering', async () => {
    const before = await storedRows(ctx);
    // The whole body at once (as a proxy that buffers would send it).
    const whole = formWithDroppedFilePart(await cardPhotoJpeg());
    const injected = await ctx.app.inject({
      method: 'POST',
      url: `${BASE}/documents`,
      headers: { authorization: ctx.platform.auth, 'content-type': whole.contentType },
      payload: whole.payload,
    });
    expect(expectEnvelope(injected, 400, 'INVALID_INPUT').details!.errors).toEqual([
      { field: 'body', message: 'is not well-formed multipart/form-data (a part could not be read)' },
    ]);

    // Over a socket, where the body arrives in pieces: whether the parser stalls depends on where
    // they break (it may stop half way through the body); either way the answer is a 400.
    const address = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const streamed = formWithDroppedFilePart(Buffer.alloc(100_000, 0x41));
      const response = await fetch(`${address}${BASE}/documents`, {
        method: 'POST',
        headers: { authorization: ctx.platform.auth, 'content-type': streamed.contentType },
        body: new Uint8Array(streamed.payload),
        signal: AbortSignal.timeout(20_000),
      });
      expect(response.status).toBe(400);
      const [error] = ((await response.json()) as { details: { errors: FieldErrors } }).details.errors;
      expect([
        { field: 'body', message: 'is not well-formed multipart/form-data (a part could not be read)' },
        { field: 'file', message: 'is required' },
      ]).toContainEqual(error);
    } finally {
      await ctx.app.server.close();
    }
    expect(await storedRows(ctx)).toEqual(before);
  });

  it('keeps only the last segment of a name with path separators, and counts a name in characters', async () => {
    const jpeg = await cardPhotoJpeg();
    const traversal = await upload(fileOf(jpeg, '../../etc/passport.jpg'));
    expect(traversal.statusCode, traversal.body).toBe(201);
    expect((traversal.json() as { fileName: string }).fileName).toBe('passport.jpg');
    const windows = await upload(fileOf(jpeg, 'C:\\scans\\passport.jpg'));
    expect((windows.json() as { fileName: string }).fileName).toBe('passport.jpg');
    expect(expectEnvelope(await upload(fileOf(jpeg, 'scans/..')), 400, 'INVALID_INPUT').details!.errors).toEqual([
      { field: 'file', message: 'needs a file name (the filename of its Content-Disposition)' },
    ]);

    // 255 characters outside the BMP (510 UTF-16 code units) are 255 characters.
    const longest = `${'📄'.repeat(251)}.jpg`;
    const accepted = await upload(fileOf(jpeg, longest));
    expect(accepted.statusCode, accepted.body).toBe(201);
    expect((accepted.json() as { fileName: string }).fileName).toBe(longest);
    expect(expectEnvelope(await upload(fileOf(jpeg, `📄${longest}`)), 400, 'INVALID_INPUT').details!.errors).toEqual([
      { field: 'file', message: 'file name must be at most 255 characters' },
    ]);
  });

  /** A minimal one-page PDF (classic xref) with `extra` objects after its page. */
  function pdfWith(extra: string[]): Buffer {
    const objects = ['<< /Type /Catalog /Pages 2 0 R >>', '<< /Type /Pages /Kids [3 0 R] /Count 1 >>', '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>', ...extra];
    let body = '%PDF-1.7\n';
    const offsets = objects.map((object, i) => {
      const at = body.length;
      body += `${i + 1} 0 obj\n${object}\nendobj\n`;
      return at;
    });
    const xref = ['xref', `0 ${objects.length + 1}`, '0000000000 65535 f ', ...offsets.map((at) => `${String(at).padStart(10, '0')} 00000 n `)];
    return Buffer.from(`${body}${xref.join('\n')}\ntrailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${body.length}\n%%EOF\n`, 'latin1');
  }

  it('refuses hostile PDFs with 422 dataNotReadable, without a 500 or a hang, while /healthz keeps answering', async () => {
    const valid = await validPdf();
    const hostile: [string, Buffer][] = [
      ['200,000 nested arrays', pdfWith(['['.repeat(200_000) + ']'.repeat(200_000)])],
      ['100,000 nested dictionaries', pdfWith(['<< /A '.repeat(100_000) + '>>'.repeat(100_000)])],
      ['500,000 arrays never closed', pdfWith(['['.repeat(500_000)])],
      ['an xref section declaring a billion entries', Buffer.from('%PDF-1.7\nxref\n0 999999999\n0000000000 65535 f \ntrailer\n<< /Root 1 0 R >>\nstartxref\n9\n%%EOF\n', 'latin1')],
      ['an object stream declaring 99,999,999 objects', pdfWith(['<< /Type /ObjStm /N 99999999 /First 1 /Length 10 >>\nstream\n0 0 1 2 3 \nendstream'])],
      ['a page tree that is its own kid', Buffer.from(pdfWith([]).toString('latin1').replace('/Kids [3 0 R]', '/Kids [2 0 R]'), 'latin1')],
      ['a truncated file', valid.subarray(0, Math.floor(valid.length / 2))],
      ['a JPEG behind a PDF header', Buffer.concat([Buffer.from('%PDF-1.7\n'), await cardPhotoJpeg()])],
    ];
    const before = await storedRows(ctx);
    for (const [name, data] of hostile) {
      let uploading = true;
      let healthAnswers = 0;
      const healthLoop = (async () => {
        while (uploading) {
          const health = await ctx.app.inject({ method: 'GET', url: '/healthz' });
          if (health.statusCode === 200) healthAnswers++;
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      })();
      const response = await upload(fileOf(data, 'statement.pdf', 'application/pdf'), { documentType: 'BANK_STATEMENT' });
      uploading = false;
      await healthLoop;
      const body = expectEnvelope(response, 422, 'DOCUMENT_REJECTED') as unknown as { precheckErrors: string[] };
      expect(body.precheckErrors, name).toEqual(['dataNotReadable']);
      expect(healthAnswers, name).toBeGreaterThanOrEqual(1);
    }
    expect(await storedRows(ctx)).toEqual(before);
    // The parsing workers survived all of it.
    const fine = await upload(fileOf(valid, 'statement.pdf', 'application/pdf'), { documentType: 'BANK_STATEMENT' });
    expect(fine.statusCode, fine.body).toBe(201);
  });
});

describe('a replace and a delete of one document at once', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  it('end with the document deleted and the replace either done first (200) or refused (404), never a 500 or a stray file', async () => {
    const holder = await newCustomer(ctx, ctx.platform);
    const jpeg = await cardPhotoJpeg();
    // Delays spread the DELETE over the replace's screening and storing, so both orders occur.
    for (const delayMs of [0, 20, 40, 60, 80, 100]) {
      const created = await sendDocumentForm(ctx.app, ctx.platform, 'POST', '/documents', [
        ...textParts({ documentHolder: holder, documentType: 'PASSPORT', country: 'US' }),
        fileOf(await validPdf(), 'passport.pdf', 'application/pdf'),
      ]);
      expect(created.statusCode, created.body).toBe(201);
      const { id } = created.json() as { id: string };
      const [replaced, deleted] = await Promise.all([
        sendDocumentForm(ctx.app, ctx.platform, 'PUT', `/documents/${id}`, [...textParts({ documentType: 'PASSPORT', country: 'US' }), fileOf(jpeg, 'passport.jpg')]),
        new Promise((resolve) => setTimeout(resolve, delayMs)).then(() =>
          ctx.app.inject({ method: 'DELETE', url: `${BASE}/documents/${id}`, headers: { authorization: ctx.platform.auth } }),
        ),
      ]);
      expect(deleted.statusCode, deleted.body).toBe(204);
      if (replaced.statusCode !== 200) expectEnvelope(replaced, 404, 'REFERENCE_NOT_FOUND');
      expectEnvelope(await ctx.app.inject({ method: 'GET', url: `${BASE}/documents/${id}`, headers: { authorization: ctx.platform.auth } }), 404, 'REFERENCE_NOT_FOUND');
    }
    expect(await storedRows(ctx)).toEqual({ documents: 0, files: 0, blobs: 0 });
  });
});

describe("an external screening provider's answer", () => {
  let provider: Server;
  /** What the provider does with the next request: `givenAnswer` answers `answer`. */
  let behaviour: 'hugeAnswer' | 'stalledAnswer' | 'givenAnswer' = 'hugeAnswer';
  let answer = '';
  let written = 0;
  let closedEarly = false;
  const HUGE = 64 * 1024 * 1024;
  let ctx: TestContext;
  let production: TestPlatform;
  let holder: string;

  beforeAll(async () => {
    provider = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(200, { 'content-type': 'application/json' });
        if (behaviour === 'givenAnswer') return void response.end(answer);
        if (behaviour === 'stalledAnswer') {
          // The head and the start of a body, then nothing more.
          response.write('{"precheckErrors":');
          return;
        }
        // A valid answer padded past any sane size; written with backpressure, so it stops when Corridor stops reading.
        written = 0;
        closedEarly = false;
        const head = '{"precheckErrors":["glare"],"padding":"';
        response.write(head);
        written += head.length;
        const chunk = 'a'.repeat(1024 * 1024);
        response.on('close', () => (closedEarly = written < HUGE));
        const pump = () => {
          while (written < HUGE) {
            written += chunk.length;
            if (!response.write(chunk)) return void response.once('drain', pump);
          }
          response.end('"}');
        };
        pump();
      });
    });
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
    const { port } = provider.address() as AddressInfo;
    ctx = await createTestContext({ env: { CORRIDOR_SCREENING_URL: `http://127.0.0.1:${port}/screen`, CORRIDOR_SCREENING_TIMEOUT_MS: '1500' } });
    production = await ctx.newPlatform('production');
    holder = await newCustomer(ctx, production);
  });
  afterAll(async () => {
    await ctx.close();
    provider.closeAllConnections();
    await new Promise((resolve) => provider.close(resolve));
  });

  const upload = async () =>
    sendDocumentForm(ctx.app, production, 'POST', '/documents', [
      ...textParts({ documentHolder: holder, documentType: 'PASSPORT', country: 'US' }),
      fileOf(await cardPhotoJpeg(), 'passport.jpg'),
    ]);

  it(`is read up to ${MAX_ANSWER_BYTES} bytes: a larger one is 503, refused without reading the rest, storing nothing`, async () => {
    behaviour = 'hugeAnswer';
    const before = await storedRows(ctx);
    const body = expectEnvelope(await upload(), 503, 'SERVICE_UNAVAILABLE');
    expect(body.message).toContain(`the answer is larger than ${MAX_ANSWER_BYTES} bytes`);
    expect(await storedRows(ctx)).toEqual(before);
    await expect.poll(() => closedEarly).toBe(true);
    expect(written).toBeLessThan(HUGE);
  });

  /** A contract-following answer padded with an ignored field to exactly `bytes` bytes. */
  function paddedAnswer(errors: string[], bytes: number): string {
    const bare = JSON.stringify({ precheckErrors: errors, padding: '' });
    const padded = JSON.stringify({ precheckErrors: errors, padding: 'p'.repeat(bytes - Buffer.byteLength(bare)) });
    expect(Buffer.byteLength(padded)).toBe(bytes);
    return padded;
  }

  // The bound is written out, not MAX_ANSWER_BYTES, so a changed bound fails rather than follows.
  it('is read whole up to 64 KiB; one byte more is 503 and stores nothing', async () => {
    behaviour = 'givenAnswer';
    answer = paddedAnswer(['glare'], 64 * 1024);
    expect(expectEnvelope(await upload(), 422, 'DOCUMENT_REJECTED')).toMatchObject({ precheckErrors: ['glare'] });

    answer = paddedAnswer(['glare'], 64 * 1024 + 1);
    const before = await storedRows(ctx);
    expect(expectEnvelope(await upload(), 503, 'SERVICE_UNAVAILABLE').message).toContain('the answer is larger than 65536 bytes');
    expect(await storedRows(ctx)).toEqual(before);
  });

  it('passes 20 precheck errors of up to 100 characters through verbatim', async () => {
    behaviour = 'givenAnswer';
    const errors = Array.from({ length: 20 }, (_, i) => `${String(i).padStart(2, '0')}${'e'.repeat(98)}`);
    expect(errors.every((e) => e.length === 100)).toBe(true);
    answer = JSON.stringify({ precheckErrors: errors });
    const before = await storedRows(ctx);
    expect(expectEnvelope(await upload(), 422, 'DOCUMENT_REJECTED')).toMatchObject({ precheckErrors: errors });
    expect(await storedRows(ctx)).toEqual(before);
  });

  it('must arrive whole within the timeout: a body that stalls is 503', async () => {
    behaviour = 'stalledAnswer';
    const body = expectEnvelope(await upload(), 503, 'SERVICE_UNAVAILABLE');
    expect(body.message).toContain('the answer did not arrive within the deadline');
  });
});
