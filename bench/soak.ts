import autocannon from 'autocannon';
import pg from 'pg';
import { BASE_PATH } from '../src/config.js';

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

interface SoakOptions {
  base: string;
  authorization: string;
  connections: number;
  windowSeconds: number;
  /** Customers at the start. */
  seed: number;
  /** Keep going (at least four windows) until this many customers exist, or twenty windows have run. */
  target: number;
}

/**
 * The mixed load of a platform in production, with the table growing under it: 70 % reads by
 * id (of any customer created so far), 20 % first pages of the list, 10 % creates, in windows
 * of `windowSeconds`. Answers a table of req/s and p99 per window and the last window's
 * throughput against the first's (the goal: within 15 %).
 */
export async function soak(options: SoakOptions): Promise<string> {
  const ids = await seedCustomers(options.base, options.authorization, options.seed);
  await analyzeIfPostgres();
  const createBody = JSON.stringify({ customerType: 'INDIVIDUAL', fullName: 'Bench Soak' });
  const rows: Array<{ rps: number; p50: number; p99: number; unexpected: number; customers: number }> = [];
  while (rows.length < 4 || (ids.length < options.target && rows.length < 20)) {
    const result = await autocannon({
      url: options.base,
      connections: options.connections,
      duration: options.windowSeconds,
      timeout: 60,
      headers: { authorization: options.authorization, 'content-type': 'application/json' },
      requests: [
        {
          setupRequest: (request) => {
            const draw = Math.random();
            if (draw < 0.7) return { ...request, method: 'GET', path: `${BASE_PATH}/customers/${ids[Math.floor(Math.random() * ids.length)]}`, body: undefined };
            if (draw < 0.9) return { ...request, method: 'GET', path: `${BASE_PATH}/customers?limit=20`, body: undefined };
            return { ...request, method: 'POST', path: `${BASE_PATH}/customers`, body: createBody };
          },
          onResponse: (status, body) => {
            if (status === 201) ids.push((JSON.parse(body) as { id: string }).id);
          },
        },
      ],
    });
    const unexpected = Object.entries(result.statusCodeStats ?? {})
      .filter(([status]) => status !== '200' && status !== '201')
      .reduce((sum, [, stats]) => sum + (stats as { count: number }).count, 0);
    rows.push({ rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, unexpected: unexpected + result.errors, customers: ids.length });
  }
  const first = rows[0]!.rps;
  const last = rows[rows.length - 1]!.rps;
  const change = ((last - first) / first) * 100;
  return [
    `${SOAK_SCENARIO}: ${options.connections} connections, ${options.windowSeconds} s windows, ${options.seed} customers at the start`,
    '  window    req/s   p50 ms   p99 ms   unexpected   customers at its end',
    ...rows.map(
      (r, i) =>
        `  ${String(i + 1).padStart(6)} ${r.rps.toFixed(0).padStart(8)} ${r.p50.toFixed(1).padStart(8)} ${r.p99.toFixed(1).padStart(8)} ${String(r.unexpected).padStart(12)} ${String(r.customers).padStart(11)}`,
    ),
    `  last window vs first: ${change >= 0 ? '+' : ''}${change.toFixed(1)} % (goal: within 15 %: ${Math.abs(change) <= 15 ? 'met' : 'NOT met'})`,
  ].join('\n');
}
