import type { HttpProviderConfig } from '../../config.js';
import { AppError } from '../../platform/errors.js';
import { postToProvider, readProviderAnswer } from '../../platform/provider-http.js';
import { accountSuffix } from '../external-accounts/index.js';
import { MAX_POSTING_AMOUNT } from '../ledger/index.js';
import type { DepositSender, ReportedDeposit } from './deposits.js';

/**
 * What a rail can answer about a payout. `REJECTED` comes at submission, before any money left
 * (the hold is released); `FAILED` after it was sent (the debit is refunded).
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
 * `ACCEPTED` may say when the rail expects to settle, counted from the hand-over; without it the
 * rail's usual settlement time holds.
 */
export type SubmitOutcome = { status: 'ACCEPTED'; settlesInSeconds?: number } | { status: 'REJECTED'; failureReason: RailFailureReason };
/**
 * The answer to a pull's hand-over. `COLLECTED`: the money is in (the sandbox's simulated pulls).
 * `FAILED`: refused, nothing collected; `afterSeconds` (counted from the execution) is how long
 * the bank took to answer (0: at once). `ACCEPTED`: the rail is collecting; how it ends is learned
 * from `collectionStatus` (the production provider).
 */
export type PullOutcome = { status: 'COLLECTED' } | { status: 'FAILED'; afterSeconds: number } | { status: 'ACCEPTED' };
/** How an accepted pull stands: still being collected, collected (the money is in), or failed (nothing collected). */
export type CollectionStatus = { status: 'PENDING' } | { status: 'COLLECTED' } | { status: 'FAILED' };
export type PayoutStatus = { status: 'PENDING' } | { status: 'COMPLETED' } | { status: 'FAILED'; failureReason: RailFailureReason };

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
/** Bytes of a deposits page read at most: 100 deposits with every sender field filled stay well under it. */
const MAX_PAGE_BYTES = 1024 * 1024;
const SENDER_FIELDS = ['accountHolderName', 'accountIdentifier', 'bankName', 'bankIdentifier', 'endToEndId', 'traceNumber', 'remittanceInformation', 'transactionHash'] as const;

const isText = (value: unknown, max: number): value is string => typeof value === 'string' && value.length >= 1 && value.length <= max;

/**
 * A deposit's amount on the wire: minor units, a decimal string of at most 18 digits — what the
 * unmatched-deposits table can hold. The ledger takes at most MAX_POSTING_AMOUNT (2^53 − 1): a
 * listed deposit above it is kept for the operator (`AMOUNT_OUT_OF_RANGE`), not a broken page.
 */
const WIRE_AMOUNT_RE = /^[1-9]\d{0,17}$/;

/** An RFC 3339 timestamp with its offset (`2025-10-13T09:30:00Z`), as a Date; undefined otherwise. */
function timestamp(value: unknown): Date | undefined {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/.test(value)) return undefined;
  const at = new Date(value);
  return Number.isNaN(at.getTime()) ? undefined : at;
}

/** A deposit of the provider's page in the contract's shape, or undefined. */
function reportedDeposit(value: unknown): ReportedDeposit | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const d = value as Record<string, unknown>;
  if (!isText(d.id, 128) || !isText(d.reference, 256) || typeof d.currency !== 'string' || !/^[A-Z]{3,5}$/.test(d.currency)) return undefined;
  if (typeof d.amount !== 'string' || !WIRE_AMOUNT_RE.test(d.amount) || typeof d.rail !== 'string' || !/^[A-Z][A-Z0-9_]{0,31}$/.test(d.rail)) return undefined;
  let sender: DepositSender | undefined;
  if (d.sender !== undefined && d.sender !== null) {
    if (typeof d.sender !== 'object') return undefined;
    const given = d.sender as Record<string, unknown>;
    sender = {};
    for (const field of SENDER_FIELDS) {
      const text = given[field];
      if (text === undefined || text === null) continue;
      if (!isText(text, 256)) return undefined;
      sender[field] = text;
    }
  }
  return { depositId: d.id, reference: d.reference, currency: d.currency, amount: BigInt(d.amount), rail: d.rail, ...(sender ? { sender } : {}) };
}

/**
 * Sandbox outcomes, chosen by the last three digits of the sent amount (minor units), like
 * card-network test numbers. Deterministic: the same amount always ends the same way.
 * Rejections at submission release the hold; failures at settlement refund the debit.
 */
export const SANDBOX_TRIGGERS: Record<string, { at: 'SUBMISSION' | 'SETTLEMENT'; failureReason: RailFailureReason }> = {
  '901': { at: 'SETTLEMENT', failureReason: 'QUOTE_EXECUTION_FAILED' },
  '902': { at: 'SETTLEMENT', failureReason: 'PAYOUT_RETURNED' },
  '903': { at: 'SUBMISSION', failureReason: 'LIMIT_EXCEEDED' },
  '904': { at: 'SUBMISSION', failureReason: 'ACCOUNT_CANNOT_RECEIVE' },
  '905': { at: 'SUBMISSION', failureReason: 'ACCOUNT_INVALID' },
  '906': { at: 'SUBMISSION', failureReason: 'COMPLIANCE_REJECTED' },
};

export function sandboxTrigger(sentAmount: bigint) {
  return SANDBOX_TRIGGERS[(sentAmount % 1000n).toString().padStart(3, '0')];
}

/**
 * The upstream sandbox's account outcomes, chosen by the last three digits of the external
 * account's primary identifier (`accountSuffix`): one table for payouts of executed quotes, one
 * for POST /transfer-out. `settlesInSeconds` replaces the rail's settlement time; a failure
 * `at: 'SETTLEMENT'` comes at that time.
 */
type AccountOutcome = { settlesInSeconds?: number } & ({ failureReason?: undefined } | { at: 'SUBMISSION' | 'SETTLEMENT'; failureReason: RailFailureReason });
export const SANDBOX_QUOTE_ACCOUNT_OUTCOMES: Record<string, AccountOutcome> = {
  '002': { at: 'SUBMISSION', failureReason: 'QUOTE_EXECUTION_FAILED' },
  '003': { settlesInSeconds: 360 },
  '004': { at: 'SETTLEMENT', failureReason: 'ACCOUNT_CANNOT_RECEIVE' },
  '005': { at: 'SETTLEMENT', failureReason: 'PAYOUT_RETURNED' },
  '006': { at: 'SUBMISSION', failureReason: 'QUOTE_EXECUTION_FAILED' },
  '007': { at: 'SETTLEMENT', failureReason: 'QUOTE_EXECUTION_FAILED' },
};
export const SANDBOX_TRANSFER_ACCOUNT_OUTCOMES: Record<string, AccountOutcome> = {
  '002': { at: 'SUBMISSION', failureReason: 'LIMIT_EXCEEDED' },
  '003': { at: 'SUBMISSION', failureReason: 'ACCOUNT_INVALID' },
  '004': { at: 'SETTLEMENT', failureReason: 'ACCOUNT_CANNOT_RECEIVE' },
  '005': { at: 'SETTLEMENT', failureReason: 'ACCOUNT_CANNOT_RECEIVE', settlesInSeconds: 30 },
};
/** POST /transfer-in: pulls ending in these fail without crediting anything, after `afterSeconds`. */
export const SANDBOX_PULL_FAILURES: Record<string, { afterSeconds: number }> = {
  '002': { afterSeconds: 0 },
  '003': { afterSeconds: 0 },
  '004': { afterSeconds: 0 },
  '005': { afterSeconds: 30 },
};

/** Accounts whose suffix a process keeps at most (oldest dropped first). */
const KEPT_SUFFIXES = 10_000;

/** Reads the primary identifier (account number, IBAN, CLABE, address, PIX key…) of a platform's external account; null when unknown. */
export type IdentifierOf = (platformId: string, externalAccountId: string) => Promise<string | null>;

/**
 * The simulated rails of sandbox platforms: every payout settles unless its amount (SANDBOX_TRIGGERS)
 * or its external account's identifier (the upstream sandbox's suffixes) names another outcome.
 * The amount goes first: a trigger amount to a suffixed account ends as the amount says.
 */
export class SandboxRails implements RailProvider {
  /**
   * The suffix (or none) of accounts already read, by platform and account. An external
   * account's details never change after creation, so any process may keep them: a payout's
   * submission and its settlement read the account once, further payouts to it not at all.
   */
  private readonly suffixes = new Map<string, string | undefined>();

  constructor(private readonly identifierOf: IdentifierOf) {}

  private async suffixOf(platformId: string, accountId: string): Promise<string | undefined> {
    const key = `${platformId}/${accountId}`;
    if (this.suffixes.has(key)) return this.suffixes.get(key);
    const identifier = await this.identifierOf(platformId, accountId);
    const suffix = identifier ? accountSuffix(identifier) : undefined;
    // Unknown (deleted or foreign) accounts are not kept: they are rare, and not worth a slot.
    if (identifier !== null) {
      if (this.suffixes.size >= KEPT_SUFFIXES) this.suffixes.delete(this.suffixes.keys().next().value!);
      this.suffixes.set(key, suffix);
    }
    return suffix;
  }

  private async accountOutcome(payout: Payout): Promise<AccountOutcome | undefined> {
    const accountId = (payout.destination as { accountId?: string } | null)?.accountId;
    const suffix = accountId?.startsWith('ExternalAccount:') ? await this.suffixOf(payout.platformId, accountId) : undefined;
    if (!suffix) return undefined;
    return (payout.requestedAs === 'TRANSFER' ? SANDBOX_TRANSFER_ACCOUNT_OUTCOMES : SANDBOX_QUOTE_ACCOUNT_OUTCOMES)[suffix];
  }

  async submit(payout: Payout): Promise<SubmitOutcome> {
    const trigger = sandboxTrigger(payout.sentAmount);
    if (trigger) return trigger.at === 'SUBMISSION' ? { status: 'REJECTED', failureReason: trigger.failureReason } : { status: 'ACCEPTED' };
    const outcome = await this.accountOutcome(payout);
    if (outcome?.failureReason && outcome.at === 'SUBMISSION') return { status: 'REJECTED', failureReason: outcome.failureReason };
    return outcome?.settlesInSeconds !== undefined ? { status: 'ACCEPTED', settlesInSeconds: outcome.settlesInSeconds } : { status: 'ACCEPTED' };
  }

  async status(payout: Payout): Promise<PayoutStatus> {
    const trigger = sandboxTrigger(payout.sentAmount);
    if (trigger) return trigger.at === 'SETTLEMENT' ? { status: 'FAILED', failureReason: trigger.failureReason } : { status: 'COMPLETED' };
    const outcome = await this.accountOutcome(payout);
    return outcome?.failureReason ? { status: 'FAILED', failureReason: outcome.failureReason } : { status: 'COMPLETED' };
  }

  /** A pull is refused by the suffix of the account it comes from; amounts trigger nothing here (the triggers are payout outcomes). */
  async collect(pull: Pull): Promise<PullOutcome> {
    const failure = SANDBOX_PULL_FAILURES[(await this.suffixOf(pull.platformId, pull.accountId)) ?? ''];
    return failure ? { status: 'FAILED', afterSeconds: failure.afterSeconds } : { status: 'COLLECTED' };
  }

  /** Sandbox money arrives through POST /sandbox/send, never by itself. */
  async deposit(): Promise<DepositStatus> {
    return { status: 'PENDING' };
  }

  /** The sandbox's outside world takes returned money back in the ledger (SANDBOX_FUNDING); nothing else to do. */
  async returnDeposit(): Promise<void> {}
}

/** Bytes of a provider answer read at most: the answers are a few fields. */
const MAX_ANSWER_BYTES = 16 * 1024;

/**
 * The production rail provider over HTTP (docs/payments.md, "Production: the rail-provider
 * contract"): `POST {url}/payouts` submits (idempotent by `transactionId`), `POST
 * {url}/payouts/status` asks how it ended; `POST {url}/collections` hands a pull over (idempotent
 * by `transactionId`), `POST {url}/collections/status` asks how it stands. Bearer token, a
 * deadline per call; an unreachable, slow or malformed provider is 503, and the job retries.
 */
export class HttpRails implements RailProvider, DepositSource {
  constructor(private readonly config: HttpProviderConfig & { url: string }) {}

  private async post(path: string, body: unknown): Promise<{ status?: unknown; failureReason?: unknown; amount?: unknown } | null> {
    const response = await postToProvider({ ...this.config, url: `${this.config.url.replace(/\/$/, '')}${path}` }, JSON.stringify(body), unavailable);
    const text = await readProviderAnswer(response, MAX_ANSWER_BYTES, unavailable);
    try {
      return JSON.parse(text) as { status?: unknown } | null;
    } catch {
      throw unavailable('the answer is not JSON');
    }
  }

  private async call<T>(path: string, payout: Payout, statuses: readonly string[]): Promise<T> {
    // `requestedAs` is the sandbox's business: the provider contract (docs/payments.md) does not carry it.
    const { requestedAs: _sandboxOnly, ...sent } = payout;
    const answer = await this.post(path, { ...sent, amount: payout.amount.toString(), sentAmount: payout.sentAmount.toString() });
    if (!answer || typeof answer !== 'object' || typeof answer.status !== 'string' || !statuses.includes(answer.status)) {
      throw unavailable('the answer does not follow the contract');
    }
    const failed = answer.status === 'REJECTED' || answer.status === 'FAILED';
    if (failed && !RAIL_FAILURE_REASONS.includes(answer.failureReason as RailFailureReason)) throw unavailable('a failure without a known failureReason');
    return (failed ? { status: answer.status, failureReason: answer.failureReason } : { status: answer.status }) as T;
  }

  submit(payout: Payout): Promise<SubmitOutcome> {
    return this.call('/payouts', payout, ['ACCEPTED', 'REJECTED']);
  }

  status(payout: Payout): Promise<PayoutStatus> {
    return this.call('/payouts/status', payout, ['PENDING', 'COMPLETED', 'FAILED']);
  }

  /** `POST {url}/collections` → `{"status": "ACCEPTED" | "REJECTED"}`. */
  async collect(pull: Pull): Promise<PullOutcome> {
    const answer = await this.post('/collections', pullBody(pull));
    if (answer?.status === 'ACCEPTED') return { status: 'ACCEPTED' };
    if (answer?.status === 'REJECTED') return { status: 'FAILED', afterSeconds: 0 };
    throw unavailable('the collection answer does not follow the contract');
  }

  /** `POST {url}/collections/status` → `{"status": "PENDING" | "COLLECTED" | "FAILED"}`. */
  async collectionStatus(pull: Pull): Promise<CollectionStatus> {
    const answer = await this.post('/collections/status', pullBody(pull));
    if (answer?.status === 'PENDING' || answer?.status === 'COLLECTED' || answer?.status === 'FAILED') return { status: answer.status };
    throw unavailable('the collection status answer does not follow the contract');
  }

  /**
   * `POST {url}/deposits/status` → `{"status": "PENDING"}` or `{"status": "RECEIVED", "amount",
   * "receivedAt"}`. A RECEIVED answer without a usable `receivedAt` (or with an amount the ledger
   * cannot take) is outside the contract: Corridor cannot tell whether the money came in time, and
   * asks again.
   */
  async deposit(expected: ExpectedDeposit): Promise<DepositStatus> {
    const answer = await this.post('/deposits/status', depositBody(expected));
    if (answer?.status === 'PENDING') return { status: 'PENDING' };
    if (answer?.status === 'RECEIVED' && typeof answer.amount === 'string' && WIRE_AMOUNT_RE.test(answer.amount) && BigInt(answer.amount) <= MAX_POSTING_AMOUNT) {
      const receivedAt = timestamp((answer as { receivedAt?: unknown }).receivedAt);
      if (receivedAt) return { status: 'RECEIVED', amount: BigInt(answer.amount), receivedAt };
    }
    throw unavailable('the deposit answer does not follow the contract');
  }

  /** `POST {url}/deposits/list {cursor}` → `{deposits: [{id, reference, currency, amount, rail, sender?}], nextCursor}` (docs/payments.md). */
  async listDeposits(cursor: string | null): Promise<DepositPage> {
    const response = await postToProvider({ ...this.config, url: `${this.config.url.replace(/\/$/, '')}/deposits/list` }, JSON.stringify({ cursor }), unavailable);
    let answer: { deposits?: unknown; nextCursor?: unknown } | null;
    try {
      answer = JSON.parse(await readProviderAnswer(response, MAX_PAGE_BYTES, unavailable)) as typeof answer;
    } catch (error) {
      if (error instanceof AppError) throw error;
      throw unavailable('the answer is not JSON');
    }
    if (!answer || !Array.isArray(answer.deposits) || answer.deposits.length > DEPOSIT_PAGE_LIMIT) throw unavailable('the deposits page does not follow the contract');
    if (answer.nextCursor !== null && answer.nextCursor !== undefined && !isText(answer.nextCursor, 1024)) throw unavailable('the deposits page has an unusable nextCursor');
    const deposits = answer.deposits.map(reportedDeposit);
    if (deposits.some((d) => d === undefined)) throw unavailable('a deposit does not follow the contract');
    return { deposits: deposits as ReportedDeposit[], nextCursor: (answer.nextCursor as string | null | undefined) ?? null };
  }

  async returnDeposit(expected: ExpectedDeposit, amount: bigint): Promise<void> {
    const answer = await this.post('/deposits/return', { ...depositBody(expected), amount: amount.toString() });
    if (answer?.status !== 'RETURNED') throw unavailable('the return answer does not follow the contract');
  }
}

const unavailable = (reason: string) => new AppError('SERVICE_UNAVAILABLE', `The payment rail provider failed: ${reason}.`);

function depositBody(expected: ExpectedDeposit) {
  return { ...expected, amount: expected.amount.toString() };
}

/** The contract's body of a pull: every field of Pull, in this order, the amount a decimal string. */
function pullBody(pull: Pull) {
  return { transactionId: pull.transactionId, platformId: pull.platformId, accountId: pull.accountId, rail: pull.rail, currency: pull.currency, amount: pull.amount.toString(), reference: pull.reference };
}
