import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventCatalogue } from '../../src/app.js';
import { openDatabase, type DbHandle } from '../../src/platform/db/database.js';
import { formatId, parseId } from '../../src/platform/ids.js';
import { BASE, basic, onPostgres } from '../helpers/context.js';
import { type CorridorProcess, createSandboxPlatform, processDatabase, type ProcessDatabase, startCorridor, waitUntil } from '../helpers/process.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

const catalogue = eventCatalogue();
const CUSTOMERS = 120;

/** Calls one server's API as the platform. */
function client(server: () => CorridorProcess, authorization: string) {
  return (method: string, path: string, body?: unknown) =>
    fetch(`http://127.0.0.1:${server().port}${BASE}${path}`, {
      method,
      headers: { authorization, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
}
type Api = ReturnType<typeof client>;

/** Points the platform's webhooks at the receiver, which trusts the platform's published keys. */
async function connect(api: Api, receiver: WebhookReceiver): Promise<void> {
  // Keys first: setting the endpoint sends it a signed TEST at once.
  const keys = (await (await api('GET', '/webhooks/signing-keys')).json()) as { data: Array<{ publicKey: string }> };
  receiver.trust(keys.data.map((k) => k.publicKey));
  expect((await api('PATCH', '/config', { webhookEndpoint: receiver.url })).status).toBe(200);
}

/** Creates customers from four clients at once, each call on the API `apiFor(n)` picks; each emits its own events. */
async function burst(apiFor: (n: number) => Api, count: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < count) {
        const n = next++;
        const response = await apiFor(n)('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: `Burst ${n}`, platformCustomerId: `burst-${n}` });
        expect(response.status).toBe(201);
      }
    }),
  );
}

/** The envelope ids of every catalogued event the platform's changes since `since` recorded: what must be delivered. */
async function expectedIds(handle: DbHandle, platformId: string, since: Date): Promise<Set<string>> {
  const rows = await handle.db.selectFrom('events').select(['id', 'type']).where('platform_id', '=', platformUuid(platformId)).where('created_at', '>=', since).execute();
  return new Set(rows.filter((r) => catalogue.has(r.type)).map((r) => formatId('Webhook', r.id)));
}

function platformUuid(platformId: string): string {
  return parseId('Platform', platformId)!;
}

/** Whether the platform's deliveries are all acknowledged, their attempts recorded. */
async function allDelivered(handle: DbHandle, platformId: string): Promise<boolean> {
  const open = await handle.db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('platform_id', '=', platformUuid(platformId))
    .where('kind', '=', 'EVENT')
    .where('status', '<>', 'SUCCEEDED')
    .execute();
  return open.length === 0;
}

const until = (what: string, done: () => boolean | Promise<boolean>, ms = 180_000) => waitUntil(what, done, ms);

/**
 * Issue 16 §3 and §9 across real processes on one PostgreSQL database, with a real node:http
 * receiver that verifies every X-Service-Signature against the platform's published key.
 */
describe.runIf(onPostgres)('webhook delivery by corridor serve processes', () => {
  let database: ProcessDatabase;
  let handle: DbHandle;
  let receiver: WebhookReceiver | undefined;
  const servers: CorridorProcess[] = [];
  beforeAll(async () => {
    database = await processDatabase('webhooks');
    handle = await openDatabase({ databaseUrl: database.env.DATABASE_URL!, poolSize: 2 });
  });
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.stop()));
    await receiver?.close();
  });
  afterAll(async () => {
    await handle.close();
    await database.cleanup();
  });

  it('delivers every event after the server is killed with SIGKILL mid-delivery: none lost, every signature valid', async () => {
    const created = await createSandboxPlatform(database.env);
    const authorization = basic(created.clientId, created.clientSecret);
    // The dead process's deliveries come back when their leases run out: 5 s here, not a minute.
    const env = { ...database.env, CORRIDOR_JOBS: 'true', CORRIDOR_JOBS_POLL_MS: '50', CORRIDOR_JOBS_LEASE_MS: '5000' };
    receiver = await WebhookReceiver.start();
    // A slow endpoint (8 answers a second at most): the burst is still being delivered, some
    // requests in flight, when the server dies, however slowly the burst was made.
    receiver.answer = () => ({ status: 200, delayMs: 1000 });
    let server = await startCorridor(env);
    servers.push(server);
    const api = client(() => server, authorization);
    const since = new Date();
    await connect(api, receiver);
    await burst(() => api, CUSTOMERS);
    const expected = await expectedIds(handle, created.platformId, since);
    expect(expected.size).toBeGreaterThanOrEqual(2 * CUSTOMERS);
    const receivedIds = () => new Set(receiver!.received.map((w) => w.body.id).filter((id) => expected.has(id)));
    await until('a first share of the burst is delivered', () => receivedIds().size >= 20);
    expect(await server.stop('SIGKILL')).toBeNull();
    servers.splice(0);
    const atKill = receivedIds().size;
    // The kill came mid-delivery: most of the burst had not reached the receiver.
    expect(atKill).toBeLessThan(expected.size);

    receiver.answer = () => ({ status: 200 });
    server = await startCorridor(env);
    servers.push(server);
    // Jobs the dead process held come back when their lease runs out.
    await until('every event is delivered', () => receivedIds().size === expected.size);
    await until('every delivery is logged as delivered', () => allDelivered(handle, created.platformId));
    const ofBurst = receiver.received.filter((w) => expected.has(w.body.id));
    expect(ofBurst.every((w) => w.verified)).toBe(true);
    expect(receiver.received.every((w) => w.verified)).toBe(true);
    expect(receiver.received.filter((w) => !expected.has(w.body.id))).toEqual([]);
    // At least once: an event whose POST was answered but whose attempt the kill kept from being
    // recorded is sent again, with the same id for the receiver to de-duplicate.
    const duplicates = ofBurst.length - expected.size;
    console.info(`SIGKILL test: ${expected.size} events, ${atKill} delivered before the kill, ${duplicates} delivered twice (at least once)`);
    const delivered = await handle.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'event_type', 'created_at'])
      .where('platform_id', '=', platformUuid(created.platformId))
      .where('kind', '=', 'EVENT')
      .execute();
    expect(delivered.filter((d) => !expected.has(formatId('Webhook', d.id)))).toEqual([]);
    expect(delivered).toHaveLength(expected.size);
  }, 300_000);

  it('two processes on one database share the deliveries and send each event exactly once', async () => {
    const created = await createSandboxPlatform(database.env);
    const authorization = basic(created.clientId, created.clientSecret);
    // Info level: each process logs the attempts it made ('webhook attempt', with the webhook id).
    const env = { ...database.env, CORRIDOR_JOBS: 'true', CORRIDOR_JOBS_POLL_MS: '50', LOG_LEVEL: 'info' };
    receiver = await WebhookReceiver.start();
    // Slow enough that deliveries pile up and both processes' workers find some to claim.
    receiver.answer = () => ({ status: 200, delayMs: 100 });
    const [first, second] = await Promise.all([startCorridor(env), startCorridor(env)]);
    servers.push(first!, second!);
    const apis = [client(() => first!, authorization), client(() => second!, authorization)];
    const since = new Date();
    await connect(apis[0]!, receiver);
    await burst((n) => apis[n % 2]!, CUSTOMERS);
    const expected = await expectedIds(handle, created.platformId, since);
    expect(expected.size).toBeGreaterThanOrEqual(2 * CUSTOMERS);
    const ofBurst = () => receiver!.received.filter((w) => expected.has(w.body.id));
    await until('every event is delivered', () => new Set(ofBurst().map((w) => w.body.id)).size === expected.size);
    await until('every delivery is logged as delivered', () => allDelivered(handle, created.platformId));
    // Exactly once at the receiver, every signature valid.
    expect(ofBurst()).toHaveLength(expected.size);
    expect(receiver.received).toHaveLength(expected.size);
    expect(receiver.received.every((w) => w.verified)).toBe(true);
    // One attempt per delivery in the log: neither process attempted what the other did.
    const attempts = await handle.db
      .selectFrom('webhook_attempts')
      .select(['delivery_id', 'number', 'outcome'])
      .where('platform_id', '=', platformUuid(created.platformId))
      .where('delivery_id', 'in', [...expected].map((id) => id.slice('Webhook:'.length)))
      .execute();
    expect(attempts).toHaveLength(expected.size);
    expect(attempts.every((a) => a.number === 1 && a.outcome === 'SUCCEEDED')).toBe(true);

    // Who sent what: each process's log names the webhooks it attempted.
    const attemptedBy = (server: CorridorProcess) =>
      new Set(
        server
          .output()
          .split('\n')
          .filter((line) => line.includes('"webhook attempt"'))
          .map((line) => (JSON.parse(line) as { webhookId: string }).webhookId)
          .filter((id) => expected.has(id)),
      );
    // Logs are written in batches: wait until both have written every attempt.
    await until('both logs hold every attempt', () => attemptedBy(first!).size + attemptedBy(second!).size >= expected.size, 10_000);
    const [byFirst, bySecond] = [attemptedBy(first!), attemptedBy(second!)];
    expect(byFirst.size + bySecond.size).toBe(expected.size);
    expect([...byFirst].filter((id) => bySecond.has(id))).toEqual([]);
    expect(byFirst.size).toBeGreaterThan(0);
    expect(bySecond.size).toBeGreaterThan(0);
    console.info(`two processes: ${expected.size} events, ${byFirst.size} delivered by one, ${bySecond.size} by the other`);
  }, 300_000);
});
