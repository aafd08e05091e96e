import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { Clock, PlatformClock } from '../../platform/clock.js';
import type { DbHandle } from '../../platform/db/database.js';
import type { HttpMetrics } from '../../platform/http/metrics.js';
import type { JobWorker } from '../../platform/jobs/index.js';
import { outboxRelay } from '../../platform/outbox.js';
import { getConfigRow } from '../config/index.js';
import { platformEnvironment } from '../platforms/index.js';
import { systemResolver, type Resolver } from '../../platform/address-guard.js';
import { APPROVAL_DEADLINE_JOB, IncomingPaymentApprovals } from './approvals.js';
import type { EventCatalogue } from './catalogue.js';
import { DELIVER_JOB, WebhookDeliveries, type Target } from './deliveries.js';
import { WebhookSigningKeys } from './signing-keys.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The webhooks module, for embedders and tests that consume the approval round trip. */
    webhooks: Webhooks;
  }
}

export interface WebhooksDeps {
  handle: DbHandle;
  clock: Clock;
  /** Each platform's time (sandbox test clocks), for approval windows. */
  platformClock: PlatformClock;
  logger: Logger;
  config: Pick<Config, 'webhooks' | 'cacheTtlMs'>;
  jobs: JobWorker;
  catalogue: EventCatalogue;
  /** The platform's current configuration (its `webhookEndpoint`), cached across requests. */
  configs: { get(platformId: string): Promise<{ webhookEndpoint?: string }> };
  masterKey: Buffer;
  metrics: HttpMetrics;
  /** How host names are resolved for production deliveries; tests put DNS answers here. */
  resolver?: Resolver;
}

/**
 * The webhooks module assembled: signing keys, deliveries from the outbox (a work source of
 * the job worker, so every process relays and delivers), and the approval round trip.
 */
export class Webhooks {
  readonly keys: WebhookSigningKeys;
  readonly deliveries: WebhookDeliveries;
  readonly approvals: IncomingPaymentApprovals;

  constructor(deps: WebhooksDeps) {
    const { handle, clock, logger, config, jobs, catalogue } = deps;
    this.keys = new WebhookSigningKeys(handle, clock, deps.masterKey, config.cacheTtlMs);
    const target = async (platformId: string): Promise<Target> => {
      const [configured, environment] = await Promise.all([deps.configs.get(platformId), platformEnvironment(handle.db, platformId)]);
      return { ...(configured.webhookEndpoint ? { url: configured.webhookEndpoint } : {}), guard: environment === 'production' || config.webhooks.guardSandbox };
    };
    this.deliveries = new WebhookDeliveries({
      db: handle.db,
      clock,
      logger,
      catalogue,
      keys: this.keys,
      target,
      endpointIn: async (trx, platformId) => (await getConfigRow(trx, platformId)).webhook_endpoint ?? undefined,
      resolver: deps.resolver ?? systemResolver,
      timeoutMs: config.webhooks.timeoutMs,
    });
    this.approvals = new IncomingPaymentApprovals({ handle, clock, platformClock: deps.platformClock, logger, catalogue, deliveries: this.deliveries, timeoutMs: config.webhooks.timeoutMs });
    jobs.register(DELIVER_JOB, (job, _checkpoint, completion) => this.deliveries.deliver(job, completion), { perPlatform: config.webhooks.perEndpointConcurrency });
    jobs.register(APPROVAL_DEADLINE_JOB, (job) => this.approvals.onDeadline(job));
    jobs.addSource(outboxRelay(handle.db, clock, (trx, events) => this.deliveries.fanOut(trx, events)));
    deps.metrics.addCollector(() => this.deliveries.metrics());
  }

  async start(): Promise<void> {
    await Promise.all([this.keys.start(), this.approvals.start()]);
  }
}
