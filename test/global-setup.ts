import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../src/platform/db/database.js';
import { migrate } from '../src/platform/db/migrate.js';

/**
 * On PGlite, initialising a database costs seconds; it is done once here, migrated, and dumped.
 * Every test file then starts its own private database from that dump in well under a second.
 */
export default async function setup(project: TestProject) {
  if (process.env.TEST_DATABASE_URL) return;
  const handle = await openDatabase({});
  await migrate(handle.db);
  const dump = await handle.dumpDataDir!();
  const path = join(tmpdir(), `corridor-test-template-${process.pid}.tar`);
  await writeFile(path, Buffer.from(await dump.arrayBuffer()));
  await handle.close();
  project.provide('pgliteTemplate', path);
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteTemplate: string;
  }
}
