import { pino, type Logger } from 'pino';

const FLUSH_EVERY_MS = 250;

/**
 * JSON logs. Request lines carry method, route, status, timing and ids only — never headers or
 * bodies — which is what keeps secrets out; the redaction below is a backstop for the one
 * header that holds credentials (wildcard paths would cost more per line than the rest of the
 * request's logging). Lines are written in 32 KiB batches rather than one write per request (a
 * write is a system call, which on a busy server cost more than building the lines: 4 KiB batches
 * were 4 % of a point read's CPU), and flushed at least every 250 ms so a quiet server's logs are
 * never held back; call `logger.flush()` at exit.
 */
export function createLogger(level: string): Logger {
  const destination = pino.destination({ dest: 1, sync: false, minLength: 32 * 1024, maxWrite: 64 * 1024 });
  setInterval(() => destination.flush(), FLUSH_EVERY_MS).unref();
  return pino(
    {
      level,
      base: { service: 'corridor' },
      redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[redacted]' },
    },
    destination,
  );
}
