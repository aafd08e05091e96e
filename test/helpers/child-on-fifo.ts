import { type ChildProcessByStdio, execFileSync, spawn } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';

const root = new URL('../../', import.meta.url).pathname;

/** A child whose standard output is a FIFO that this side reads only when it chooses. */
export interface ChildOnFifo {
  /** This side's end of the FIFO, non-blocking (EAGAIN while empty, 0 once the child has ended). */
  reader: number;
  /** Waits until the child's stderr so far passes `until`, and answers it; fails if the child ends first. */
  stderrWhen(until: (stderr: string) => boolean): Promise<string>;
  /** The child's exit code, once it has ended; with its whole stderr. */
  exited: Promise<{ code: number | null; stderr: string }>;
}

/**
 * Runs `code` (an ES module, through tsx, from the repository's root) in a child whose stdout is
 * a FIFO nobody reads until `use` does, to see what a process does when its standard output does
 * not take what it writes. `use` may hand `reader` to something that closes it (and then call
 * `readerTaken`); otherwise it is closed after `use`.
 */
export async function withChildOnFifo<T>(code: string, use: (child: ChildOnFifo, readerTaken: () => void) => Promise<T>): Promise<T> {
  const directory = mkdtempSync(join(tmpdir(), 'corridor-log-'));
  const fifo = join(directory, 'stdout');
  execFileSync('mkfifo', [fifo]);
  // Two opens, two file descriptions: the child's stdout is made blocking at spawn, this side's reads are not.
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  let closeReader = true;
  try {
    const writer = openSync(fifo, constants.O_WRONLY);
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: root, stdio: ['ignore', writer, 'pipe'] }) as ChildProcessByStdio<null, null, Readable>;
    closeSync(writer);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<{ code: number | null; stderr: string }>((resolve) => child.on('close', (code) => resolve({ code, stderr })));
    const stderrWhen = (until: (stderr: string) => boolean) =>
      new Promise<string>((resolve, reject) => {
        const check = () => {
          if (!until(stderr)) return false;
          child.stderr.off('data', check);
          resolve(stderr);
          return true;
        };
        if (check()) return;
        child.stderr.on('data', check);
        void exited.then(() => check() || reject(new Error(`child ended first: ${stderr}`)));
      });
    return await use({ reader, stderrWhen, exited }, () => (closeReader = false));
  } finally {
    if (closeReader) closeSync(reader);
    rmSync(directory, { recursive: true });
  }
}
