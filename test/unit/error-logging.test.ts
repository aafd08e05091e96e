import Fastify, { type FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/platform/errors.js';
import { registerErrorHandling } from '../../src/platform/http/error-handler.js';
import { KnownRoutes } from '../../src/platform/http/known-routes.js';

/**
 * What the operator's log gets for a refused request: a fault (5xx) once at error level, a refusal
 * the service chose (backpressure) as a warning, nothing where the refusing code logged it already
 * or the answer is a state (not ready yet), and nothing for the caller's own mistakes (4xx).
 */
describe('the error handler tells the operator', () => {
  it('at the level the refusal asks for', async () => {
    const lines: string[] = [];
    const app = Fastify({ loggerInstance: pino({ level: 'info' }, { write: (line: string) => lines.push(line) }) as FastifyBaseLogger });
    const routes = new KnownRoutes();
    routes.track(app);
    registerErrorHandling(app, routes);
    const refusals: Record<string, AppError> = {
      fault: new AppError('SERVICE_UNAVAILABLE', 'The provider failed.'),
      backpressure: new AppError('SERVICE_UNAVAILABLE', 'Too many waiting.', { log: 'warn' }),
      logged: new AppError('SERVICE_UNAVAILABLE', 'Disk full.', { log: 'none' }),
      caller: new AppError('INVALID_INPUT', 'Bad field.'),
    };
    app.get('/:kind', async (request) => {
      throw refusals[(request.params as { kind: string }).kind]!;
    });
    try {
      const logged = async (kind: string, status: number) => {
        lines.length = 0;
        expect((await app.inject({ method: 'GET', url: `/${kind}` })).statusCode).toBe(status);
        // Fastify's own request lines are at info level: only warnings and errors are the handler's.
        return lines
          .map((line) => JSON.parse(line) as { level: number; msg: string; err?: { message?: string } })
          .filter((line) => line.level >= 40)
          .map((line) => [line.level, line.msg, line.err?.message]);
      };
      expect(await logged('fault', 503)).toEqual([[50, 'request failed', 'The provider failed.']]);
      expect(await logged('backpressure', 503)).toEqual([[40, 'request refused', 'Too many waiting.']]);
      expect(await logged('logged', 503)).toEqual([]);
      expect(await logged('caller', 400)).toEqual([]);
    } finally {
      await app.close();
    }
  });
});
