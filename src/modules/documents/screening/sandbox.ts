import { boundRefusal, type BuiltInScreener } from './builtin.js';
import { PRECHECK_ERRORS, type DocumentScreener, type PrecheckError, type ScreeningSubject } from './screener.js';

const TRIGGER = /precheck-([A-Za-z]+)/g;
const KNOWN: ReadonlySet<string> = new Set(PRECHECK_ERRORS);

/**
 * The precheck errors a sandbox upload asks for in its file name: each `precheck-<name>` token
 * (e.g. `passport.precheck-documentExpired.precheck-glare.jpg`) forces that error, in the order
 * of `PRECHECK_ERRORS`. Unknown names are ignored. Undefined when the name holds no trigger.
 */
export function sandboxTriggers(fileName: string): PrecheckError[] | undefined {
  const named = new Set([...fileName.matchAll(TRIGGER)].map((m) => m[1]!).filter((name) => KNOWN.has(name)));
  return named.size > 0 ? PRECHECK_ERRORS.filter((name) => named.has(name)) : undefined;
}

/**
 * Sandbox platforms: triggers in the file name decide alone. Without one, a file passes when it
 * is what its content type says — it decodes as that PDF, JPEG or PNG — whatever its quality:
 * integrators test with synthetic files (a blank page, a tiny or grey image), and the quality
 * checks (blur, colour, glare, screen capture) are exercised with triggers or on production.
 */
export class SandboxScreener implements DocumentScreener {
  constructor(private readonly decoder: BuiltInScreener) {}

  async screen(subject: ScreeningSubject): Promise<string[]> {
    const triggered = sandboxTriggers(subject.fileName);
    if (triggered) return triggered;
    const report = await this.decoder.inspect(subject);
    const refusal = boundRefusal(report, this.decoder.thresholds);
    if (refusal) throw refusal;
    return report.unreadable ? report.problems : [];
  }
}
