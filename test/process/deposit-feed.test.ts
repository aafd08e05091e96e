import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DbHandle } from '../../src/platform/db/database.js';
import { DEPOSIT_POLL_JOB } from '../../src/modules/transactions/index.js';
import { BASE, basic, onPostgres } from '../helpers/context.js';
import { type CorridorProcess, processDatabase, type ProcessDatabase, runCli, startCorridor, waitUntil } from '../helpers/process.js';

const until = (what: string, done: () => boolean | Promise<boolean>, ms = 120_000) => waitUntil(what, done, ms);

/**
 * Issue 17 §3 across real processes on one PostgreSQL database: two `corridor serve` processes
 * run jobs against one rail provider's deposit feed. One job polls (never two at once), the
 * cursor moves on, a deposit listed twice credits once.
 */
describe.runIf(onPostgres)('the deposit feed polled by two corridor serve processes', () => {
  let database: ProcessDatabase;
  let handle: DbHandle;
  let provider: Server;
  const servers: CorridorProcess[] = [];
  beforeAll(async () => {
    database = await processDatabase('deposits');
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await handle?.close();
    provider?.close();
    await database.cleanup();
  });

  it('one poll at a time, each deposit id credited once, the cursor kept in the database', async () => {
    const { stdout } = await runCli(database.env, 'platforms', 'create', '--environment', 'production', '--json');
    const created = JSON.parse(stdout.trim().split('\n').pop()!) as { platformId: string; clientId: string; clientSecret: string };
    const authorization = basic(created.clientId, created.clientSecret);

    let reference = '';
    const cursors: Array<string | null> = [];
    let inFlight = 0;
    let maxInFlight = 0;
    provider = createServer(async (request: IncomingMessage, response) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      let text = '';
      for await (const chunk of request) text += chunk;
      const { cursor } = JSON.parse(text) as { cursor: string | null };
      cursors.push(cursor);
      // Slow answers: a second poller, if there were one, would overlap this one.
      await new Promise((r) => setTimeout(r, 300));
      const d1 = { id: 'dep-1', reference, currency: 'USD', amount: '5000', rail: 'WIRE' };
      const page =
        cursor === null ? { deposits: [d1], nextCursor: 'c1' } : cursor === 'c1' ? { deposits: [d1, { ...d1, id: 'dep-2', amount: '250' }], nextCursor: 'c2' } : { deposits: [], nextCursor: 'c2' };
      inFlight--;
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(reference ? page : { deposits: [], nextCursor: null }));
    });
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
    const env = {
      ...database.env,
      CORRIDOR_JOBS: 'true',
      CORRIDOR_JOBS_POLL_MS: '50',
      CORRIDOR_RAILS_URL: `http://127.0.0.1:${(provider.address() as AddressInfo).port}`,
      CORRIDOR_RAILS_TOKEN: 'rail-secret',
    };
    servers.push(await startCorridor(env), await startCorridor(env));
    const api = (path: string) => fetch(`http://127.0.0.1:${servers[0]!.port}${BASE}${path}`, { headers: { authorization } }).then((r) => r.json() as Promise<{ data: Array<Record<string, any>> }>);
    const own = (await api('/platform/internal-accounts?currency=USD')).data[0]!;
    reference = own.fundingPaymentInstructions[0].accountOrWalletInfo.reference as string;

    handle = await openDatabase({ databaseUrl: database.env.DATABASE_URL!, poolSize: 2 });
    const livePolls = async () =>
      (await handle.db.selectFrom('jobs').select('id').where('kind', '=', DEPOSIT_POLL_JOB).where('status', 'in', ['queued', 'running']).execute()).length;
    // Looked at throughout: a poll's commit hands on to the next poll and completes itself at once.
    const seenLive = new Set<number>();
    await until('the feed has moved past both pages', async () => {
      seenLive.add(await livePolls());
      return cursors.filter((c) => c === 'c2').length >= 2;
    });
    const balance = (await api('/platform/internal-accounts?currency=USD')).data[0]!.balance.amount as number;
    expect(balance).toBe(5250);
    expect(maxInFlight).toBe(1);
    expect((await api('/transactions?type=INCOMING')).data.map((t) => t.receivedAmount.amount).sort()).toEqual([250, 5000]);
    expect(await livePolls()).toBe(1);
    expect([...seenLive]).toEqual([1]);
    expect((await handle.db.selectFrom('deposit_feeds').select('cursor').executeTakeFirstOrThrow()).cursor).toBe('c2');
    const verify = await runCli(database.env, 'ledger', 'verify');
    expect(verify.stdout).toContain('ledger verify: OK');
    expect(verify.code, verify.output).toBe(0);
  }, 180_000);
});
