import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onPostgres } from '../helpers/context.js';
import { processDatabase, type ProcessDatabase } from '../helpers/process.js';

const root = new URL('../../', import.meta.url).pathname;
const run = promisify(execFile);

async function corridor(env: Record<string, string>, ...args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { cwd: root, env: { ...process.env, DATABASE_URL: '', LOG_LEVEL: 'warn', ...env } });
    return { code: 0, out: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? 1, out: (failed.stdout ?? '') + (failed.stderr ?? '') };
  }
}

/**
 * The operator's path: the shipped file at migrate/start, their own file by `corridor directories load`.
 * PostgreSQL only: on PGlite every CLI run opens the embedded database anew, seconds each.
 */
describe.runIf(onPostgres)('corridor directories', () => {
  let database: ProcessDatabase;
  let dir: string;
  beforeAll(async () => {
    database = await processDatabase('directories');
    dir = await mkdtemp(join(tmpdir(), 'corridor-directories-'));
  });
  afterAll(async () => {
    await database.cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  it('migrate loads the shipped file; load replaces it with a newer one, once; a bad file changes nothing', async () => {
    const shipped = JSON.parse(await readFile(join(root, 'reference-data/directories.json'), 'utf8')) as { version: number; vasps: unknown[] };
    expect((await corridor(database.env, 'migrate')).code).toBe(0);
    const shown = await corridor(database.env, 'directories', 'show');
    expect(shown.out).toContain(`directories version ${shipped.version} `);
    expect(shown.out).toContain('from shipped');

    const mine = join(dir, 'mine.json');
    await writeFile(mine, JSON.stringify({ ...shipped, version: shipped.version + 1, vasps: [{ vaspName: 'Operator Exchange' }] }));
    const loaded = await corridor(database.env, 'directories', 'load', mine);
    expect(loaded).toEqual({ code: 0, out: `directories version ${shipped.version + 1} loaded (was ${shipped.version})\n` });
    const again = await corridor(database.env, 'directories', 'load', mine);
    expect(again.code).toBe(0);
    expect(again.out).toContain('nothing loaded');

    const bad = join(dir, 'bad.json');
    await writeFile(bad, JSON.stringify({ ...shipped, version: shipped.version + 2, vasps: [{ vaspName: 'A' }, { vaspName: 'a' }] }));
    const refused = await corridor(database.env, 'directories', 'load', bad);
    expect(refused.code).not.toBe(0);
    expect(refused.out).toContain('appears twice');
    expect((await corridor(database.env, 'directories', 'show')).out).toContain(`directories version ${shipped.version + 1} `);
  }, 300_000);
});
