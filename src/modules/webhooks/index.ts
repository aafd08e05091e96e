/**
 * The webhooks module's public API: what other modules and the wiring may use.
 *
 * Declaring events: a module records events with `recordEvent` (platform/outbox) in the
 * transaction of the change, and declares their types and payload schema as an `EventGroup`
 * beside its schemas; `app.ts` lists every group in the `EventCatalogue`. Only catalogued types
 * are delivered; the catalogue is also the OpenAPI `webhooks`.
 *
 * Asking the platform (incoming-payment approval): register a consumer hook on
 * `Webhooks.approvals` at wiring, then `approvals.request(...)`; the transactions module's
 * approve/reject routes call `approvals.decidePendingApproval(trx, ...)`.
 */
export type { EventGroup } from '../../platform/outbox.js';
export { EventCatalogue, TEST_EVENT, TEST_EVENTS } from './catalogue.js';
export { Webhooks, type WebhooksDeps } from './service.js';
export { webhookRoutes } from './routes.js';
export {
  APPROVAL_WINDOW_MS,
  IncomingPaymentApprovals,
  type ApprovalDecision,
  type ApprovalHook,
  type ApprovalRequest,
  type DecidedApproval,
  type RequestedField,
} from './approvals.js';
export { RETRY_SCHEDULE_SECONDS } from './deliveries.js';
