import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/platform/db/database.js';

/** A TCP port nothing listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface ProcessDatabase {
  /** Environment that points a `corridor` process at its own database. */
  env: Record<string, string>;
  cleanup: () => Promise<void>;
}

/**
 * A private database for processes a test starts: on PostgreSQL (TEST_DATABASE_URL) a fresh
 * schema reached through the URL's search_path, with a master key (required there); else an
 * embedded data directory.
 */
export async function processDatabase(prefix: string): Promise<ProcessDatabase> {
  const url = process.env.TEST_DATABASE_URL;
  if (url) {
    const schema = `${prefix}_${process.pid}_${Date.now()}`;
    const admin = await openDatabase({ databaseUrl: url, poolSize: 1 });
    await admin.db.schema.createSchema(schema).execute();
    await admin.close();
    const withSchema = new URL(url);
    withSchema.searchParams.set('options', `-c search_path=${schema}`);
    return {
      env: { DATABASE_URL: withSchema.toString(), CORRIDOR_MASTER_KEY: randomBytes(32).toString('hex') },
      cleanup: async () => {
        const db = await openDatabase({ databaseUrl: url, poolSize: 1 });
        await db.db.schema.dropSchema(schema).cascade().execute();
        await db.close();
      },
    };
  }
  const dir = await mkdtemp(join(tmpdir(), `corridor-${prefix}-`));
  return { env: { CORRIDOR_DATA_DIR: join(dir, 'data') }, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
