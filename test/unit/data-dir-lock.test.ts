import { mkdir, mkdtemp, rm, utimes } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DataDirInUse, lockDataDir } from '../../src/platform/db/data-dir-lock.js';

describe('the data directory lock', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'data-dir-lock-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('is held by one opener at a time, also within one process, and free again once released', async () => {
    const release = await lockDataDir(dir);
    await expect(lockDataDir(dir)).rejects.toBeInstanceOf(DataDirInUse);
    await release();
    expect(existsSync(join(dir, 'corridor.lock'))).toBe(false);
    const again = await lockDataDir(dir);
    await again();
  });

  it('takes over a lock its holder left untouched past the stale time (the holder died)', async () => {
    await mkdir(join(dir, 'corridor.lock'));
    const untouched = new Date(Date.now() - 60_000);
    await utimes(join(dir, 'corridor.lock'), untouched, untouched);
    const release = await lockDataDir(dir);
    await expect(lockDataDir(dir)).rejects.toBeInstanceOf(DataDirInUse);
    await release();
  });
});
