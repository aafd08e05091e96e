import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { HttpProviderConfig } from '../../../config.js';
import { AppError } from '../../../platform/errors.js';
import { postToProvider, readProviderAnswer } from '../../../platform/provider-http.js';
import type { DocumentScreener, ScreeningSubject } from './screener.js';

/** Limits on what a provider may answer, so a broken vendor cannot fill our error envelope. */
const MAX_ERRORS = 20;
const MAX_ERROR_LENGTH = 100;
/**
 * Most bytes of an answer read: a contract-following one (20 errors of 100 characters, at most
 * 4 UTF-8 bytes each, plus framing) is under 10 KiB; the margin admits fields we ignore. A
 * longer one is refused unread, so a broken vendor cannot fill the process's memory.
 */
export const MAX_ANSWER_BYTES = 64 * 1024;

/** Multiple of 3, so each base64 chunk stands alone and the chunks concatenate into one value. */
const READ_BYTES = 3 * 64 * 1024;

/**
 * The request body, streamed: the file is base64-encoded piece by piece as it is read, so a
 * 10 MB upload never sits in memory whole. The JSON contract is in docs/document-screening.md.
 */
async function* requestBody(subject: ScreeningSubject): AsyncIterable<Buffer> {
  const { filePath: _path, platformId: _platform, ...described } = subject;
  const head = JSON.stringify({ ...described, content: '' });
  // `content` is the last key; its value is written between the two halves.
  yield Buffer.from(head.slice(0, -2));
  for await (const chunk of createReadStream(subject.filePath, { highWaterMark: READ_BYTES }) as AsyncIterable<Buffer>) {
    yield Buffer.from(chunk.toString('base64'));
  }
  yield Buffer.from('"}');
}

function unavailable(reason: string): AppError {
  return new AppError('SERVICE_UNAVAILABLE', `The document screening provider could not screen the file (${reason}); nothing was stored. Retry later.`);
}

/**
 * An external screening vendor over HTTP: one POST per file, answered with the precheck errors
 * it found. Its answers pass through verbatim; a provider that fails, answers outside the
 * contract or more than `MAX_ANSWER_BYTES`, or not within the timeout (the whole answer, body
 * included) is 503 SERVICE_UNAVAILABLE, and the upload stores nothing.
 */
export class HttpScreener implements DocumentScreener {
  constructor(private readonly options: HttpProviderConfig & { url: string }) {}

  async screen(subject: ScreeningSubject): Promise<string[]> {
    const stream = Readable.toWeb(Readable.from(requestBody(subject))) as ReadableStream<Uint8Array>;
    const response = await postToProvider(this.options, stream, unavailable);
    const text = await readProviderAnswer(response, MAX_ANSWER_BYTES, unavailable);
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      throw unavailable('the answer is not JSON');
    }
    const errors = (answer as { precheckErrors?: unknown } | null)?.precheckErrors;
    const valid =
      Array.isArray(errors) &&
      errors.length <= MAX_ERRORS &&
      errors.every((e) => typeof e === 'string' && e.length > 0 && e.length <= MAX_ERROR_LENGTH);
    if (!valid) throw unavailable('the answer does not follow the contract');
    return errors as string[];
  }
}
