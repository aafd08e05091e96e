/**
 * The webhook delivery scenario of `npm run bench` (PostgreSQL only, issue 16 §9): events are
 * committed at a steady rate, each on its own (`recordEvents`, the transactional outbox: the
 * row, then the NOTIFY that wakes the workers), while a local node:http receiver acknowledges
 * every webhook. Reported: events/s delivered, and the lag from each event's COMMIT returning
 * to its webhook arriving (p50/p99/max), plus any event not delivered or delivered twice.
 * Target: lag p99 under 1 s at 500 events/s.
 */
import { createServer, type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { systemClock } from '../src/platform/clock.js';
import { openDatabase } from '../src/platform/db/database.js';
import { recordEvents } from '../src/platform/outbox.js';

export const WEBHOOK_SCENARIO = 'webhook delivery: events committed at a steady rate → local receiver';

type Call = (method: string, path: string, body?: unknown) => Promise<Record<string, unknown>>;

export interface WebhookBenchResult {
  rate: number;
  seconds: number;
  committed: number;
  /** The rate the events were committed at: below `rate` when this process or the database could not keep up. */
  committedPerSecond: number;
  delivered: number;
  deliveredPerSecond: number;
  lag: { p50: number; p99: number; max: number };
  undelivered: number;
  duplicates: number;
}

/** How long to wait after the last commit for the stragglers before counting them undelivered. */
const DRAIN_MS = 30_000;

/** A receiver that acknowledges every webhook and notes when each id arrived. */
async function receiver(arrivals: Map<string, number>, counts: { duplicates: number }): Promise<{ server: Server; url: string }> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const at = performance.now();
      const { id } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string };
      const uuid = id.slice('Webhook:'.length);
      if (arrivals.has(uuid)) counts.duplicates++;
      else arrivals.set(uuid, at);
      response.writeHead(200, { 'content-length': '0' }).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { server, url: `http://127.0.0.1:${port}/webhooks` };
}

/** A payload of the size and shape of INTERNAL_ACCOUNT.BALANCE_UPDATED. */
function payload(n: number) {
  return {
    id: `InternalAccount:${randomUUID()}`,
    customerId: `Customer:${randomUUID()}`,
    type: 'INTERNAL_FIAT',
    status: 'ACTIVE',
    balance: { amount: 100_000 + n, currency: { code: 'USD', name: 'United States dollar', symbol: '$', decimals: 2 } },
    totalBalance: { amount: 100_000 + n, currency: { code: 'USD', name: 'United States dollar', symbol: '$', decimals: 2 } },
    createdAt: new Date().toISOString(),
    updatedAt: new Date().toISOString(),
  };
}

const at = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

export async function webhookScenario(options: {
  databaseUrl: string;
  platformId: string;
  call: Call;
  warmup: number;
  duration: number;
  rate: number;
}): Promise<WebhookBenchResult> {
  const platformUuid = options.platformId.slice('Platform:'.length);
  const arrivals = new Map<string, number>();
  const counts = { duplicates: 0 };
  const { server, url } = await receiver(arrivals, counts);
  await options.call('PATCH', '/config', { webhookEndpoint: url });
  const handle = await openDatabase({ databaseUrl: options.databaseUrl, poolSize: 16 });
  try {
    /** Commits `rate` events a second for `seconds`, each in its own transaction; answers each id's commit time. */
    const commitAtRate = async (seconds: number): Promise<{ committed: Map<string, number>; perSecond: number }> => {
      const committed = new Map<string, number>();
      const total = Math.round(options.rate * seconds);
      const started = performance.now();
      const pending: Array<Promise<void>> = [];
      let sent = 0;
      while (sent < total) {
        const due = Math.min(total, Math.floor(((performance.now() - started) * options.rate) / 1000) + 1);
        for (; sent < due; sent++) {
          const n = sent;
          pending.push(
            // Outside a transaction: the insert commits, then the NOTIFY goes (two round trips, not four).
            recordEvents(handle.db, systemClock, [{ platformId: platformUuid, type: 'INTERNAL_ACCOUNT.BALANCE_UPDATED', resourceId: `bench-${n}`, data: payload(n) }]).then(([id]) => {
              committed.set(id!, performance.now());
            }),
          );
        }
        await new Promise((r) => setTimeout(r, 1));
      }
      await Promise.all(pending);
      return { committed, perSecond: committed.size / ((performance.now() - started) / 1000) };
    };
    const drain = async (ids: Iterable<string>) => {
      const deadline = performance.now() + DRAIN_MS;
      const waiting = [...ids];
      while (performance.now() < deadline && waiting.some((id) => !arrivals.has(id))) await new Promise((r) => setTimeout(r, 50));
    };

    await drain((await commitAtRate(options.warmup)).committed.keys());
    const duplicatesBefore = counts.duplicates;
    const { committed, perSecond } = await commitAtRate(options.duration);
    await drain(committed.keys());

    const lags: number[] = [];
    let first = Number.POSITIVE_INFINITY;
    let last = 0;
    for (const [id, committedAt] of committed) {
      const arrived = arrivals.get(id);
      if (arrived === undefined) continue;
      // The webhook may arrive before COMMIT's answer reaches this process: that is no lag.
      lags.push(Math.max(0, arrived - committedAt));
      first = Math.min(first, committedAt);
      last = Math.max(last, arrived);
    }
    lags.sort((a, b) => a - b);
    return {
      rate: options.rate,
      seconds: options.duration,
      committed: committed.size,
      committedPerSecond: perSecond,
      delivered: lags.length,
      deliveredPerSecond: lags.length / ((last - first) / 1000),
      lag: { p50: at(lags, 0.5), p99: at(lags, 0.99), max: lags[lags.length - 1] ?? Number.NaN },
      undelivered: committed.size - lags.length,
      duplicates: counts.duplicates - duplicatesBefore,
    };
  } finally {
    await handle.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}
