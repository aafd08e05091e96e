import { pino, stdSerializers, type Logger } from 'pino';
import { isDataException, withoutRefusedValue } from './platform/refused-value.js';

const FLUSH_EVERY_MS = 250;
const BATCH = 32 * 1024;

/**
 * The most log text, in bytes, held for standard output while it does not take it (a stalled log
 * shipper, a full pipe, a paused terminal). sonic-boom's own limit (`maxLength`) is off by default:
 * its backlog grew for as long as the reader stalled, until the process ran out of memory. Past
 * this cap a batch of lines is dropped, counted (`droppedLogLines`, /metrics) and told in one line
 * once the backlog has been written.
 */
export const LOG_BUFFER_BYTES = 4 * 1024 * 1024;

let droppedLines = 0;

/** Log lines dropped since the process started because standard output did not take them (/metrics). */
export function droppedLogLines(): number {
  return droppedLines;
}

function lineCount(text: string): number {
  let count = 0;
  for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) count++;
  return count;
}

/**
 * Collects log lines and hands them to the destination a batch at a time. Given every line,
 * sonic-boom appends it to its pending string and measures that whole string's UTF-8 length
 * again (flattening it, up to 64 KiB) — on a point read 5–6 % of the CPU; here each line is only
 * pushed to an array. The destination still writes and flushes as before (`flush` waits for its
 * writes to finish), so no line is held longer than the 250 ms flush or lost at exit.
 */
class LineBatch {
  private lines: string[] = [];
  /** UTF-16 code units: never more than the lines' bytes, so a handed-over batch is at least BATCH bytes. */
  private units = 0;

  constructor(private readonly destination: { write(text: string): boolean; flush(cb?: (error?: Error) => void): void }) {}

  write(line: string): boolean {
    this.lines.push(line);
    this.units += line.length;
    if (this.units >= BATCH) this.handOver();
    return true;
  }

  flush(cb?: (error?: Error) => void): void {
    this.handOver();
    this.destination.flush(cb);
  }

  /** Answers the lines not yet handed over, and forgets them. */
  take(): string {
    const text = this.lines.join('');
    this.lines = [];
    this.units = 0;
    return text;
  }

  private handOver(): void {
    if (this.lines.length > 0) this.destination.write(this.take());
  }
}

/**
 * Writes what is still pending at exit without the event loop. Handed to the asynchronous
 * destination, a batch of at least 32 KiB would start a write in the thread pool whose EAGAIN
 * retry (stdout is a non-blocking pipe once anything touches process.stdout, and a slow reader
 * fills it) is a timer that never runs: the last lines were lost. A synchronous destination on the
 * same descriptor waits and retries instead. pino's own exit hook flushes sonic-boom's pending
 * lines first; flushing again here keeps the order whichever hook runs first.
 */
function writeAtExit(sonic: ReturnType<typeof pino.destination>, text: string): void {
  try {
    sonic.flushSync();
    if (text) pino.destination({ dest: 1, sync: true }).write(text);
  } catch {
    // A destination that cannot take the lines now (closed, broken pipe) loses them.
  }
}

/**
 * The fields of an error that are logged: what says what failed and where. An error's other fields
 * can hold what a caller sent, and logs go where customers' data may not: PGlite's `query` and
 * `params` (a statement's bound values: names, e-mails, addresses, tax ids), PostgreSQL's
 * `detail` ("Key (email)=(…) already exists", "Failing row contains (…)") and `where`, Node's HTTP
 * parser's `rawPacket` (the request's bytes, its Authorization header included). `details` is an
 * AppError's, written for the caller.
 */
const LOGGED_ERROR_FIELDS = ['type', 'message', 'stack', 'code', 'errno', 'syscall', 'reason', 'severity', 'routine', 'schema', 'table', 'column', 'constraint', 'dataType', 'statusCode', 'details'] as const;

/**
 * A data exception's refused value (refused-value.ts) is censored in the message and in the stack,
 * which starts with it.
 */
function censorRefusedValue(kept: Record<string, unknown>): void {
  const { message, stack } = kept;
  if (typeof message !== 'string') return;
  const censored = withoutRefusedValue(message);
  if (censored === message) return;
  kept.message = censored;
  if (typeof stack === 'string') kept.stack = stack.split(message).join(censored);
}

function loggedFields(serialized: Record<string, unknown>): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const field of LOGGED_ERROR_FIELDS) if (serialized[field] !== undefined) kept[field] = serialized[field];
  if (isDataException(kept)) censorRefusedValue(kept);
  const aggregated = serialized.aggregateErrors;
  if (Array.isArray(aggregated)) kept.aggregateErrors = aggregated.map((inner) => loggedFields(inner as Record<string, unknown>));
  return kept;
}

/** Pino's `err` serializer (message and stack with their causes), keeping only LOGGED_ERROR_FIELDS. */
export function errorForLog(error: unknown): unknown {
  const serialized: unknown = stdSerializers.err(error as Error);
  return serialized === error || typeof serialized !== 'object' || serialized === null ? serialized : loggedFields(serialized as Record<string, unknown>);
}

/**
 * Headers that carry credentials: API tokens' Basic credentials and wallet signatures (spec §5)
 * coming in, webhook signatures going out.
 */
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'service-wallet-signature', 'grid-wallet-signature', 'x-service-signature', 'x-grid-signature'];

/**
 * Fields whose values must never reach a log line, should a line ever carry them: credentials
 * (API token secrets, webhook signatures and wallet signatures), one-time codes and the bundles
 * that carry them, session and private keys, wallet mnemonics, and identifiers kept sealed at
 * rest (account numbers, IBANs, tax ids). Named in full, no wildcards: a fixed path costs a
 * property read per line, a wildcard a walk of the object.
 */
const SECRET_FIELDS = [
  'clientSecret',
  'secret',
  'otp',
  'otpCode',
  'encryptedOtpBundle',
  'otpEncryptionTargetBundle',
  'encryptedSessionSigningKey',
  'sessionSigningKey',
  'privateKey',
  'mnemonic',
  'accountNumber',
  'iban',
  'taxId',
];

const REDACTED_PATHS = [
  ...CREDENTIAL_HEADERS.flatMap((name) => [`req.headers["${name}"]`, `headers["${name}"]`]),
  ...SECRET_FIELDS,
  // A request's or an answer's body as a whole: bodies are never logged (the line says what happened, not what was sent).
  'body',
  'req.body',
  // @fastify/multipart's trace line "Providing options to busboy" carries the request's headers
  // as they came, Authorization and Cookie included: every upload at LOG_LEVEL=trace wrote its
  // caller's token secret.
  'busboyOptions.headers',
];

/**
 * JSON logs. Request lines carry method, route, status, timing and ids only — never headers or
 * bodies — which is what keeps secrets out; the redaction (REDACTED_PATHS) is a backstop for
 * the headers that hold credentials and the fields that hold secrets (wildcard paths would cost
 * more per line than the rest of the request's logging). Lines are written in 32 KiB batches
 * rather than one write per request (a write is a system call, which on a busy server cost more
 * than building the lines: 4 KiB batches were 4 % of a point read's CPU), and flushed at least
 * every 250 ms so a quiet server's logs are never held back; call `logger.flush()` at exit. While
 * standard output does not take them, at most LOG_BUFFER_BYTES are held and later lines are
 * dropped, counted and reported in one warning when it takes them again. Errors are logged without the fields that can
 * hold a caller's data (`errorForLog`). `write`: where the lines go instead of standard output (tests).
 */
export function createLogger(level: string, write?: (line: string) => void): Logger {
  const options = {
    level,
    base: { service: 'corridor' },
    serializers: { err: errorForLog },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  };
  if (write) return pino(options, { write });
  // Asynchronous: a write that standard output cannot take yet waits in the thread pool or is
  // retried by a timer (EAGAIN), never in the event loop; what comes meanwhile is held, up to the cap.
  const sonic = pino.destination({ dest: 1, sync: false, minLength: BATCH, maxWrite: 2 * BATCH, maxLength: LOG_BUFFER_BYTES });
  const destination = new LineBatch(sonic);
  const logger = pino(options, destination);
  // Dropped since the last summary. sonic-boom drops a whole batch it cannot hold under the cap.
  let unreported = 0;
  sonic.on('drop', (text: string) => {
    const lines = lineCount(text);
    droppedLines += lines;
    unreported += lines;
  });
  const reportDropped = () => {
    if (unreported === 0) return;
    const lines = unreported;
    unreported = 0;
    logger.warn({ droppedLines: lines, bufferBytes: LOG_BUFFER_BYTES }, 'log lines dropped: standard output did not take them and the backlog reached its cap');
  };
  // 'drain': what was held has been written (the backlog is back under one batch), so the stall is over.
  sonic.on('drain', reportDropped);
  setInterval(() => destination.flush(), FLUSH_EVERY_MS).unref();
  process.once('exit', () => {
    reportDropped();
    writeAtExit(sonic, destination.take());
  });
  return logger;
}
