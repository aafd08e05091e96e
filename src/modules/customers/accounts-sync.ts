import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import type { JobCheckpoint } from '../../platform/jobs/index.js';
import type { ConfigAccountsJobPayload } from '../config/index.js';
import { provisionAccountsOf, provisionPlatformAccounts } from '../internal-accounts/index.js';
import { approvedCustomersAfter } from './repo.js';

/** Customers per transaction: small enough to keep locks short, large enough to move quickly. */
export const ACCOUNTS_SYNC_BATCH = 200;

/**
 * After a configuration change that calls for new accounts (a currency added, embedded wallets
 * enabled), opens them for every customer approved before it, and for the platform itself.
 * Each batch commits with its checkpoint, so a crash resumes after the last customer done, and
 * opening is idempotent (one account per owner, type and currency), so running it twice, or
 * alongside an approval, opens nothing twice.
 */
export async function openAccountsAfterConfigChange(
  db: Db,
  clock: Clock,
  platformId: string,
  payload: ConfigAccountsJobPayload,
  checkpoint: JobCheckpoint,
): Promise<void> {
  let after = payload.after;
  for (;;) {
    const batch = await withTx(db, async (trx) => {
      if (after === undefined) await provisionPlatformAccounts(trx, clock, platformId);
      const customers = await approvedCustomersAfter(trx, platformId, after, ACCOUNTS_SYNC_BATCH);
      await provisionAccountsOf(trx, clock, platformId, customers.map((c) => ({ uuid: c.id, email: c.email })));
      const last = customers.at(-1)?.id ?? after;
      const next: ConfigAccountsJobPayload = last ? { after: last } : {};
      await checkpoint(trx, next);
      return customers;
    });
    if (batch.length < ACCOUNTS_SYNC_BATCH) return;
    after = batch.at(-1)!.id;
  }
}
