import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/database.js';
import { migrationsCurrent } from '../db/migrate.js';
import { AppError } from '../errors.js';
import { jobQueueDepth } from '../jobs.js';
import type { HttpMetrics } from './metrics.js';

/** Unversioned operational endpoints: liveness, readiness, Prometheus metrics. No auth. */
export function registerOpsRoutes(app: FastifyInstance, deps: { db: Db; metrics: HttpMetrics }): void {
  const hidden = { schema: { hide: true }, config: { auth: false } };

  app.get('/healthz', hidden, async () => ({ status: 'ok' }));

  app.get('/readyz', hidden, async () => {
    try {
      // One query: it reaches the database and reads the applied migrations.
      if (!(await migrationsCurrent(deps.db))) throw new Error('migrations pending');
    } catch (error) {
      throw new AppError('SERVICE_UNAVAILABLE', `Not ready: ${error instanceof Error ? error.message : 'database unreachable'}.`);
    }
    return { status: 'ready' };
  });

  app.get('/metrics', hidden, async (_request, reply) => {
    const depth = await jobQueueDepth(deps.db);
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
