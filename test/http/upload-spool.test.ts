import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import multipart from '@fastify/multipart';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/platform/errors.js';
import { receiveForm, UploadSpool } from '../../src/platform/http/multipart.js';
import { HAS_FULL_DISK, spoolToFullDisk } from '../helpers/multipart.js';

/**
 * platform/http/multipart.ts `receiveForm` for a route of no particular module: what it answers
 * holds for every route that spools uploads, not only the documents module's.
 */
describe('receiveForm on a full spool disk', () => {
  let root: string;
  let spool: UploadSpool;
  let app: FastifyInstance;
  const logLines: string[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'upload-spool-'));
    spool = await UploadSpool.open(root);
    app = Fastify({ loggerInstance: pino({ level: 'info' }, { write: (line: string) => logLines.push(line) }) as FastifyBaseLogger });
    await app.register(multipart);
    app.post('/spool', async (request) => {
      try {
        const form = await receiveForm(request, spool, { maxFileBytes: 1024, maxFiles: 1, maxFields: 1, maxFieldBytes: 64 });
        await form.discard();
        return { received: form.files.map((f) => f.sizeBytes) };
      } catch (error) {
        // What the shared error handler would turn into the envelope, as the route saw it.
        if (error instanceof AppError) return { code: error.code, status: error.status, headers: error.headers, details: error.details };
        return { unmapped: (error as { code?: string }).code };
      }
    });
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    await spool.close();
    await rm(root, { recursive: true, force: true });
  });

  const send = () => {
    const boundary = 'spool-test';
    const payload = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\nContent-Type: application/octet-stream\r\n\r\n${'x'.repeat(512)}\r\n--${boundary}--\r\n`;
    return app.inject({ method: 'POST', url: '/spool', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, payload });
  };

  // /dev/full answers every write with ENOSPC, as a disk with no room left does.
  it.skipIf(!HAS_FULL_DISK)('is a retryable 503 STORAGE_FULL with Retry-After, leaves nothing in the spool and logs once at error level', async () => {
    const spoolTo = spoolToFullDisk();
    let response;
    try {
      response = await send();
    } finally {
      spoolTo.mockRestore();
    }
    expect(response.json()).toEqual({ code: 'SERVICE_UNAVAILABLE', status: 503, headers: { 'retry-after': '60' }, details: { reason: 'STORAGE_FULL' } });
    expect(await readdir(spool.dir)).toEqual([]);
    const logged = logLines.map((line) => JSON.parse(line) as { level: number; msg: string; spoolDir?: string; err?: { code?: string } });
    expect(logged.filter((line) => line.level >= 50).map((line) => [line.msg, line.err?.code, line.spoolDir])).toEqual([
      ['upload refused: the upload spool disk is full', 'ENOSPC', spool.dir],
    ]);

    // With room again, the same body is received.
    expect((await send()).json()).toEqual({ received: [512] });
  });
});
