/**
 * A/B rounds of the authenticated reads between two builds of Corridor, on a shared machine:
 * `tsx bench/ab.ts <dist A> <dist B>` (each a directory holding a built cli.js, e.g. a copy of
 * `dist/` from before a change kept under the repository so it finds node_modules and
 * migrations). Both builds serve at once from the same PostgreSQL database (DATABASE_URL) beside
 * the bare node:http baseline; each round measures bare, A and B in turn (the order reversed
 * every other round), and the table gives medians of req/s ÷ bare and of each server's CPU
 * (user + system from /proc) per request. Other processes' load moves req/s a lot from round to
 * round; CPU per request much less, and alternating rounds expose both builds to the same load.
 * When PostgreSQL runs on this machine, each build's PostgreSQL CPU per request is given too (its
 * backends found by application_name, their CPU read from /proc): a change can move work from
 * Node into SQL, which lowers the server's CPU while the machine does more per request. The build
 * in place A has measured cheaper more often than not (bench/README.md, "The list's CPU by perf"):
 * run a comparison with the builds in both places.
 * Environment: AB_ROUNDS (default 6), AB_SECONDS per measurement (default 4), BENCH_CONNECTIONS
 * (default 32), AB_ONLY (a regular expression over the scenario names).
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { BASE_PATH } from '../src/config.js';
import { benchMasterKey } from './master-key.js';
import { processCpu } from './proc-cpu.js';
import { analyzeIfPostgres } from './soak.js';

const root = new URL('../', import.meta.url).pathname;
const rounds = Number(process.env.AB_ROUNDS ?? 6);
const seconds = Number(process.env.AB_SECONDS ?? 4);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);

/** User + system and system time (µs) of a process so far. */
function cpuMicros(pid: number): { total: number; system: number } {
  const { user, system } = processCpu(pid);
  return { total: user + system, system };
}

/** Each build's connections name themselves (application_name), so its PostgreSQL backends can be found. */
const applicationName = (build: string) => `corridor-ab-${build}`;

/** CPU (µs) used so far by the PostgreSQL backends of one build; undefined when they are not processes of this machine. */
async function backendCpu(admin: pg.Client, build: string): Promise<number | undefined> {
  const { rows } = await admin.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [applicationName(build)]);
  let sum = 0;
  for (const { pid } of rows) {
    try {
      sum += cpuMicros(pid).total;
    } catch {
      return undefined;
    }
  }
  return sum;
}

async function freePort(): Promise<number> {
  return new Promise((done) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

async function start(args: string[], env: NodeJS.ProcessEnv, readyUrl: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  for (const deadline = Date.now() + 120_000; ; ) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited with ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error(`${args.join(' ')} did not become ready`);
    if (await fetch(readyUrl).then((r) => r.ok, () => false)) return child;
    await new Promise((r) => setTimeout(r, 200));
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const [distA, distB] = process.argv.slice(2).map((d) => resolve(d));
  if (!distA || !distB || !process.env.DATABASE_URL) throw new Error('usage: DATABASE_URL=… tsx bench/ab.ts <dist A> <dist B>');
  const env = { CORRIDOR_MASTER_KEY: benchMasterKey(), LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' };
  const created = JSON.parse(
    execFileSync(process.execPath, [`${distA}/cli.js`, 'platforms', 'create', '--environment', 'sandbox', '--name', 'ab', '--json'], {
      cwd: root,
      env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
      encoding: 'utf8',
    }).trim().split('\n').pop()!,
  ) as { clientId: string; clientSecret: string };
  const authorization = `Basic ${Buffer.from(`${created.clientId}:${created.clientSecret}`).toString('base64')}`;

  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  const servers: Array<{ name: string; port: number; child: ChildProcess }> = [];
  try {
    const barePort = await freePort();
    servers.push({ name: 'bare', port: barePort, child: await start(['bench/baseline-server.mjs'], { PORT: String(barePort) }, `http://127.0.0.1:${barePort}/`) });
    for (const [name, dist] of [['A', distA], ['B', distB]] as const) {
      const port = await freePort();
      const databaseUrl = new URL(process.env.DATABASE_URL);
      databaseUrl.searchParams.set('application_name', applicationName(name));
      const serverEnv = { ...env, DATABASE_URL: databaseUrl.href, PORT: String(port), HOST: '127.0.0.1', CORRIDOR_JOBS: 'true', CORRIDOR_JOBS_POLL_MS: '100' };
      servers.push({ name, port, child: await start([`${dist}/cli.js`, 'serve'], serverEnv, `http://127.0.0.1:${port}/readyz`) });
    }
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`http://127.0.0.1:${servers[1]!.port}${BASE_PATH}${path}`, {
        method,
        headers: { authorization, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return (await response.json()) as Record<string, unknown>;
    };
    const reader = String((await call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'AB Reader' })).id);
    for (let i = 0; i < 100; i++) await call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'AB Listed' });
    await analyzeIfPostgres();

    const only = process.env.AB_ONLY ? new RegExp(process.env.AB_ONLY, 'i') : undefined;
    const scenarios = [
      { name: 'GET /customers/{id}', path: `${BASE_PATH}/customers/${reader}` },
      { name: 'GET /customers?limit=20', path: `${BASE_PATH}/customers?limit=20` },
    ].filter((s) => !only || only.test(s.name));
    const measure = async (server: (typeof servers)[number], path: string, duration: number) => {
      const before = cpuMicros(server.child.pid!);
      const postgresBefore = server.name === 'bare' ? undefined : await backendCpu(admin, server.name);
      const result = await autocannon({
        url: `http://127.0.0.1:${server.port}${server.name === 'bare' ? '/' : path}`,
        connections,
        duration,
        headers: server.name === 'bare' ? {} : { authorization },
      });
      const bad = result.non2xx + result.errors;
      if (bad > 0) throw new Error(`${server.name} ${path}: ${bad} unexpected answers`);
      const after = cpuMicros(server.child.pid!);
      const postgresAfter = postgresBefore === undefined ? undefined : await backendCpu(admin, server.name);
      const n = result.requests.total;
      return {
        rps: result.requests.average,
        cpu: (after.total - before.total) / n,
        system: (after.system - before.system) / n,
        postgres: postgresAfter === undefined ? undefined : (postgresAfter - postgresBefore!) / n,
      };
    };
    type Measured = Awaited<ReturnType<typeof measure>>;
    const describe = (m: Measured) =>
      `${m.rps.toFixed(0)}/s ${m.cpu.toFixed(0)} µs (system ${m.system.toFixed(0)})${m.postgres === undefined ? '' : ` + PostgreSQL ${m.postgres.toFixed(0)} µs`}`;
    for (const scenario of scenarios) {
      for (const server of servers) await measure(server, scenario.path, 1);
      const ratios: Record<string, number[]> = { A: [], B: [] };
      const all: Record<string, Measured[]> = { bare: [], A: [], B: [] };
      for (let round = 0; round < rounds; round++) {
        const order = round % 2 === 0 ? servers : [...servers].reverse();
        const got: Record<string, Measured> = {};
        for (const server of order) got[server.name] = await measure(server, scenario.path, seconds);
        for (const name of ['A', 'B']) ratios[name]!.push(got[name]!.rps / got.bare!.rps);
        for (const name of ['bare', 'A', 'B']) all[name]!.push(got[name]!);
        process.stdout.write(`${scenario.name} round ${round + 1}: bare ${describe(got.bare!)}, A ${describe(got.A!)}, B ${describe(got.B!)}\n`);
      }
      const cpu = (name: string) => median(all[name]!.map((m) => m.cpu)).toFixed(0);
      const postgres = (name: string) => {
        const values = all[name]!.map((m) => m.postgres);
        return values.includes(undefined) ? 'unknown' : `${median(values as number[]).toFixed(0)} µs`;
      };
      process.stdout.write(
        `${scenario.name}: median of ${rounds} rounds — ÷ bare: A ${median(ratios.A!).toFixed(3)}, B ${median(ratios.B!).toFixed(3)}; ` +
          `server CPU per request: bare ${cpu('bare')} µs, A ${cpu('A')} µs, B ${cpu('B')} µs; PostgreSQL CPU per request: A ${postgres('A')}, B ${postgres('B')}\n`,
      );
    }
  } finally {
    for (const { child } of servers) child.kill('SIGTERM');
    await admin.end();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`ab failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
