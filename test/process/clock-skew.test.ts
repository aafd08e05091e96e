import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DbHandle } from '../../src/platform/db/database.js';
import { formatId, parseId } from '../../src/platform/ids.js';
import { BASE, basic, onPostgres } from '../helpers/context.js';
import { type CorridorProcess, createSandboxPlatform, processDatabase, type ProcessDatabase, startCorridor, waitUntil } from '../helpers/process.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

/** How far the second process's clock runs ahead: a VM whose clock drifted for a while. */
const SKEW_MS = 5_000;
const SKEWED_CLOCK = pathToFileURL(new URL('../helpers/skewed-clock.mjs', import.meta.url).pathname).href;

/** Environment that starts a process whose clock reads `ms` ahead of the host's and the database's (test/helpers/skewed-clock.mjs). */
function skewedClock(ms: number): Record<string, string> {
  return { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${SKEWED_CLOCK}`.trim(), CORRIDOR_TEST_CLOCK_SKEW_MS: String(ms) };
}

const until = (what: string, done: () => boolean | Promise<boolean>, ms = 120_000) => waitUntil(what, done, ms, 50);

/**
 * DESIGN.md §8 on hosts whose clocks disagree: processes on one PostgreSQL database, one of them
 * seconds ahead of the other and of the database. What holds for one process must hold across
 * them whatever their clocks read. Each test goes on from the one before.
 */
describe.runIf(onPostgres)('processes whose clocks differ by seconds', () => {
  let database: ProcessDatabase;
  let handle: DbHandle;
  let receiver: WebhookReceiver;
  let platformUuid: string;
  let authorization: string;
  let onTime: CorridorProcess;
  let ahead: CorridorProcess;
  // Short leases (renewed every 1.25 s), as a deployment may configure them: the skew is a whole lease.
  const env = () => ({ ...database.env, CORRIDOR_JOBS: 'true', CORRIDOR_JOBS_POLL_MS: '50', CORRIDOR_JOBS_LEASE_MS: '5000', CORRIDOR_WEBHOOK_TIMEOUT_MS: '2500' });
  const api = (server: CorridorProcess, method: string, path: string, body?: unknown) =>
    fetch(`http://127.0.0.1:${server.port}${BASE}${path}`, {
      method,
      headers: { authorization, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const createCustomers = async (from: (n: number) => CorridorProcess, prefix: string, count: number) => {
    for (let n = 0; n < count; n++) {
      const response = await api(from(n), 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: `${prefix} ${n}`, platformCustomerId: `${prefix}-${n}` });
      expect(response.status).toBe(201);
    }
  };
  const unpublished = async () => (await handle.db.selectFrom('events').select('id').where('platform_id', '=', platformUuid).where('published_at', 'is', null).execute()).length;
  /** The webhook ids of the platform's event deliveries, once every event it recorded is relayed. */
  const deliveries = async () => {
    await until('every event is relayed', async () => (await unpublished()) === 0);
    const rows = await handle.db.selectFrom('webhook_deliveries').select('id').where('platform_id', '=', platformUuid).where('kind', '=', 'EVENT').execute();
    return new Set(rows.map((d) => formatId('Webhook', d.id)));
  };
  const allSucceeded = async () =>
    (await handle.db.selectFrom('webhook_deliveries').select('id').where('platform_id', '=', platformUuid).where('kind', '=', 'EVENT').where('status', '<>', 'SUCCEEDED').execute()).length === 0;
  const deliveryJobs = () => handle.db.selectFrom('jobs').select(['id', 'attempts']).where('platform_id', '=', platformUuid).where('kind', '=', 'webhook.deliver').execute();

  beforeAll(async () => {
    database = await processDatabase('clockskew');
    handle = await openDatabase({ databaseUrl: database.env.DATABASE_URL!, poolSize: 2 });
    receiver = await WebhookReceiver.start();
  });
  afterAll(async () => {
    await Promise.all([onTime?.stop(), ahead?.stop()]);
    await receiver?.close();
    await handle?.close();
    await database?.cleanup();
  });

  it('a process whose clock is ahead takes no job over from a process that is still running it: each webhook is sent once', async () => {
    const created = await createSandboxPlatform(database.env);
    platformUuid = parseId('Platform', created.platformId)!;
    authorization = basic(created.clientId, created.clientSecret);
    // Each delivery takes its worker 1.5 s: a lease judged on the skewed clock has run out long before.
    receiver.answer = () => ({ status: 200, delayMs: 1_500 });
    [onTime, ahead] = await Promise.all([startCorridor(env()), startCorridor({ ...env(), ...skewedClock(SKEW_MS) })]);

    // The second process's clock does run ahead: what it creates is dated seconds in the future.
    const probe = await api(ahead, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Probe', platformCustomerId: 'probe' });
    expect(probe.status).toBe(201);
    expect(Date.parse(((await probe.json()) as { createdAt: string }).createdAt) - Date.now()).toBeGreaterThan(SKEW_MS - 1_000);
    // Its events go to no endpoint: there is none yet.
    await until('the probe’s events are relayed', async () => (await unpublished()) === 0);

    const keys = (await (await api(onTime, 'GET', '/webhooks/signing-keys')).json()) as { data: Array<{ publicKey: string }> };
    receiver.trust(keys.data.map((k) => k.publicKey));
    expect((await api(onTime, 'PATCH', '/config', { webhookEndpoint: receiver.url })).status).toBe(200);
    // Events made by both processes, delivered by both.
    await createCustomers((n) => (n % 2 ? ahead : onTime), 'skew', 12);
    const expected = await deliveries();
    expect(expected.size).toBeGreaterThanOrEqual(12);
    const received = () => receiver.received.map((w) => w.body.id).filter((id) => expected.has(id));
    await until('every event is delivered', () => new Set(received()).size === expected.size);
    await until('every delivery is recorded', allSucceeded);
    // Once each: no worker took a delivery over while the one that claimed it was sending it.
    expect(received().filter((id, i, all) => all.indexOf(id) !== i)).toEqual([]);
    expect((await deliveryJobs()).filter((j) => j.attempts !== 1)).toEqual([]);
  }, 300_000);

  it('the jobs of a process whose clock is ahead go to the other process once it died and their leases ran out', async () => {
    // Only the process ahead works: it holds every delivery when it is killed.
    expect(await onTime.stop()).toBe(0);
    const before = new Set(receiver.received.map((w) => w.body.id));
    await createCustomers(() => ahead, 'dies', 6);
    const expected = new Set([...(await deliveries())].filter((id) => !before.has(id)));
    const received = () => receiver.received.map((w) => w.body.id).filter((id) => expected.has(id));
    // Killed while the receiver holds its first delivery.
    await until('a first delivery is under way', () => received().length > 0);
    expect(await ahead.stop('SIGKILL')).toBeNull();

    receiver.answer = () => ({ status: 200 });
    onTime = await startCorridor(env());
    await until('every event is delivered', () => new Set(received()).size === expected.size);
    await until('every delivery is recorded', allSucceeded);
    // The killed process's runs were taken over, on their second attempt.
    expect((await deliveryJobs()).filter((j) => j.attempts === 2).length).toBeGreaterThan(0);
  }, 300_000);
});
