/**
 * The transactions module's public face (MONEY-CONTRACT.md): what app.ts wires and what quotes
 * (and later transfers, UMA) call. `Payments` is built once in app.ts; a quote's execution calls
 * `payments.startOutgoingPayment(trx, input)` (or `recordExpiredPayment`) in its own database
 * transaction, and derives a quote's status from `payments.transactionStatusesByQuote`.
 */
export { transactionRoutes, type TransactionRouteDeps } from './routes.js';
export { Payments, type TransactionView } from './payments.js';
export { type OutgoingPaymentInput } from './payment-rows.js';
export { type PaymentsDeps } from './payment-steps.js';
export { SETTLE_JOB, SUBMIT_JOB } from './settlement.js';
export { HttpRails } from './http-rails.js';
export { SandboxRails, SANDBOX_TRIGGERS } from './sandbox-rails.js';
export { DEPOSIT_PAGE_LIMIT, type DepositPage, type DepositSource, type Payout, type PayoutStatus, type RailFailureReason, type RailProvider, type SubmitOutcome } from './rail-provider.js';
export { RAILS, railCarries, settlementSecondsOf, type RailSpec } from './rails.js';
export { INCOMING_PAYMENT_EVENTS, OUTGOING_PAYMENT_EVENTS, SandboxSendRequest, Transaction, IncomingTransaction, OutgoingTransaction, TRANSACTION_SCHEMAS } from './schemas.js';
export { toTransaction } from './views.js';
export { IllegalTransition, TRANSACTION_STATUSES, type TransactionStatus } from './status.js';
export { IncomingPayments, INCOMING_APPROVAL_CONSUMER, INCOMING_REFUND_JOB, type IncomingPaymentInput, type IncomingPaymentsDeps } from './incoming.js';
export { FundingDeposits, depositRailsOf, type DepositOutcome, type DepositSender, type FundingDepositsDeps, type ReportedDeposit } from './deposits.js';
export { DepositFeed, DEPOSIT_POLL_INTERVAL_MS, DEPOSIT_POLL_JOB } from './deposit-feed.js';
