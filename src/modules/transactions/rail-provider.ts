import type { ReportedDeposit } from './deposits.js';

/**
 * The rail provider's contract: what Corridor hands it (payouts, pulls, expected deposits) and
 * what it may answer. Two implementations: SandboxRails (sandbox-rails.ts), the simulated rails of
 * sandbox platforms, and HttpRails (http-rails.ts), the production provider over HTTP.
 */

/**
 * What a rail can answer about a payout. `REJECTED` comes at submission, `FAILED` after the rail
 * took it. Either way the hold was already posted (the payment is PROCESSING before the rail is
 * asked: settlement.ts, onSubmit), so both end in a reversal of the debit (`:refund`), never in a
 * released hold.
 */
export const RAIL_FAILURE_REASONS = ['QUOTE_EXECUTION_FAILED', 'PAYOUT_RETURNED', 'LIMIT_EXCEEDED', 'ACCOUNT_CANNOT_RECEIVE', 'ACCOUNT_INVALID', 'COMPLIANCE_REJECTED'] as const;
export type RailFailureReason = (typeof RAIL_FAILURE_REASONS)[number];

export interface Payout {
  /** `Transaction:<uuid>`: the provider's idempotency key; submitting it again answers the first outcome. */
  transactionId: string;
  platformId: string;
  /** A PaymentRail, or NETWORK for crypto and UMA destinations. */
  rail: string;
  currency: string;
  /** Minor units the destination receives. */
  amount: bigint;
  /** What the sender paid, excluding fees, in minor units of `sendingCurrency`. */
  sentAmount: bigint;
  sendingCurrency: string;
  destination: unknown;
  reference: string;
  remittanceInformation?: string;
  /**
   * `TRANSFER`: started by POST /transfer-out rather than by a quote. Only the sandbox rails read
   * it (the upstream sandbox gives transfers their own account-suffix outcomes); HttpRails does
   * not send it.
   */
  requestedAs?: 'TRANSFER';
}

/**
 * A pull from an external account (POST /transfer-in, or a quote whose source is an external
 * account): the money arrives from `accountId`.
 */
export interface Pull {
  /** `Transaction:<uuid>`: the provider's idempotency key; handing it over again answers the first outcome. */
  transactionId: string;
  platformId: string;
  /** `ExternalAccount:<uuid>` the money is pulled from. */
  accountId: string;
  /** The debit rail (rails.ts PULL_RAILS): ACH for USD, SEPA for EUR. */
  rail: string;
  currency: string;
  /** Minor units taken from the account: the payment's totalSendingAmount. */
  amount: bigint;
  /** The transaction's reconciliation reference. */
  reference: string;
}

/**
 * `ACCEPTED` may say when the rail expects to settle: `settlesInSeconds` counted from the
 * hand-over, or `settlesAt` an instant on the platform's clock (a counterparty that names its own
 * time, as a UMA receiver's node does); without either the rail's usual settlement time holds.
 */
export type SubmitOutcome = { status: 'ACCEPTED'; settlesInSeconds?: number; settlesAt?: Date } | { status: 'REJECTED'; failureReason: RailFailureReason };
/**
 * The answer to a pull's hand-over. `COLLECTED`: the money is in (the sandbox's simulated pulls).
 * `FAILED`: refused, nothing collected; `afterSeconds` (counted from the execution) is how long
 * the bank took to answer (0: at once). `ACCEPTED`: the rail is collecting; how it ends is learned
 * from `collectionStatus` (the production provider).
 */
export type PullOutcome = { status: 'COLLECTED' } | { status: 'FAILED'; afterSeconds: number } | { status: 'ACCEPTED' };
/** How an accepted pull stands: still being collected, collected (the money is in), or failed (nothing collected). */
export type CollectionStatus = { status: 'PENDING' } | { status: 'COLLECTED' } | { status: 'FAILED' };
/**
 * `PENDING` may say when the rail now expects to settle (`settlesAt`, on the platform's clock): the
 * payment shows it as its `expectedSettlementAt`, and is asked again then.
 */
export type PayoutStatus = { status: 'PENDING'; settlesAt?: Date } | { status: 'COMPLETED' } | { status: 'FAILED'; failureReason: RailFailureReason };

/** Money a REALTIME_FUNDING payment waits for: the platform pays the quote's instructions. */
export interface ExpectedDeposit {
  /** `Transaction:<uuid>`: the provider's key for this deposit (a return names it too). */
  transactionId: string;
  platformId: string;
  quoteId: string;
  currency: string;
  /** Minor units the quote asks for (its totalSendingAmount). */
  amount: bigint;
  /** The reference (bank) or address (crypto) of the instructions that the deposit must carry. */
  reference: string | null;
  paymentInstructions: unknown;
  /**
   * The payment's funding deadline (the quote's `expiresAt`, ISO 8601): money received at or after
   * it does not fund the payment — Corridor has it returned (`returnDeposit`).
   */
  expiresAt: string;
}

/**
 * `RECEIVED`: the money is at the provider, `amount` minor units that arrived at `receivedAt` (the
 * provider's time of arrival, compared with `ExpectedDeposit.expiresAt`).
 */
export type DepositStatus = { status: 'PENDING' } | { status: 'RECEIVED'; amount: bigint; receivedAt: Date };

/** Sends payouts, makes pulls, and tells how they ended. Production platforms' payments go through one. */
export interface RailProvider {
  submit(payout: Payout): Promise<SubmitOutcome>;
  status(payout: Payout): Promise<PayoutStatus>;
  /**
   * Has the platform's money for this deposit arrived, how much, and when? Asked until the quote's
   * expiresAt and once at or after it — also after the payment was cancelled, whose money goes back.
   */
  deposit(expected: ExpectedDeposit): Promise<DepositStatus>;
  /**
   * Sends a received deposit back to the payer (idempotent by transactionId): wrong amount, failed
   * or cancelled payment, or money received at or after expiresAt.
   */
  returnDeposit(expected: ExpectedDeposit, amount: bigint): Promise<void>;
  /**
   * Hands a pull from an external account to the rail (idempotent by transactionId). Nothing is
   * credited before it answers COLLECTED here or in `collectionStatus`. A provider without it
   * cannot take pulls: executing one on its platforms is 501 and nothing moves.
   */
  collect?(pull: Pull): Promise<PullOutcome>;
  /** How a pull that `collect` ACCEPTED stands; required of a provider whose `collect` answers ACCEPTED. */
  collectionStatus?(pull: Pull): Promise<CollectionStatus>;
}

/** One page of the deposits the provider received at accounts' funding instructions, oldest first. */
export interface DepositPage {
  deposits: ReportedDeposit[];
  /** Where the next page starts; null: keep asking with the same cursor. */
  nextCursor: string | null;
}

/** Deposits received at internal accounts' funding instructions, read as a feed from a cursor. */
export interface DepositSource {
  listDeposits(cursor: string | null): Promise<DepositPage>;
}

/** At most this many deposits per page; a longer page is outside the contract. */
export const DEPOSIT_PAGE_LIMIT = 100;
