/**
 * Writes the OpenAPI document generated from the route schemas to openapi.json, or with
 * --check fails when the committed file differs from what the code generates.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { pino } from 'pino';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { systemClock } from '../src/platform/clock.js';
import { openDatabase } from '../src/platform/db/database.js';
import { JobWorker } from '../src/platform/jobs/index.js';

export async function generateOpenApi(): Promise<string> {
  // Documented against the default address, whatever this shell's environment says.
  const config = loadConfig({});
  const handle = await openDatabase({});
  const logger = pino({ level: 'silent' });
  const app = await buildApp({ db: handle.db, handle, clock: systemClock, config, jobs: new JobWorker(handle.db, systemClock, logger), logger });
  await app.ready();
  const document = `${JSON.stringify(app.swagger(), null, 2)}\n`;
  await app.close();
  await handle.close();
  return document;
}

const path = new URL('../openapi.json', import.meta.url);
const generated = await generateOpenApi();
if (process.argv.includes('--check')) {
  const committed = await readFile(path, 'utf8').catch(() => '');
  if (committed !== generated) {
    process.stderr.write('openapi.json is out of date: run `npm run openapi` and commit the result.\n');
    process.exit(1);
  }
  process.stdout.write('openapi.json is current\n');
} else {
  await writeFile(path, generated);
  process.stdout.write('wrote openapi.json\n');
}
