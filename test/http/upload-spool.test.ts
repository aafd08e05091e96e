import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import multipart from '@fastify/multipart';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AppError } from '../../src/platform/errors.js';
import { receiveForm, UploadSpool } from '../../src/platform/http/multipart.js';
import { HAS_FULL_DISK, multipartBody, spoolToFullDisk, type Part } from '../helpers/multipart.js';

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

describe('receiveForm on a spool over its disk quota', () => {
  it('is the same 503 STORAGE_FULL when the spool’s user is over its disk quota (EDQUOT)', async () => {
    const root = await mkdtemp(join(tmpdir(), 'upload-spool-quota-'));
    const spool = await UploadSpool.open(root);
    const app = Fastify({ loggerInstance: pino({ level: 'silent' }) as FastifyBaseLogger });
    try {
      await app.register(multipart);
      app.post('/spool', async (request) => {
        // The file part's bytes fail as a write to a disk over its user's quota fails.
        const overQuota = Object.assign(new Error('EDQUOT: disk quota exceeded, write'), { code: 'EDQUOT', errno: -122, syscall: 'write' });
        const file = Object.assign(new Readable({ read() { this.destroy(overQuota); } }), { truncated: false });
        request.parts = (() => (async function* () {
          yield { type: 'file', fieldname: 'file', filename: 'a.bin', mimetype: 'application/octet-stream', file };
        })()) as unknown as typeof request.parts;
        try {
          await receiveForm(request, spool, { maxFileBytes: 1024, maxFiles: 1, maxFields: 1, maxFieldBytes: 64 });
          return { received: true };
        } catch (error) {
          if (error instanceof AppError) return { code: error.code, status: error.status, details: error.details };
          return { unmapped: (error as { code?: string }).code };
        }
      });
      const { payload, headers } = multipartBody([{ name: 'file', filename: 'a.bin', data: Buffer.alloc(64, 1) }]);
      expect((await app.inject({ method: 'POST', url: '/spool', headers, payload })).json()).toEqual({ code: 'SERVICE_UNAVAILABLE', status: 503, details: { reason: 'STORAGE_FULL' } });
    } finally {
      await app.close();
      await spool.close();
      await rm(root, { recursive: true, force: true });
    }
  });
});

/** What receiveForm makes of a form's parts, with small limits: the rules every route that spools uploads has. */
describe('receiveForm’s parts', () => {
  let root: string;
  let spool: UploadSpool;
  let app: FastifyInstance;
  const LIMITS = { maxFileBytes: 16, maxFiles: 1, maxFields: 2, maxFieldBytes: 8 };

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'upload-parts-'));
    spool = await UploadSpool.open(root);
    app = Fastify({ loggerInstance: pino({ level: 'silent' }) as FastifyBaseLogger });
    await app.register(multipart);
    app.post('/form', async (request) => {
      try {
        const form = await receiveForm(request, spool, LIMITS);
        await form.discard();
        return { fields: form.fields, problems: form.problems, files: form.files.map(({ field, fileName, contentType, sizeBytes, tooLarge }) => ({ field, fileName, contentType, sizeBytes, tooLarge })) };
      } catch (error) {
        if (error instanceof AppError) return { code: error.code, status: error.status, details: error.details };
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

  const send = async (parts: Part[]) => {
    const { payload, headers } = multipartBody(parts);
    return (await app.inject({ method: 'POST', url: '/form', headers, payload })).json() as Record<string, unknown>;
  };

  it('keeps the first of a text part sent twice and reports it; reports a text part over its limit and keeps none of it', async () => {
    expect(await send([{ name: 'a', value: 'one' }, { name: 'a', value: 'two' }])).toEqual({
      fields: { a: 'one' },
      problems: [{ field: 'a', message: 'is sent more than once' }],
      files: [],
    });
    expect(await send([{ name: 'b', value: '12345678' }, { name: 'c', value: '123456789' }])).toEqual({
      fields: { b: '12345678' },
      problems: [{ field: 'c', message: 'must be at most 8 bytes' }],
      files: [],
    });
  });

  it('gives a file its part’s Content-Type lower-cased without parameters, and marks one over the limit too large, kept to the limit', async () => {
    expect(await send([{ name: 'file', filename: 'a.csv', contentType: ' Text/CSV ; charset=UTF-8', data: Buffer.alloc(17, 0x61) }])).toEqual({
      fields: {},
      problems: [],
      files: [{ field: 'file', fileName: 'a.csv', contentType: 'text/csv', sizeBytes: 16, tooLarge: true }],
    });
  });

  it('refuses more file parts or text parts than the limits, naming the limit, and leaves nothing in the spool', async () => {
    const file = (name: string): Part => ({ name, filename: `${name}.bin`, data: Buffer.alloc(8, 1) });
    expect(await send([file('file'), file('other')])).toEqual({
      code: 'INVALID_INPUT', status: 400, details: { errors: [{ field: 'file', message: 'at most 1 file part(s) may be sent' }] },
    });
    const tooMany = { code: 'INVALID_INPUT', status: 400, details: { errors: [{ field: 'body', message: 'at most 2 text parts may be sent' }] } };
    expect(await send([{ name: 'a', value: '1' }, { name: 'b', value: '2' }, { name: 'c', value: '3' }])).toEqual(tooMany);
    expect(await send([file('file'), { name: 'a', value: '1' }, { name: 'b', value: '2' }, { name: 'c', value: '3' }])).toEqual(tooMany);
    expect(await readdir(spool.dir)).toEqual([]);
  });

  it('leaves a system error (the spool directory gone) a system error, not a 400 about the body', async () => {
    const gone = await UploadSpool.open(root);
    await gone.close();
    const spoolTo = vi.spyOn(UploadSpool.prototype, 'newPath').mockImplementation(() => join(gone.dir, 'x'));
    try {
      expect(await send([{ name: 'file', filename: 'a.bin', data: Buffer.alloc(8, 1) }])).toEqual({ unmapped: 'ENOENT' });
    } finally {
      spoolTo.mockRestore();
    }
  });
});
