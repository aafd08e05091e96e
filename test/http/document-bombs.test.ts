/**
 * Decompression bombs (issue 12 A1): an upload whose content decodes to far more than it weighs
 * is refused quickly, with the bound it breached named, without stalling other requests or
 * growing the process, and nothing is stored.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Semaphore } from '../../src/modules/documents/screening/gate.js';
import { SCREENING_THRESHOLDS } from '../../src/modules/documents/screening/thresholds.js';
import { BoundedWorkerPool } from '../../src/platform/bounded-worker.js';
import { decompressionBombPng, pdfDecompressionBomb, validPdf } from '../helpers/document-files.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { sendDocumentForm, textParts } from '../helpers/multipart.js';

let ctx: TestContext;
let uploadRoot: string;
const logLines: string[] = [];
beforeAll(async () => {
  uploadRoot = await mkdtemp(join(tmpdir(), 'document-bombs-'));
  ctx = await createTestContext({ env: { CORRIDOR_UPLOAD_DIR: uploadRoot }, logLines });
});
afterAll(async () => {
  await ctx.close();
  await rm(uploadRoot, { recursive: true, force: true });
});

let seq = 0;
async function newCustomer(platform: TestPlatform): Promise<string> {
  const response = await ctx.app.inject({
    method: 'POST',
    url: `${BASE}/customers`,
    headers: { authorization: platform.auth },
    payload: { customerType: 'INDIVIDUAL', platformCustomerId: `bomb-${++seq}`, fullName: 'Jane Doe', birthDate: '1990-01-15', nationality: 'US' },
  });
  expect(response.statusCode, response.body).toBe(201);
  return (response.json() as { id: string }).id;
}

function upload(platform: TestPlatform, holder: string, data: Buffer, contentType: string, filename: string) {
  return sendDocumentForm(ctx.app, platform, 'POST', '/documents', [
    ...textParts({ documentHolder: holder, documentType: 'PASSPORT', country: 'US' }),
    { name: 'file', filename, data, contentType },
  ]);
}

async function storedRows() {
  const count = async (table: 'documents' | 'document_files' | 'blobs') =>
    Number((await ctx.handle.db.selectFrom(table).select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n);
  return { documents: await count('documents'), files: await count('document_files'), blobs: await count('blobs') };
}

describe('decompression bombs', () => {
  it('a ~1 MB PDF inflating to ~1 GiB is refused within 2 s while GET /customers keeps answering, in bounded memory', async () => {
    const platform = ctx.platform;
    const holder = await newCustomer(platform);
    const reader = await ctx.newPlatform();
    // A real PDF first: it goes through the same parsing workers (and starts them).
    expect((await upload(platform, holder, await validPdf(), 'application/pdf', 'scan.pdf')).statusCode).toBe(201);

    const bomb = await pdfDecompressionBomb();
    expect(bomb.length).toBeLessThan(1.1 * 1024 * 1024);
    const before = await storedRows();

    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);

    // Another client keeps reading customers for as long as the upload runs.
    let uploading = true;
    const answers: { status: number; ms: number }[] = [];
    const readLoop = (async () => {
      while (uploading) {
        const started = performance.now();
        const response = await ctx.app.inject({ method: 'GET', url: `${BASE}/customers?limit=5`, headers: { authorization: reader.auth } });
        answers.push({ status: response.statusCode, ms: performance.now() - started });
        // A client polling every 20 ms. (Requests from a network client arrive as I/O events; on
        // PGlite an injected request can complete in microtasks alone, so a loop without a pause
        // would starve every other task of the event loop, which no real client can do.)
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();

    const started = performance.now();
    const response = await upload(platform, holder, bomb, 'application/pdf', 'statement.pdf');
    const elapsed = performance.now() - started;
    uploading = false;
    await readLoop;
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);

    const body = expectEnvelope(response, 422, 'DOCUMENT_REJECTED') as unknown as { message: string; precheckErrors: string[]; details: { reason: string } };
    expect(body.precheckErrors).toEqual(['dataNotReadable']);
    expect(body.details.reason).toBe('pdf:decodedTooLarge');
    expect(body.message).toMatch(/decode to more than 4 MiB/);
    expect(elapsed).toBeLessThan(2000);
    expect(await storedRows()).toEqual(before);

    // The event loop was never blocked: the other client was answered throughout — at least once
    // per second (or part of one) of the upload (it polls every 20 ms), each answer within a
    // second. A refusal under a second may leave room for one answer only when the machine is
    // loaded (CI on PostgreSQL once got one).
    expect(answers.length).toBeGreaterThanOrEqual(Math.max(1, Math.ceil(elapsed / 1000)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(1000);
    expect(peak - baseline).toBeLessThan(200 * 1024 * 1024);
  });

  it('production screening refuses the PDF bomb the same way', async () => {
    const platform = await ctx.newPlatform('production');
    const holder = await newCustomer(platform);
    const response = await upload(platform, holder, await pdfDecompressionBomb(), 'application/pdf', 'statement.pdf');
    const body = expectEnvelope(response, 422, 'DOCUMENT_REJECTED') as unknown as { precheckErrors: string[]; details: { reason: string } };
    expect(body.precheckErrors).toEqual(['dataNotReadable']);
    expect(body.details.reason).toBe('pdf:decodedTooLarge');
  });

  it('an image declaring more pixels than the cap is refused before decoding, with the reason', async () => {
    const holder = await newCustomer(ctx.platform);
    const before = await storedRows();
    const response = await upload(ctx.platform, holder, await decompressionBombPng(), 'image/png', 'passport.png');
    const body = expectEnvelope(response, 422, 'DOCUMENT_REJECTED') as unknown as { message: string; precheckErrors: string[]; details: { reason: string } };
    expect(body.precheckErrors).toEqual(['dataNotReadable']);
    expect(body.details.reason).toBe('tooManyPixels');
    expect(body.message).toMatch(/declares more than 120000000 pixels/);
    expect(await storedRows()).toEqual(before);
  });
});

describe('many uploads at once', () => {
  /** Files in the upload spool now (every upload received and not yet answered). */
  async function spooled(): Promise<number> {
    const dirs = await readdir(uploadRoot);
    return (await Promise.all(dirs.map(async (dir) => (await readdir(join(uploadRoot, dir))).length))).reduce((a, b) => a + b, 0);
  }

  async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
    for (let waited = 0; !(await condition()); waited += 10) {
      if (waited > 10_000) throw new Error('condition not reached in 10 s');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  it('a platform flooding the screener is refused with 503 beyond its share of the queue, and another platform still gets in', async () => {
    // Hostile PDFs hold every parsing worker: here the workers are held until the test lets go.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const parse = BoundedWorkerPool.prototype.run;
    const parsing = vi.spyOn(BoundedWorkerPool.prototype, 'run').mockImplementation(async function (this: BoundedWorkerPool<unknown, unknown>, input) {
      await held;
      return parse.call(this, input);
    });
    let gate: Semaphore | undefined;
    /** The platform of each upload the gate let through, in the order it let them. */
    const admissions: string[] = [];
    const admit = Semaphore.prototype.run;
    const gated = vi.spyOn(Semaphore.prototype, 'run').mockImplementation(function (this: Semaphore, task, key) {
      gate = this;
      return admit.call(this, () => {
        admissions.push(key ?? '');
        return task();
      }, key);
    });
    try {
      const flooder = await ctx.newPlatform();
      const other = await ctx.newPlatform();
      const flooderHolder = await newCustomer(flooder);
      const otherHolder = await newCustomer(other);
      const pdf = await validPdf();
      const before = await storedRows();
      const { concurrency, maxWaiting } = SCREENING_THRESHOLDS;
      const share = Math.ceil(maxWaiting / 2);

      const admitted = Array.from({ length: concurrency + share }, () => upload(flooder, flooderHolder, pdf, 'application/pdf', 'statement.pdf'));
      await until(() => gate !== undefined && gate.running === concurrency && gate.queued === share);

      // One more from the same platform: refused at once, with nothing kept, and a warning (not
      // an error: the service chose to refuse) in the operator's log.
      const logged = logLines.length;
      const refused = await Promise.race([
        upload(flooder, flooderHolder, pdf, 'application/pdf', 'statement.pdf'),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the upload beyond the queue was held, not refused')), 3000)),
      ]);
      const body = expectEnvelope(refused, 503, 'SERVICE_UNAVAILABLE') as unknown as { message: string; details: { reason: string } };
      expect(body.details.reason).toBe('SCREENING_QUEUE_FULL');
      expect(body.message).toMatch(/try again/i);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused.headers['x-should-retry']).toBe('true');
      const warnings = logLines.slice(logged).map((line) => JSON.parse(line) as { level: number; msg: string }).filter((line) => line.level >= 40);
      expect(warnings.map((line) => [line.level, line.msg])).toEqual([[40, 'request refused']]);
      expect(await spooled()).toBe(concurrency + share);

      // Another platform's upload still finds room in the queue, and is taken in turn with the
      // flooder's backlog rather than behind all of it.
      const otherUpload = upload(other, otherHolder, pdf, 'application/pdf', 'passport.pdf');
      await until(() => gate!.queued === share + 1);

      release();
      const answers = await Promise.all(admitted);
      expect(answers.map((a) => a.statusCode)).toEqual(admitted.map(() => 201));
      expect((await otherUpload).statusCode).toBe(201);
      // Let through right after the flooder's next one (the platforms' turns alternate), not
      // behind its whole backlog (it would be the last, concurrency + share + 1).
      expect(admissions.indexOf(other.uuid)).toBe(concurrency + 1);
      const after = await storedRows();
      expect(after.documents - before.documents).toBe(concurrency + share + 1);
      expect(await spooled()).toBe(0);
    } finally {
      release();
      parsing.mockRestore();
      gated.mockRestore();
    }
  }, 90_000);
});
