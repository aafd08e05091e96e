import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { loadMasterKey } from '../../src/platform/crypto/master-key.js';

const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('master key', () => {
  it('is generated once into the embedded data directory, readable only by its owner, and reused', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'master-key-'));
    dirs.push(dir);
    const first = loadMasterKey(undefined, join(dir, 'data'), false);
    expect(first).toHaveLength(32);
    expect((await stat(join(dir, 'data', 'master.key'))).mode & 0o777).toBe(0o600);
    expect((await readFile(join(dir, 'data', 'master.key'), 'utf8')).trim()).toBe(first.toString('hex'));
    expect(loadMasterKey(undefined, join(dir, 'data'), false).equals(first)).toBe(true);
    expect(await readdir(join(dir, 'data'))).toEqual(['master.key']);
  });

  it('is made beside the temporary file a first start killed while writing it left behind', async () => {
    // What such a start leaves: its temporary file, written in part, and no master.key (the key
    // is linked into place only once written whole).
    const dir = await mkdtemp(join(tmpdir(), 'master-key-'));
    dirs.push(dir);
    await mkdir(join(dir, 'data'));
    await writeFile(join(dir, 'data', 'master.key.999999.tmp'), '');
    const key = loadMasterKey(undefined, join(dir, 'data'), false);
    expect((await readFile(join(dir, 'data', 'master.key'), 'utf8')).trim()).toBe(key.toString('hex'));
  });

  it('refuses a key file other users can read or write, and one of the wrong length', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'master-key-'));
    dirs.push(dir);
    const data = join(dir, 'data');
    const key = loadMasterKey(undefined, data, false);
    const path = join(data, 'master.key');
    for (const mode of [0o644, 0o640, 0o604, 0o602, 0o620]) {
      await chmod(path, mode);
      expect(() => loadMasterKey(undefined, data, false)).toThrow(ConfigError);
      expect(() => loadMasterKey(undefined, data, false)).toThrow(/open to other users .*chmod 600/);
    }
    // The refusal leaves the key as it was: put right, the same key is read.
    await chmod(path, 0o400);
    expect(loadMasterKey(undefined, data, false).equals(key)).toBe(true);
    await chmod(path, 0o600);
    await writeFile(path, `${key.toString('hex').slice(2)}\n`);
    expect(() => loadMasterKey(undefined, data, false)).toThrow(/64 hex characters/);
  });

  it('must be configured for a shared PostgreSQL database', () => {
    expect(() => loadMasterKey(undefined, '/nonexistent', true)).toThrow(ConfigError);
    const configured = Buffer.alloc(32, 7);
    expect(loadMasterKey(configured, '/nonexistent', true)).toBe(configured);
  });

  it('is read from CORRIDOR_MASTER_KEY as hex or base64, and anything else stops start-up', () => {
    const key = Buffer.alloc(32, 9);
    expect(loadConfig({ CORRIDOR_MASTER_KEY: key.toString('hex') }).masterKey).toEqual(key);
    expect(loadConfig({ CORRIDOR_MASTER_KEY: key.toString('base64') }).masterKey).toEqual(key);
    expect(() => loadConfig({ CORRIDOR_MASTER_KEY: 'short' })).toThrow(/CORRIDOR_MASTER_KEY/);
    expect(() => loadConfig({ CORRIDOR_MASTER_KEY: Buffer.alloc(16).toString('hex') })).toThrow(/CORRIDOR_MASTER_KEY/);
  });
});
