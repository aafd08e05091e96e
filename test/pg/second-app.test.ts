import type { FastifyPluginAsync } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { BASE, createTestContext, onPostgres, type TestContext } from '../helpers/context.js';

/**
 * The test helper's second process (TestContext.secondApp) is started as the context's app was,
 * unless told otherwise: before, it was built with the defaults, so a test of two processes whose
 * context had extra routes, a stand-in service or settings silently ran its second process without them.
 */
describe.runIf(onPostgres)('TestContext.secondApp', () => {
  let ctx: TestContext;
  const readied: string[] = [];
  const answering =
    (name: string): FastifyPluginAsync =>
    async (api) => {
      api.get('/test/which', { config: { permission: 'VIEW' } }, async () => ({ name }));
    };

  beforeAll(async () => {
    ctx = await createTestContext({ extraRoutes: answering('context'), beforeReady: () => void readied.push('context') });
  });
  afterAll(() => ctx.close());

  const which = async (app: App) => {
    const response = await app.inject({ method: 'GET', url: `${BASE}/test/which`, headers: { authorization: ctx.platform.auth } });
    expect(response.statusCode, response.body).toBe(200);
    return (response.json() as { name: string }).name;
  };

  it("is built with the context's app options and beforeReady", async () => {
    const other = await ctx.secondApp();
    expect(await which(other)).toBe('context');
    expect(readied).toEqual(['context', 'context']);
  });

  it("takes options of its own over the context's, leaving the context's app as it was", async () => {
    readied.length = 0;
    const other = await ctx.secondApp({ extraRoutes: answering('second'), beforeReady: () => void readied.push('second') });
    expect(await which(other)).toBe('second');
    expect(await which(ctx.app)).toBe('context');
    expect(readied).toEqual(['second']);
  });

  it("reads the settings given to it, over the context's", async () => {
    await expect(ctx.secondApp({ env: { PORT: 'eighty' } })).rejects.toThrow('PORT must be a whole number');
  });
});
