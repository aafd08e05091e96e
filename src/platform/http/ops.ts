import type { FastifyInstance } from 'fastify';
import { droppedLogLines } from '../../logger.js';
import type { Db } from '../db/database.js';
import { migrationsCurrent } from '../db/migrate.js';
import { AppError } from '../errors.js';
import { jobQueueDepth } from '../jobs/index.js';
import type { HttpMetrics } from './metrics.js';

/**
 * What a starting process still does after it listens (server.ts: the first platform, then the
 * job worker): it listens first so that a port already taken refuses the start before the first
 * platform is made. A client that polls /readyz and then calls the API must find that done.
 */
export class Startup {
  private done = false;

  complete(): void {
    this.done = true;
  }

  get completed(): boolean {
    return this.done;
  }
}

/**
 * Unversioned operational endpoints: liveness, readiness, Prometheus metrics. No auth. Without
 * a `startup` (an app built but not started by server.ts: tests, embedders) readiness is the
 * database's alone.
 */
export function registerOpsRoutes(app: FastifyInstance, deps: { db: Db; metrics: HttpMetrics; startup?: Startup }): void {
  // Admitted under overload too (overload.ts): a probe or a scrape must see an overloaded process as it is.
  const hidden = { schema: { hide: true }, config: { auth: false, neverShed: true } };

  app.get('/healthz', hidden, async () => ({ status: 'ok' }));

  app.get('/readyz', hidden, async (request) => {
    // A probe polls this during every start: not-ready yet is an answer, not a failure.
    if (deps.startup && !deps.startup.completed) throw new AppError('SERVICE_UNAVAILABLE', 'Not ready: still starting (first platform, job worker).', { log: 'none' });
    let current: boolean;
    try {
      // One query: it reaches the database and reads the applied migrations.
      current = await migrationsCurrent(deps.db);
    } catch (error) {
      // Anyone may ask, so the answer does not quote the driver's error (it names hosts, addresses, users and databases);
      // the operator reads it in the log.
      request.log.warn({ err: error }, 'not ready: the database cannot be queried');
      throw new AppError('SERVICE_UNAVAILABLE', 'Not ready: the database cannot be queried.', { log: 'none' });
    }
    if (!current) throw new AppError('SERVICE_UNAVAILABLE', 'Not ready: migrations pending.', { log: 'warn' });
    return { status: 'ready' };
  });

  // One count at a time: scrapes that arrive while one runs share its answer. /metrics needs no
  // token, and a count reads an index entry for every queued, running and dead job (dead ones are
  // kept for ever): a burst of requests from anyone who reaches the port was as many counts at once.
  let counting: Promise<Record<string, number>> | undefined;
  const queueDepth = () =>
    (counting ??= jobQueueDepth(deps.db).finally(() => {
      counting = undefined;
    }));

  // The process's one standard output (src/logger.ts): a single series without labels, 0 until a drop.
  deps.metrics.addCollector(() => [
    '# HELP corridor_log_lines_dropped_total Log lines dropped because standard output did not take them and the backlog reached its cap.',
    '# TYPE corridor_log_lines_dropped_total counter',
    `corridor_log_lines_dropped_total ${droppedLogLines()}`,
  ]);

  app.get('/metrics', hidden, async (_request, reply) => {
    const depth = await queueDepth();
    const statuses = ['queued', 'running', 'dead'];
    const body = deps.metrics.render([
      {
        name: 'corridor_jobs',
        help: 'Background jobs queued, running and dead (done jobs are not counted).',
        values: statuses.map((s) => ({ labels: `status="${s}"`, value: depth[s] ?? 0 })),
      },
    ]);
    return reply.type('text/plain; version=0.0.4; charset=utf-8').send(body);
  });
}
