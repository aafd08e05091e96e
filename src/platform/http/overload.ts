/**
 * Load shedding: what a process does when offered more work than it does. A request waits for its
 * work to start in two places, neither of them bounded: for the database, and for the event loop
 * while it is busy (the process's CPU, and on the embedded database PostgreSQL itself: PGlite runs
 * statements on the loop, a queue of transactions back to back without yielding, so requests wait
 * unread in the socket buffers, not for a connection). The database's wait is the longer of two
 * queues' (DbHandle.connectionWaitMs): the requests for a connection while every one is taken
 * (pg-pool and PGlite's driver serve them first come, first served), and on PostgreSQL the point
 * reads and list pages pipelined on a few shared connections (db/pipelined-reads.ts), which take
 * no connection from the pool: pg queues them on their connection, answered in order, and their
 * wait is how long the oldest read unanswered has waited. A PostgreSQL slowed by a lock, a slow
 * disk or a starved CPU grows those queues while the pool sits idle. Under sustained overload
 * each new request waits behind all the earlier ones, longer than its client (30–60 s timeouts
 * are usual) waits for an answer; the client gives up and retries, and the request it abandoned
 * is still served, adding to the load that made it late. Instead, while either wait is
 * `maxWaitMs` or more, each new request is refused at once with 503 SERVICE_UNAVAILABLE
 * (`details.reason` OVERLOADED) and a Retry-After, so that clients back off while the work drains.
 *
 * Only requests that have not started: the check is an onRequest hook, before authentication
 * (a database read) and before the body is read; a request admitted is never cut later, so no
 * transaction, write or money movement is ever left half done by it. Routes marked `neverShed`
 * (liveness, readiness, metrics) are always admitted. @fastify/under-pressure measures the loop's
 * delay too, but only from a sampling timer, which a loop blocked by PGlite cannot run: the
 * lateness of the tick due is read here at each request, and the database queues it has no view of.
 */
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';
import type { HttpMetrics } from './metrics.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Admitted however far behind the process is: the operational endpoints (ops.ts). */
    neverShed?: boolean;
  }
}

/** Default of CORRIDOR_OVERLOAD_WAIT_MS (config.ts). */
export const DEFAULT_OVERLOAD_WAIT_MS = 10_000;

/** How often the event loop's lateness is measured: a late tick is seen at the next request whenever it comes. */
const TICK_MS = 100;

/**
 * How late the event loop is: the lateness of its last tick, or of the tick due now if the loop
 * has not run it yet (the request reading this arrived while the loop was busy).
 */
class LoopLateness {
  private due = performance.now() + TICK_MS;
  private last = 0;
  private readonly timer: NodeJS.Timeout;

  constructor() {
    this.timer = setInterval(() => {
      const now = performance.now();
      this.last = Math.max(0, now - this.due);
      this.due = now + TICK_MS;
    }, TICK_MS);
    this.timer.unref();
  }

  ms(): number {
    return Math.max(this.last, performance.now() - this.due);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

export interface LoadShedding {
  /** About how long a statement asked now would wait: for a database connection, or a pipelined read to be answered (DbHandle.connectionWaitMs). */
  connectionWaitMs: () => number;
  /** From this wait (for a connection, or of the event loop) on, new requests are refused. */
  maxWaitMs: number;
  metrics: HttpMetrics;
}

/**
 * The refusal of a request the process has no room for: nothing read, nothing done. Retry-After
 * is the bound: the work ahead of a new request now takes at least about that long.
 */
function overloaded(retryAfterSeconds: number): AppError {
  return new AppError('SERVICE_UNAVAILABLE', 'This Corridor process has more work than it can do now. Nothing was done; retry the request later.', {
    headers: { 'retry-after': String(retryAfterSeconds) },
    details: { reason: 'OVERLOADED' },
    // Each refusal would be a line, thousands a second: the count is in /metrics.
    log: 'none',
  });
}

export function registerLoadShedding(app: FastifyInstance, shedding: LoadShedding): void {
  const retryAfterSeconds = Math.max(1, Math.ceil(shedding.maxWaitMs / 1000));
  const loop = new LoopLateness();
  app.addHook('onClose', async () => loop.stop());
  let shed = 0;
  shedding.metrics.addCollector(() => [
    '# HELP corridor_http_requests_shed_total Requests refused with 503 OVERLOADED, before any work, because the process was too far behind.',
    '# TYPE corridor_http_requests_shed_total counter',
    `corridor_http_requests_shed_total ${shed}`,
    '# HELP corridor_db_connection_wait_seconds About how long a database statement asked now would wait: the longer of a request for a pooled connection and a read pipelined on the shared read connections.',
    '# TYPE corridor_db_connection_wait_seconds gauge',
    `corridor_db_connection_wait_seconds ${shedding.connectionWaitMs() / 1000}`,
  ]);
  app.addHook('onRequest', (request, _reply, done) => {
    const behind = shedding.connectionWaitMs() >= shedding.maxWaitMs || loop.ms() >= shedding.maxWaitMs;
    // request.routeOptions builds a new object on every read: only once the bound is passed.
    if (!behind || request.routeOptions.config.neverShed) return done();
    shed++;
    done(overloaded(retryAfterSeconds));
  });
}
