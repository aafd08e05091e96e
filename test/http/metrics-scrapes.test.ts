import Fastify, { type FastifyBaseLogger } from 'fastify';
import type { CompiledQuery, QueryResult } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { registerErrorHandling } from '../../src/platform/http/error-handler.js';
import { KnownRoutes } from '../../src/platform/http/known-routes.js';
import { HttpMetrics } from '../../src/platform/http/metrics.js';
import { registerOpsRoutes } from '../../src/platform/http/ops.js';
import { kyselyOn } from '../helpers/recording-db.js';

/**
 * GET /metrics needs no token and counts the job queue in the database: requests that arrive
 * together, from a scraper or from anyone who reaches the port, share one count.
 */
describe('scrapes of /metrics that arrive together', () => {
  it('share one count of the job queue, and each answers it', async () => {
    const sent: CompiledQuery[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const db = kyselyOn(async <R,>(query: CompiledQuery): Promise<QueryResult<R>> => {
      sent.push(query);
      await held;
      return { rows: [{ status: 'queued', n: '7' }, { status: 'running', n: '2' }, { status: 'dead', n: '1' }] as R[] };
    }, 'a held database');
    const app = Fastify({ loggerInstance: createLogger('silent') as FastifyBaseLogger });
    registerErrorHandling(app, new KnownRoutes());
    registerOpsRoutes(app, { db, metrics: new HttpMetrics() });
    // The route's handler runs right after this hook, in the same turn, and asks for the count at once.
    let handled = 0;
    app.addHook('preHandler', (_request, _reply, done) => {
      handled++;
      done();
    });
    try {
      const scrapes = Array.from({ length: 20 }, () => app.inject({ url: '/metrics' }));
      // Every scrape is waiting on a count before the database answers any.
      await expect.poll(() => handled).toBe(20);
      release();
      const answers = await Promise.all(scrapes);
      expect(sent).toHaveLength(1);
      for (const answer of answers) {
        expect(answer.statusCode).toBe(200);
        expect(answer.body).toContain('corridor_jobs{status="queued"} 7\ncorridor_jobs{status="running"} 2\ncorridor_jobs{status="dead"} 1\n');
      }
      // A later scrape counts again: the answer is shared, never kept.
      expect((await app.inject({ url: '/metrics' })).body).toContain('corridor_jobs{status="queued"} 7');
      expect(sent).toHaveLength(2);
    } finally {
      await app.close();
    }
  });
});
