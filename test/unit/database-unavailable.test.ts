import Fastify from 'fastify';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../src/platform/db/unavailable.js';
import { registerErrorHandling } from '../../src/platform/http/error-handler.js';
import { KnownRoutes } from '../../src/platform/http/known-routes.js';

const sqlError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('the database unavailable', () => {
  it('tells connection, resource and shutdown failures from errors of the request', () => {
    for (const error of [
      sqlError('53300', 'sorry, too many clients already'),
      sqlError('57P01', 'terminating connection due to administrator command'),
      sqlError('57P03', 'the database system is starting up'),
      sqlError('08006', 'connection failure'),
      sqlError('3D000', 'database "corridor" does not exist'),
      sqlError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      new Error('timeout expired'),
    ]) {
      expect(isDatabaseUnavailable(error), error.message).toBe(true);
    }
    for (const error of [sqlError('23505', 'duplicate key'), sqlError('22P02', 'invalid input syntax'), sqlError('57014', 'canceling statement due to statement timeout'), new Error('boom'), 'text']) {
      expect(isDatabaseUnavailable(error), String(error)).toBe(false);
    }
  });

  it('answers 503 SERVICE_UNAVAILABLE with a retry hint when PostgreSQL cannot be reached, and 500 for anything else', async () => {
    // A real refusal: nothing listens on port 1.
    const pool = new pg.Pool({ host: '127.0.0.1', port: 1, user: 'nobody', database: 'none' });
    const app = Fastify();
    const routes = new KnownRoutes();
    routes.track(app);
    registerErrorHandling(app, routes);
    app.get('/read', async () => (await pool.query('select 1')).rows);
    app.get('/bug', async () => {
      throw new Error('boom');
    });
    try {
      const unavailable = await app.inject({ method: 'GET', url: '/read' });
      expect(unavailable.statusCode).toBe(503);
      expect(unavailable.json()).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
      expect(unavailable.headers['x-should-retry']).toBe('true');
      expect(unavailable.headers['retry-after']).toBe('1');
      const bug = await app.inject({ method: 'GET', url: '/bug' });
      expect(bug.statusCode).toBe(500);
      expect(bug.json()).toMatchObject({ status: 500, code: 'INTERNAL_ERROR' });
    } finally {
      await app.close();
      await pool.end();
    }
  });
});
