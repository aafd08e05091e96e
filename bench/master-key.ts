import { createHash } from 'node:crypto';

/**
 * The master key the bench's servers run with: CORRIDOR_MASTER_KEY, else a fixed key, so that a
 * run can reuse a database an earlier run sealed (Corridor refuses any other key for it, README).
 * A bench database holds nothing a key would protect.
 */
export const benchMasterKey = (): string => process.env.CORRIDOR_MASTER_KEY ?? createHash('sha256').update('corridor bench').digest('hex');
