import type { Logger } from 'pino';
import type { Clock } from '../../platform/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import { inSavepoint, withTx } from '../../platform/db/tx.js';
import { enqueueJob, type Job, type JobCompletion, type JobWorker } from '../../platform/jobs/index.js';
import { AppError } from '../../platform/errors.js';
import { LedgerError } from '../ledger/index.js';
import type { DepositOutcome, FundingDeposits, ReportedDeposit } from './deposits.js';
import { DEPOSIT_PAGE_LIMIT, type DepositSource } from './rail-provider.js';

interface DepositFeedsTable {
  name: string;
  cursor: string | null;
  job_id: string | null;
  updated_at: Date;
}

interface UnmatchedDepositsTable {
  deposit_id: string;
  reference: string;
  currency: string;
  amount: bigint;
  rail: string;
  sender: unknown;
  reason: string;
  platform_id: string | null;
  account_id: string | null;
  received_at: Date;
  /** For the operator: what refused the credit (REFUSED), the credit a conflicting listing collides with. */
  detail: string | null;
  /** The credit of this deposit id: the first one (CONFLICTING_DEPOSIT), or the one that closed the row. */
  credited_platform_id: string | null;
  credited_transaction_id: string | null;
  /** Set when a later listing of the id was credited: nothing is left for the operator to do. */
  resolved_at: Date | null;
}

declare module '../../platform/db/database.js' {
  interface Database {
    deposit_feeds: DepositFeedsTable;
    unmatched_deposits: UnmatchedDepositsTable;
  }
}

export const DEPOSIT_POLL_JOB = 'deposits.poll';
/** How often the provider is asked when its last page was not full (real deposits take seconds to minutes). */
export const DEPOSIT_POLL_INTERVAL_MS = 10_000;
/** The rail provider's feed: one per deployment. */
const FEED = 'rails';

export interface DepositFeedDeps {
  db: Db;
  clock: Clock;
  jobs: JobWorker;
  logger: Logger;
  deposits: FundingDeposits;
  source: DepositSource;
}

/**
 * Production deposits: ONE recurring job polls the rail provider's feed from the cursor kept in
 * `deposit_feeds`. The job is a chain: each run enqueues the next in the transaction that
 * stores the new cursor and the deposits' credits, records the next job's id in the feed row
 * and completes the running job in that same commit; a run whose id is not the feed's (a job
 * that outlived its place in the chain, e.g. one an operator re-queued) stops at once. Jobs are
 * claimed with SKIP LOCKED, so however many processes run, one polls at a time, and the credits
 * of a page commit with its cursor.
 */
export class DepositFeed {
  constructor(private readonly deps: DepositFeedDeps) {
    deps.jobs.register(DEPOSIT_POLL_JOB, (job, _checkpoint, completion) => this.poll(job, completion));
  }

  /**
   * Makes sure the chain runs: called at every start of every process; creates the feed row and
   * its first job once, and a new job only when the feed's job is no longer queued or running
   * (it used up its attempts). The feed row's lock makes concurrent starts agree.
   */
  async start(): Promise<void> {
    await withTx(this.deps.db, async (trx) => {
      await trx
        .insertInto('deposit_feeds')
        .values({ name: FEED, cursor: null, job_id: null, updated_at: this.deps.clock.now() })
        .onConflict((oc) => oc.column('name').doNothing())
        .execute();
      const feed = await trx.selectFrom('deposit_feeds').selectAll().where('name', '=', FEED).forUpdate().executeTakeFirstOrThrow();
      if (feed.job_id) {
        const job = await trx.selectFrom('jobs').select('status').where('id', '=', feed.job_id).executeTakeFirst();
        if (job && (job.status === 'queued' || job.status === 'running')) return;
      }
      await this.scheduleNext(trx, this.deps.clock.now());
    });
  }

  /**
   * The feed's next job, in `trx`; `done`, the running poll's completion, in the same commit, so
   * that the chain never has two live jobs, not even between a poll's commit and its outcome.
   */
  private async scheduleNext(trx: Tx, runAt: Date, done?: JobCompletion): Promise<void> {
    const jobId = await enqueueJob(trx, this.deps.clock, { kind: DEPOSIT_POLL_JOB, payload: null, runAt });
    await trx.updateTable('deposit_feeds').set({ job_id: jobId, updated_at: this.deps.clock.now() }).where('name', '=', FEED).execute();
    if (done) await done.update().execute(trx);
  }

  private later(): Date {
    return new Date(this.deps.clock.now().getTime() + DEPOSIT_POLL_INTERVAL_MS);
  }

  private async poll(job: Job, completion: JobCompletion): Promise<void> {
    const feed = await this.deps.db.selectFrom('deposit_feeds').selectAll().where('name', '=', FEED).executeTakeFirst();
    if (!feed || feed.job_id !== job.id) return;
    let page;
    try {
      page = await this.deps.source.listDeposits(feed.cursor);
    } catch (error) {
      // The provider is down or off-contract: asked again at the next interval, the cursor unchanged.
      this.deps.logger.warn({ err: error, cursor: feed.cursor }, 'the rail provider’s deposit feed could not be read');
      await withTx(this.deps.db, async (trx) => {
        const locked = await trx.selectFrom('deposit_feeds').select('job_id').where('name', '=', FEED).forUpdate().executeTakeFirst();
        if (locked?.job_id === job.id) await this.scheduleNext(trx, this.later(), completion);
      });
      return;
    }
    await withTx(this.deps.db, async (trx) => {
      const locked = await trx.selectFrom('deposit_feeds').selectAll().where('name', '=', FEED).forUpdate().executeTakeFirst();
      if (!locked || locked.job_id !== job.id || locked.cursor !== feed.cursor) return;
      for (const deposit of page.deposits) await this.take(trx, deposit);
      await trx
        .updateTable('deposit_feeds')
        .set({ cursor: page.nextCursor ?? feed.cursor, updated_at: this.deps.clock.now() })
        .where('name', '=', FEED)
        .execute();
      // A full page: more are waiting, so the next poll runs at once.
      await this.scheduleNext(trx, page.deposits.length >= DEPOSIT_PAGE_LIMIT ? this.deps.clock.now() : this.later(), completion);
    });
  }

  /**
   * Credits one reported deposit, or keeps it in `unmatched_deposits` (once per id) and logs it for
   * the operator. Whatever refuses one deposit's credit (the ledger: past the balance limit, or any
   * other refusal; an AppError) is that deposit's outcome, rolled back to its savepoint: the page
   * goes on. Anything else (the database) fails the page, which is read again.
   */
  private async take(trx: Tx, deposit: ReportedDeposit): Promise<void> {
    let outcome: DepositOutcome;
    try {
      outcome = await inSavepoint(trx, 'funding_deposit', () => this.deps.deposits.receive(trx, deposit, 'production'));
    } catch (error) {
      if (!(error instanceof LedgerError) && !(error instanceof AppError)) throw error;
      const detail = error instanceof LedgerError ? `ledger ${error.reason}: ${error.message}` : `${error.code}: ${error.message}`;
      const account = await this.deps.deposits.productionAccount(trx, deposit.reference);
      outcome = { credited: false, reason: error instanceof LedgerError && error.reason === 'BALANCE_LIMIT' ? 'BALANCE_LIMIT' : 'REFUSED', detail, ...(account ? { account } : {}) };
    }
    if (outcome.credited) {
      // Kept earlier (unknown reference, balance limit…), credited now that it is listed again: the operator's row is closed.
      if (!outcome.repeated) {
        const closed = await trx
          .updateTable('unmatched_deposits')
          .set({ resolved_at: this.deps.clock.now(), credited_platform_id: outcome.transaction.platform_id, credited_transaction_id: outcome.transaction.id })
          .where('deposit_id', '=', deposit.depositId)
          .where('resolved_at', 'is', null)
          .returning('deposit_id')
          .executeTakeFirst();
        if (closed) this.deps.logger.info({ depositId: deposit.depositId }, 'a deposit kept in unmatched_deposits was credited when listed again: its row is closed');
      }
      return;
    }
    const row = {
      deposit_id: deposit.depositId,
      reference: deposit.reference,
      currency: deposit.currency,
      amount: deposit.amount,
      rail: deposit.rail,
      sender: deposit.sender ? JSON.stringify(deposit.sender) : null,
      reason: outcome.reason,
      platform_id: outcome.account?.platform_id ?? null,
      account_id: outcome.account?.id ?? null,
      received_at: this.deps.clock.now(),
      detail: outcome.detail ?? null,
      credited_platform_id: outcome.credit?.platformId ?? null,
      credited_transaction_id: outcome.credit?.transactionId ?? null,
      resolved_at: null,
    };
    const kept = await trx
      .insertInto('unmatched_deposits')
      .values(row)
      // Once per id; a row closed by a credit is reopened by a listing that now conflicts with it.
      .onConflict((oc) => oc.column('deposit_id').doUpdateSet(row).where('unmatched_deposits.resolved_at', 'is not', null))
      .returning('deposit_id')
      .executeTakeFirst();
    if (kept) {
      this.deps.logger.warn(
        { depositId: deposit.depositId, reference: deposit.reference, currency: deposit.currency, amount: deposit.amount.toString(), reason: outcome.reason, detail: outcome.detail },
        'a deposit credited no account: kept in unmatched_deposits for the operator',
      );
    }
  }
}
