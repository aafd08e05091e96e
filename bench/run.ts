/**
 * `npm run bench`: starts Corridor (PostgreSQL when DATABASE_URL is set, else PGlite in a
 * throw-away directory) and a bare node:http baseline, drives each scenario with autocannon
 * (warm-up, then a measured run) and prints one table with the ratio to the baseline.
 * Upload scenarios also report MB/s and the server's peak RSS growth (Linux: VmHWM, reset
 * before each scenario), including 20 concurrent 10 MB uploads.
 * Flow scenarios (wallet auth, quote+execute) run whole multi-request flows, client-side crypto
 * included, from BENCH_FLOW_WORKERS concurrent workers (default 8) over keep-alive node:http
 * connections, and report flows/s, the latency of a whole flow, and per flow the CPU of the
 * server (its background work included), of PostgreSQL and of this process.
 * Environment: BENCH_DURATION (seconds, default 10), BENCH_CONNECTIONS (default 50),
 * BENCH_ONLY (a regular expression: run only the scenarios whose name matches, plus the baseline),
 * BENCH_CPU_PROF (a directory: the Corridor server writes its V8 CPU profile there on exit).
 * Each row also gives the server process's CPU time (user + system, from /proc) per request,
 * with PostgreSQL on this machine that of all its processes, and that of this process (the load
 * generator or the flows' clients, which share the machine with the server).
 * The two scenarios with a target as a share of bare node:http (GET /customers/{id} ≥ 0.30,
 * GET /customers?limit=20 ≥ 0.15) run in three rounds taken in turns with the baseline, and
 * their ratio is to those bare runs (marked * in the table, and printed with the target).
 * The CSV import scenario uploads a file of BENCH_CSV_ROWS rows (default 20,000), waits for the
 * job to finish, and meanwhile reads one customer from 8 paced loops (about 200 reads/s): it
 * reports rows/s and the latency of those reads during the import.
 * Corridor runs compiled (dist/, built by `prebench`). The start-up section (bench/startup.ts)
 * times process start to /readyz 200 on an existing database, through tsx and compiled, on
 * PGlite and (with DATABASE_URL) PostgreSQL. The soak (bench/soak.ts) mixes reads, lists and
 * creates over windows of 3 × BENCH_DURATION seconds from BENCH_SOAK_SEED customers (1,000)
 * until BENCH_SOAK_TARGET (15,000) exist, and reports req/s and p99 per window. On PostgreSQL the
 * bench runs ANALYZE after seeding, as autovacuum would.
 * The ledger scenario (PostgreSQL only, bench/ledger.ts) reports transfers/s beside the
 * single-row-update ceiling of the same run; BENCH_LEDGER_SHARDS sets the fee account's shards.
 * The quote+execute flow (bench/quotes.ts: USD internal account → EUR external account) is a
 * flow scenario; on PostgreSQL its flows/s and p99 are also printed beside that ceiling.
 * The webhook delivery scenario (PostgreSQL only, bench/webhooks.ts, run last) commits
 * BENCH_WEBHOOK_RATE events/s (default 500) to a local receiver and reports events/s delivered
 * and the lag from commit to delivery.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { BASE_PATH } from '../src/config.js';
import { csvImport } from './csv-import.js';
import { grainyCardJpeg, uploadBodies } from './documents.js';
import { analyzeIfPostgres, soak, SOAK_SCENARIO } from './soak.js';
import { STARTUP_SCENARIO, startupTimes } from './startup.js';
import { LEDGER_CLIENTS, ledgerScenario, type LedgerBenchResult } from './ledger.js';
import { benchMasterKey } from './master-key.js';
import { cpuMicros, postgresCpuMicros } from './proc-cpu.js';
import { quoteExecuteFlow } from './quotes.js';
import { emailOtpVerifyFlow, signedRetryFlow, type Call as FlowCall } from './wallet.js';
import { WEBHOOK_SCENARIO, webhookScenario, type WebhookBenchResult } from './webhooks.js';

const root = new URL('../', import.meta.url).pathname;
const duration = Number(process.env.BENCH_DURATION ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const warmup = Math.max(1, Math.round(duration / 5));

type Call = (method: string, path: string, body?: unknown) => Promise<Record<string, unknown>>;

/** A body made afresh for every request (uploads: a different file each time). */
interface BodyMaker {
  contentType: string;
  next: () => Buffer;
  bytesPerRequest: number;
}

interface Scenario {
  name: string;
  target: 'baseline' | 'corridor';
  method?: 'GET' | 'POST';
  /** A path, or one computed from what the scenario needs created first. */
  path: string | ((call: Call) => Promise<string>);
  auth: boolean;
  body?: string;
  bodies?: (call: Call) => Promise<BodyMaker>;
  /** Overrides BENCH_CONNECTIONS (uploads: a few large bodies at a time, as real clients send them). */
  connections?: number;
  /** Instead of running for the configured duration: this many connections sending this many requests, once. */
  burst?: { connections: number; amount: number };
  /** A multi-request flow instead of one request: a factory of workers, each looping over the flow. */
  flow?: (call: FlowCall) => Promise<() => FlowWorker>;
  /** A scenario that measures itself once (no warm-up, no duration): answers its row of the table. */
  once?: (call: FlowCall) => Promise<{ rps: number; p50: number; p99: number; errors: number; note: string }>;
  /**
   * A target as a share of bare node:http (issue 13 §3). Such a scenario is measured in turns with
   * the baseline (RATIO_ROUNDS rounds of each, the duration split between them) and compared
   * with those bare runs: this machine's speed drifts by up to 2× within minutes, which a single
   * bare run at the start would put into the ratio.
   */
  ratioTarget?: number;
  expectStatus: number;
}

const RATIO_ROUNDS = 3;

interface FlowWorker {
  /** Untimed set-up before each flow (e.g. a fresh wallet when the last one is used up). */
  prepare: () => Promise<void>;
  flow: () => Promise<void>;
}

const FLOW_WORKERS = Number(process.env.BENCH_FLOW_WORKERS ?? 8);

/** Runs `workers` loops of the flow for `seconds`; answers flows/s, flows completed and per-flow latency percentiles. */
async function runFlows(makeWorker: () => FlowWorker, seconds: number) {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: FLOW_WORKERS }, async () => {
      const worker = makeWorker();
      while (performance.now() < deadline) {
        try {
          await worker.prepare();
          const t = performance.now();
          await worker.flow();
          latencies.push(performance.now() - t);
        } catch (error) {
          if (++errors === 1) process.stderr.write(`flow failed: ${String(error)}\n`);
        }
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
  return { rps: latencies.length / ((performance.now() - started) / 1000), completed: latencies.length, p50: at(0.5), p99: at(0.99), errors };
}

async function documentUploads(call: Call, jpeg: Buffer): Promise<BodyMaker> {
  const holder = String((await call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Bench Uploader' })).id);
  return { ...uploadBodies(holder, jpeg), bytesPerRequest: jpeg.length };
}

const MiB = 1024 * 1024;

const QUOTE_SCENARIO = `quote+execute flow, USD account → EUR external (${FLOW_WORKERS} workers)`;

const SCENARIOS: Scenario[] = [
  { name: 'bare node:http baseline', target: 'baseline', path: '/', auth: false, expectStatus: 200 },
  { name: 'unauthenticated GET /config (401)', target: 'corridor', path: `${BASE_PATH}/config`, auth: false, expectStatus: 401 },
  { name: 'GET /config', target: 'corridor', path: `${BASE_PATH}/config`, auth: true, expectStatus: 200 },
  { name: 'GET /tokens', target: 'corridor', path: `${BASE_PATH}/tokens`, auth: true, expectStatus: 200 },
  {
    name: 'GET /customers/{id}',
    target: 'corridor',
    path: async (call) => `${BASE_PATH}/customers/${String((await call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Bench Reader' })).id)}`,
    auth: true,
    ratioTarget: 0.3,
    expectStatus: 200,
  },
  {
    name: 'GET /customers?limit=20',
    target: 'corridor',
    path: async (call) => {
      for (let i = 0; i < 100; i++) await call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Bench Listed' });
      await analyzeIfPostgres();
      return `${BASE_PATH}/customers?limit=20`;
    },
    auth: true,
    ratioTarget: 0.15,
    expectStatus: 200,
  },
  {
    name: 'POST /customers',
    target: 'corridor',
    method: 'POST',
    path: `${BASE_PATH}/customers`,
    body: JSON.stringify({ customerType: 'INDIVIDUAL', fullName: 'Bench Writer' }),
    auth: true,
    expectStatus: 201,
  },
  {
    name: 'POST /documents (1 MB JPEG)',
    target: 'corridor',
    method: 'POST',
    path: `${BASE_PATH}/documents`,
    bodies: async (call) => documentUploads(call, await grainyCardJpeg(0.95 * MiB, 1.1 * MiB)),
    connections: 4,
    auth: true,
    expectStatus: 201,
  },
  {
    name: 'POST /documents, 20 concurrent 10 MB',
    target: 'corridor',
    method: 'POST',
    path: `${BASE_PATH}/documents`,
    bodies: async (call) => documentUploads(call, await grainyCardJpeg(9.5 * MiB, 10 * MiB)),
    burst: { connections: 20, amount: 20 },
    auth: true,
    expectStatus: 201,
  },
  { name: `EMAIL_OTP verify flow (${FLOW_WORKERS} workers)`, target: 'corridor', path: '', flow: emailOtpVerifyFlow, auth: true, expectStatus: 200 },
  { name: `signed retry flow, PATCH wallet (${FLOW_WORKERS} workers)`, target: 'corridor', path: '', flow: signedRetryFlow, auth: true, expectStatus: 200 },
  { name: QUOTE_SCENARIO, target: 'corridor', path: '', flow: quoteExecuteFlow, auth: true, expectStatus: 200 },
  {
    name: 'CSV import (rows/s; p50/p99 of GET /customers/{id} meanwhile)',
    target: 'corridor',
    path: '',
    once: (call) => csvImport(call, Number(process.env.BENCH_CSV_ROWS ?? 20_000)),
    auth: true,
    expectStatus: 200,
  },
];

/** Linux: forget the process's peak RSS, so the next reading is the peak of what follows. */
function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

function rssKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) : Number.NaN;
}

/**
 * The flows' HTTP client: node:http on keep-alive connections. fetch (undici) cost the bench
 * process ≈ 1.3–1.6 ms of CPU per quote+execute flow, CPU taken from the server it measures on
 * this 2-core machine; a plain request costs a fraction of that.
 */
const flowAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function jsonCall(port: number, method: string, path: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: '127.0.0.1', port, method, path, agent: flowAgent, headers: { ...headers, ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }) } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          try {
            resolve({ status: response.statusCode!, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> });
          } catch (error) {
            reject(error as Error);
          }
        });
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

/** Corridor's API with `headers`: `flowCall` answers status and body, `call` (set-up) throws on a 4xx or 5xx. */
function corridorCalls(port: number, headers: Record<string, string>): { flowCall: FlowCall; call: Call } {
  const flowCall: FlowCall = async (method, path, body, extra = {}) => {
    // A multipart form goes through fetch (which sets its content type); JSON through node:http.
    if (body instanceof FormData) {
      const response = await fetch(`http://127.0.0.1:${port}${BASE_PATH}${path}`, { method, headers: { ...headers, ...extra }, body });
      const text = await response.text();
      return { status: response.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
    }
    return jsonCall(port, method, `${BASE_PATH}${path}`, { ...headers, ...extra }, body);
  };
  const call: Call = async (method, path, body) => {
    const { status, body: answer } = await flowCall(method, path, body);
    if (status >= 400) throw new Error(`${method} ${path} answered ${status}: ${JSON.stringify(answer)}`);
    return answer;
  };
  return { flowCall, call };
}

/**
 * CPU used from now on (µs): the server process `pid`, PostgreSQL when it runs on this machine
 * (NaN elsewhere), and this process (the load generator or the flows' clients).
 */
function cpuFrom(pid: number): () => { server: number; database: number; client: number } {
  const server = cpuMicros(pid);
  const database = postgresCpuMicros();
  const client = process.cpuUsage();
  return () => {
    const used = process.cpuUsage(client);
    return { server: cpuMicros(pid) - server, database: postgresCpuMicros() - database, client: used.user + used.system };
  };
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Starts a server process and waits until `readyUrl` answers 200. */
async function startProcess(args: string[], env: NodeJS.ProcessEnv, readyUrl: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited with ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error(`${args.join(' ')} did not become ready`);
    const ok = await fetch(readyUrl).then((r) => r.ok, () => false);
    if (ok) return child;
    await new Promise((r) => setTimeout(r, 200));
  }
}

function run(url: string, scenario: Scenario, headers: Record<string, string>, seconds: number, bodies?: BodyMaker) {
  return autocannon({
    url,
    method: scenario.method ?? 'GET',
    ...(scenario.burst ?? { connections: scenario.connections ?? connections, duration: seconds }),
    timeout: 120,
    headers: { ...headers, ...(scenario.body ? { 'content-type': 'application/json' } : {}), ...(bodies ? { 'content-type': bodies.contentType } : {}) },
    ...(scenario.body ? { body: scenario.body } : {}),
    ...(bodies ? { requests: [{ setupRequest: (request) => ({ ...request, body: bodies.next() }) }] } : {}),
  });
}

async function main(): Promise<void> {
  const dataDir = process.env.DATABASE_URL ? undefined : mkdtempSync(join(tmpdir(), 'corridor-bench-'));
  const env: NodeJS.ProcessEnv = {
    ...(dataDir ? { CORRIDOR_DATA_DIR: dataDir } : {}),
    CORRIDOR_MASTER_KEY: benchMasterKey(),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
  };
  const engine = process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite';
  process.stdout.write(`Corridor bench on ${engine}: ${connections} connections, ${warmup}s warm-up + ${duration}s per scenario\n`);

  const created = JSON.parse(
    execFileSync(process.execPath, ['dist/cli.js', 'platforms', 'create', '--environment', 'sandbox', '--name', 'bench', '--json'], {
      cwd: root,
      env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
      encoding: 'utf8',
    }).trim().split('\n').pop()!,
  ) as { platformId: string; clientId: string; clientSecret: string };
  const authorization = `Basic ${Buffer.from(`${created.clientId}:${created.clientSecret}`).toString('base64')}`;

  const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY, 'i') : undefined;
  const startup = !only || only.test(STARTUP_SCENARIO) ? await startupTimes(root, process.env.DATABASE_URL ? env : undefined, freePort) : undefined;

  const basePort = await freePort();
  const baseline = await startProcess(['bench/baseline-server.mjs'], { PORT: String(basePort) }, `http://127.0.0.1:${basePort}/`);
  const corridorPort = await freePort();
  // BENCH_CPU_PROF=<dir>: the server writes a V8 CPU profile there when it stops (open it in Chrome DevTools).
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const corridor = await startProcess(
    [...profile, 'dist/cli.js', 'serve'],
    // The job worker runs in the API process, as in a one-process deployment: the CSV import shares it with the reads it is measured against.
    { ...env, PORT: String(corridorPort), HOST: '127.0.0.1', CORRIDOR_JOBS: 'true', CORRIDOR_JOBS_POLL_MS: '100' },
    `http://127.0.0.1:${corridorPort}/readyz`,
  );

  const notes: string[] = [];
  let ledger: LedgerBenchResult | undefined;
  let webhooks: WebhookBenchResult | undefined;
  const rows: Array<{
    name: string;
    rps: number;
    p50: number;
    p99: number;
    errors: number;
    cpu?: number;
    /** PostgreSQL's CPU per request (µs), when it runs on this machine. */
    databaseCpu?: number;
    /** This process's CPU per request (µs): the load generator, or the flows' HTTP clients. */
    clientCpu?: number;
    mbps?: number;
    rss?: { before: number; peak: number };
    /** Bare node:http's req/s in the rounds taken in turns with this scenario (`ratioTarget`). */
    besideBare?: number;
    ratioTarget?: number;
  }> = [];
  try {
    for (const scenario of SCENARIOS.filter((s) => s.target === 'baseline' || !only || only.test(s.name))) {
      const port = scenario.target === 'baseline' ? basePort : corridorPort;
      const headers: Record<string, string> = scenario.auth ? { authorization } : {};
      const { flowCall, call } = corridorCalls(corridorPort, headers);
      if (scenario.once) {
        const { note, ...result } = await scenario.once(flowCall);
        rows.push({ name: scenario.name, ...result });
        notes.push(note);
        continue;
      }
      if (scenario.flow) {
        const makeWorker = await scenario.flow(flowCall);
        await runFlows(makeWorker, warmup);
        const cpuUsed = cpuFrom(corridor.pid!);
        const { completed, ...flows } = await runFlows(makeWorker, duration);
        const used = cpuUsed();
        // Per flow: the server (its background work included), PostgreSQL, and this process driving the flows.
        rows.push({ name: scenario.name, ...flows, cpu: used.server / (completed || 1), databaseCpu: used.database / (completed || 1), clientCpu: used.client / (completed || 1) });
        continue;
      }
      const path = typeof scenario.path === 'string' ? scenario.path : await scenario.path(call);
      const bodies = scenario.bodies ? await scenario.bodies(call) : undefined;
      const url = `http://127.0.0.1:${port}${path}`;
      if (!scenario.burst) await run(url, scenario, headers, warmup, bodies);
      const rssBefore = rssKiB(corridor.pid!, 'VmRSS');
      const measuresPeak = bodies !== undefined && resetPeakRss(corridor.pid!);
      const serverPid = scenario.target === 'baseline' ? baseline.pid! : corridor.pid!;
      const rounds = scenario.ratioTarget ? RATIO_ROUNDS : 1;
      const results: Array<Awaited<ReturnType<typeof run>>> = [];
      const bareRps: number[] = [];
      const used = { server: 0, database: 0, client: 0 };
      for (let round = 0; round < rounds; round++) {
        if (scenario.ratioTarget) bareRps.push((await run(`http://127.0.0.1:${basePort}/`, SCENARIOS[0]!, {}, duration / rounds)).requests.average);
        const roundUsed = cpuFrom(serverPid);
        results.push(await run(url, scenario, headers, duration / rounds, bodies));
        const spent = roundUsed();
        used.server += spent.server;
        used.database += spent.database;
        used.client += spent.client;
      }
      const total = results.reduce((sum, r) => sum + r.requests.total, 0);
      const unexpected = results
        .flatMap((r) => Object.entries(r.statusCodeStats ?? {}))
        .filter(([status]) => Number(status) !== scenario.expectStatus)
        .reduce((sum, [, stats]) => sum + (stats as { count: number }).count, 0);
      const result = results[0]!;
      const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
      const rps = scenario.burst ? result.requests.total / (result.duration || 1) : mean(results.map((r) => r.requests.average));
      rows.push({
        name: scenario.name,
        rps,
        // Over rounds: the median round's p50, the worst round's p99.
        p50: results.map((r) => r.latency.p50).sort((a, b) => a - b)[Math.floor(results.length / 2)]!,
        p99: Math.max(...results.map((r) => r.latency.p99)),
        errors: unexpected + results.reduce((sum, r) => sum + r.errors, 0),
        cpu: used.server / (total || 1),
        ...(scenario.target === 'baseline' ? {} : { databaseCpu: used.database / (total || 1) }),
        clientCpu: used.client / (total || 1),
        ...(scenario.ratioTarget ? { besideBare: mean(bareRps), ratioTarget: scenario.ratioTarget } : {}),
        ...(bodies ? { mbps: (rps * bodies.bytesPerRequest) / MiB } : {}),
        ...(measuresPeak ? { rss: { before: rssBefore, peak: rssKiB(corridor.pid!, 'VmHWM') } } : {}),
      });
    }
    if (!only || only.test(SOAK_SCENARIO)) {
      notes.push(
        await soak({
          base: `http://127.0.0.1:${corridorPort}`,
          authorization,
          connections,
          windowSeconds: 3 * duration,
          seed: Number(process.env.BENCH_SOAK_SEED ?? 1_000),
          target: Number(process.env.BENCH_SOAK_TARGET ?? 15_000),
          serverPid: corridor.pid,
          warmupSeconds: Number(process.env.BENCH_SOAK_WARMUP ?? 3 * duration),
        }),
      );
    }
    const { call } = corridorCalls(corridorPort, { authorization });
    if (process.env.DATABASE_URL && (!only || only.test(LEDGER_SCENARIO))) {
      const shards = Number(process.env.BENCH_LEDGER_SHARDS ?? 64);
      ledger = await ledgerScenario({ databaseUrl: process.env.DATABASE_URL, platformId: created.platformId, call, warmup, duration, shards });
    }
    // Last: it gives the bench platform a webhook endpoint, so every event after it is delivered too.
    if (process.env.DATABASE_URL && (!only || only.test(WEBHOOK_SCENARIO))) {
      const rate = Number(process.env.BENCH_WEBHOOK_RATE ?? 500);
      webhooks = await webhookScenario({ databaseUrl: process.env.DATABASE_URL, platformId: created.platformId, call, warmup, duration, rate });
    }
  } finally {
    corridor.kill('SIGTERM');
    baseline.kill('SIGTERM');
    await new Promise((r) => corridor.once('exit', r));
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }

  const baselineRps = rows[0]!.rps;
  const header = ['scenario', 'req/s (flows/s)', 'p50 ms', 'p99 ms', 'vs baseline', 'unexpected', 'server CPU µs/req', 'PostgreSQL CPU µs/req', 'bench CPU µs/req', 'MB/s', 'RSS before → peak (MB)'];
  const table = rows.map((r) => [
    r.name,
    r.rps.toFixed(r.rps < 100 ? 1 : 0),
    r.p50.toFixed(1),
    r.p99.toFixed(1),
    `${r.besideBare ? '*' : ''}${((r.rps / (r.besideBare ?? baselineRps)) * 100).toFixed(1)}%`,
    String(r.errors),
    r.cpu === undefined || Number.isNaN(r.cpu) ? '' : r.cpu.toFixed(0),
    r.databaseCpu === undefined || Number.isNaN(r.databaseCpu) ? '' : r.databaseCpu.toFixed(0),
    r.clientCpu === undefined ? '' : r.clientCpu.toFixed(0),
    r.mbps === undefined ? '' : r.mbps.toFixed(1),
    r.rss ? `${(r.rss.before / 1024).toFixed(0)} → ${(r.rss.peak / 1024).toFixed(0)} (+${((r.rss.peak - r.rss.before) / 1024).toFixed(0)})` : '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  process.stdout.write(`\n${line(header)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${table.map(line).join('\n')}\n`);
  const ratios = rows.filter((r) => r.besideBare !== undefined);
  if (ratios.length > 0) {
    process.stdout.write(`\n* against bare node:http measured in turns with the scenario (${RATIO_ROUNDS} rounds of ${(duration / RATIO_ROUNDS).toFixed(1)} s each)\n`);
    for (const r of ratios) {
      const ratio = r.rps / r.besideBare!;
      process.stdout.write(
        `  ${r.name.padEnd(24)} ${r.rps.toFixed(0).padStart(6)} req/s beside bare ${r.besideBare!.toFixed(0).padStart(6)} req/s: ${ratio.toFixed(3)} (target ≥ ${r.ratioTarget!.toFixed(2)}: ${ratio >= r.ratioTarget! ? 'met' : 'NOT met'})\n`,
      );
    }
  }
  for (const note of notes) process.stdout.write(`\n${note}\n`);
  if (startup) process.stdout.write(`\n${startup}\n`);
  if (ledger) printLedger(ledger, rows.find((r) => r.name === QUOTE_SCENARIO));
  else if (!process.env.DATABASE_URL) process.stdout.write(`\n${LEDGER_SCENARIO}: skipped (PostgreSQL only: set DATABASE_URL)\n`);
  if (webhooks) printWebhooks(webhooks);
  else if (!process.env.DATABASE_URL) process.stdout.write(`\n${WEBHOOK_SCENARIO}: skipped (PostgreSQL only: set DATABASE_URL)\n`);
}

function printWebhooks(result: WebhookBenchResult): void {
  const { lag } = result;
  process.stdout.write(
    [
      '',
      `${WEBHOOK_SCENARIO} (${result.rate} events/s offered for ${result.seconds} s)`,
      `  committed ${result.committed} (${result.committedPerSecond.toFixed(0)} events/s), delivered ${result.delivered} (${result.deliveredPerSecond.toFixed(0)} events/s), undelivered ${result.undelivered}, delivered twice ${result.duplicates}`,
      `  lag commit → delivery: p50 ${lag.p50.toFixed(1)} ms, p99 ${lag.p99.toFixed(1)} ms, max ${lag.max.toFixed(1)} ms (target: p99 < 1000 ms at 500 events/s: ${lag.p99 < 1000 && result.undelivered === 0 ? 'met' : 'NOT met'})`,
      '',
    ].join('\n'),
  );
  if (result.undelivered > 0) process.exitCode = 1;
}

const LEDGER_SCENARIO = `ledger: ${LEDGER_CLIENTS} clients, transfer + fee to one platform account`;

function printLedger(result: LedgerBenchResult, quotes?: { rps: number; p50: number; p99: number; errors: number }): void {
  const { transfers, withEvents, ceiling, verify } = result;
  const ratio = (transfers.rps / ceiling.rps) * 100;
  const rowOf = (name: string, r: typeof transfers) =>
    `  ${name.padEnd(58)} ${r.rps.toFixed(0).padStart(7)}/s  p50 ${r.p50.toFixed(1).padStart(6)} ms  p99 ${r.p99.toFixed(1).padStart(6)} ms  client CPU ${r.cpuMicros.toFixed(0).padStart(4)} µs/op${r.serverCpuMicros === undefined ? '' : `  PostgreSQL CPU ${r.serverCpuMicros.toFixed(0).padStart(4)} µs/op`}  errors ${r.errors}`;
  process.stdout.write(
    [
      '',
      `${LEDGER_SCENARIO} (fee account in ${result.shards} shard${result.shards === 1 ? '' : 's'})`,
      rowOf('ceiling: UPDATE … SET n = n + 1 on a private row per client', ceiling),
      rowOf('ledger transfers (A → B + fee)', transfers),
      rowOf('the same, recording BALANCE_UPDATED for both accounts', withEvents),
      `  transfers/s vs ceiling: ${ratio.toFixed(1)}% (target ≥ 50%); with events ${((withEvents.rps / ceiling.rps) * 100).toFixed(1)}%`,
      ...(quotes
        ? [`  ${QUOTE_SCENARIO.padEnd(58)} ${quotes.rps.toFixed(0).padStart(7)}/s  p50 ${quotes.p50.toFixed(1).padStart(6)} ms  p99 ${quotes.p99.toFixed(1).padStart(6)} ms  (target ≥ 300/s; ${((quotes.rps / ceiling.rps) * 100).toFixed(1)}% of the ceiling)  errors ${quotes.errors}`]
        : []),
      `  ledger verify: ${verify.ok ? 'OK' : 'BREACHED'} — ${verify.transactions} transactions, ${verify.balanceRows} balance rows, ${verify.breachCount} breaches`,
      ...verify.breaches.slice(0, 20).map((b) => `    BREACH ${b.check} ${b.subject}: ${b.detail}`),
      '',
    ].join('\n'),
  );
  if (!verify.ok) process.exitCode = 1;
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
