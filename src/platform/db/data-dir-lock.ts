import { statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import lockfile from 'proper-lockfile';

/**
 * An embedded data directory takes one process at a time: PGlite keeps the database in the
 * process's memory and writes it back to the directory, so a second process on the same
 * directory loses one side's writes or leaves the directory unreadable. Each open takes this
 * lock first, a directory `corridor.lock` inside the data directory (proper-lockfile: mkdir is
 * atomic on every file system, and the holder touches it every second).
 */
export class DataDirInUse extends Error {}

const LOCK_NAME = 'corridor.lock';
/** The holder touches the lock every UPDATE_MS; one untouched for STALE_MS belongs to a process that died. */
const UPDATE_MS = 1_000;
const STALE_MS = 5_000;

/**
 * Takes the data directory's lock, or throws DataDirInUse when a live process holds it (told
 * within about two seconds: a holder touches the lock every second). A lock left by a process
 * that died (SIGKILL, a crash, a power cut) is taken over once stale: the start then waits up to
 * STALE_MS. Answers the release. Should another process ever take the lock over while this one
 * holds it (this process stalled for STALE_MS), this process stops at once rather than write the
 * directory beside it.
 */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const lockPath = join(dataDir, LOCK_NAME);
  const options = {
    lockfilePath: lockPath,
    realpath: false,
    stale: STALE_MS,
    update: UPDATE_MS,
    onCompromised: (error: Error) => {
      process.stderr.write(`corridor: lost the lock of the data directory ${dataDir} (${error.message}); stopping so that two processes never write it\n`);
      process.exit(1);
    },
  };
  const inUse = () =>
    new DataDirInUse(`the data directory ${dataDir} is in use by another Corridor process (the embedded database takes one process at a time; stop it first, or use PostgreSQL to run several)`);
  const touchedAt = () => statSync(lockPath, { throwIfNoEntry: false })?.mtimeMs;
  /** The release, or undefined while another holds the lock. */
  const tryLock = async () => {
    try {
      return await lockfile.lock(dataDir, options);
    } catch (error) {
      if ((error as { code?: string }).code === 'ELOCKED') return undefined;
      throw error;
    }
  };
  const release = await tryLock();
  if (release) return release;
  // Held, or left by a process that died. A live holder touches it within two updates.
  const seen = touchedAt();
  await sleep(2 * UPDATE_MS + 200);
  const now = touchedAt();
  if (seen !== undefined && now !== undefined && now !== seen) throw inUse();
  // Untouched: wait for it to go stale, when proper-lockfile takes it over.
  if (now !== undefined) await sleep(Math.max(0, STALE_MS - (Date.now() - now)) + 100);
  const takenOver = await tryLock();
  if (takenOver) return takenOver;
  throw inUse();
}
