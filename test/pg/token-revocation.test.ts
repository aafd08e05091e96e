import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, basic, onPostgres } from '../helpers/context.js';
import { processDatabase, startCorridor, type CorridorProcess, type ProcessDatabase } from '../helpers/process.js';

/**
 * Two Corridor processes on one PostgreSQL database: a token deleted through one is refused by
 * the other within a second, although the other had it cached (its cache is evicted by NOTIFY).
 */
describe.runIf(onPostgres)('token revocation across processes', () => {
  let database: ProcessDatabase;
  let first: CorridorProcess;
  let second: CorridorProcess;

  beforeAll(async () => {
    database = await processDatabase('revoke');
    first = await startCorridor(database.env);
    second = await startCorridor(database.env);
  }, 240_000);
  afterAll(async () => {
    await Promise.all([first?.stop(), second?.stop()]);
    await database.cleanup();
  });

  it('refuses a deleted token in the second process within one second', async () => {
    const banner = /curl -u ([0-9a-f]{32}):([0-9a-f]{64}) /.exec(first.output());
    expect(banner, first.output()).not.toBeNull();
    const admin = basic(banner![1]!, banner![2]!);
    const at = (p: CorridorProcess, path: string, authorization: string, init: RequestInit = {}) =>
      fetch(`http://127.0.0.1:${p.port}${BASE}${path}`, { ...init, headers: { authorization, 'content-type': 'application/json' } });

    const created = await at(first, '/tokens', admin, { method: 'POST', body: JSON.stringify({ name: 'to revoke', permissions: ['VIEW'] }) });
    expect(created.status).toBe(201);
    const token = (await created.json()) as { id: string; clientId: string; clientSecret: string };
    const victim = basic(token.clientId, token.clientSecret);
    expect((await at(second, '/config', victim)).status).toBe(200);
    expect((await at(second, '/config', victim)).status).toBe(200); // now from the second process's cache

    expect((await at(first, `/tokens/${token.id}`, admin, { method: 'DELETE' })).status).toBe(204);
    const deleted = performance.now();
    let status = 200;
    while (status === 200 && performance.now() - deleted < 1_000) {
      status = (await at(second, '/config', victim)).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).toBe(401);
    expect((await at(first, '/config', victim)).status).toBe(401);
  });
});
