/**
 * What PostgreSQL inside PGlite says while it starts on a data directory. PGlite reports a failed
 * start only as "PGlite failed to initialize properly"; PostgreSQL's own lines (its stderr, which
 * PGlite prints only in debug mode) say why — "incorrect checksum in control file", "could not
 * locate a valid checkpoint record" — and are what an operator needs to judge a directory.
 */
export class EmbeddedStartFailed extends Error {}

/** The last lines kept, each cut to LINE_CHARS: a start's log is a few lines, never unbounded. */
const KEPT_LINES = 20;
const LINE_CHARS = 500;

export class StartupLog {
  private readonly lines: string[] = [];
  private listening = true;

  /** PGlite's `onStderr`: keeps the line while the start is under way. */
  readonly onStderr = (line: string): boolean => {
    if (this.listening) {
      this.lines.push(line.slice(0, LINE_CHARS));
      if (this.lines.length > KEPT_LINES) this.lines.shift();
    }
    return false;
  };

  /** The start is over: nothing more is kept. */
  stop(): void {
    this.listening = false;
    this.lines.length = 0;
  }

  /** The failed start of `where` as one error, with PostgreSQL's reasons (its FATAL and PANIC lines, else its last line). */
  failure(where: string, cause: unknown): EmbeddedStartFailed {
    const reasons = this.lines.filter((l) => /\b(FATAL|PANIC):/.test(l)).map((l) => l.replace(/^.*?\b(FATAL|PANIC):\s*/, '$1: '));
    const said = reasons.length > 0 ? reasons : this.lines.slice(-1);
    const message = cause instanceof Error ? cause.message : String(cause);
    return new EmbeddedStartFailed(`the embedded database in ${where} did not start: ${said.length > 0 ? said.join('; ') : message}`, { cause });
  }
}
