import type { Config } from '../config.js';
import type { Clock } from './clock.js';
import type { Db } from './db/database.js';
import type { TenantSecretBox } from './crypto/secret-box.js';
import type { RequestFingerprints } from './idempotency.js';
import type { JobWorker } from './jobs/index.js';

/**
 * What every module's routes receive from the wiring in `app.ts`. It lives below the modules so
 * that a module never imports the file that imports it.
 */
export interface ModuleDeps {
  db: Db;
  clock: Clock;
  config: Config;
  jobs: JobWorker;
  /** Seals customers' and beneficial owners' tax identifiers at rest, per platform and key version. */
  identifiers: TenantSecretBox;
  /** Fingerprints requests sent with an Idempotency-Key (keyed: see RequestFingerprints). */
  fingerprints: RequestFingerprints;
}
