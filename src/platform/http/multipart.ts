import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyMultipartBaseOptions } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import type { LocalFile } from '../blob-store.js';
import { AppError, invalidInput } from '../errors.js';
import { unstorableText } from './text-input.js';

/**
 * A private directory for uploads in flight. Files are streamed here (never held whole in
 * memory), each removed when its request ends; the directory goes when the app closes.
 */
export class UploadSpool {
  private constructor(readonly dir: string) {}

  static async open(parent: string = tmpdir()): Promise<UploadSpool> {
    return new UploadSpool(await mkdtemp(join(parent, 'corridor-uploads-')));
  }

  newPath(): string {
    return join(this.dir, randomUUID());
  }

  async close(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** A file part, already on disk with its digest. Its bytes stop at the size limit (`tooLarge`). */
export interface FormFile extends LocalFile {
  field: string;
  fileName: string;
  /** The part's own Content-Type, lower-cased, without parameters. */
  contentType: string;
  tooLarge: boolean;
}

export interface ReceivedForm {
  /** Text parts by name; a name sent twice is reported in `problems`. */
  fields: Record<string, string>;
  files: FormFile[];
  /** Structural problems with individual parts (repeated, too long), as field errors. */
  problems: { field: string; message: string }[];
  /** Removes the spooled files; call when the request is done with them. */
  discard(): Promise<void>;
}

export interface FormLimits {
  maxFileBytes: number;
  maxFiles: number;
  maxFields: number;
  maxFieldBytes: number;
}

/**
 * Control characters (Unicode Cc) in a file name: no real file is named so, and one kept would
 * reach logs, review screens and any Content-Disposition built from it (a line break, an escape
 * sequence). Path separators need no rule: the parser keeps only the name's last segment.
 */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

function measuring(onChunk: (chunk: Buffer) => void): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      onChunk(chunk);
      done(null, chunk);
    },
  });
}

/** Errors of a disk with no room left (the device, or the user's quota). */
const DISK_FULL: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT']);

/** Seconds a caller refused for a full spool disk is told to wait: an operator has to free space. */
const DISK_FULL_RETRY_AFTER_SECONDS = 60;

/**
 * Reads a multipart/form-data body, spooling each file part to disk while hashing it. Anything
 * that is not well-formed multipart within the limits is 400 INVALID_INPUT (never 406/413), so
 * callers see the same envelope as for any other bad input. A spool disk with no room is a
 * retryable 503 (`spoolFull`), for every route that spools.
 */
export async function receiveForm(request: FastifyRequest, spool: UploadSpool, limits: FormLimits): Promise<ReceivedForm> {
  const files: FormFile[] = [];
  const discard = async () => {
    await Promise.all(files.map((f) => rm(f.path, { force: true })));
  };
  if (!request.isMultipart()) {
    throw invalidInput([{ field: 'body', message: 'must be multipart/form-data' }], 'The request body must be multipart/form-data.');
  }
  const fields: Record<string, string> = {};
  const problems: ReceivedForm['problems'] = [];
  try {
    // The plugin honours throwFileSizeLimit per call, though its types only declare it for file():
    // an oversized file is marked `truncated` and reported with the other fields, not thrown as 413.
    const options: FastifyMultipartBaseOptions = {
      limits: { fileSize: limits.maxFileBytes, files: limits.maxFiles, fields: limits.maxFields, fieldSize: limits.maxFieldBytes, parts: limits.maxFiles + limits.maxFields },
      throwFileSizeLimit: false,
    };
    for await (const part of guardedParts(request, options)) {
      if (part.type === 'field') {
        if (part.fieldname in fields) problems.push({ field: part.fieldname, message: 'is sent more than once' });
        else if (part.valueTruncated) problems.push({ field: part.fieldname, message: `must be at most ${limits.maxFieldBytes} bytes` });
        else {
          const value = String(part.value);
          const unstorable = unstorableText(value, part.fieldname);
          if (unstorable.length > 0) problems.push(...unstorable.map((e) => ({ field: e.field, message: e.message! })));
          else fields[part.fieldname] = value;
        }
        continue;
      }
      const hash = createHash('sha256');
      const file: FormFile = {
        field: part.fieldname,
        fileName: part.filename,
        contentType: part.mimetype.split(';')[0]!.trim().toLowerCase(),
        path: spool.newPath(),
        sha256: '',
        sizeBytes: 0,
        tooLarge: false,
      };
      files.push(file);
      if (CONTROL_CHARACTER.test(part.filename) || unstorableText(part.filename).length > 0) {
        problems.push({ field: part.fieldname, message: 'file name must not contain control characters (U+0000–U+001F, U+007F–U+009F) or an unpaired UTF-16 surrogate' });
      }
      await pipeline(
        part.file,
        measuring((chunk) => {
          hash.update(chunk);
          file.sizeBytes += chunk.length;
        }),
        createWriteStream(file.path),
      );
      file.sha256 = hash.digest('hex');
      file.tooLarge = part.file.truncated;
    }
  } catch (error) {
    await discard();
    if (isDiskFull(error)) throw spoolFull(request, spool, error);
    throw malformed(error, limits);
  }
  return { fields, files, problems, discard };
}

function isDiskFull(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && DISK_FULL.has(code);
}

/**
 * A full spool disk as 503 SERVICE_UNAVAILABLE with Retry-After rather than a 500: the caller's
 * request was fine and may succeed once space is freed. What was spooled is already removed. The
 * operator is told here, at error level with the disk's own error and the spool directory, since
 * every upload fails until space is freed; the refusal the caller gets names no path.
 */
function spoolFull(request: FastifyRequest, spool: UploadSpool, error: unknown): AppError {
  request.log.error({ err: error, spoolDir: spool.dir }, 'upload refused: the upload spool disk is full');
  return new AppError('SERVICE_UNAVAILABLE', 'The file could not be received: there is no room to hold it now. Nothing was stored; try again later.', {
    headers: { 'retry-after': String(DISK_FULL_RETRY_AFTER_SECONDS) },
    details: { reason: 'STORAGE_FULL' },
    log: 'none',
  });
}

/**
 * How long the parser may hold back its next part while it has every byte it needs: the whole
 * body has arrived, or it has stopped reading the body (backpressure) while nothing of ours
 * reads a part. Parsing what it holds takes microseconds; the margin is for a busy event loop.
 */
const STALL_GRACE_MS = 2000;
const STALL_CHECK_MS = 100;

/**
 * `request.parts(options)`, every multipart route's way to read its parts: each part as the
 * parser gives it, or a 400 once the parser stalls (`nextPart`).
 */
export async function* guardedParts(request: FastifyRequest, options: FastifyMultipartBaseOptions) {
  const parts = request.parts(options)[Symbol.asyncIterator]();
  for (;;) {
    const next = await nextPart(request.raw, parts);
    if (next.done) return;
    yield next.value;
  }
}

/**
 * The parser's next part, or a 400 when it stalls. busboy (@fastify/busboy 3.2) drops a part
 * without a form-data Content-Disposition, or whose name or file name holds a line break (RFC
 * 5987 `filename*=UTF-8''a%0Ab`), and after a text part such a dropped part of more than a few
 * kilobytes can leave it paused for good: it neither reads on nor finishes, so the request would
 * never be answered and its connection would stay open. Between parts nothing of ours is
 * reading, so a parser that is not reading the body either, for `STALL_GRACE_MS`, is stuck on
 * what it was sent.
 */
function nextPart<T>(raw: FastifyRequest['raw'], parts: AsyncIterator<T>): Promise<IteratorResult<T>> {
  return new Promise((resolve, reject) => {
    let stalledMs = 0;
    const watch = setInterval(() => {
      stalledMs = raw.readableEnded || raw.readableFlowing === false ? stalledMs + STALL_CHECK_MS : 0;
      if (stalledMs >= STALL_GRACE_MS) {
        clearInterval(watch);
        // Let the rest of the body drain to nowhere, so the connection can carry the answer and the next request.
        raw.unpipe();
        raw.resume();
        reject(invalidInput([{ field: 'body', message: 'is not well-formed multipart/form-data (a part could not be read)' }], 'The multipart body could not be read.'));
      }
    }, STALL_CHECK_MS);
    parts.next().then(
      (result) => {
        clearInterval(watch);
        resolve(result);
      },
      (error: unknown) => {
        clearInterval(watch);
        reject(error);
      },
    );
  });
}

function malformed(error: unknown, limits: FormLimits): unknown {
  if (error instanceof AppError) return error;
  const code = (error as { code?: string }).code;
  if (code === 'FST_FILES_LIMIT') return invalidInput([{ field: 'file', message: `at most ${limits.maxFiles} file part(s) may be sent` }]);
  if (code === 'FST_FIELDS_LIMIT' || code === 'FST_PARTS_LIMIT') {
    return invalidInput([{ field: 'body', message: `at most ${limits.maxFields} text parts may be sent` }]);
  }
  return notWellFormed(error);
}

/**
 * The multipart parser's complaint about a body (the plugin's FST_ codes, busboy's plain errors
 * such as a Content-Type without a boundary) as 400 INVALID_INPUT; system errors are returned as
 * they are and stay 500s (a full spool disk is `receiveForm`'s 503 before this). For every
 * reader of multipart bodies.
 */
export function notWellFormed(error: unknown): unknown {
  const code = (error as { code?: string }).code;
  if (code?.startsWith('FST_') || (error instanceof Error && !('syscall' in error))) {
    return invalidInput([{ field: 'body', message: 'is not well-formed multipart/form-data' }], 'The multipart body could not be read.');
  }
  return error;
}
