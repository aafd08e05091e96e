import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventCatalogue } from '../../src/app.js';
import { openDatabase, type DbHandle } from '../../src/platform/db/database.js';
import { formatId, parseId } from '../../src/platform/ids.js';
import { BASE, basic, onPostgres } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { type CorridorProcess, createSandboxPlatform, processDatabase, type ProcessDatabase, runCli, startCorridor, waitUntil } from '../helpers/process.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

const TERMINAL = ['OUTGOING_PAYMENT.COMPLETED', 'OUTGOING_PAYMENT.FAILED'];
/** A request that has not answered after this long is hung (a bound, not a measurement). */
const REQUEST_BOUND_MS = 20_000;
/** How often a client sends a request again (same Idempotency-Key) that was answered 503. */
const RETRIES = 60;
const KILLS = 4;

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/**
 * A PostgreSQL restart, a failover or an idle-connection killer, as Corridor sees it: every one
 * of its connections to the database ends at once (pool, pipelined reads, LISTEN, job worker).
 * Two `corridor serve` processes share one database while clients fund accounts and execute
 * quotes through both and the job workers hand payments to the rails and settle them; every
 * backend of the database is terminated a few times meanwhile. Every answer is one the spec
 * allows (503 with the retry hint while the database is away, never a 500, never no answer);
 * afterwards both processes serve without a restart, every acknowledged request took effect
 * exactly once, the ledger verifies, caches still hear of revocations, and no event is lost.
 */
describe.runIf(onPostgres)('every PostgreSQL connection killed under money traffic', () => {
  let database: ProcessDatabase;
  let receiver: WebhookReceiver;
  let killer: pg.Client;
  let handle: DbHandle | undefined;
  const servers: CorridorProcess[] = [];
  const applicationName = `corridor_bkills_${process.pid}`;
  beforeAll(async () => {
    database = await processDatabase('bkills');
    // Every connection of this test's processes and commands carries this name, and only those
    // are terminated: other test files share the database and must not lose theirs.
    const url = new URL(database.env.DATABASE_URL!);
    url.searchParams.set('application_name', applicationName);
    database.env.DATABASE_URL = url.toString();
    receiver = await WebhookReceiver.start();
    killer = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await killer.connect();
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await handle?.close();
    await killer?.end();
    await receiver?.close();
    await database?.cleanup();
  });

  /** Terminates every backend of this test's processes (and of its own reads below). */
  const killBackends = async () =>
    (await killer.query<{ pid: number }>('select pg_terminate_backend(pid) as pid from pg_stat_activity where application_name = $1', [applicationName])).rowCount ?? 0;
  /** Backends whose last statement was a LISTEN: the processes' notification connections. */
  const listeners = async () =>
    Number(
      (await killer.query<{ n: string }>("select count(*) as n from pg_stat_activity where application_name = $1 and query ilike 'listen %'", [applicationName])).rows[0]!.n,
    );

  it('answers 2xx, 4xx or 503 throughout, then serves again with every acknowledged request done exactly once', async () => {
    const created = await createSandboxPlatform(database.env);
    const platformUuid = parseId('Platform', created.platformId)!;
    const owner = basic(created.clientId, created.clientSecret);
    // Jobs whose outcome a kill kept from being recorded come back when their lease runs out: 3 s here.
    const env = { ...database.env, CORRIDOR_JOBS: 'true', CORRIDOR_JOBS_POLL_MS: '50', CORRIDOR_JOBS_LEASE_MS: '3000' };
    const [a, b] = await Promise.all([startCorridor(env), startCorridor(env)]);
    servers.push(a!, b!);
    const problems: string[] = [];
    /** What the processes printed (warnings and errors): why one stopped answering, when one did. */
    const processOutput = () => servers.map((s) => `process on :${s.port}:\n${s.output().slice(-4_000)}`).join('\n');
    let unavailable = 0;

    /** One request, bounded; any answer outside the spec (or none) is a problem. */
    const call = async (server: CorridorProcess, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer | undefined> => {
      const what = `${method} ${path} on :${server.port}`;
      let response: Response;
      let text: string;
      try {
        response = await fetch(`http://127.0.0.1:${server.port}${BASE}${path}`, {
          method,
          headers: { authorization: owner, 'content-type': 'application/json', ...headers },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: AbortSignal.timeout(REQUEST_BOUND_MS),
        });
        text = await response.text();
      } catch (error) {
        problems.push(`${what}: no answer (${String(error)})`);
        return undefined;
      }
      const parsed = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
      if (response.status === 503) {
        unavailable++;
        const hinted = parsed.code === 'SERVICE_UNAVAILABLE' && response.headers.get('x-should-retry') === 'true' && response.headers.get('retry-after') !== null;
        if (!hinted) problems.push(`${what}: 503 without the retry hint: ${text}`);
      } else if (response.status >= 500 || response.status < 200) {
        problems.push(`${what}: ${response.status} ${text}`);
      }
      return { status: response.status, body: parsed };
    };
    /** Sent again with the same Idempotency-Key while it is answered 503, as the hint asks: the final answer. */
    const send = async (server: CorridorProcess, path: string, body: unknown, key: string): Promise<Answer | undefined> => {
      for (let attempt = 1; ; attempt++) {
        const answer = await call(server, 'POST', path, body, { 'idempotency-key': key });
        if (answer?.status !== 503 || attempt === RETRIES) return answer;
        await new Promise((r) => setTimeout(r, 100));
      }
    };

    const keys = (await call(a!, 'GET', '/webhooks/signing-keys'))!.body as { data: Array<{ publicKey: string }> };
    receiver.trust(keys.data.map((k) => k.publicKey));
    const since = new Date();
    expect((await call(a!, 'PATCH', '/config', { webhookEndpoint: receiver.url }))!.status).toBe(200);
    const consent = { acceptedAt: new Date().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' };
    const customer = (await call(a!, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Backend Kills', endUserTermsConsent: consent }))!.body as { id: string };
    const internal = (await call(b!, 'GET', `/customers/internal-accounts?customerId=${customer.id}&currency=USD`))!.body as { data: Array<{ id: string }> };
    const source = internal.data[0]!.id;
    const payee = (await call(a!, 'POST', '/platform/external-accounts', validSamples(new Date()).USD_ACCOUNT!))!.body as { id: string };
    const FIRST_FUND = 50_000_000;
    expect((await send(b!, `/sandbox/internal-accounts/${source}/fund`, { amount: FIRST_FUND }, 'fund-first'))!.status).toBe(200);
    const listening = await listeners();
    expect(listening).toBeGreaterThanOrEqual(2);

    // Six clients alternate between the processes: every third request funds the account, the
    // others create and execute a quote (amounts ending in 901–906 take the sandbox's failure paths).
    let funded = BigInt(FIRST_FUND);
    const executions = new Map<number, string>();
    const unresolved: string[] = [];
    let next = 1;
    let stopped = false;
    const clients = Array.from({ length: 6 }, async () => {
      while (!stopped) {
        const n = next++;
        const server = n % 2 === 0 ? a! : b!;
        if (n % 3 === 0) {
          const amount = 1_000 + n;
          const answer = await send(server, `/sandbox/internal-accounts/${source}/fund`, { amount }, `fund-${n}`);
          if (answer?.status === 200) funded += BigInt(amount);
          else unresolved.push(`fund-${n}: ${answer?.status} ${JSON.stringify(answer?.body)}`);
          continue;
        }
        const quote = {
          source: { sourceType: 'ACCOUNT', accountId: source },
          destination: { destinationType: 'ACCOUNT', accountId: payee.id, paymentRail: 'RTP' },
          lockedCurrencySide: 'SENDING',
          lockedCurrencyAmount: 10_000 + n * 101,
          immediatelyExecute: true,
        };
        const answer = await send(server, '/quotes', quote, `pay-${n}`);
        if (answer?.status === 201) executions.set(n, (answer.body as { transactionId: string }).transactionId);
        else unresolved.push(`pay-${n}: ${answer?.status} ${JSON.stringify(answer?.body)}`);
      }
    });
    // Settlements come due while executions stream in.
    const clock = (async () => {
      while (!stopped) {
        await call(a!, 'POST', '/sandbox/clock/advance', { seconds: 30 });
        await new Promise((r) => setTimeout(r, 150));
      }
    })();
    let killed = 0;
    try {
      for (let kill = 1; kill <= KILLS; kill++) {
        // Traffic flows between kills: both processes came back from the last one on their own.
        const before = executions.size;
        await waitUntil(`executions go on before kill ${kill}`, () => executions.size >= before + 8, 30_000, 20);
        killed += await killBackends();
      }
      const before = executions.size;
      await waitUntil('executions go on after the last kill', () => executions.size >= before + 8, 30_000, 20);
    } finally {
      stopped = true;
      await Promise.all([...clients, clock]);
    }
    // Each kill ended both processes' connections at least.
    expect(killed).toBeGreaterThanOrEqual(KILLS * 2);
    expect(problems, processOutput()).toEqual([]);
    expect(unresolved).toEqual([]);

    // Both serve again without a restart, and their notification connections are back.
    for (const server of [a!, b!]) {
      await waitUntil('the process is ready', () => fetch(`http://127.0.0.1:${server.port}/readyz`).then((r) => r.status === 200, () => false), 10_000);
      expect((await call(server, 'POST', `/sandbox/internal-accounts/${source}/fund`, { amount: 1 }, { 'idempotency-key': `after-${server.port}` }))!.status).toBe(200);
      funded += 1n;
    }
    await waitUntil('every LISTEN connection is back', async () => (await listeners()) === listening, 10_000);

    // A token revoked through A is refused by B, which had it cached: once with B listening, and
    // once revoked while B's LISTEN connection was down (the notification missed).
    const tokenThroughB = async (clientId: string, clientSecret: string) =>
      (await fetch(`http://127.0.0.1:${b!.port}${BASE}/config`, { headers: { authorization: basic(clientId, clientSecret) }, signal: AbortSignal.timeout(REQUEST_BOUND_MS) })).status;
    for (const whileListening of [true, false]) {
      const token = (await call(a!, 'POST', '/tokens', { name: `revoked ${whileListening}`, permissions: ['VIEW'] }))!.body as { id: string; clientId: string; clientSecret: string };
      await waitUntil('the new token works through B', async () => (await tokenThroughB(token.clientId, token.clientSecret)) === 200, 10_000);
      if (!whileListening) expect(await killBackends()).toBeGreaterThanOrEqual(2);
      await waitUntil('the revocation is answered', async () => (await call(a!, 'DELETE', `/tokens/${token.id}`))?.status === 204, 10_000);
      await waitUntil(`B refuses the revoked token (revoked ${whileListening ? 'while listening' : 'during the gap'})`, async () => (await tokenThroughB(token.clientId, token.clientSecret)) === 401, 5_000);
      await waitUntil('every LISTEN connection is back', async () => (await listeners()) === listening, 10_000);
    }
    expect(problems, processOutput()).toEqual([]);

    handle = await openDatabase({ databaseUrl: database.env.DATABASE_URL!, poolSize: 2 });
    const db = handle.db;
    // Whatever is scheduled settles once the platform's time has passed every settlement.
    expect((await call(a!, 'POST', '/sandbox/clock/advance', { seconds: 86_400 }))!.status).toBe(200);
    await waitUntil(
      'every transaction ends',
      async () => (await db.selectFrom('transactions').select('id').where('status', 'not in', ['COMPLETED', 'FAILED']).execute()).length === 0,
      30_000,
      200,
    );
    const rows = await db.selectFrom('transactions').select(['id', 'status', 'total_sending_amount']).execute();
    // Every execution was answered in the end (503s retried with their key): one transaction each, no other.
    expect(new Set(rows.map((r) => formatId('Transaction', r.id)))).toEqual(new Set(executions.values()));
    expect(rows.length).toBe(executions.size);
    const ended = await db.selectFrom('events').select(['resource_id', 'type']).where('type', 'in', TERMINAL).execute();
    for (const row of rows) expect(ended.filter((e) => e.resource_id === formatId('Transaction', row.id)), row.id).toHaveLength(1);
    const spent = rows.filter((r) => r.status === 'COMPLETED').reduce((sum, r) => sum + BigInt(r.total_sending_amount as string), 0n);
    const after = (await call(a!, 'GET', `/customers/internal-accounts?customerId=${customer.id}&currency=USD`))!.body as {
      data: Array<{ balance: { amount: number }; totalBalance: { amount: number } }>;
    };
    expect(BigInt(after.data[0]!.balance.amount)).toBe(funded - spent);
    expect(after.data[0]!.totalBalance.amount).toBe(after.data[0]!.balance.amount);
    const verify = await runCli(database.env, 'ledger', 'verify');
    expect(verify.code, verify.output).toBe(0);

    // Every event recorded before, between and after the kills is relayed and delivered.
    const catalogue = eventCatalogue();
    const recorded = await db.selectFrom('events').select(['id', 'type']).where('platform_id', '=', platformUuid).where('created_at', '>=', since).execute();
    const expected = new Set(recorded.filter((r) => catalogue.has(r.type)).map((r) => formatId('Webhook', r.id)));
    expect(expected.size).toBeGreaterThan(executions.size);
    const delivered = () => new Set(receiver.received.map((w) => w.body.id).filter((id) => expected.has(id))).size;
    await waitUntil('every event is delivered', () => delivered() === expected.size, 30_000);
    expect(await db.selectFrom('events').select('id').where('published_at', 'is', null).execute()).toEqual([]);
    expect(receiver.received.every((w) => w.verified)).toBe(true);
    expect(problems, processOutput()).toEqual([]);
    console.info(`backend kills: ${killed} backends terminated, ${executions.size} executions, ${unavailable} answers 503`);
  }, 120_000);
});
