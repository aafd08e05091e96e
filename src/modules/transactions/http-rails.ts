import type { HttpProviderConfig } from '../../config.js';
import { AppError } from '../../platform/errors.js';
import { postToProvider, readProviderAnswer } from '../../platform/provider-http.js';
import { MAX_POSTING_AMOUNT } from '../ledger/index.js';
import type { DepositSender, ReportedDeposit } from './deposits.js';
import {
  DEPOSIT_PAGE_LIMIT,
  RAIL_FAILURE_REASONS,
  type CollectionStatus,
  type DepositPage,
  type DepositSource,
  type DepositStatus,
  type ExpectedDeposit,
  type Payout,
  type PayoutStatus,
  type Pull,
  type PullOutcome,
  type RailFailureReason,
  type RailProvider,
  type SubmitOutcome,
} from './rail-provider.js';

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

const MAX_DEPOSIT_REFERENCE_CHARS = 2048;

/** A deposit of the provider's page in the contract's shape, or undefined. */
function reportedDeposit(value: unknown): ReportedDeposit | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const d = value as Record<string, unknown>;
  // A reference is also a Lightning invoice the deposit paid (a funding invoice is some 325
  // characters): capped as a sandbox deposit's is, so one never makes the whole page off-contract.
  if (!isText(d.id, 128) || !isText(d.reference, MAX_DEPOSIT_REFERENCE_CHARS) || typeof d.currency !== 'string' || !/^[A-Z]{3,5}$/.test(d.currency)) return undefined;
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
