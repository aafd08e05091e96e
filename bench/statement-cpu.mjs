/**
 * PostgreSQL's CPU per execution of one statement, on one connection:
 * `DATABASE_URL=… node bench/statement-cpu.mjs <executions> '<sql with $1…>' [parameter…]`.
 * The statement runs as a named prepared statement, as Corridor sends it, 200 times to warm up
 * and then <executions> times; the answer is the backend's user + system time (from
 * /proc/<pid>/stat, so PostgreSQL must run on this machine) divided by the executions, beside the
 * wall time per round trip. Two shapes of one query are compared by running each a few times in
 * turn: the figure moves by ±15 % from run to run.
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';

const [executions, text, ...values] = process.argv.slice(2);
const n = Number(executions);
if (!process.env.DATABASE_URL || !Number.isInteger(n) || n < 1 || !text) {
  console.error("usage: DATABASE_URL=… node bench/statement-cpu.mjs <executions> '<sql>' [parameter…]");
  process.exit(2);
}
const client = new pg.Client(process.env.DATABASE_URL);
await client.connect();
const { rows } = await client.query('select pg_backend_pid() as pid');
const pid = rows[0].pid;
/** The backend's user + system time so far, µs (fields 14 and 15 of /proc/<pid>/stat, in 10 ms ticks). */
const cpu = () => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
};
const statement = { name: 'statement-cpu', text, values };
for (let i = 0; i < 200; i++) await client.query(statement);
const before = cpu();
const started = performance.now();
for (let i = 0; i < n; i++) await client.query(statement);
const wall = ((performance.now() - started) * 1000) / n;
console.log(`${((cpu() - before) / n).toFixed(1)} µs of PostgreSQL CPU, ${wall.toFixed(0)} µs wall per execution`);
await client.end();
