import { parsePostTransactionCallback, verifyPostTransactionCallbackSignature, type PostTransactionCallback } from '@uma-sdk/core';
import type { Config } from '../../config.js';
import type { Clock, PlatformClock } from '../../platform/clock.js';
import type { Db, Tx } from '../../platform/db/database.js';
import { withTx } from '../../platform/db/tx.js';
import { RetryJobAt, type Job } from '../../platform/jobs/index.js';
import { AppError } from '../../platform/errors.js';
import { formatId } from '../../platform/ids.js';
import { customerTypeOf } from '../customers/index.js';
import { findCustomerAccountIn } from '../internal-accounts/index.js';
import { platformEnvironment } from '../platforms/index.js';
import type { IncomingPayments } from '../transactions/index.js';
import type { Resolver } from '../../platform/address-guard.js';
import { counterpartyKeys } from './counterparty.js';
import { bolt11, NETWORKS, type LightningNode } from './invoices.js';
import { findIncomingPayment, findIncomingPaymentByHash, findIncomingPaymentById, markSenderConfirmed, setIncomingPaymentStatus, type IncomingPaymentRow } from './repo.js';
import { httpSend } from './transport.js';
import { checkTimestamp, fromSdkError, NonceCheck, verifySigned } from './verification.js';

export const INVOICE_EXPIRY_JOB = 'uma.invoice-expiry';

export interface NodeDeps {
  db: Db;
  clock: Clock;
  platformClock: PlatformClock;
  config: Config;
  node: LightningNode;
  resolver: Resolver;
  incomingPayments: IncomingPayments;
}

/** The payment hash of a BOLT 11 invoice of either network the node issues on; undefined when it is not one. */
export function paymentHashOf(invoice: string): string | undefined {
  for (const network of [NETWORKS.sandbox, NETWORKS.production]) {
    try {
      const decoded = bolt11().decode(invoice, network);
      const hash = decoded.tagsObject.payment_hash;
      if (hash) return hash;
    } catch {
      // not of this network: try the other
    }
  }
  return undefined;
}

/**
 * The simulated Lightning node's receiving end (`POST /uma/lightning/pay {invoice}`): another
 * Corridor's node pays one of our invoices by presenting it. An unpaid, unexpired invoice of a
 * sandbox receiver is settled: the INCOMING transaction is credited, and the preimage — whose
 * SHA-256 is the invoice's payment hash — is released as the payer's proof of payment, as a
 * Lightning node does. Paying a paid invoice again releases the same preimage and moves nothing.
 * Expired: 409 CONFLICT and the transaction fails QUOTE_EXPIRED; its receiver deleted or
 * without an active account: 409 and the transaction fails OFFRAMP_FAILED; unknown: 404
 * REFERENCE_NOT_FOUND; a production receiver's invoice: 501 (no real node behind it).
 */
export async function settleInvoice(deps: NodeDeps, invoice: string): Promise<{ preimage: string }> {
  const hash = paymentHashOf(invoice);
  const known = hash ? await findIncomingPaymentByHash(deps.db, hash) : undefined;
  if (!known || known.invoice !== invoice) throw new AppError('REFERENCE_NOT_FOUND', 'This node issued no such invoice.');
  if ((await platformEnvironment(deps.db, known.platform_id)) !== 'sandbox') {
    throw new AppError('NOT_IMPLEMENTED', "A production receiver's invoice is paid over Lightning itself; the simulated node settles sandbox invoices only.");
  }
  const outcome = await withTx(deps.db, async (trx) => {
    const row = (await findIncomingPaymentByHash(trx, hash!, { forUpdate: true }))!;
    if (row.status === 'COMPLETED') return 'PAID' as const;
    if (row.status === 'EXPIRED') return 'EXPIRED' as const;
    if (row.expires_at <= (await deps.platformClock.now(row.platform_id, trx))) {
      await setIncomingPaymentStatus(trx, row.platform_id, row.id, 'EXPIRED');
      if (row.transaction_id) await deps.incomingPayments.fail(trx, row.platform_id, row.transaction_id, 'QUOTE_EXPIRED');
      return 'EXPIRED' as const;
    }
    // A receiver deleted (or its account no longer active) since the invoice was issued has
    // nobody to credit: the payment fails and the payer, refused, keeps its money.
    if (row.transaction_id && !(await receiverCanTake(trx, row))) {
      await deps.incomingPayments.fail(trx, row.platform_id, row.transaction_id, 'OFFRAMP_FAILED');
      return 'REFUSED' as const;
    }
    // The transaction may have failed meanwhile: then nothing is credited and no proof released.
    if (!row.transaction_id || !(await deps.incomingPayments.arrive(trx, row.platform_id, row.transaction_id))) return 'REFUSED' as const;
    await setIncomingPaymentStatus(trx, row.platform_id, row.id, 'COMPLETED');
    return 'PAID' as const;
  });
  if (outcome === 'EXPIRED') throw new AppError('CONFLICT', 'The invoice has expired unpaid.', { details: { reason: 'INVOICE_EXPIRED' } });
  if (outcome === 'REFUSED') throw new AppError('CONFLICT', 'The payment this invoice was for is no longer pending.', { details: { reason: 'PAYMENT_NOT_PENDING' } });
  return { preimage: deps.node.preimage(known.id).toString('hex') };
}

/**
 * Whether the invoice's receiver is still a live customer with an active account in its
 * currency. The customer's row is locked until the credit commits, so a deletion waits for it.
 */
async function receiverCanTake(trx: Tx, row: IncomingPaymentRow): Promise<boolean> {
  try {
    await customerTypeOf(trx, row.platform_id, formatId('Customer', row.customer_id), { forUpdate: true });
  } catch (error) {
    if (error instanceof AppError) return false;
    throw error;
  }
  return (await findCustomerAccountIn(trx, row.platform_id, row.customer_id, row.currency_code)) !== undefined;
}

/**
 * UMAD-07's post-transaction callback at the URL our pay-request answer gave
 * (`/uma/utxo-callback/{paymentId}`): the sending VASP's signed note that it paid. Checked
 * like every UMA message (signature by the sender's published key, nonce, timestamp) and
 * recorded once; a Lightning leg that is simulated has no UTXOs to screen.
 */
export async function receivePostTransactionCallback(deps: NodeDeps, paymentId: string, body: unknown): Promise<Record<string, never>> {
  const row = await findIncomingPaymentById(deps.db, paymentId.toLowerCase());
  if (!row) throw new AppError('REFERENCE_NOT_FOUND', 'No such payment.');
  let callback: PostTransactionCallback;
  try {
    callback = parsePostTransactionCallback(JSON.stringify(body ?? {}));
  } catch (error) {
    throw fromSdkError(error, 'INVALID_REQUEST_FORMAT', 'The post-transaction callback cannot be read.');
  }
  if (!callback.vaspDomain || !callback.signatureNonce || callback.signatureTimestamp === undefined || !callback.signature) {
    throw new AppError('MISSING_REQUIRED_UMA_PARAMETERS', 'A UMA post-transaction callback carries vaspDomain, signature, signatureNonce and signatureTimestamp.');
  }
  if (callback.vaspDomain.toLowerCase() !== row.sender_vasp_domain.toLowerCase()) {
    throw new AppError('INVALID_SIGNATURE', 'The callback does not come from the VASP that sent this payment.');
  }
  checkTimestamp(callback.signatureTimestamp, deps.clock, deps.config.uma.timestampWindowSeconds);
  const environment = await platformEnvironment(deps.db, row.platform_id);
  const keys = await counterpartyKeys({ clock: deps.clock, config: deps.config.uma, send: httpSend(deps.config.uma, deps.resolver, environment) }, row.sender_vasp_domain, {
    unreachable: 'INVALID_SIGNATURE',
    explain: false,
  });
  const nonces = new NonceCheck(deps.db, deps.clock, deps.config.uma.timestampWindowSeconds, row.sender_vasp_domain);
  await verifySigned(nonces, (validator) => verifyPostTransactionCallbackSignature(callback, keys, validator), 'post-transaction callback');
  await markSenderConfirmed(deps.db, row.platform_id, row.id, deps.clock.now());
  return {};
}

/**
 * The invoice-expiry job, queued with the invoice: an invoice nobody paid in time expires, and
 * its approved INCOMING transaction fails QUOTE_EXPIRED (the sender never executed its quote).
 */
export async function expireUnpaidInvoice(deps: NodeDeps, job: Job): Promise<void> {
  const { paymentId } = job.payload as { paymentId: string };
  const platformId = job.platform_id!;
  const row = await findIncomingPayment(deps.db, platformId, paymentId);
  if (!row || row.status !== 'PENDING') return;
  // The expiry is the platform's time; the job runs on the shared clock, as much later.
  if (row.expires_at > (await deps.platformClock.now(platformId))) throw new RetryJobAt(row.expires_at, 'the invoice is still payable', { platformTime: true });
  await withTx(deps.db, async (trx) => {
    const locked = await findIncomingPaymentByHash(trx, row.payment_hash, { forUpdate: true });
    if (!locked || locked.status !== 'PENDING') return;
    await setIncomingPaymentStatus(trx, platformId, locked.id, 'EXPIRED');
    if (locked.transaction_id) await deps.incomingPayments.fail(trx, platformId, locked.transaction_id, 'QUOTE_EXPIRED');
  });
}
