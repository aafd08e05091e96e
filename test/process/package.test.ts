import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, processDatabase, type ProcessDatabase } from '../helpers/process.js';

/**
 * Corridor as a product: `npm pack` (which builds dist/) of a copy of the sources, the tarball
 * installed into an empty directory without development dependencies (from the npm cache where it
 * can; kept for the next run of the same tarball), then the installed `corridor` command migrates
 * and serves until /readyz answers 200, on PGlite or on PostgreSQL, whichever this run tests.
 */
const root = new URL('../../', import.meta.url).pathname;
const run = promisify(execFile);
const NPM_QUIET = ['--no-audit', '--no-fund', '--loglevel=error'];

let work: string;
let database: ProcessDatabase;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'corridor-package-'));
  database = await processDatabase('package');
});
afterAll(async () => {
  await database.cleanup();
  await rm(work, { recursive: true, force: true, maxRetries: 5 });
});

/** Runs the installed `corridor` until /readyz answers 200, then stops it with SIGTERM. */
async function serveUntilReady(app: string, env: Record<string, string>): Promise<number> {
  const port = await freePort();
  const child = spawn('npx', ['--no-install', 'corridor', 'serve'], {
    cwd: app,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', CORRIDOR_JOBS: 'false' },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`corridor serve did not become ready:\n${stderr}`);
      const status = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status, () => 0);
      if (status === 200) return status;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    if (child.exitCode === null) process.kill(-child.pid!, 'SIGTERM');
    await exited;
    // npx may exit before the corridor process it started has finished shutting down (PGlite
    // still writing its data directory): wait for the whole process group to be gone.
    await groupGone(child.pid!);
  }
}

/** Resolves once no process of the group `pgid` is left (at most 30 s, then kills what is left). */
async function groupGone(pgid: number): Promise<void> {
  const alive = () => {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  };
  for (const deadline = Date.now() + 30_000; alive(); ) {
    if (Date.now() > deadline) {
      process.kill(-pgid, 'SIGKILL');
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const INSTALLS = 'corridor-package-install-';

/**
 * `tarball` installed into an empty directory without development dependencies. The install is
 * kept, named by the tarball's digest, for the next run of the same tarball (npm pack of the same
 * sources is byte-identical): CI's PostgreSQL pass then installs nothing the PGlite pass did not
 * already, about a minute of its time. Made in a directory of its own and renamed into place, so
 * two runs at once never share a half-made install; installs of other tarballs an hour old go.
 */
async function installed(tarball: string): Promise<string> {
  const digest = createHash('sha256').update(await readFile(tarball)).digest('hex').slice(0, 16);
  const app = join(tmpdir(), `${INSTALLS}${digest}`);
  if (existsSync(join(app, 'node_modules', 'corridor', 'package.json'))) return app;
  for (const entry of await readdir(tmpdir())) {
    const path = join(tmpdir(), entry);
    if (entry.startsWith(INSTALLS) && path !== app && Date.now() - (await stat(path)).mtimeMs > 3_600_000) await rm(path, { recursive: true, force: true });
  }
  const making = join(work, 'app');
  await mkdir(making);
  await writeFile(join(making, 'package.json'), '{"name":"corridor-install","private":true}\n');
  await run('npm', ['install', '--omit=dev', '--prefer-offline', ...NPM_QUIET, tarball], { cwd: making, maxBuffer: 64 * 1024 * 1024 });
  await rename(making, app).catch((error: NodeJS.ErrnoException) => {
    // Another run of the same tarball placed its install first: that one is as good.
    if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
  });
  return app;
}

describe('the packed package', () => {
  it('installs without development dependencies, migrates and serves', async () => {
    // Packed from a copy, so the build that `npm pack` runs never replaces the dist/ that other
    // tests and a running bench use.
    const source = join(work, 'source');
    await mkdir(source);
    for (const entry of ['package.json', 'package-lock.json', 'tsconfig.json', 'scripts', 'README.md', 'openapi.json', 'src', 'migrations', 'docs', 'examples', 'reference-data']) {
      await cp(join(root, entry), join(source, entry), { recursive: true });
    }
    await symlink(join(root, 'node_modules'), join(source, 'node_modules'));
    const packed = await run('npm', ['pack', '--json', '--pack-destination', work, ...NPM_QUIET], { cwd: source, maxBuffer: 64 * 1024 * 1024 });
    const [{ filename, files }] = JSON.parse(packed.stdout) as [{ filename: string; files: Array<{ path: string }> }];
    const paths = files.map((f) => f.path);
    expect(paths).toEqual(expect.arrayContaining(['dist/cli.js', 'dist/screening-worker.js', 'migrations/0001_foundation.sql', 'package.json', 'reference-data/directories.json']));
    expect(paths.filter((p) => p.startsWith('src/') || p.startsWith('test/'))).toEqual([]);

    const app = await installed(join(work, filename));
    const manifest = JSON.parse(await readFile(join(app, 'node_modules', 'corridor', 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    for (const tool of ['tsx', 'typescript', 'vitest']) {
      expect(manifest.devDependencies[tool]).toBeDefined();
      await expect(readFile(join(app, 'node_modules', tool, 'package.json'))).rejects.toThrow();
    }

    // The bundled PDF worker parses: a readable PDF has no defect, a truncated one is refused
    // (a worker that cannot load pdf-lib from the bundle would call every PDF unparseable).
    const probe = join(app, 'pdf-probe.mjs');
    await writeFile(
      probe,
      `import { Worker } from 'node:worker_threads';
import { writeFile } from 'node:fs/promises';
import { PDFDocument } from 'pdf-lib';
const doc = await PDFDocument.create();
doc.addPage();
const bytes = await doc.save();
await writeFile('good.pdf', bytes);
await writeFile('cut.pdf', bytes.subarray(0, 40));
const worker = new Worker(new URL('./node_modules/corridor/dist/screening-worker.js', import.meta.url));
const limits = { maxDecodedBytes: 50_000_000, maxInflationRatio: 100, inflationGraceBytes: 1_000_000 };
const answers = new Map();
let sent = false;
worker.on('message', (m) => {
  if (m === 'ready' && !sent) {
    sent = true;
    worker.postMessage({ id: 1, input: { filePath: 'good.pdf', limits } });
    worker.postMessage({ id: 2, input: { filePath: 'cut.pdf', limits } });
    return;
  }
  answers.set(m.id, m);
  if (answers.size === 2) {
    console.log(JSON.stringify([answers.get(1), answers.get(2)]));
    void worker.terminate();
  }
});
`,
    );
    const parsed = JSON.parse((await run(process.execPath, [probe], { cwd: app })).stdout) as Array<{ ok: boolean; output: unknown }>;
    expect(parsed[0]).toEqual({ id: 1, ok: true, output: null });
    expect(parsed[1]).toMatchObject({ id: 2, ok: true, output: expect.any(String) });

    if (database.env.DATABASE_URL) {
      const migrated = await run('npx', ['--no-install', 'corridor', 'migrate'], { cwd: app, env: { ...process.env, ...database.env, LOG_LEVEL: 'warn' } });
      expect(migrated.stdout).toContain('migrations are up to date');
    }
    expect(await serveUntilReady(app, database.env)).toBe(200);
  }, 600_000);
});
