import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import YAML from 'yaml';
import { bundle } from '../scripts/build.mjs';
import { migratedDump } from './helpers/migrated-dump.js';

/** The upstream's OpenAPI document, beside the repository (helpers/upstream-conformance.ts). */
const UPSTREAM_OPENAPI = fileURLToPath(new URL('../../shared/reference/upstream-openapi.yaml', import.meta.url));

/** Files this run wrote for its test files, removed when it ends: each run's are its own (named by pid), 44 MB a run, and its bundle. */
const written: string[] = [];

export default async function setup(project: TestProject) {
  const upstream = await upstreamDocumentAsJson();
  if (upstream) written.push(upstream);
  project.provide('upstreamOpenapi', upstream);
  // The processes tests start (test/helpers/process.ts) run this run's sources bundled once, as
  // `dist/` is built: through tsx each start compiled them again, 2.5–4 s of CPU. Inside the
  // repository, so that the bundle finds package.json, migrations/ and node_modules above it.
  const bundled = fileURLToPath(new URL(`../node_modules/.cache/corridor-test-${process.pid}`, import.meta.url));
  written.push(bundled);
  await bundle(bundled);
  project.provide('corridorBundle', bundled);
  if (process.env.TEST_DATABASE_URL) return teardown;
  // On PGlite, initialising a database costs seconds; it is done once here, migrated, and dumped.
  // Every test file then starts its own private database from that dump in well under a second.
  const dump = await migratedDump();
  const path = join(tmpdir(), `corridor-test-template-${process.pid}.tar`);
  await writeFile(path, Buffer.from(await dump.arrayBuffer()));
  written.push(path);
  project.provide('pgliteTemplate', path);
  return teardown;
}

async function teardown(): Promise<void> {
  await Promise.all(written.map((path) => rm(path, { recursive: true, force: true })));
}

/** The document parsed once, as JSON for the test files to read; '' when it is not there (never in CI). */
async function upstreamDocumentAsJson(): Promise<string> {
  if (!existsSync(UPSTREAM_OPENAPI)) {
    if (process.env.CI) throw new Error(`CI checks answers against ${UPSTREAM_OPENAPI}, which is missing`);
    return '';
  }
  const path = join(tmpdir(), `corridor-upstream-openapi-${process.pid}.json`);
  await writeFile(path, JSON.stringify(YAML.parse(await readFile(UPSTREAM_OPENAPI, 'utf8'))));
  return path;
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteTemplate: string;
    upstreamOpenapi: string;
    /** This run's sources bundled as `dist/` is (scripts/build.mjs): `<it>/cli.js` is the `corridor` command. */
    corridorBundle: string;
  }
}
