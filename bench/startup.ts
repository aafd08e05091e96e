import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const STARTUP_SCENARIO = 'start to /readyz 200';

const RUNS = 3;
/** Generous: through tsx on a busy machine, PGlite's start has taken over two minutes. */
const READY_TIMEOUT_MS = 300_000;
const HOW = [
  { label: 'before: tsx src/cli.ts serve', args: ['--import', 'tsx', 'src/cli.ts', 'serve'] },
  { label: 'after: node dist/cli.js serve', args: ['dist/cli.js', 'serve'] },
];

/** Milliseconds from spawning `node <args>` to the first 200 from /readyz; the process is then stopped. */
async function timeToReady(root: string, args: string[], env: NodeJS.ProcessEnv, port: number): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', CORRIDOR_JOBS: 'false' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`node ${args.join(' ')} exited with ${child.exitCode}`);
      if (performance.now() - started > READY_TIMEOUT_MS) throw new Error(`node ${args.join(' ')} did not become ready`);
      if (await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false)) return performance.now() - started;
      await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

/**
 * Start-up time on an existing database (the first start, which creates it, is not counted),
 * through tsx and compiled, on PGlite and, when DATABASE_URL is set, on PostgreSQL: the median
 * of RUNS starts each. Answers the lines of a small table.
 */
export async function startupTimes(root: string, postgresEnv: NodeJS.ProcessEnv | undefined, port: () => Promise<number>): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'corridor-bench-startup-'));
  const engines: Array<[string, NodeJS.ProcessEnv]> = [['PGlite (existing data directory)', { CORRIDOR_DATA_DIR: dataDir, DATABASE_URL: '' }]];
  if (postgresEnv) engines.push(['PostgreSQL (migrated database)', postgresEnv]);
  const lines = [`${STARTUP_SCENARIO} (median of ${RUNS} starts, ms)`];
  try {
    await timeToReady(root, HOW[1]!.args, engines[0]![1], await port()); // creates the embedded database
    for (const [engine, env] of engines) {
      for (const { label, args } of HOW) {
        const times: number[] = [];
        for (let i = 0; i < RUNS; i++) times.push(await timeToReady(root, args, env, await port()));
        times.sort((a, b) => a - b);
        lines.push(`  ${engine.padEnd(32)} ${label.padEnd(32)} ${times[Math.floor(RUNS / 2)]!.toFixed(0).padStart(6)}`);
      }
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  return lines.join('\n');
}
