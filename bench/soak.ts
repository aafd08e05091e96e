import autocannon from 'autocannon';
import pg from 'pg';
import { BASE_PATH } from '../src/config.js';
import { cpuMicros } from './proc-cpu.js';

const MIX = ['read', 'read', 'list', 'read', 'read', 'create', 'read', 'list', 'read', 'read'] as const;

export const SOAK_SCENARIO = 'soak: 70 % GET /customers/{id}, 20 % GET /customers?limit=20, 10 % POST /customers';

/**
 * Runs ANALYZE on the bench's PostgreSQL database (nothing on PGlite), as autovacuum would on a
 * production database after a load: this machine's PostgreSQL runs with autovacuum off.
 */
export async function analyzeIfPostgres(): Promise<void> {
  if (!process.env.DATABASE_URL) return;
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    await client.query('analyze');
  } finally {
    await client.end();
  }
}

/** Creates `count` customers through the API, a few at a time; answers their ids. */
export async function seedCustomers(base: string, authorization: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < count) {
        next++;
        const response = await fetch(`${base}${BASE_PATH}/customers`, {
          method: 'POST',
          headers: { authorization, 'content-type': 'application/json' },
          body: JSON.stringify({ customerType: 'INDIVIDUAL', fullName: 'Bench Seed' }),
        });
        const body = (await response.json()) as { id?: string };
        if (response.status !== 201 || !body.id) throw new Error(`seeding answered ${response.status}: ${JSON.stringify(body)}`);
        ids.push(body.id);
      }
    }),
  );
  return ids;
}

/** Per route kind: requests answered and seconds spent, from the server's own /metrics (counters since start). */
type RouteTotals = Record<'read' | 'list' | 'create', { count: number; seconds: number }>;

async function routeTotals(base: string): Promise<{ routes: RouteTotals; queuedJobs: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const routes: RouteTotals = { read: { count: 0, seconds: 0 }, list: { count: 0, seconds: 0 }, create: { count: 0, seconds: 0 } };
  const kindOf = (labels: string) =>
    labels.includes(`route="${BASE_PATH}/customers/:customerId"`) && labels.includes('method="GET"')
      ? 'read'
      : labels.includes(`route="${BASE_PATH}/customers"`)
        ? labels.includes('method="GET"') ? 'list' : labels.includes('method="POST"') ? 'create' : undefined
        : undefined;
  for (const match of text.matchAll(/^corridor_http_request_duration_seconds_(sum|count)\{([^}]*)\} (\S+)$/gm)) {
    const kind = kindOf(match[2]!);
    if (kind) routes[kind][match[1] === 'sum' ? 'seconds' : 'count'] += Number(match[3]);
  }
  const queued = /^corridor_jobs\{status="queued"\} (\d+)$/m.exec(text);
  return { routes, queuedJobs: Number(queued?.[1] ?? 0) };
}

/**
 * PostgreSQL's WAL position (bytes) and checkpoints so far (cluster-wide: on a shared cluster
 * other databases' writes count too); undefined on PGlite. WAL bytes per create show full-page
 * writes: the first change of each page after a checkpoint logs the whole 8 KiB page.
 */
async function walAndCheckpoints(): Promise<{ wal: number; checkpoints: number } | undefined> {
  if (!process.env.DATABASE_URL) return undefined;
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ wal: string; checkpoints: string }>(
      `select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint as wal, (checkpoints_timed + checkpoints_req)::bigint as checkpoints from pg_stat_bgwriter`,
    );
    return { wal: Number(rows[0]!.wal), checkpoints: Number(rows[0]!.checkpoints) };
  } finally {
    await client.end();
  }
}

/** User + system CPU seconds of a process so far (Linux), NaN elsewhere. */
function cpuSeconds(pid: number | undefined): number {
  return pid === undefined ? Number.NaN : cpuMicros(pid) / 1_000_000;
}

interface SoakOptions {
  base: string;
  authorization: string;
  connections: number;
  windowSeconds: number;
  /** Customers at the start. */
  seed: number;
  /** Keep going (at least four windows) until this many customers exist, or twenty windows have run. */
  target: number;
  /** The Corridor server's process id, for its CPU per window. */
  serverPid?: number;
  /** A first window of the same load that is printed but not compared (see soak()). */
  warmupSeconds: number;
}

/**
 * The mixed load of a platform in production, with the table growing under it: 70 % reads by
 * id (of any customer created so far), 20 % first pages of the list, 10 % creates, in windows
 * of `windowSeconds`. Answers a table of req/s and p99 per window and the last window's
 * throughput against the first's (the goal: within 15 %).
 *
 * A warm-up window of the same load runs first and is printed but not compared: the seeding
 * leaves the server cold for this mix (the first create, list and read of each connection's
 * statements, V8 still optimising the create path) and the database with the seeding's writes
 * to absorb. The comparison is between windows of a server that has already served the mix,
 * which is what "does a request cost more as the table grows" asks. Each window also says where
 * its time went — the server's mean time per kind of request, its CPU, and on PostgreSQL the
 * WAL written per create and any checkpoint — so a change between windows can be told apart
 * from the table's growth (bench/README.md).
 */
export async function soak(options: SoakOptions): Promise<string> {
  const ids = await seedCustomers(options.base, options.authorization, options.seed);
  await analyzeIfPostgres();
  const createBody = JSON.stringify({ customerType: 'INDIVIDUAL', fullName: 'Bench Soak' });
  type Window = {
    rps: number;
    p50: number;
    p99: number;
    unexpected: number;
    customers: number;
    ms: Record<keyof RouteTotals, number>;
    cpu: number;
    walPerCreate: number;
    checkpoints: number;
  };
  const unexpectedAnswers = new Map<string, number>();
  const onResponse = (status: number, body: string) => {
    if (status === 201) ids.push((JSON.parse(body) as { id: string }).id);
    else if (status !== 200) {
      const key = `${status} ${body.slice(0, 120)}`;
      unexpectedAnswers.set(key, (unexpectedAnswers.get(key) ?? 0) + 1);
    }
  };
  const window = async (seconds: number): Promise<Window> => {
    const before = await routeTotals(options.base);
    const walBefore = await walAndCheckpoints();
    const cpuBefore = cpuSeconds(options.serverPid);
    const result = await autocannon({
      url: options.base,
      connections: options.connections,
      duration: seconds,
      timeout: 60,
      headers: { authorization: options.authorization, 'content-type': 'application/json' },
      // Each connection cycles through ten requests: seven reads of a random customer, two lists, one create.
      requests: MIX.map((kind) => {
        if (kind === 'read') return { method: 'GET' as const, setupRequest: (request) => ({ ...request, path: `${BASE_PATH}/customers/${ids[Math.floor(Math.random() * ids.length)]}` }), onResponse };
        if (kind === 'list') return { method: 'GET' as const, path: `${BASE_PATH}/customers?limit=20`, onResponse };
        return { method: 'POST' as const, path: `${BASE_PATH}/customers`, body: createBody, onResponse };
      }),
    });
    const cpu = (cpuSeconds(options.serverPid) - cpuBefore) / seconds;
    const after = await routeTotals(options.base);
    const walAfter = await walAndCheckpoints();
    const answered = (kind: keyof RouteTotals) => Math.max(1, after.routes[kind].count - before.routes[kind].count);
    const meanMs = (kind: keyof RouteTotals) => ((after.routes[kind].seconds - before.routes[kind].seconds) / answered(kind)) * 1000;
    const unexpected = Object.entries(result.statusCodeStats ?? {})
      .filter(([status]) => status !== '200' && status !== '201')
      .reduce((sum, [, stats]) => sum + (stats as { count: number }).count, 0);
    return {
      rps: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      unexpected: unexpected + result.errors,
      customers: ids.length,
      ms: { read: meanMs('read'), list: meanMs('list'), create: meanMs('create') },
      cpu,
      walPerCreate: walBefore && walAfter ? (walAfter.wal - walBefore.wal) / answered('create') : Number.NaN,
      checkpoints: walBefore && walAfter ? walAfter.checkpoints - walBefore.checkpoints : Number.NaN,
    };
  };
  const warmup = options.warmupSeconds > 0 ? await window(options.warmupSeconds) : undefined;
  const rows: Window[] = [];
  while (rows.length < 4 || (ids.length < options.target && rows.length < 20)) rows.push(await window(options.windowSeconds));
  const first = rows[0]!;
  const last = rows[rows.length - 1]!;
  const change = ((last.rps - first.rps) / first.rps) * 100;
  // Requests per second of the server's CPU: what a request costs the server, whatever share of
  // the machine it was given (on a shared machine, throughput follows that share).
  const perCpu = (r: Window) => r.rps / r.cpu;
  const costChange = ((perCpu(last) - perCpu(first)) / perCpu(first)) * 100;
  const signed = (n: number) => `${n >= 0 ? '+' : ''}${n.toFixed(1)} %`;
  const line = (label: string, r: Window) =>
    `  ${label.padStart(7)} ${r.rps.toFixed(0).padStart(8)} ${r.p50.toFixed(1).padStart(8)} ${r.p99.toFixed(1).padStart(8)} ${String(r.unexpected).padStart(11)} ${String(r.customers).padStart(10)}` +
    `  ${r.ms.read.toFixed(1).padStart(6)} ${r.ms.list.toFixed(1).padStart(6)} ${r.ms.create.toFixed(1).padStart(7)} ${`${(r.cpu * 100).toFixed(0)} %`.padStart(11)}` +
    ` ${Number.isNaN(perCpu(r)) ? '-'.padStart(13) : perCpu(r).toFixed(0).padStart(13)}` +
    ` ${Number.isNaN(r.walPerCreate) ? '-'.padStart(15) : `${(r.walPerCreate / 1024).toFixed(1)} KiB`.padStart(15)} ${Number.isNaN(r.checkpoints) ? '-' : String(r.checkpoints).padStart(11)}`;
  return [
    `${SOAK_SCENARIO}: ${options.connections} connections, ${options.windowSeconds} s windows after a ${options.warmupSeconds} s warm-up, ${options.seed} customers at the start`,
    '                                                            server mean ms                 req/s per         WAL per',
    '   window    req/s   p50 ms   p99 ms  unexpected  customers    read   list  create  server CPU   server CPU          create  checkpoints',
    ...(warmup ? [line('warm-up', warmup)] : []),
    ...rows.map((r, i) => line(String(i + 1), r)),
    ...[...unexpectedAnswers].map(([answer, count]) => `  unexpected ×${count}: ${answer}`),
    `  last window vs first: ${signed(change)} (goal: within 15 %: ${Math.abs(change) <= 15 ? 'met' : 'NOT met'})`,
    ...(Number.isNaN(costChange) ? [] : [`  requests per second of server CPU, last window vs first: ${signed(costChange)} (a request's cost to the server as the table grew)`]),
  ].join('\n');
}
