import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onPostgres } from '../helpers/context.js';
import { type ProcessDatabase, processDatabase, runCli } from '../helpers/process.js';

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
    const shipped = JSON.parse(await readFile(new URL('../../reference-data/directories.json', import.meta.url), 'utf8')) as { version: number; vasps: unknown[] };
    expect((await runCli(database.env, 'migrate')).code).toBe(0);
    const shown = await runCli(database.env, 'directories', 'show');
    expect(shown.output).toContain(`directories version ${shipped.version} `);
    expect(shown.output).toContain('from shipped');

    const mine = join(dir, 'mine.json');
    await writeFile(mine, JSON.stringify({ ...shipped, version: shipped.version + 1, vasps: [{ vaspName: 'Operator Exchange' }] }));
    const loaded = await runCli(database.env, 'directories', 'load', mine);
    expect({ code: loaded.code, output: loaded.output }).toEqual({ code: 0, output: `directories version ${shipped.version + 1} loaded (was ${shipped.version})\n` });
    const again = await runCli(database.env, 'directories', 'load', mine);
    expect(again.code).toBe(0);
    expect(again.output).toContain('nothing loaded');

    const bad = join(dir, 'bad.json');
    await writeFile(bad, JSON.stringify({ ...shipped, version: shipped.version + 2, vasps: [{ vaspName: 'A' }, { vaspName: 'a' }] }));
    const refused = await runCli(database.env, 'directories', 'load', bad);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toContain('appears twice');
    expect((await runCli(database.env, 'directories', 'show')).output).toContain(`directories version ${shipped.version + 1} `);
  }, 300_000);
});
