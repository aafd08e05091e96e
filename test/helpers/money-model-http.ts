import fc from 'fast-check';
import { expect } from 'vitest';
import { accountBalance } from '../../src/modules/ledger/index.js';
import { BASE, type TestContext, type TestPlatform } from './context.js';
import { validSamples } from './external-accounts.js';
import { expectLedgerConsistent } from './ledger.js';
import { drainJobs } from './payments.js';

/**
 * A model of the money paths over HTTP (docs/payments.md, docs/quotes.md) for property tests:
 * commands a platform can send — funding, quotes executed at once or later, book transfers, the
 * deprecated transfers, REALTIME_FUNDING paid with POST /sandbox/send, cancels, the test clock —
 * and, for every transaction, the status the docs say it has now (the sandbox's amount triggers and
 * account suffixes decide how it ends, the platform's clock when). Balances are derived from those
 * statuses, so a command's effect is never added up by hand: a payment held is money unavailable,
 * a payment posted is money gone, a failed one is money back.
 */

type Body = Record<string, any>;

export const CUSTOMERS = 3;

/** USD payout accounts by the last three digits of their account number (the upstream sandbox's suffixes). */
const PAYOUT_SUFFIXES = ['123', '002', '003', '004', '005', '006', '007'] as const;
type PayoutSuffix = (typeof PAYOUT_SUFFIXES)[number];
/** First-party USD accounts money is pulled from (POST /transfer-in) by suffix. */
const PULL_SUFFIXES = ['321', '002', '005'] as const;
type PullSuffix = (typeof PULL_SUFFIXES)[number];
type Destination = PayoutSuffix | 'EUR';

/** The rail each destination is paid on, and its settlement time (docs/payments.md, Rails). */
const RAIL = { USD: { name: 'RTP', seconds: 5 }, EUR: { name: 'SEPA_INSTANT', seconds: 10 } } as const;
/** Instant rails hold a quote's price this long (docs/quotes.md). */
const QUOTE_LIFETIME_S = 60;
/** A pull from a `005` account fails this long after its execution. */
const PULL_FAIL_AFTER_S = 30;

export type Command =
  | { op: 'fund'; account: number; amount: number }
  | { op: 'pay'; account: number; to: Destination; amount: number; trigger: string | null; lock: 'SENDING' | 'RECEIVING'; mode: 'execute' | 'immediate' | 'later' }
  | { op: 'executeLater'; pick: number }
  | { op: 'replay'; pick: number }
  | { op: 'book'; from: number; to: number; amount: number; mode: 'execute' | 'immediate' }
  | { op: 'transferOut'; account: number; to: PayoutSuffix; amount: number; trigger: string | null }
  | { op: 'transferIn'; account: number; from: PullSuffix; amount: number; collectNow: boolean }
  | { op: 'realtime'; to: Destination; amount: number }
  | { op: 'send'; pick: number; exact: boolean }
  | { op: 'cancel'; pick: number; racingJobs: boolean }
  | { op: 'refund'; pick: number }
  | { op: 'advance'; seconds: number }
  | { op: 'drain' };

const account = fc.nat(CUSTOMERS - 1);
/** Amounts from dust to more than an account usually holds (the refusal of an overdraft). */
const amount = fc.oneof({ arbitrary: fc.integer({ min: 1_000, max: 60_000 }), weight: 4 }, { arbitrary: fc.integer({ min: 60_000, max: 600_000 }), weight: 1 });
/** The sandbox's amount triggers (sent amount ends in 901–906), or none. */
const trigger = fc.option(fc.constantFrom('901', '902', '903', '904', '905', '906'), { freq: 2 });

export const commandArb: fc.Arbitrary<Command> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant('fund' as const), account, amount: fc.integer({ min: 1, max: 200_000 }) }), weight: 3 },
  {
    arbitrary: fc.record({
      op: fc.constant('pay' as const),
      account,
      to: fc.constantFrom<Destination>(...PAYOUT_SUFFIXES, 'EUR'),
      amount,
      trigger,
      lock: fc.constantFrom('SENDING' as const, 'RECEIVING' as const),
      mode: fc.constantFrom('execute' as const, 'immediate' as const, 'later' as const),
    }),
    weight: 6,
  },
  { arbitrary: fc.record({ op: fc.constant('executeLater' as const), pick: fc.nat(20) }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constant('replay' as const), pick: fc.nat(20) }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('book' as const), from: account, to: account, amount, mode: fc.constantFrom('execute' as const, 'immediate' as const) }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constant('transferOut' as const), account, to: fc.constantFrom(...PAYOUT_SUFFIXES), amount, trigger }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('transferIn' as const), account, from: fc.constantFrom(...PULL_SUFFIXES), amount: fc.integer({ min: 1_000, max: 60_000 }), collectNow: fc.boolean() }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('realtime' as const), to: fc.constantFrom<Destination>('123', '004', '006', 'EUR'), amount: fc.integer({ min: 1_000, max: 60_000 }) }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('send' as const), pick: fc.nat(20), exact: fc.boolean() }), weight: 2 },
  // Half of the cancels race the job worker (test/http/money-model-races.test.ts: what the model allows for then).
  { arbitrary: fc.record({ op: fc.constant('cancel' as const), pick: fc.nat(20), racingJobs: fc.boolean() }), weight: 4 },
  { arbitrary: fc.record({ op: fc.constant('refund' as const), pick: fc.nat(20) }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('advance' as const), seconds: fc.constantFrom(1, 5, 10, 29, 30, 61, 360) }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constant('drain' as const) }), weight: 3 },
);

/** How many times one drain runs again the jobs that failed in it before the run fails. */
const RETRIES_PER_DRAIN = 3;

type Status = 'PENDING' | 'PROCESSING' | 'COMPLETED' | 'FAILED' | 'EXPIRED' | 'REFUNDED';
const TERMINAL: ReadonlySet<string> = new Set(['COMPLETED', 'FAILED', 'EXPIRED', 'REFUNDED']);
/** Terminal for its type: a completed incoming payment may still be refunded. */
const isTerminal = (type: 'OUTGOING' | 'INCOMING', status: string) => TERMINAL.has(status) && !(type === 'INCOMING' && status === 'COMPLETED');
/** The machine of src/modules/transactions/status.ts, for the statuses these flows reach. */
const EDGES: Record<'OUTGOING' | 'INCOMING', Record<string, readonly string[]>> = {
  OUTGOING: { PENDING: ['PROCESSING', 'FAILED', 'EXPIRED'], PROCESSING: ['COMPLETED', 'FAILED'] },
  INCOMING: { PENDING: ['PROCESSING', 'COMPLETED', 'FAILED'], PROCESSING: ['COMPLETED', 'FAILED'], COMPLETED: ['REFUNDED'] },
};

/** How the rail ends a payout: refused when handed over, failed or completed at its settlement time (`settlesIn` replacing the rail's). */
type Outcome = { failAt?: 'SUBMISSION' | 'SETTLEMENT'; reason?: string; settlesIn?: number };

const AMOUNT_TRIGGERS: Record<string, Outcome> = {
  '901': { failAt: 'SETTLEMENT', reason: 'QUOTE_EXECUTION_FAILED' },
  '902': { failAt: 'SETTLEMENT', reason: 'PAYOUT_RETURNED' },
  '903': { failAt: 'SUBMISSION', reason: 'LIMIT_EXCEEDED' },
  '904': { failAt: 'SUBMISSION', reason: 'ACCOUNT_CANNOT_RECEIVE' },
  '905': { failAt: 'SUBMISSION', reason: 'ACCOUNT_INVALID' },
  '906': { failAt: 'SUBMISSION', reason: 'COMPLIANCE_REJECTED' },
};
const QUOTE_SUFFIXES: Record<string, Outcome> = {
  '002': { failAt: 'SUBMISSION', reason: 'QUOTE_EXECUTION_FAILED' },
  '003': { settlesIn: 360 },
  '004': { failAt: 'SETTLEMENT', reason: 'ACCOUNT_CANNOT_RECEIVE' },
  '005': { failAt: 'SETTLEMENT', reason: 'PAYOUT_RETURNED' },
  '006': { failAt: 'SUBMISSION', reason: 'QUOTE_EXECUTION_FAILED' },
  '007': { failAt: 'SETTLEMENT', reason: 'QUOTE_EXECUTION_FAILED' },
};
const TRANSFER_SUFFIXES: Record<string, Outcome> = {
  '002': { failAt: 'SUBMISSION', reason: 'LIMIT_EXCEEDED' },
  '003': { failAt: 'SUBMISSION', reason: 'ACCOUNT_INVALID' },
  '004': { failAt: 'SETTLEMENT', reason: 'ACCOUNT_CANNOT_RECEIVE' },
  '005': { failAt: 'SETTLEMENT', reason: 'ACCOUNT_CANNOT_RECEIVE', settlesIn: 30 },
};

/** Amount trigger first; the account's suffix only when the amount triggers nothing (docs/payments.md, Precedence). */
function outcomeOf(sent: number, suffix: string | undefined, table: Record<string, Outcome>): Outcome {
  return AMOUNT_TRIGGERS[String(sent % 1000).padStart(3, '0')] ?? (suffix ? table[suffix] : undefined) ?? {};
}

/** One transaction as the model expects it. */
interface ModelTx {
  id: string;
  /** payout: an internal account pays an external account; book: internal to internal; pull: transfer-in; realtime: REALTIME_FUNDING; expired: a quote executed too late. */
  kind: 'payout' | 'book' | 'pull' | 'realtime' | 'expired';
  type: 'OUTGOING' | 'INCOMING';
  from?: number;
  to?: number;
  total: number;
  sent: number;
  received: number;
  fees: number;
  status: Status;
  failureReason?: string;
  refundReason?: string;
  /** Money left (or was held at) its source: a hold placed, or money paid in for a REALTIME_FUNDING payment. */
  held: boolean;
  /** REALTIME_FUNDING: money paid in and kept (the exact amount). */
  funded: boolean;
  /** The platform's time (ms) the rail's clock starts from: execution, or the money's arrival. */
  startedAt: number;
  /** Settlement due time (ms, platform clock), fixed at the hand-over. */
  dueAt?: number;
  railSeconds: number;
  outcome: Outcome;
  /** REALTIME_FUNDING: its deadline (ms, platform clock). */
  expiresAt?: number;
  /** Pull: fails this many seconds after execution (undefined: collected). */
  pullFailsAfter?: number;
  /** A completed pull's sandbox refund (POST /sandbox/transactions/{id}/refund): under way, or failed for want of money. */
  pullRefund?: 'PENDING' | 'FAILED';
  /** When it settled (ms, platform clock). */
  settledAt?: number;
  /** What made it, for failure messages. */
  origin: string;
}

/** A quote created to be executed later. */
interface LaterQuote {
  id: string;
  transactionId: string;
  from: number;
  total: number;
  sent: number;
  received: number;
  fees: number;
  expiresAt: number;
  to: Destination;
  executed: boolean;
}

export class MoneyWorld {
  readonly accounts: string[] = [];
  private readonly payouts = new Map<Destination, string>();
  private readonly pulls = new Map<PullSuffix, string>();
  readonly txs: ModelTx[] = [];
  private readonly later: LaterQuote[] = [];
  private readonly realtime: ModelTx[] = [];
  /** Sandbox money paid into each account, and in all. */
  private readonly fundings = new Map<number, number>();
  private funded = 0;
  /** The platform's clock (ms): the test's manual clock plus every advance. */
  private now: number;
  /** Statuses seen before, to check a terminal one never changes. */
  private readonly seen = new Map<string, { status: string; failureReason?: string }>();
  readonly log: string[] = [];
  /** What the runs reached (ends of transactions, refusals), so a test can show what it covered. */
  static readonly covered = new Map<string, number>();
  private static cover(what: string): void {
    MoneyWorld.covered.set(what, (MoneyWorld.covered.get(what) ?? 0) + 1);
  }

  private constructor(
    private readonly ctx: TestContext,
    readonly p: TestPlatform,
    /** The app's log lines (createTestContext's `logLines`), where the job worker says which jobs failed. */
    private readonly appLog: string[] | undefined,
  ) {
    this.now = ctx.clock.now().getTime();
  }

  static async open(ctx: TestContext, appLog?: string[]): Promise<MoneyWorld> {
    const world = new MoneyWorld(ctx, await ctx.newPlatform(), appLog);
    for (let i = 0; i < CUSTOMERS; i++) {
      const created = await world.call('POST', '/customers', {
        customerType: 'INDIVIDUAL',
        platformCustomerId: `m-${i}`,
        fullName: 'Ann Lee',
        endUserTermsConsent: { acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' },
      });
      expect(created.statusCode, created.body).toBe(201);
      const customerId = (created.json() as Body).id as string;
      const listed = (await world.call('GET', `/customers/internal-accounts?customerId=${customerId}&currency=USD`)).json() as Body;
      world.accounts.push(listed.data[0].id as string);
    }
    const samples = validSamples(ctx.clock.now());
    const external = async (type: string, extra: Body, info: Body) => {
      const sample = samples[type]!;
      const created = await world.call('POST', '/platform/external-accounts', { ...sample, ...extra, accountInfo: { ...sample.accountInfo, ...info } });
      expect(created.statusCode, created.body).toBe(201);
      return (created.json() as Body).id as string;
    };
    for (const suffix of PAYOUT_SUFFIXES) world.payouts.set(suffix, await external('USD_ACCOUNT', {}, { accountNumber: `12345678${suffix}` }));
    world.payouts.set('EUR', await external('EUR_ACCOUNT', {}, {}));
    for (const suffix of PULL_SUFFIXES) world.pulls.set(suffix, await external('USD_ACCOUNT', { ownershipType: 'FIRST_PARTY' }, { accountNumber: `87654321${suffix}` }));
    return world;
  }

  call(method: 'GET' | 'POST', path: string, payload?: unknown, headers: Record<string, string> = {}) {
    return this.ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: this.p.auth, ...headers }, ...(payload === undefined ? {} : { payload: payload as object }) });
  }

  /** Writes sent with an Idempotency-Key, and what they answered: `replay` sends one again. */
  private readonly keyed: Array<{ path: string; payload: unknown; key: string; statusCode: number; body: unknown }> = [];

  /** A write with an Idempotency-Key, kept for `replay`. */
  private async keyedCall(path: string, payload: unknown) {
    const key = `k-${this.keyed.length}-${this.log.length}`;
    const response = await this.call('POST', path, payload, { 'idempotency-key': key });
    // Only successes: a refusal is not a result to replay (the same request may succeed later).
    if (response.statusCode < 300) this.keyed.push({ path, payload, key, statusCode: response.statusCode, body: response.json() });
    return response;
  }

  // ---- what the model expects of the balances ----

  /** Each internal account's available and total balance, from the funding and every transaction's status. */
  expectedBalances(): Array<{ available: number; total: number }> {
    const out = this.accounts.map(() => ({ available: 0, total: 0 }));
    for (const [i, v] of this.fundings) out[i]!.available += v, out[i]!.total += v;
    for (const tx of this.txs) {
      const live = tx.status === 'PENDING' || tx.status === 'PROCESSING' || tx.status === 'COMPLETED';
      if (!live || !tx.held) continue;
      const posted = tx.status !== 'PENDING';
      if (tx.from !== undefined) {
        out[tx.from]!.available -= tx.total;
        if (posted) out[tx.from]!.total -= tx.total;
      }
      if (tx.to !== undefined) {
        out[tx.to]!.total += tx.received;
        if (posted) out[tx.to]!.available += tx.received;
      }
    }
    return out;
  }

  /** Fees held or taken: every live payment's, none of a failed one's. */
  private expectedFees(): number {
    return this.txs.filter((tx) => tx.held && (tx.status === 'PENDING' || tx.status === 'PROCESSING' || tx.status === 'COMPLETED')).reduce((sum, tx) => sum + tx.fees, 0);
  }

  /** The sandbox's outside world paid every funding and every REALTIME_FUNDING payment it did not get back. */
  private expectedSandboxFunding(): number {
    const paidIn = this.realtime.filter((tx) => tx.funded && tx.status !== 'FAILED' && tx.status !== 'EXPIRED').reduce((sum, tx) => sum + tx.total, 0);
    return 0 - (this.funded + paidIn) || 0;
  }

  // ---- the rails, as the docs describe them, on the model's clock ----

  /** What the job worker does when drained at the platform's time `now`. */
  private runJobs(): void {
    for (const tx of this.txs) {
      if (tx.status === 'PENDING') {
        if (tx.kind === 'book' && tx.held) this.set(tx, 'COMPLETED');
        else if (tx.kind === 'pull') {
          if (tx.pullFailsAfter === undefined) this.set(tx, 'COMPLETED');
          else if (this.now >= tx.startedAt + tx.pullFailsAfter * 1000) this.set(tx, 'FAILED', 'COLLECTION_FAILED');
        } else if (tx.kind === 'realtime' && !tx.funded) {
          if (this.now >= tx.expiresAt!) this.set(tx, 'EXPIRED', 'QUOTE_EXPIRED');
        } else if (tx.held) {
          // Handed to the rail: the hold is posted; the rail may refuse it at once.
          if (tx.outcome.failAt === 'SUBMISSION') this.set(tx, 'FAILED', tx.outcome.reason, 'TRANSACTION_FAILED');
          else {
            this.set(tx, 'PROCESSING');
            tx.dueAt = tx.outcome.settlesIn !== undefined ? this.now + tx.outcome.settlesIn * 1000 : tx.startedAt + tx.railSeconds * 1000;
          }
        }
      }
      if (tx.status === 'PROCESSING' && this.now >= tx.dueAt!) {
        if (tx.outcome.failAt === 'SETTLEMENT') this.set(tx, 'FAILED', tx.outcome.reason, 'TRANSACTION_FAILED');
        else this.set(tx, 'COMPLETED');
      }
    }
  }

  /**
   * Runs every due job. A pull's refund needs the account's available balance when its job runs,
   * and the jobs of one drain run in no set order: other jobs may credit the account first, other
   * refunds take from it. Where that order decides, either end is right, and the model follows the
   * one that happened; where it does not, the model says which. `before`: the balances before a
   * cancel that raced these jobs, which may have run while the hold it releases still held money.
   */
  private async drain(before?: Array<{ available: number }>): Promise<void> {
    const refunds = this.txs.filter((tx) => tx.pullRefund === 'PENDING');
    const lowest = this.expectedBalances().map((b, i) => Math.min(b.available, before?.[i]!.available ?? b.available) - refunds.filter((r) => r.to === i).reduce((sum, r) => sum + r.received, 0));
    await this.runDueJobs();
    this.runJobs();
    for (const tx of refunds) {
      const highest = this.expectedBalances()[tx.to!]!.available;
      const view = (await this.call('GET', `/transactions/${tx.id}`)).json() as Body;
      const refunded = view.status === 'REFUNDED';
      if (tx.received <= lowest[tx.to!]!) expect(refunded, `refund of ${tx.id}: the account had the money`).toBe(true);
      if (tx.received > highest) expect(refunded, `refund of ${tx.id}: the account never had the money`).toBe(false);
      if (refunded) {
        this.set(tx, 'REFUNDED');
        tx.pullRefund = undefined;
      } else tx.pullRefund = 'FAILED';
      MoneyWorld.cover(`pull refund ${refunded ? 'COMPLETED' : 'FAILED'}`);
    }
  }

  /**
   * Runs due jobs until none is left. A job that failed (its transaction lost to a racing one, its
   * connection refused) is retried by the worker after a backoff of real time, which the test's
   * clock never lets pass: the money it moves is held meanwhile, not lost. The model waits for that
   * retry by making the job due at once, and says so; a job that died, failed in every one of
   * RETRIES_PER_DRAIN retries or was left running fails the run.
   */
  private async runDueJobs(): Promise<void> {
    for (let retries = 0; ; retries++) {
      await drainJobs(this.ctx);
      const failed = this.jobFailures();
      const stuck = await this.ctx.handle.db.selectFrom('jobs').select('id').where('platform_id', '=', this.p.uuid).where('status', 'in', ['running', 'dead']).execute();
      if (failed.length === 0 && stuck.length === 0) return;
      const report = failed.map((f) => `${f.kind} ${f.jobId} attempt ${f.attempts}: ${f.err}`).join('\n');
      if (stuck.length > 0 || failed.some((f) => f.dead) || retries === RETRIES_PER_DRAIN) {
        throw new Error(`jobs failed after ${this.log.join(' ; ')}\n${report}\njobs not done:\n${await this.jobsReport()}`);
      }
      console.warn(`money model: jobs failed, their retries run now (the backoff is real time):\n${report}`);
      MoneyWorld.cover('job retried after a failure');
      await this.ctx.handle.db.updateTable('jobs').set({ run_at: this.ctx.clock.now() }).where('id', 'in', failed.map((f) => f.jobId)).where('status', '=', 'queued').execute();
    }
  }

  /** The job worker's failures logged since the last look (JobWorker's 'job failed'); other errors it logs fail the run. */
  private jobFailures(): Array<{ jobId: string; kind: string; attempts: number; dead: boolean; err: string }> {
    const entries = (this.appLog?.splice(0) ?? []).map((line) => JSON.parse(line) as { level: number; msg: string; jobId: string; kind: string; attempts: number; dead: boolean; err: unknown });
    const errors = entries.filter((entry) => entry.level >= 50);
    expect(errors, `errors logged after ${this.log.join(' ; ')}`).toEqual([]);
    return entries.filter((entry) => entry.msg === 'job failed').map((entry) => ({ ...entry, err: String(entry.err) }));
  }

  private set(tx: ModelTx, status: Status, failureReason?: string, refundReason?: string): void {
    tx.status = status;
    if (status === 'COMPLETED') tx.settledAt = this.now;
    tx.failureReason = failureReason;
    tx.refundReason = refundReason;
  }

  // ---- commands ----

  async apply(command: Command): Promise<void> {
    this.log.push(JSON.stringify(command));
    switch (command.op) {
      case 'fund': {
        const response = await this.keyedCall(`/sandbox/internal-accounts/${this.accounts[command.account]}/fund`, { amount: command.amount });
        expect(response.statusCode, response.body).toBe(200);
        this.fundings.set(command.account, (this.fundings.get(command.account) ?? 0) + command.amount);
        this.funded += command.amount;
        const answered = response.json() as Body;
        const expected = this.expectedBalances()[command.account]!;
        expect({ available: answered.balance.amount, total: answered.totalBalance.amount }, 'fund answers the new balances').toEqual(expected);
        return;
      }
      case 'pay':
        return this.pay(command);
      case 'executeLater': {
        const quote = this.later[command.pick % Math.max(1, this.later.length)];
        if (!quote) return;
        const response = await this.call('POST', `/quotes/${quote.id}/execute`);
        if (quote.executed || this.now >= quote.expiresAt) {
          // Executed (or recorded EXPIRED) before, or too late now: 409, every time, and nothing moves.
          expect(response.statusCode, response.body).toBe(409);
          const late = this.txs.find((tx) => tx.id === quote.transactionId)?.kind === 'expired' || (!quote.executed && this.now >= quote.expiresAt);
          expect(response.json(), `execute of ${quote.id}`).toMatchObject({ code: 'CONFLICT', details: late ? { reason: 'QUOTE_EXPIRED' } : { transactionId: quote.transactionId } });
          if (late) expect((response.json() as Body).details.reason).toBe('QUOTE_EXPIRED');
          else expect((response.json() as Body).details.reason).toBeUndefined();
          MoneyWorld.cover(late ? 'refused late execute' : 'refused second execute');
          // Recorded EXPIRED on the first late attempt; nothing moved.
          if (!quote.executed) this.txs.push(this.newTx({ id: quote.transactionId, kind: 'expired', status: 'EXPIRED', failureReason: 'QUOTE_EXPIRED', total: quote.total, origin: 'late execute' }));
          quote.executed = true;
          return;
        }
        if (this.refusedForBalance(response, quote.from, quote.total)) return;
        expect(response.statusCode, response.body).toBe(200);
        quote.executed = true;
        this.txs.push(this.payoutTx(quote.transactionId, quote.from, quote.to, quote, 'quote', 'executeLater'));
        return;
      }
      case 'replay': {
        // The same request with the same Idempotency-Key answers as the first time and moves nothing again.
        const first = this.keyed[command.pick % Math.max(1, this.keyed.length)];
        if (!first) return;
        const again = await this.call('POST', first.path, first.payload, { 'idempotency-key': first.key });
        expect(again.statusCode, again.body).toBe(first.statusCode);
        expect(again.json(), `replay of ${first.path}`).toEqual(first.body);
        MoneyWorld.cover('replayed');
        return;
      }
      case 'book':
        return this.book(command);
      case 'transferOut': {
        const total = this.withTrigger(command.amount, command.trigger);
        const response = await this.keyedCall('/transfer-out', { source: { accountId: this.accounts[command.account] }, destination: { accountId: this.payouts.get(command.to), paymentRail: 'RTP' }, amount: total });
        if (this.refusedForBalance(response, command.account, total)) return;
        expect(response.statusCode, response.body).toBe(201);
        const view = response.json() as Body;
        expect(view).toMatchObject({ type: 'OUTGOING', status: 'PENDING' });
        const priced = { total, sent: view.sentAmount.amount as number, received: view.receivedAmount.amount as number, fees: view.fees as number };
        expect(priced.sent + priced.fees, 'transfer-out: amount = sent + fees').toBe(total);
        this.txs.push(this.payoutTx(view.id, command.account, command.to, priced, 'transfer', 'transfer-out'));
        return;
      }
      case 'transferIn': {
        const response = await this.keyedCall('/transfer-in', { source: { accountId: this.pulls.get(command.from) }, destination: { accountId: this.accounts[command.account] }, amount: command.amount });
        expect(response.statusCode, response.body).toBe(201);
        const view = response.json() as Body;
        expect(view).toMatchObject({ type: 'INCOMING', status: 'PENDING' });
        const received = view.receivedAmount.amount as number;
        const fees = (view.fees as number | undefined) ?? 0;
        this.txs.push(
          this.newTx({
            id: view.id,
            kind: 'pull',
            type: 'INCOMING',
            to: command.account,
            total: command.amount,
            sent: view.sentAmount.amount,
            received,
            fees,
            held: true,
            pullFailsAfter: command.from === '002' ? 0 : command.from === '005' ? PULL_FAIL_AFTER_S : undefined,
            origin: 'transfer-in',
          }),
        );
        // The job worker collects it at once (or not: it stays PENDING until the next drain).
        if (command.collectNow) await this.drain();
        return;
      }
      case 'realtime': {
        const body = { source: { sourceType: 'REALTIME_FUNDING', currency: 'USD' }, destination: { destinationType: 'ACCOUNT', accountId: this.payouts.get(command.to), paymentRail: command.to === 'EUR' ? RAIL.EUR.name : RAIL.USD.name }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: command.amount };
        const response = await this.call('POST', '/quotes', body);
        expect(response.statusCode, response.body).toBe(201);
        const quote = response.json() as Body;
        expect(quote).toMatchObject({ status: 'PENDING', totalSendingAmount: command.amount });
        const tx = this.newTx({
          id: quote.transactionId,
          kind: 'realtime',
          total: quote.totalSendingAmount,
          sent: quote.totalSendingAmount - quote.feesIncluded,
          received: quote.totalReceivingAmount,
          fees: quote.feesIncluded,
          expiresAt: Date.parse(quote.expiresAt),
          railSeconds: command.to === 'EUR' ? RAIL.EUR.seconds : RAIL.USD.seconds,
          outcome: outcomeOf(quote.totalSendingAmount - quote.feesIncluded, command.to === 'EUR' ? undefined : command.to, QUOTE_SUFFIXES),
          origin: 'realtime',
        });
        expect(tx.expiresAt! - this.now, 'REALTIME_FUNDING quote lifetime').toBe(QUOTE_LIFETIME_S * 1000);
        this.txs.push(tx);
        this.realtime.push(tx);
        return;
      }
      case 'send': {
        const waiting = this.realtime;
        const tx = waiting[command.pick % Math.max(1, waiting.length)];
        if (!tx) return;
        const quoteId = await this.quoteOf(tx.id);
        const paid = command.exact ? tx.total : tx.total + 1;
        const response = await this.call('POST', '/sandbox/send', { quoteId, currencyCode: 'USD', ...(command.exact ? {} : { currencyAmount: paid }) });
        if (tx.status !== 'PENDING' || tx.funded) {
          expect(response.statusCode, response.body).toBe(409);
          return;
        }
        if (this.now >= tx.expiresAt!) {
          expect(response.statusCode, response.body).toBe(409);
          expect((response.json() as Body).details).toMatchObject({ reason: 'QUOTE_EXPIRED' });
          MoneyWorld.cover('refused late send');
          return;
        }
        expect(response.statusCode, response.body).toBe(200);
        if (command.exact) {
          tx.funded = true;
          tx.held = true;
          tx.startedAt = this.now;
          expect(response.json()).toMatchObject({ id: tx.id, status: 'PENDING' });
        } else {
          // Paid and returned at once: the outside world has its money back.
          this.set(tx, 'FAILED', 'FUNDING_AMOUNT_MISMATCH', 'TRANSACTION_FAILED');
          tx.held = true;
          expect(response.json()).toMatchObject({ status: 'FAILED', failureReason: 'FUNDING_AMOUNT_MISMATCH', refund: { status: 'COMPLETED', reason: 'TRANSACTION_FAILED' } });
        }
        return;
      }
      case 'cancel': {
        const tx = this.txs[command.pick % Math.max(1, this.txs.length)];
        if (!tx) return;
        // Racing the job worker: the cancel wins (before the hand-over) or loses (409), never both.
        const before = this.expectedBalances();
        const [response] = await Promise.all([this.call('POST', `/transactions/${tx.id}/cancel`, {}), command.racingJobs ? this.ctx.jobs.runDue(50) : undefined]);
        const cancellable = tx.type === 'OUTGOING' && tx.status === 'PENDING';
        if (cancellable && (response.statusCode === 200 || !command.racingJobs)) {
          expect(response.statusCode, `cancel of ${tx.origin} ${tx.id}: ${response.body}`).toBe(200);
          const moved = tx.held || tx.funded;
          this.set(tx, 'FAILED', 'QUOTE_EXECUTION_FAILED', moved ? 'USER_CANCELLATION' : undefined);
          tx.held = moved;
          tx.funded = false;
          expect(response.json()).toMatchObject({ status: 'FAILED', failureReason: 'QUOTE_EXECUTION_FAILED' });
          MoneyWorld.cover(`cancelled ${tx.kind}${command.racingJobs ? ' racing the jobs' : ''}`);
        } else {
          expect(response.statusCode, `cancel of ${tx.origin} ${tx.id} (${tx.status}): ${response.body}`).toBe(409);
          expect((response.json() as Body).code).toBe('TRANSACTION_NOT_CANCELLABLE');
          MoneyWorld.cover(`refused cancel ${tx.kind} ${tx.status}${cancellable ? ' (the jobs won the race)' : ''}`);
        }
        if (command.racingJobs) await this.drain(before);
        return;
      }
      case 'refund': {
        // Mostly a pull (the only payment it applies to), now and then any other (refused).
        const pulls = this.txs.filter((tx) => tx.kind === 'pull');
        const candidates = command.pick % 4 === 0 || pulls.length === 0 ? this.txs : pulls;
        const tx = candidates[command.pick % Math.max(1, candidates.length)];
        if (!tx) return;
        const response = await this.call('POST', `/sandbox/transactions/${tx.id}/refund`);
        if (tx.kind === 'pull' && tx.status === 'COMPLETED' && tx.pullRefund !== 'PENDING') {
          expect(response.statusCode, response.body).toBe(200);
          expect(response.json()).toMatchObject({ status: 'COMPLETED', refund: { status: 'PENDING' } });
          tx.pullRefund = 'PENDING';
          return;
        }
        expect(response.statusCode, `refund of ${tx.origin} ${tx.status}: ${response.body}`).toBe(409);
        MoneyWorld.cover(`refused refund ${tx.kind} ${tx.status}`);
        return;
      }
      case 'advance': {
        const response = await this.call('POST', '/sandbox/clock/advance', { seconds: command.seconds });
        expect(response.statusCode, response.body).toBe(200);
        this.now += command.seconds * 1000;
        expect(Date.parse((response.json() as Body).now)).toBe(this.now);
        return this.drain();
      }
      case 'drain':
        return this.drain();
    }
  }

  /** Lets two days pass: every payment reaches its end. */
  async settleAll(): Promise<void> {
    // Handed over first: a rail's own settlement time (a `003` account's six minutes) counts from then.
    await this.apply({ op: 'drain' });
    await this.apply({ op: 'advance', seconds: 2 * 86_400 });
    await this.check({ final: true });
    for (const tx of this.txs) {
      expect(TERMINAL.has(tx.status) && tx.pullRefund !== 'PENDING', `${tx.origin} ${tx.id} ends ${tx.status}`).toBe(true);
      MoneyWorld.cover(`${tx.kind} ${tx.status}${tx.failureReason ? ` ${tx.failureReason}` : ''}${tx.refundReason ? ` refund ${tx.refundReason}` : ''}`);
    }
  }

  private withTrigger(amount: number, trigger: string | null): number {
    return trigger ? Math.floor(amount / 1000) * 1000 + Number(trigger) : amount;
  }

  /** Execution refused for the balance: 400 AMOUNT_OUT_OF_RANGE (INSUFFICIENT_BALANCE) exactly when the model says the account is short. */
  private refusedForBalance(response: { statusCode: number; body: string; json(): unknown }, from: number, total: number): boolean {
    const short = this.expectedBalances()[from]!.available < total;
    if (!short) return false;
    expect(response.statusCode, `expected the refusal of ${total} from ${this.expectedBalances()[from]!.available}: ${response.body}`).toBe(400);
    expect(response.json()).toMatchObject({ code: 'AMOUNT_OUT_OF_RANGE', details: { reason: 'INSUFFICIENT_BALANCE' } });
    MoneyWorld.cover('refused INSUFFICIENT_BALANCE');
    return true;
  }

  private async pay(command: Extract<Command, { op: 'pay' }>): Promise<void> {
    const eur = command.to === 'EUR';
    // Same currency, RECEIVING locked: the amount sent is the amount chosen, so a trigger lands on it.
    const locked = command.trigger && !eur ? this.withTrigger(command.amount, command.trigger) : command.amount;
    const lock = command.trigger && !eur ? 'RECEIVING' : command.lock;
    const body = {
      source: { sourceType: 'ACCOUNT', accountId: this.accounts[command.account] },
      destination: { destinationType: 'ACCOUNT', accountId: this.payouts.get(command.to), paymentRail: eur ? RAIL.EUR.name : RAIL.USD.name },
      lockedCurrencySide: lock,
      lockedCurrencyAmount: locked,
      ...(command.mode === 'immediate' ? { immediatelyExecute: true } : {}),
    };
    const created = command.mode === 'immediate' ? await this.keyedCall('/quotes', body) : await this.call('POST', '/quotes', body);
    if (command.mode === 'immediate') {
      // The price is not known before the answer: a refusal for the balance names the total.
      if (created.statusCode === 400 && (created.json() as Body).details?.reason === 'INSUFFICIENT_BALANCE') {
        const total = (created.json() as Body).details.totalSendingAmount as number;
        expect(this.refusedForBalance(created, command.account, total), `refused ${total} though the model has it`).toBe(true);
        return;
      }
    }
    expect(created.statusCode, created.body).toBe(201);
    const quote = created.json() as Body;
    const priced = { total: quote.totalSendingAmount as number, fees: quote.feesIncluded as number, sent: quote.totalSendingAmount - quote.feesIncluded, received: quote.totalReceivingAmount as number };
    if (!eur) expect(priced.received, 'same currency: received = sent').toBe(priced.sent);
    if (lock === 'RECEIVING') expect(priced.received).toBe(locked);
    else expect(priced.total).toBe(locked);
    expect(Date.parse(quote.expiresAt) - this.now, 'quote lifetime on an instant rail').toBe(QUOTE_LIFETIME_S * 1000);
    if (command.mode === 'immediate') {
      expect(this.expectedBalances()[command.account]!.available >= priced.total, 'executed though the model says the account is short').toBe(true);
      this.txs.push(this.payoutTx(quote.transactionId, command.account, command.to, priced, 'quote', 'immediatelyExecute'));
      return;
    }
    const later: LaterQuote = { id: quote.id, transactionId: quote.transactionId, from: command.account, ...priced, expiresAt: Date.parse(quote.expiresAt), to: command.to, executed: false };
    if (command.mode === 'later') {
      this.later.push(later);
      return;
    }
    const executed = await this.call('POST', `/quotes/${quote.id}/execute`);
    if (this.refusedForBalance(executed, command.account, priced.total)) {
      this.later.push(later);
      return;
    }
    expect(executed.statusCode, executed.body).toBe(200);
    this.later.push({ ...later, executed: true });
    this.txs.push(this.payoutTx(quote.transactionId, command.account, command.to, priced, 'quote', 'execute'));
  }

  private async book(command: Extract<Command, { op: 'book' }>): Promise<void> {
    const body = {
      source: { sourceType: 'ACCOUNT', accountId: this.accounts[command.from] },
      destination: { destinationType: 'ACCOUNT', accountId: this.accounts[command.to] },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: command.amount,
      ...(command.mode === 'immediate' ? { immediatelyExecute: true } : {}),
    };
    const created = await this.call('POST', '/quotes', body);
    if (command.from === command.to) {
      expect(created.statusCode, created.body).toBe(400);
      expect((created.json() as Body).code).toBe('SELF_PAYMENT');
      return;
    }
    if (command.mode === 'immediate' && this.refusedForBalance(created, command.from, command.amount)) return;
    expect(created.statusCode, created.body).toBe(201);
    const quote = created.json() as Body;
    expect(quote).toMatchObject({ totalSendingAmount: command.amount, totalReceivingAmount: command.amount, feesIncluded: 0 });
    if (command.mode === 'execute') {
      const executed = await this.call('POST', `/quotes/${quote.id}/execute`);
      if (this.refusedForBalance(executed, command.from, command.amount)) return;
      expect(executed.statusCode, executed.body).toBe(200);
    }
    this.txs.push(this.newTx({ id: quote.transactionId, kind: 'book', from: command.from, to: command.to, total: command.amount, sent: command.amount, received: command.amount, fees: 0, held: true, origin: `book ${command.mode}` }));
  }

  private payoutTx(id: string, from: number, to: Destination, priced: { total: number; sent: number; received: number; fees: number }, table: 'quote' | 'transfer', origin: string): ModelTx {
    const eur = to === 'EUR';
    return this.newTx({
      id,
      kind: 'payout',
      from,
      total: priced.total,
      sent: priced.sent,
      received: priced.received,
      fees: priced.fees,
      held: true,
      railSeconds: eur ? RAIL.EUR.seconds : RAIL.USD.seconds,
      outcome: outcomeOf(priced.sent, eur ? undefined : to, table === 'quote' ? QUOTE_SUFFIXES : TRANSFER_SUFFIXES),
      origin: `${origin} → ${to}`,
    });
  }

  private newTx(fields: Partial<ModelTx> & Pick<ModelTx, 'id' | 'kind' | 'origin'>): ModelTx {
    return { type: 'OUTGOING', total: 0, sent: 0, received: 0, fees: 0, status: 'PENDING', held: false, funded: false, startedAt: this.now, railSeconds: 0, outcome: {}, ...fields };
  }

  private readonly quoteIds = new Map<string, string>();
  private async quoteOf(transactionId: string): Promise<string> {
    if (!this.quoteIds.has(transactionId)) {
      const view = (await this.call('GET', `/transactions/${transactionId}`)).json() as Body;
      this.quoteIds.set(transactionId, view.quoteId as string);
    }
    return this.quoteIds.get(transactionId)!;
  }

  // ---- the checks after every command ----

  async check(options: { final?: boolean } = {}): Promise<void> {
    try {
      await this.checkAll(options);
    } catch (error) {
      // What the job worker left behind (a retry waiting for its time, a dead job) says why the service lags the model.
      (error as Error).message += `\njobs not done:\n${await this.jobsReport()}`;
      throw error;
    }
  }

  /** The platform's jobs that are not done: kind, status, attempts, when they run next and their last error. */
  private async jobsReport(): Promise<string> {
    const rows = await this.ctx.handle.db.selectFrom('jobs').selectAll().where('platform_id', '=', this.p.uuid).where('status', '!=', 'done').orderBy('created_at').execute();
    const now = this.ctx.clock.now().getTime();
    return rows.map((job) => `${job.kind} ${job.status} attempts ${job.attempts}/${job.max_attempts} runs in ${(new Date(job.run_at).getTime() - now) / 1000} s ${JSON.stringify(job.payload)}: ${job.last_error ?? ''}`).join('\n') || '(none)';
  }

  private async checkAll(options: { final?: boolean }): Promise<void> {
    const where = `after ${this.log.join(' ; ')}`;
    // Balances: as the model says, available ≤ total, nothing negative.
    const listed = ((await this.call('GET', '/customers/internal-accounts?limit=100')).json() as Body).data as Body[];
    const expected = this.expectedBalances();
    const actual = this.accounts.map((id) => {
      const found = listed.find((a) => a.id === id)!;
      return { available: found.balance.amount as number, total: found.totalBalance.amount as number };
    });
    expect(actual, `balances ${JSON.stringify(actual)}, the model ${JSON.stringify(expected)}, ${where}\n${this.describe()}`).toEqual(expected);
    for (const b of actual) {
      expect(b.available).toBeGreaterThanOrEqual(0);
      expect(b.available).toBeLessThanOrEqual(b.total);
    }
    // Every transaction: the status the model expects, along the machine's edges, a terminal one never changing.
    const views = new Map<string, Body>();
    for (let cursor: string | undefined, page = 0; page < 10; page++) {
      const response = (await this.call('GET', `/transactions?limit=100${cursor ? `&cursor=${cursor}` : ''}`)).json() as Body;
      for (const view of response.data as Body[]) views.set(view.id as string, view);
      if (!response.hasMore) break;
      cursor = response.nextCursor as string;
    }
    expect(views.size, `transactions ${where}`).toBe(this.txs.length);
    const events = new Map<string, string[]>();
    const rows = await this.ctx.handle.db.selectFrom('events').select(['resource_id', 'type']).where('platform_id', '=', this.p.uuid).orderBy('id').execute();
    for (const row of rows) if (row.resource_id) events.set(row.resource_id, [...(events.get(row.resource_id) ?? []), row.type]);
    for (const tx of this.txs) {
      const view = views.get(tx.id);
      expect(view, `${tx.origin} ${tx.id} listed`).toBeDefined();
      const label = `${tx.origin} ${tx.id} ${where}`;
      expect({ type: view!.type, status: view!.status, failureReason: view!.failureReason }, label).toEqual({ type: tx.type, status: tx.status, failureReason: tx.failureReason });
      const before = this.seen.get(tx.id);
      if (before && isTerminal(tx.type, before.status)) expect({ status: view!.status, failureReason: view!.failureReason }, `a terminal status changed: ${label}`).toEqual(before);
      // The way there, one event per status: every step an edge of the machine.
      // An incoming payment has no REFUNDED event: its REFUND_COMPLETED is that step.
      const path = (events.get(tx.id) ?? [])
        .map((type) => (type === 'INCOMING_PAYMENT.REFUND_COMPLETED' ? 'INCOMING_PAYMENT.REFUNDED' : type))
        .filter((type) => !type.includes('.REFUND_'))
        .map((type) => type.slice(type.indexOf('.') + 1));
      expect(path.at(-1), `last status event of ${label}: ${path.join(' → ')}`).toBe(view!.status);
      expect(['PENDING', 'EXPIRED'], `first status of ${label}`).toContain(path[0]);
      for (let i = 1; i < path.length; i++) expect(EDGES[tx.type][path[i - 1]!] ?? [], `${path.join(' → ')}: ${label}`).toContain(path[i]);
      this.seen.set(tx.id, { status: view!.status, failureReason: view!.failureReason });
      // Money that left (or was paid in) and came back carries the refund; nothing else does.
      if (tx.status === 'FAILED' && tx.refundReason) expect(view!.refund, label).toMatchObject({ status: 'COMPLETED', reason: tx.refundReason });
      else if (tx.status === 'REFUNDED') expect(view!.refund, label).toMatchObject({ status: 'COMPLETED' });
      else if (tx.pullRefund) expect(view!.refund, label).toMatchObject({ status: tx.pullRefund });
      else expect(view!.refund, label).toBeUndefined();
      if (tx.kind !== 'expired') expect(view!.sentAmount.amount, label).toBe(tx.sent);
      if (tx.status === 'COMPLETED' && tx.type === 'OUTGOING') expect(view!.settledAt, label).toBe(new Date(tx.settledAt!).toISOString());
      // A quote's status is its payment's (docs/quotes.md: derived, never stored); checked once all have ended.
      if (options.final && view!.quoteId) {
        const quote = (await this.call('GET', `/quotes/${view!.quoteId}`)).json() as Body;
        expect(quote.status, `quote of ${label}`).toBe(tx.status === 'REFUNDED' ? 'FAILED' : tx.status);
      }
    }
    // The platform's system accounts: fees held or earned, the sandbox world's money out.
    const fees = await Promise.all(['SERVICE_FEES', 'PLATFORM_FEES'].map((kind) => accountBalance(this.ctx.handle.db, this.p.uuid, { kind, currency: 'USD' } as never)));
    expect(Number(fees[0]!.total + fees[1]!.total), `fees ${where}`).toBe(this.expectedFees());
    const world = await accountBalance(this.ctx.handle.db, this.p.uuid, { kind: 'SANDBOX_FUNDING', currency: 'USD' });
    expect(Number(world.total), `sandbox funding ${where}`).toBe(this.expectedSandboxFunding());
    await expectLedgerConsistent(this.ctx.handle.db);
  }

  describe(): string {
    return this.txs.map((tx) => `${tx.origin} ${tx.id}: ${tx.status}${tx.failureReason ? ` ${tx.failureReason}` : ''} total ${tx.total} sent ${tx.sent} fees ${tx.fees}`).join('\n');
  }
}
