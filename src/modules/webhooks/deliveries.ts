import type { Logger } from 'pino';
import { API_VERSION } from '../../config.js';
import type { Clock } from '../../platform/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import { AppError } from '../../platform/errors.js';
import { Counter, Histogram } from '../../platform/http/metrics.js';
import { storableText } from '../../platform/http/text-input.js';
import { formatId, parseId, uuidv7 } from '../../platform/ids.js';
import { enqueueJobs, RetryJobAt, type Job, type JobCompletion } from '../../platform/jobs/index.js';
import type { OutboxEvent } from '../../platform/outbox.js';
import { pageRequest, toPage, type Page } from '../../platform/pagination.js';
import type { Resolver } from '../../platform/address-guard.js';
import { TEST_EVENT, type EventCatalogue } from './catalogue.js';
import {
  abandonDelivery,
  findDelivery,
  insertDeliveries,
  listAttempts,
  listDeliveries,
  recordAttempt,
  type AttemptOutcome,
  type AttemptRow,
  type DeliveryKind,
  type DeliveryRow,
} from './repo.js';
import type { DeliveryListQuery, WebhookAttempt, WebhookDelivery, WebhookDeliveryDetail } from './schemas.js';
import { postWebhook, type WebhookResponse } from './sender.js';
import type { WebhookSigningKeys } from './signing-keys.js';

export const DELIVER_JOB = 'webhook.deliver';

/**
 * Seconds between automatic attempts: after the first failure 30 s, then growing to 12 h
 * apart; the 16th attempt comes about 3 days (73.8 h) after the event. Each wait is jittered
 * by ±20 % so endpoints coming back up are not hit by every retry at once.
 */
export const RETRY_SCHEDULE_SECONDS = [30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 21600, 43200, 43200, 43200, 43200, 43200];
export const MAX_ATTEMPTS = RETRY_SCHEDULE_SECONDS.length + 1;

/** Wait after the `attempt`-th automatic attempt failed; undefined once the schedule is spent. */
export function retryDelayMs(attempt: number, random = Math.random): number | undefined {
  const seconds = RETRY_SCHEDULE_SECONDS[attempt - 1];
  return seconds === undefined ? undefined : Math.round(seconds * 1000 * (0.8 + 0.4 * random()));
}

/**
 * Attempts a delivery's detail shows, the latest: the schedule makes at most MAX_ATTEMPTS, but
 * every re-send adds one, and a detail as long as the re-sends would grow without bound.
 */
export const ATTEMPT_LOG_LIMIT = 100;

/** What of a receiver's answer the delivery log keeps. */
const LOGGED_BODY_CHARS = 2048;

/** Added to an attempt's error when its answer's body could not be kept in the log. */
const BODY_NOT_LOGGED = 'the answer could not be logged';

/**
 * The endpoint answered but the attempt could not be logged, not even without the answer's
 * body (the database refused it): `response` is what the endpoint said, for a caller that acts
 * on the answer (an approval) whether or not the log has it.
 */
export class AttemptNotLogged extends Error {
  declare readonly response: WebhookResponse;

  constructor(response: WebhookResponse, cause: unknown) {
    super(`the webhook attempt could not be logged: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'AttemptNotLogged';
    // Not enumerable: a logged error never carries the receiver's answer (bodies are never logged).
    Object.defineProperty(this, 'response', { value: response, enumerable: false });
  }
}

/** A message fit for the delivery log: storable, and short. */
function logText(message: string): string {
  return storableText(message.slice(0, 500));
}

export interface Target {
  url?: string;
  /** Production platforms: the address guard applies. */
  guard: boolean;
}

export interface DeliveryDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  catalogue: EventCatalogue;
  keys: WebhookSigningKeys;
  /** Where a platform's webhooks go now, and whether its deliveries are guarded. */
  target: (platformId: string) => Promise<Target>;
  /** The platform's endpoint read inside a transaction (the relay's: PGlite has one connection). */
  endpointIn: (trx: Tx, platformId: string) => Promise<string | undefined>;
  resolver: Resolver;
  timeoutMs: number;
}

/** An attempt's outcome: delivered on a 2xx or 409 (the receiver had it already). */
export function acknowledged(status: number | undefined): boolean {
  return status !== undefined && ((status >= 200 && status < 300) || status === 409);
}

function summary(response: WebhookResponse): string {
  return response.error ?? `HTTP ${response.status}`;
}

function toDelivery(row: DeliveryRow): WebhookDelivery {
  return {
    id: formatId('Webhook', row.id),
    type: row.event_type,
    ...(row.resource_id ? { resourceId: row.resource_id } : {}),
    status: row.status,
    attempts: row.attempt_count,
    ...(row.last_attempt_at ? { lastAttemptAt: row.last_attempt_at.toISOString() } : {}),
    ...(row.last_response_status !== null ? { lastResponseStatus: row.last_response_status } : {}),
    ...(row.last_latency_ms !== null ? { lastLatencyMs: row.last_latency_ms } : {}),
    ...(row.last_error ? { lastError: row.last_error } : {}),
    ...(row.next_attempt_at && row.status === 'PENDING' ? { nextAttemptAt: row.next_attempt_at.toISOString() } : {}),
    ...(row.delivered_at ? { deliveredAt: row.delivered_at.toISOString() } : {}),
    createdAt: row.created_at.toISOString(),
  };
}

function toAttempt(row: AttemptRow): WebhookAttempt {
  return {
    number: row.number,
    attemptedAt: row.attempted_at.toISOString(),
    ...(row.url ? { url: row.url } : {}),
    outcome: row.outcome,
    ...(row.response_status !== null ? { responseStatus: row.response_status } : {}),
    ...(row.response_body ? { responseBody: row.response_body } : {}),
    latencyMs: row.latency_ms,
    ...(row.error ? { error: row.error } : {}),
  };
}

export interface SentWebhook {
  row: DeliveryRow;
  response: WebhookResponse;
  url?: string;
}

/**
 * Turns outbox events into deliveries and delivers them: one durable job per delivery, retried
 * on RETRY_SCHEDULE_SECONDS until acknowledged, each attempt signed afresh and logged.
 */
export class WebhookDeliveries {
  private readonly attempts = new Counter('corridor_webhook_attempts_total', 'Webhook delivery attempts by outcome (SUCCEEDED, FAILED, REFUSED).');
  private readonly outcomes = new Counter('corridor_webhook_deliveries_total', 'Webhook deliveries finished, by outcome (delivered, failed).');
  private readonly latency = new Histogram('corridor_webhook_attempt_duration_seconds', 'Time from sending a webhook to its answer, by outcome.');
  private readonly lag = new Histogram('corridor_webhook_delivery_lag_seconds', 'Time from the event to its acknowledged delivery.', [
    0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600, 86_400,
  ]);

  constructor(private readonly deps: DeliveryDeps) {}

  metrics(): string[] {
    return [...this.attempts.render(), ...this.outcomes.render(), ...this.latency.render(), ...this.lag.render()];
  }

  /**
   * The outbox relay's publisher: in the relay's transaction, one delivery and one job per
   * catalogued event of a platform that has an endpoint. Other events need no webhook.
   */
  async fanOut(trx: Tx, events: OutboxEvent[]): Promise<void> {
    const deliverable = events.filter((e) => this.deps.catalogue.has(e.type));
    if (deliverable.length === 0) return;
    const platforms = [...new Set(deliverable.map((e) => e.platformId))];
    const endpoints = new Map<string, string | undefined>();
    for (const p of platforms) endpoints.set(p, await this.deps.endpointIn(trx, p));
    const now = this.deps.clock.now();
    const rows = deliverable
      .filter((e) => endpoints.get(e.platformId))
      .map((e) => ({
        platform_id: e.platformId,
        id: e.id,
        kind: 'EVENT' as const,
        event_type: e.type,
        resource_id: e.resourceId,
        data: e.data ?? null,
        status: 'PENDING' as const,
        attempt_count: 0,
        next_attempt_at: now,
        created_at: e.createdAt,
        updated_at: now,
      }));
    const inserted = new Set(await insertDeliveries(trx, rows));
    await enqueueJobs(
      trx,
      this.deps.clock,
      rows.filter((r) => inserted.has(r.id)).map((r) => ({ kind: DELIVER_JOB, platformId: r.platform_id, payload: { deliveryId: r.id }, maxAttempts: MAX_ATTEMPTS })),
    );
  }

  /** The body as sent: `{id, type, timestamp, data}`, data omitted when there is none (TEST). */
  private envelope(row: DeliveryRow, at: Date): string {
    return JSON.stringify({
      id: formatId('Webhook', row.id),
      type: row.event_type,
      timestamp: at.toISOString(),
      ...(row.data === null || row.data === undefined ? {} : { data: row.data }),
    });
  }

  /** Signs and POSTs one delivery to the platform's endpoint now. */
  private async post(row: DeliveryRow, target: Target): Promise<WebhookResponse> {
    if (!target.url) return { latencyMs: 0, error: 'no webhook endpoint is configured (PATCH /config webhookEndpoint)' };
    const body = this.envelope(row, this.deps.clock.now());
    const { signature, keyId } = await this.deps.keys.sign(row.platform_id, body);
    const response = await postWebhook(
      {
        url: target.url,
        body,
        headers: {
          'content-type': 'application/json',
          'user-agent': `Corridor-Webhooks/${API_VERSION}`,
          'x-service-signature': signature,
          // The same signature under the upstream's name: a receiver written for the upstream
          // verifies Corridor's webhooks unchanged (the Grid-Wallet-Signature alias, outbound).
          'x-grid-signature': signature,
          'x-service-signature-key-id': keyId,
        },
        timeoutMs: this.deps.timeoutMs,
        guard: target.guard,
      },
      this.deps.resolver,
    );
    const outcome = this.outcomeOf(response);
    this.attempts.inc({ outcome });
    if (response.status !== undefined) this.latency.observe({ outcome }, response.latencyMs / 1000);
    return response;
  }

  private outcomeOf(response: WebhookResponse): AttemptOutcome {
    if (response.refused) return 'REFUSED';
    return acknowledged(response.status) ? 'SUCCEEDED' : 'FAILED';
  }

  /**
   * One attempt at a delivery, logged. `next` decides the delivery's status after a failure:
   * a retry time keeps it PENDING; undefined fails it (or leaves its status as it is: `keep`).
   * `outcomeOf` judges the answer (default: 2xx or 409 acknowledges); `job`, the delivery job
   * that a success completes in the attempt's own statement.
   */
  private async attempt(
    row: DeliveryRow,
    next: Date | undefined | 'keep',
    { outcomeOf = (r: WebhookResponse) => this.outcomeOf(r), job }: { outcomeOf?: (response: WebhookResponse) => AttemptOutcome; job?: JobCompletion } = {},
  ): Promise<SentWebhook> {
    const target = await this.deps.target(row.platform_id);
    const attemptedAt = this.deps.clock.now();
    const response = await this.post(row, target);
    const outcome = outcomeOf(response);
    const fields = {
      attemptedAt,
      url: target.url ?? null,
      outcome,
      responseStatus: response.status ?? null,
      // The receiver's text, which may hold what PostgreSQL cannot store (U+0000, a lone
      // surrogate): replaced, after the cut (which can split a surrogate pair).
      responseBody: response.body ? storableText(response.body.slice(0, LOGGED_BODY_CHARS)) : null,
      latencyMs: response.latencyMs,
      error: response.error ?? (outcome === 'SUCCEEDED' ? null : `HTTP ${response.status}`),
      // `keep`: as the row is when the attempt is counted, not as `row` was read before sending.
      schedule: next === 'keep' ? ('UNCHANGED' as const) : { status: next ? ('PENDING' as const) : ('FAILED' as const), nextAttemptAt: next ?? null },
    };
    // Delivered: the job is done, in the same statement (a failure's retry is the worker's to schedule).
    const record = (attempt: typeof fields) => recordAttempt(this.deps.db, row.platform_id, row.id, attempt, outcome === 'SUCCEEDED' ? job?.update() : undefined);
    let updated: DeliveryRow;
    try {
      updated = await record(fields);
    } catch (error) {
      // Whatever in the answer the database still refused, the attempt counts: logged without it.
      // The message only: a database error's details may quote the value refused.
      const reason = error instanceof Error ? error.message : String(error);
      this.deps.logger.warn({ platformId: row.platform_id, webhookId: formatId('Webhook', row.id), reason }, 'webhook attempt logged without its answer');
      try {
        updated = await record({ ...fields, responseBody: null, error: fields.error ? `${fields.error}; ${BODY_NOT_LOGGED}` : BODY_NOT_LOGGED });
      } catch (again) {
        throw new AttemptNotLogged(response, again);
      }
    }
    if (updated.status === 'SUCCEEDED' && row.status !== 'SUCCEEDED') {
      this.outcomes.inc({ outcome: 'delivered' });
      this.lag.observe({}, (this.deps.clock.now().getTime() - row.created_at.getTime()) / 1000);
    } else if (next !== 'keep' && updated.status === 'FAILED' && row.status !== 'FAILED') this.outcomes.inc({ outcome: 'failed' });
    this.deps.logger.info(
      { platformId: row.platform_id, webhookId: formatId('Webhook', row.id), type: row.event_type, attempt: updated.attempt_count, outcome, status: response.status, ms: response.latencyMs },
      'webhook attempt',
    );
    return { row: updated, response, ...(target.url ? { url: target.url } : {}) };
  }

  /** The job: one automatic attempt; a failure is retried on the schedule, then the delivery fails. */
  async deliver(job: Job, completion: JobCompletion): Promise<void> {
    const { deliveryId } = job.payload as { deliveryId: string };
    const platformId = job.platform_id!;
    let sent: SentWebhook;
    let retryAt: Date | undefined;
    try {
      const row = await findDelivery(this.deps.db, platformId, deliveryId);
      // Acknowledged meanwhile (a manual re-send), or already given up on.
      if (!row || row.status !== 'PENDING') return;
      const delay = retryDelayMs(job.attempts);
      retryAt = delay === undefined ? undefined : new Date(this.deps.clock.now().getTime() + delay);
      sent = await this.attempt(row, retryAt, { job: completion });
    } catch (error) {
      // Not the endpoint's answer (that is logged and scheduled below) but Corridor's side: the
      // database, signing. The job's backoff retries it; when the job dies, so does the delivery,
      // with the error, rather than stay PENDING with nothing left to send it.
      if (job.attempts >= job.max_attempts) await this.abandon(platformId, deliveryId, error);
      throw error;
    }
    const { row: after, response } = sent;
    if (after.status === 'PENDING' && retryAt) throw new RetryJobAt(retryAt, `webhook attempt ${job.attempts} failed: ${summary(response)}`);
    if (after.status === 'FAILED') throw new Error(`webhook gave up after ${job.attempts} attempts: ${summary(response)}`);
  }

  /** Fails a PENDING delivery with `error` (not the endpoint's answer: that is an attempt's). Never throws. */
  private async abandon(platformId: string, deliveryId: string, error: unknown): Promise<void> {
    const message = logText(`Corridor could not complete the delivery: ${error instanceof Error ? error.message : String(error)}`);
    try {
      if (await abandonDelivery(this.deps.db, platformId, deliveryId, message, this.deps.clock.now())) this.outcomes.inc({ outcome: 'failed' });
    } catch (failure) {
      this.deps.logger.error({ platformId, webhookId: formatId('Webhook', deliveryId), reason: failure instanceof Error ? failure.message : String(failure) }, 'could not fail a webhook delivery');
    }
  }

  /** Creates a delivery that is sent now, once, outside the retry schedule (TEST, approval requests). */
  async sendNow(
    platformId: string,
    event: { kind: Exclude<DeliveryKind, 'EVENT'>; type: string; resourceId?: string; data?: unknown },
    outcomeOf?: (response: WebhookResponse) => AttemptOutcome,
  ): Promise<SentWebhook> {
    const now = this.deps.clock.now();
    const row: DeliveryRow = {
      platform_id: platformId,
      id: uuidv7(now.getTime()),
      kind: event.kind,
      event_type: event.type,
      resource_id: event.resourceId ?? null,
      data: event.data ?? null,
      status: 'PENDING',
      attempt_count: 0,
      next_attempt_at: now,
      last_attempt_at: null,
      last_response_status: null,
      last_latency_ms: null,
      last_error: null,
      delivered_at: null,
      created_at: now,
      updated_at: now,
    };
    await insertDeliveries(this.deps.db, [row]);
    try {
      return await this.attempt(row, undefined, { outcomeOf });
    } catch (error) {
      // No job will send it again: it must not stay PENDING.
      await this.abandon(platformId, row.id, error);
      throw error;
    }
  }

  /** POST /sandbox/webhooks/test: a TEST webhook now; any answer but 2xx is an error. */
  async sendTest(platformId: string): Promise<{ url: string; response_status: number; response_body?: string }> {
    const target = await this.requireEndpoint(platformId);
    const { response, url, row } = await this.sendNow(platformId, { kind: 'TEST', type: TEST_EVENT }, (r) =>
      r.refused ? 'REFUSED' : r.status !== undefined && r.status >= 200 && r.status < 300 ? 'SUCCEEDED' : 'FAILED',
    );
    if (row.status !== 'SUCCEEDED' || response.status === undefined) {
      throw new AppError('WEBHOOK_DELIVERY_ERROR', `The test webhook was not accepted: ${summary(response)}.`, {
        details: {
          url: url ?? target.url,
          webhookId: formatId('Webhook', row.id),
          ...(response.status !== undefined ? { responseStatus: response.status } : {}),
          ...(response.body ? { responseBody: response.body.slice(0, LOGGED_BODY_CHARS) } : {}),
          ...(response.error ? { error: response.error } : {}),
          latencyMs: response.latencyMs,
        },
      });
    }
    return { url: url ?? target.url, response_status: response.status, ...(response.body !== undefined ? { response_body: response.body } : {}) };
  }

  private async load(platformId: string, webhookId: string): Promise<DeliveryRow> {
    const uuid = parseId('Webhook', webhookId);
    const row = uuid && (await findDelivery(this.deps.db, platformId, uuid));
    if (!row) throw new AppError('REFERENCE_NOT_FOUND', `Webhook ${webhookId} not found.`);
    return row;
  }

  async detail(platformId: string, webhookId: string): Promise<WebhookDeliveryDetail> {
    const row = await this.load(platformId, webhookId);
    const attempts = await listAttempts(this.deps.db, platformId, row.id, ATTEMPT_LOG_LIMIT);
    return { ...toDelivery(row), ...(row.data === null ? {} : { data: row.data }), attemptLog: attempts.map(toAttempt) };
  }

  async list(platformId: string, query: DeliveryListQuery): Promise<Page<WebhookDelivery>> {
    const page = pageRequest(query);
    const { rows, totalCount } = await listDeliveries(this.deps.db, platformId, {
      limit: page.limit,
      ...(page.after ? { before: page.after } : {}),
      ...(query.eventType ? { eventType: query.eventType } : {}),
      ...(query.status ? { status: query.status } : {}),
    });
    return toPage(rows, page, toDelivery, totalCount);
  }

  /**
   * Sends a delivery again now, with its original id (receivers de-duplicate on it). Success
   * marks it delivered; a failure leaves its status and retry schedule as they were.
   */
  async resend(platformId: string, webhookId: string): Promise<WebhookDeliveryDetail> {
    const row = await this.load(platformId, webhookId);
    if (row.kind === 'APPROVAL') {
      // The question is decided by the answer to its one sending (or the API within its window,
      // or its deadline); an answer to a re-send would decide nothing, so none is sent.
      throw new AppError(
        'CONFLICT',
        `Webhook ${webhookId} asked for the approval of ${row.resource_id ?? 'an incoming payment'}: it was decided when it was sent and cannot be sent again. ` +
          'Decide a payment still waiting with POST /transactions/{id}/approve or /reject.',
        { details: { reason: 'APPROVAL_NOT_RESENDABLE', type: row.event_type, ...(row.resource_id ? { resourceId: row.resource_id } : {}) } },
      );
    }
    // Nowhere to send it: said as the test endpoint says it, rather than a FAILED attempt to no URL.
    await this.requireEndpoint(platformId);
    await this.attempt(row, 'keep');
    return this.detail(platformId, webhookId);
  }

  /** The platform's webhook target; 400 WEBHOOK_ENDPOINT_NOT_SET when it has no endpoint. */
  private async requireEndpoint(platformId: string): Promise<{ url: string }> {
    const { url } = await this.deps.target(platformId);
    if (!url) throw new AppError('WEBHOOK_ENDPOINT_NOT_SET', 'No webhook endpoint is configured: set one with PATCH /config {webhookEndpoint}.');
    return { url };
  }
}
