import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/platform/db/database.js';
import { onPostgres } from '../helpers/context.js';
import { crashFunding, createSandboxPlatform, type ProcessDatabase, processDatabase, runCli, startCorridor } from '../helpers/process.js';

describe.runIf(onPostgres)('corridor serve killed with SIGKILL during a stream of funding requests', () => {
  let database: ProcessDatabase;
  beforeAll(async () => {
    database = await processDatabase('ledgercrash');
  });
  afterAll(() => database.cleanup());

  it('restarts with the ledger intact and every acknowledged request present, once', async () => {
    const created = await createSandboxPlatform(database.env);
    let server = await startCorridor(database.env);
    const { fund, expectEachAppliedOnce } = await crashFunding(() => server, created);

    // Eight clients send funding requests (amount n under key crash-n) until the server dies.
    const sent: number[] = [];
    const acknowledged = new Map<number, unknown>();
    let next = 1;
    let dead = false;
    const clients = Array.from({ length: 8 }, async () => {
      while (!dead) {
        const n = next++;
        sent.push(n);
        try {
          const response = await fund(n);
          if (response.status === 200) acknowledged.set(n, await response.json());
        } catch {
          // The connection died with the server: not acknowledged.
        }
      }
    });
    while (acknowledged.size < 40) await new Promise((r) => setTimeout(r, 10));
    await server.stop('SIGKILL');
    dead = true;
    await Promise.all(clients);
    expect(acknowledged.size).toBeGreaterThanOrEqual(40);

    const verify = await runCli(database.env, 'ledger', 'verify');
    expect(verify.stdout).toContain('ledger verify: OK');
    expect(verify.code).toBe(0);

    server = await startCorridor(database.env);
    try {
      // Every acknowledged request is there once; what got no answer applies once on its retry.
      await expectEachAppliedOnce(acknowledged, sent);
      const handle = await openDatabase({ databaseUrl: database.env.DATABASE_URL!, poolSize: 1 });
      try {
        const events = await handle.db.selectFrom('events').select('id').where('type', '=', 'INTERNAL_ACCOUNT.BALANCE_UPDATED').execute();
        expect(events).toHaveLength(sent.length);
      } finally {
        await handle.close();
      }
    } finally {
      await server.stop();
    }
    const again = await runCli(database.env, 'ledger', 'verify');
    expect(again.code, again.stdout).toBe(0);
  }, 240_000);

  it('exits 1 and names the breach when a balance is tampered with', async () => {
    const handle = await openDatabase({ databaseUrl: database.env.DATABASE_URL!, poolSize: 1 });
    try {
      await handle.db.updateTable('ledger_balances').set((eb) => ({ credits_posted: eb('credits_posted', '+', 1n) })).where('no_overdraft', '=', true).where('credits_posted', '>', 0n).execute();
    } finally {
      await handle.close();
    }
    const verify = await runCli(database.env, 'ledger', 'verify');
    expect(verify.code).toBe(1);
    expect(verify.stdout).toMatch(/BREACH BALANCE_MISMATCH [0-9a-f-]{36}#0: /);
    expect(verify.stdout).toMatch(/ledger verify: 1 breach/);
  }, 120_000);
});
