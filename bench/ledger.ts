/**
 * The ledger scenario of `npm run bench` (PostgreSQL only): 32 clients, each moving money back
 * and forth between its own two internal accounts with a fee to the platform's one fee account,
 * each transfer its own database transaction: through the ledger alone (the figure the
 * hot-account design is judged by), and through the app's ledger, which also records
 * BALANCE_UPDATED for both accounts. Beside it, in the same run and on the same pool, the ceiling: each
 * client's one-statement transaction `UPDATE … SET n = n + 1` on a private row. The two take
 * turns in three rounds each. Afterwards the ledger invariants are verified for the bench platform.
 */
import { sql } from 'kysely';
import { createAccountsLedger } from '../src/modules/internal-accounts/index.js';
import { Ledger, verifyLedger, type LedgerAccountRef, type VerifyReport } from '../src/modules/ledger/index.js';
import { systemClock } from '../src/platform/clock.js';
import { openDatabase, type Db } from '../src/platform/db/database.js';
import { withTx } from '../src/platform/db/tx.js';
import { cpuMicros } from './proc-cpu.js';

export const LEDGER_CLIENTS = 32;

type Call = (method: string, path: string, body?: unknown) => Promise<Record<string, unknown>>;

export interface LedgerBenchResult {
  /** The ledger alone: what the hot-account design is judged by. */
  transfers: Throughput;
  /** The same through the app's ledger, which also records BALANCE_UPDATED for both accounts. */
  withEvents: Throughput;
  ceiling: Throughput;
  shards: number;
  verify: VerifyReport;
}

interface Throughput {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU time of this (client) process per operation, µs: what the Node side costs. */
  cpuMicros: number;
  /** CPU time of the PostgreSQL backends serving the bench's pool per operation, µs (Linux, local server only). */
  serverCpuMicros?: number;
}

/** The bench pool's connections name themselves, so their PostgreSQL backends can be found. */
const APPLICATION_NAME = 'corridor-bench-ledger';

/** CPU time (µs) used so far by each PostgreSQL backend of the bench's pool, read from /proc; empty elsewhere. */
async function backendCpu(db: Db): Promise<Map<number, number>> {
  const { rows } = await sql<{ pid: number }>`select pid from pg_stat_activity where application_name = ${APPLICATION_NAME}`.execute(db);
  const cpu = new Map<number, number>();
  for (const { pid } of rows) {
    const micros = cpuMicros(pid);
    if (Number.isNaN(micros)) return new Map();
    cpu.set(pid, micros);
  }
  return cpu;
}

/** Runs `clients` loops of `work(client)` for `seconds`; answers operations/s and latency percentiles. */
async function loop(db: Db, clients: number, seconds: number, work: (client: number, i: number) => Promise<void>): Promise<Throughput> {
  const serverBefore = await backendCpu(db);
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const cpu = process.cpuUsage();
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let i = 0; performance.now() < deadline; i++) {
        const t = performance.now();
        try {
          await work(client, i);
          latencies.push(performance.now() - t);
        } catch (error) {
          if (++errors === 1) process.stderr.write(`ledger bench: ${String(error)}\n`);
        }
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  const serverAfter = await backendCpu(db);
  let serverUsed = 0;
  for (const [pid, micros] of serverAfter) serverUsed += micros - (serverBefore.get(pid) ?? micros);
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
  return {
    rps: latencies.length / ((performance.now() - started) / 1000),
    p50: at(0.5),
    p99: at(0.99),
    errors,
    cpuMicros: (used.user + used.system) / Math.max(1, latencies.length),
    ...(serverAfter.size > 0 ? { serverCpuMicros: serverUsed / Math.max(1, latencies.length) } : {}),
  };
}

const ROUNDS = 3;

/** Rounds of equal length: mean rate, worst percentiles, all errors. */
function combine(rounds: Throughput[]): Throughput {
  return {
    rps: rounds.reduce((sum, r) => sum + r.rps, 0) / rounds.length,
    p50: Math.max(...rounds.map((r) => r.p50)),
    p99: Math.max(...rounds.map((r) => r.p99)),
    errors: rounds.reduce((sum, r) => sum + r.errors, 0),
    cpuMicros: rounds.reduce((sum, r) => sum + r.cpuMicros, 0) / rounds.length,
    ...(rounds.every((r) => r.serverCpuMicros !== undefined) ? { serverCpuMicros: rounds.reduce((sum, r) => sum + r.serverCpuMicros!, 0) / rounds.length } : {}),
  };
}

async function openAccount(call: Call, n: number): Promise<string> {
  const customer = await call('POST', '/customers', { customerType: 'INDIVIDUAL', fullName: `Ledger Bench ${n}` });
  const list = await call('GET', `/customers/internal-accounts?customerId=${String(customer.id)}`);
  const id = (list.data as Array<{ id: string }>)[0]!.id;
  await call('POST', `/sandbox/internal-accounts/${id}/fund`, { amount: 1_000_000_00 });
  return id.slice('InternalAccount:'.length);
}

export async function ledgerScenario(options: {
  databaseUrl: string;
  platformId: string;
  call: Call;
  warmup: number;
  duration: number;
  shards: number;
}): Promise<LedgerBenchResult> {
  const platformUuid = options.platformId.slice('Platform:'.length);
  const accounts: Array<[string, string]> = [];
  for (let c = 0; c < LEDGER_CLIENTS; c++) accounts.push([await openAccount(options.call, 2 * c), await openAccount(options.call, 2 * c + 1)]);

  const url = new URL(options.databaseUrl);
  url.searchParams.set('application_name', APPLICATION_NAME);
  const handle = await openDatabase({ databaseUrl: url.toString(), poolSize: LEDGER_CLIENTS });
  const db = handle.db;
  const withEvents = createAccountsLedger(systemClock, { hotAccountShards: options.shards });
  const bare = new Ledger({ clock: systemClock, hotAccountShards: options.shards, onInternalBalancesChanged: async () => {} });
  const fees: LedgerAccountRef = { kind: 'PLATFORM_FEES', currency: 'USD' };
  try {
    const transfer = (ledger: Ledger, client: number, i: number, phase: string) => {
      const [a, b] = accounts[client]!;
      const [from, to] = i % 2 === 0 ? [a, b] : [b, a];
      return withTx(db, (trx) =>
        ledger.transfer(trx, {
          platformId: platformUuid,
          reference: `bench:${phase}:${client}:${i}`,
          postings: [
            { from: { kind: 'INTERNAL_ACCOUNT', id: from }, to: { kind: 'INTERNAL_ACCOUNT', id: to }, amount: 1_000n, currency: 'USD' },
            { from: { kind: 'INTERNAL_ACCOUNT', id: from }, to: fees, amount: 3n, currency: 'USD' },
          ],
        }),
      ).then(() => undefined);
    };
    const phase = `${Date.now()}`;
    await sql`create table if not exists bench_ceiling (client integer primary key, n bigint not null)`.execute(db);
    await sql`insert into bench_ceiling select c, 0 from generate_series(0, ${LEDGER_CLIENTS - 1}::integer) c on conflict do nothing`.execute(db);
    const bump = (client: number) => withTx(db, (trx) => sql`update bench_ceiling set n = n + 1 where client = ${client}`.execute(trx)).then(() => undefined);

    await loop(db, LEDGER_CLIENTS, options.warmup, (client) => bump(client));
    await loop(db, LEDGER_CLIENTS, options.warmup, (client, i) => transfer(bare, client, i, `${phase}w`));
    // The three take turns, so a change in the machine's load touches them alike.
    const ceilings: Throughput[] = [];
    const bares: Throughput[] = [];
    const evented: Throughput[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      ceilings.push(await loop(db, LEDGER_CLIENTS, options.duration / ROUNDS, (client) => bump(client)));
      bares.push(await loop(db, LEDGER_CLIENTS, options.duration / ROUNDS, (client, i) => transfer(bare, client, i, `${phase}r${round}`)));
      evented.push(await loop(db, LEDGER_CLIENTS, options.duration / ROUNDS, (client, i) => transfer(withEvents, client, i, `${phase}e${round}`)));
    }
    const ceiling = combine(ceilings);
    const transfers = combine(bares);
    await sql`drop table bench_ceiling`.execute(db);
    const verify = await verifyLedger(db, { platformId: platformUuid });
    return { transfers, withEvents: combine(evented), ceiling, shards: options.shards, verify };
  } finally {
    await handle.close();
  }
}
