import type { Logger } from 'pino';
import { notifyChanged } from '../../platform/cache.js';
import type { Clock, PlatformClock } from '../../platform/clock.js';
import type { DbHandle, Tx } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import { AppError, invalidInput } from '../../platform/errors.js';
import { storableJson, storableText } from '../../platform/http/text-input.js';
import { uuidv7 } from '../../platform/ids.js';
import { enqueueJob, RetryJobAt, type Job } from '../../platform/jobs/index.js';
import type { EventCatalogue } from './catalogue.js';
import { AttemptNotLogged, type WebhookDeliveries } from './deliveries.js';
import { decideApproval, findApproval, findPendingApproval, insertApproval, shortenApprovalDeadline, type ApprovalRow } from './repo.js';
import type { WebhookResponse } from './sender.js';

/**
 * How long a platform that answered 202 has to call approve or reject (upstream: 5 s), on the
 * platform's clock: a sandbox platform's test clock moved past it times the question out.
 */
export const APPROVAL_WINDOW_MS = 5_000;
export const APPROVAL_DEADLINE_JOB = 'webhook.approval-deadline';
const DECIDED_CHANNEL = 'corridor_webhook_approval_decided';
/** A waiter also looks at the row this often, in case its NOTIFY was lost. */
const WAIT_POLL_MS = 500;

export interface RequestedField {
  name: string;
  mandatory: boolean;
}

export type ApprovalDecision =
  | { status: 'APPROVED'; receiverCustomerInfo?: Record<string, unknown> }
  | { status: 'REJECTED'; reason?: string }
  | { status: 'INFO_REQUIRED'; requiredFields: string[] }
  | { status: 'TIMED_OUT' }
  | { status: 'WEBHOOK_ERROR'; error: string };

export interface DecidedApproval {
  /** The platform (uuid) and the transaction (`Transaction:<uuid>`) the question was about. */
  platformId: string;
  transactionId: string;
  consumer: string;
  decision: ApprovalDecision;
  /** WEBHOOK: the receiver's answer; API: POST /transactions/{id}/approve|reject; DEADLINE: nobody decided in time. */
  via: 'WEBHOOK' | 'API' | 'DEADLINE';
  decidedAt: Date;
}

/**
 * Applies a decision to the consumer's own records, in the transaction that takes the
 * decision. Runs exactly once per question, in whichever process decides.
 */
export type ApprovalHook = (trx: Tx, decided: DecidedApproval) => Promise<void>;

export interface ApprovalRequest {
  platformId: string;
  transactionId: string;
  /** The registered consumer whose hook applies the decision. */
  consumer: string;
  /** The webhook to send, e.g. INCOMING_PAYMENT.PENDING; must be in the catalogue. */
  type: string;
  /** Its payload: the transaction, with `requestedReceiverCustomerInfoFields` when the payer needs them. */
  data: { requestedReceiverCustomerInfoFields?: RequestedField[] } & Record<string, unknown>;
  /** How long after a 202 the platform may decide through the API; default APPROVAL_WINDOW_MS. */
  windowMs?: number;
}

function toDecided(row: ApprovalRow): DecidedApproval {
  return {
    platformId: row.platform_id,
    transactionId: row.transaction_id,
    consumer: row.consumer,
    decision: { status: row.status, ...(row.outcome as object) } as ApprovalDecision,
    via: row.decided_via!,
    decidedAt: row.decided_at!,
  };
}

function outcomeOf(decision: ApprovalDecision): Record<string, unknown> {
  const { status: _status, ...rest } = decision;
  return rest;
}

function parseJson(body: string | undefined): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(body ?? '');
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function missingFields(requested: RequestedField[], info: Record<string, unknown> | undefined): string[] {
  return requested.filter((f) => f.mandatory && (info?.[f.name] === undefined || info[f.name] === null || info[f.name] === '')).map((f) => f.name);
}

/**
 * Reads the receiver's answer to an approval webhook; undefined: it asked to decide later (202,
 * or 409 for a repeat). What the decision keeps of the answer is stored (jsonb): U+0000 and
 * unpaired surrogates in it are replaced by U+FFFD (`storableText`), after any cut.
 */
function decisionFromResponse(response: WebhookResponse, requested: RequestedField[]): ApprovalDecision | undefined {
  const body = parseJson(response.body);
  switch (response.status) {
    case 200: {
      const info = body.receiverCustomerInfo;
      const receiverCustomerInfo = info && typeof info === 'object' && !Array.isArray(info) ? (storableJson(info) as Record<string, unknown>) : undefined;
      const missing = missingFields(requested, receiverCustomerInfo);
      if (missing.length) return { status: 'WEBHOOK_ERROR', error: `approved without the mandatory receiverCustomerInfo fields ${missing.join(', ')}` };
      return { status: 'APPROVED', ...(receiverCustomerInfo ? { receiverCustomerInfo } : {}) };
    }
    case 403:
      return { status: 'REJECTED', ...(typeof body.reason === 'string' ? { reason: storableText(body.reason.slice(0, 255)) } : {}) };
    case 422: {
      const fields = Array.isArray(body.requiredFields) ? body.requiredFields.filter((f): f is string => typeof f === 'string').slice(0, 50) : [];
      return { status: 'INFO_REQUIRED', requiredFields: fields.map((f) => storableText(f.slice(0, 100))) };
    }
    case 202:
    case 409:
      return undefined;
    default:
      return { status: 'WEBHOOK_ERROR', error: response.error ?? `the endpoint answered HTTP ${response.status}` };
  }
}

/**
 * The incoming-payment approval round trip: a module asks the platform's receiver whether to
 * accept a payment; the receiver answers 200 (approve), 403 (reject), 422 (more information),
 * or 202 and decides within the window through the API. A durable job decides TIMED_OUT at
 * the deadline even when the process that asked has died.
 */
export class IncomingPaymentApprovals {
  private readonly hooks = new Map<string, ApprovalHook>();
  private readonly waiters = new Map<string, () => void>();

  constructor(
    private readonly deps: {
      handle: DbHandle;
      /** The shared clock: when the deadline job runs (jobs are scheduled on it). */
      clock: Clock;
      /** The platform's time (sandbox test clocks): deadlines and decision times are on it. */
      platformClock: PlatformClock;
      logger: Logger;
      catalogue: EventCatalogue;
      deliveries: WebhookDeliveries;
      timeoutMs: number;
    },
  ) {}

  async start(): Promise<void> {
    await this.deps.handle.listen(DECIDED_CHANNEL, (id) => this.waiters.get(id)?.());
  }

  /** A consumer (the UMA module; a test) names the hook that applies decisions to its records. */
  registerConsumer(name: string, hook: ApprovalHook): void {
    this.hooks.set(name, hook);
  }

  private get db() {
    return this.deps.handle.db;
  }

  /**
   * Asks the platform now and resolves with the decision: from the webhook's answer at once,
   * or after a 202 from approve/reject within the window, or TIMED_OUT at its end. The
   * consumer's hook has applied the decision (in the deciding transaction) before this resolves.
   */
  async request(request: ApprovalRequest): Promise<DecidedApproval> {
    if (!this.hooks.has(request.consumer)) throw new Error(`no approval consumer named ${request.consumer} is registered`);
    const check = this.deps.catalogue.validate(request.type, request.data);
    if (!check.valid) throw new Error(`the ${request.type} payload does not match its schema: ${JSON.stringify(check.errors)}`);
    const windowMs = request.windowMs ?? APPROVAL_WINDOW_MS;
    const requested = request.data.requestedReceiverCustomerInfoFields ?? [];
    const id = uuidv7(this.deps.clock.now().getTime());
    // Until the receiver answers, the latest possible deadline: the job times the question out
    // there should this process die while it asks.
    const latestMs = this.deps.timeoutMs + windowMs;
    await withTx(this.db, async (trx) => {
      const now = await this.deps.platformClock.now(request.platformId, trx);
      await insertApproval(trx, {
        platform_id: request.platformId,
        id,
        transaction_id: request.transactionId,
        consumer: request.consumer,
        status: 'PENDING',
        requested_fields: requested,
        outcome: null,
        decided_via: null,
        deadline: new Date(now.getTime() + latestMs),
        created_at: now,
        decided_at: null,
      });
      // A platform job: advancing the platform's clock brings it forward with the deadline.
      const runAt = new Date(this.deps.clock.now().getTime() + latestMs);
      await enqueueJob(trx, this.deps.clock, { kind: APPROVAL_DEADLINE_JOB, platformId: request.platformId, payload: { approvalId: id }, runAt });
    });
    let response: WebhookResponse;
    try {
      ({ response } = await this.deps.deliveries.sendNow(
        request.platformId,
        { kind: 'APPROVAL', type: request.type, resourceId: request.transactionId, data: request.data },
        (r) => (r.refused ? 'REFUSED' : [200, 202, 403, 409, 422].includes(r.status ?? 0) ? 'SUCCEEDED' : 'FAILED'),
      ));
    } catch (error) {
      // The platform answered; that the delivery log could not keep the attempt changes nothing to its answer.
      if (!(error instanceof AttemptNotLogged)) throw error;
      this.deps.logger.error({ platformId: request.platformId, transactionId: request.transactionId, reason: error.message }, 'approval answer not logged');
      response = error.response;
    }
    const decision = decisionFromResponse(response, requested);
    if (decision) return this.decide(request.platformId, id, decision, 'WEBHOOK');
    const deadline = new Date((await this.deps.platformClock.now(request.platformId)).getTime() + windowMs);
    await shortenApprovalDeadline(this.db, request.platformId, id, deadline);
    return this.waitFor(request.platformId, id);
  }

  /** Waits for an API decision until the row's deadline (on the platform's clock), then times the question out. */
  private async waitFor(platformId: string, id: string): Promise<DecidedApproval> {
    try {
      for (;;) {
        const row = (await findApproval(this.db, platformId, id))!;
        if (row.status !== 'PENDING') return toDecided(row);
        const left = row.deadline.getTime() - (await this.deps.platformClock.now(platformId)).getTime();
        if (left <= 0) return await this.decide(platformId, id, { status: 'TIMED_OUT' }, 'DEADLINE');
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, WAIT_POLL_MS));
          this.waiters.set(id, () => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    } finally {
      this.waiters.delete(id);
    }
  }

  /** Takes the decision if the question is still open, running the consumer's hook; answers the decision that stands. */
  private async decide(platformId: string, id: string, decision: ApprovalDecision, via: DecidedApproval['via']): Promise<DecidedApproval> {
    return withTx(this.db, async (trx) => {
      const at = await this.deps.platformClock.now(platformId, trx);
      const row = await decideApproval(trx, platformId, id, { status: decision.status, outcome: outcomeOf(decision), via, at });
      if (!row) return toDecided((await findApproval(trx, platformId, id))!);
      const decided = toDecided(row);
      await this.hooks.get(row.consumer)!(trx, decided);
      await notifyChanged(trx, DECIDED_CHANNEL, id);
      return decided;
    });
  }

  /**
   * For POST /transactions/{id}/approve|reject, in the caller's transaction: decides the open
   * question about `transactionId`, runs the consumer's hook, and wakes the process waiting.
   * 409 TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL when nothing is open or the window has
   * closed; 400 INVALID_INPUT when an approval lacks a mandatory requested field.
   */
  async decidePendingApproval(
    trx: Tx,
    platformId: string,
    transactionId: string,
    decision: { status: 'APPROVED'; receiverCustomerInfo?: Record<string, unknown> } | { status: 'REJECTED'; reason?: string },
  ): Promise<DecidedApproval> {
    const row = await findPendingApproval(trx, platformId, transactionId);
    const now = await this.deps.platformClock.now(platformId, trx);
    if (!row || row.deadline <= now) {
      throw new AppError('TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL', `Transaction ${transactionId} is not waiting for the platform's approval.`);
    }
    if (decision.status === 'APPROVED') {
      const missing = missingFields(row.requested_fields as RequestedField[], decision.receiverCustomerInfo);
      if (missing.length) throw invalidInput(missing.map((name) => ({ field: `receiverCustomerInfo.${name}`, message: 'was requested as mandatory' })));
    }
    const decided = await decideApproval(trx, platformId, row.id, { status: decision.status, outcome: outcomeOf(decision), via: 'API', at: now });
    const result = toDecided(decided!);
    const hook = this.hooks.get(row.consumer);
    if (!hook) throw new Error(`no approval consumer named ${row.consumer} is registered`);
    await hook(trx, result);
    await notifyChanged(trx, DECIDED_CHANNEL, row.id);
    return result;
  }

  /** The open question about a transaction, if any: for the transactions module's views and checks. */
  async pendingApproval(trx: Tx, platformId: string, transactionId: string): Promise<{ deadline: Date; requestedFields: RequestedField[] } | undefined> {
    const row = await findPendingApproval(trx, platformId, transactionId);
    return row && { deadline: row.deadline, requestedFields: row.requested_fields as RequestedField[] };
  }

  /** The deadline job: times out a question nobody answered, should its asking process have died. */
  async onDeadline(job: Job): Promise<void> {
    const { approvalId } = job.payload as { approvalId: string };
    const row = await findApproval(this.db, job.platform_id!, approvalId);
    if (!row || row.status !== 'PENDING') return;
    const platformNow = await this.deps.platformClock.now(row.platform_id);
    // The deadline is platform time; the job runs on the shared clock, as much later.
    if (row.deadline > platformNow) throw new RetryJobAt(row.deadline, 'the approval window is still open', { platformTime: true });
    const decided = await this.decide(row.platform_id, row.id, { status: 'TIMED_OUT' }, 'DEADLINE');
    this.deps.logger.info({ platformId: row.platform_id, transactionId: row.transaction_id, status: decided.decision.status }, 'approval deadline passed');
  }
}
