/**
 * CPU time of this machine's processes, read from /proc (Linux): what the bench scenarios report
 * per request beside their rates, since on a shared machine CPU per operation moves far less with
 * the neighbours' load than the rates do.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** µs per clock tick of /proc/<pid>/stat (USER_HZ is 100 on Linux). */
const TICK_MICROS = 10_000;

/**
 * A process's CPU time so far, µs: user, system, and that of its ended children it waited for
 * (`reapedChildren`). Throws when the process is gone or /proc is not there.
 */
export function processCpu(pid: number): { user: number; system: number; reapedChildren: number } {
  // After the command in parentheses: state is field 3, utime 14, stime 15, cutime 16, cstime 17 (1-based).
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ');
  return {
    user: Number(fields[11]) * TICK_MICROS,
    system: Number(fields[12]) * TICK_MICROS,
    reapedChildren: (Number(fields[13]) + Number(fields[14])) * TICK_MICROS,
  };
}

/** A process's user + system CPU time so far (µs), with its reaped children's on request; NaN when it cannot be read. */
export function cpuMicros(pid: number, options: { reapedChildren?: boolean } = {}): number {
  try {
    const cpu = processCpu(pid);
    return cpu.user + cpu.system + (options.reapedChildren ? cpu.reapedChildren : 0);
  } catch {
    return Number.NaN;
  }
}

/**
 * With PostgreSQL on this machine (`DATABASE_URL` set): the CPU time (µs) of every process named
 * `postgres` so far (backends, WAL writer, checkpointer: all the database does for the server),
 * with that of the ended ones their parent has reaped (a backend that ends takes its CPU time out
 * of the live sum); NaN elsewhere.
 */
export function postgresCpuMicros(): number {
  if (!process.env.DATABASE_URL) return Number.NaN;
  let sum = 0;
  let found = false;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8') !== 'postgres\n') continue;
      const cpu = processCpu(Number(entry));
      found = true;
      sum += cpu.user + cpu.system + cpu.reapedChildren;
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return found ? sum : Number.NaN;
}
