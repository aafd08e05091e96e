import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DbHandle } from '../../src/platform/db/database.js';
import { listMigrations } from '../../src/platform/db/migrate.js';
import { BASE, basic, onPostgres } from '../helpers/context.js';
import { type CorridorProcess, processDatabase, type ProcessDatabase, startCorridor, waitUntil } from '../helpers/process.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

const until = (what: string, done: () => boolean | Promise<boolean>, ms = 60_000) => waitUntil(what, done, ms, 50);

/**
 * DESIGN.md §8 as an operator runs it: several `corridor serve` processes on one PostgreSQL
 * database behind a load balancer, started together on a new database and restarted one at a
 * time. The processes share this file's database; each test goes on from the one before.
 */
describe.runIf(onPostgres)('corridor serve processes sharing one PostgreSQL database', () => {
  const GRACE_MS = 1_000;
  let database: ProcessDatabase;
  let handle: DbHandle;
  let receiver: WebhookReceiver;
  let first: CorridorProcess;
  let second: CorridorProcess;
  let authorization: string;
  const env = () => ({
    ...database.env,
    CORRIDOR_JOBS: 'true',
    CORRIDOR_JOBS_POLL_MS: '50',
    CORRIDOR_SHUTDOWN_GRACE_MS: String(GRACE_MS),
    // A hung endpoint holds a delivery far longer than the grace period.
    CORRIDOR_WEBHOOK_TIMEOUT_MS: '30000',
    LOG_LEVEL: 'info',
  });
  const api = (server: CorridorProcess, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(`http://127.0.0.1:${server.port}${BASE}${path}`, {
      method,
      headers: { authorization, 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  beforeAll(async () => {
    database = await processDatabase('scaleout');
    handle = await openDatabase({ databaseUrl: database.env.DATABASE_URL!, poolSize: 2 });
    receiver = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await Promise.all([first?.stop(), second?.stop()]);
    await receiver?.close();
    await handle?.close();
    await database?.cleanup();
  });

  it('two processes started at once on a new database both serve: migrated once, one first platform', async () => {
    [first, second] = await Promise.all([startCorridor(env()), startCorridor(env())]);
    // /readyz answers 200 once a process has made or found the first platform and started its
    // job worker; the start-up line is logged just after.
    await until('both processes have finished starting', () => [first, second].every((p) => p.output().includes('Corridor listening on')));
    const banners = [first, second].map((p) => /curl -u ([0-9a-f]{32}):([0-9a-f]{64}) /.exec(p.output()));
    expect(banners.filter(Boolean), `${first.output()}\n${second.output()}`).toHaveLength(1);
    const [, clientId, secret] = banners.find(Boolean)!;
    authorization = basic(clientId!, secret!);
    expect(await handle.db.selectFrom('schema_migrations' as never).select('version' as never).execute()).toHaveLength(listMigrations().length);
    expect(await handle.db.selectFrom('platforms').select('id').execute()).toHaveLength(1);
    for (const server of [first, second]) expect((await api(server, 'GET', '/config')).status).toBe(200);
  }, 240_000);

  it('one Idempotency-Key sent to both processes at once has one effect and one answer; another body is 409', async () => {
    const consent = { acceptedAt: new Date().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' };
    const customer = await api(first, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Scale Out', endUserTermsConsent: consent });
    expect(customer.status).toBe(201);
    const { id: customerId } = (await customer.json()) as { id: string };
    const accounts = (await (await api(second, 'GET', `/customers/internal-accounts?customerId=${customerId}&currency=USD`)).json()) as { data: Array<{ id: string }> };
    const account = accounts.data[0]!.id;
    const balance = async () =>
      ((await (await api(first, 'GET', `/customers/internal-accounts?customerId=${customerId}&currency=USD`)).json()) as { data: Array<{ balance: { amount: number } }> }).data[0]!
        .balance.amount;

    let expected = 0;
    for (let n = 1; n <= 10; n++) {
      const amount = 1_000 + n;
      const send = (server: CorridorProcess) => api(server, 'POST', `/sandbox/internal-accounts/${account}/fund`, { amount }, { 'idempotency-key': `scale-out-${n}` });
      const answers = await Promise.all([send(first), send(second), send(first), send(second)]);
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
      const bodies = await Promise.all(answers.map((a) => a.text()));
      expect(new Set(bodies).size, bodies.join('\n')).toBe(1);
      expect(answers.filter((a) => a.headers.get('idempotent-replayed') !== 'true')).toHaveLength(1);
      expected += amount;
    }
    expect(await balance()).toBe(expected);

    // The same key with another body, concurrently with its first use or after it, on either process.
    const [a, b] = await Promise.all([
      api(first, 'POST', `/sandbox/internal-accounts/${account}/fund`, { amount: 7 }, { 'idempotency-key': 'scale-out-other-body' }),
      api(second, 'POST', `/sandbox/internal-accounts/${account}/fund`, { amount: 8 }, { 'idempotency-key': 'scale-out-other-body' }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const refused = (a.status === 409 ? a : b).json() as Promise<{ code: string }>;
    expect((await refused).code).toBe('CONFLICT');
    expect(await balance()).toBe(expected + (a.status === 200 ? 7 : 8));
  }, 120_000);

  it('SIGTERM during a job that outlasts the grace period: the process exits in time and another process takes the job at once', async () => {
    // The first event delivery after the endpoint is set never gets an answer; every later request does.
    let hung: string | undefined;
    receiver.answer = (webhook) => {
      if (webhook.body.type === 'TEST' || (hung !== undefined && webhook.body.id !== hung)) return { status: 200 };
      if (hung === undefined) {
        hung = webhook.body.id;
        return { status: 200, hang: true };
      }
      return { status: 200 };
    };
    // The second process is away while the delivery starts, so that the first one takes it, and
    // comes back once the first has stopped.
    await second.stop();
    const keys = (await (await api(first, 'GET', '/webhooks/signing-keys')).json()) as { data: Array<{ publicKey: string }> };
    receiver.trust(keys.data.map((k) => k.publicKey));
    expect((await api(first, 'PATCH', '/config', { webhookEndpoint: receiver.url })).status).toBe(200);
    expect((await api(first, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Hung Delivery' })).status).toBe(201);
    await until('a delivery hangs in the first process', () => hung !== undefined);
    const deliveryJob = await handle.db
      .selectFrom('jobs')
      .select(['id', 'status', 'attempts'])
      .where('kind', '=', 'webhook.deliver')
      .where(sql<string>`payload->>'deliveryId'`, '=', hung!.slice('Webhook:'.length))
      .executeTakeFirstOrThrow();
    expect(deliveryJob.status).toBe('running');

    const stopping = performance.now();
    expect(await first.stop()).toBe(0);
    // Bounded by the grace period (and a few seconds to close), not by the hung request's 30 s timeout.
    expect(performance.now() - stopping).toBeLessThan(GRACE_MS + 5_000);
    expect(first.output()).toContain('unfinished jobs released to other processes');
    // Handed back, due at once: not held until its lease runs out.
    expect(await handle.db.selectFrom('jobs').select(['status', 'attempts', 'locked_until']).where('id', '=', deliveryJob.id).executeTakeFirstOrThrow()).toEqual({
      status: 'queued',
      attempts: deliveryJob.attempts,
      locked_until: null,
    });
    second = await startCorridor(env());
    await until('the other process delivers the released webhook', () => receiver.received.filter((w) => w.body.id === hung).length >= 2, 10_000);
    await until(
      'its job is done',
      async () => (await handle.db.selectFrom('jobs').select('status').where('id', '=', deliveryJob.id).executeTakeFirstOrThrow()).status === 'done',
      10_000,
    );
    expect((await handle.db.selectFrom('jobs').select('attempts').where('id', '=', deliveryJob.id).executeTakeFirstOrThrow()).attempts).toBe(deliveryJob.attempts + 1);
  }, 240_000);
});
