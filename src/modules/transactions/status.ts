/**
 * The transaction status machine (UPSTREAM §5.4), the one place a status may change. Every
 * update of a transaction's status goes through `assertTransition`, and the repository's update
 * is conditional on the status read, so a transition is checked and applied exactly once; an
 * illegal one is a bug and throws.
 */
export const TRANSACTION_STATUSES = ['CREATED', 'PENDING', 'PENDING_AUTHORIZATION', 'PROCESSING', 'COMPLETED', 'REJECTED', 'FAILED', 'REFUNDED', 'EXPIRED'] as const;
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];

export const OUTGOING_STATUSES = ['PENDING', 'PENDING_AUTHORIZATION', 'EXPIRED', 'PROCESSING', 'COMPLETED', 'FAILED'] as const;

/**
 * Outgoing: PENDING (executed, money held or awaited) → PROCESSING (handed to the rail: the
 * debit, the point of no return) → COMPLETED | FAILED. PENDING may also fail (rejected before
 * the debit, cancelled, funding mismatch) or expire; PENDING_AUTHORIZATION (SCA) leads to
 * PENDING, FAILED or EXPIRED. Incoming: CREATED → PENDING → PROCESSING → COMPLETED, with
 * REJECTED / FAILED on the way, and REFUNDED after a completed payment is sent back.
 * Terminal: COMPLETED (outgoing), FAILED, EXPIRED, REJECTED, REFUNDED.
 */
const TRANSITIONS: Record<'OUTGOING' | 'INCOMING', Partial<Record<TransactionStatus, readonly TransactionStatus[]>>> = {
  OUTGOING: {
    PENDING_AUTHORIZATION: ['PENDING', 'FAILED', 'EXPIRED'],
    PENDING: ['PROCESSING', 'FAILED', 'EXPIRED'],
    PROCESSING: ['COMPLETED', 'FAILED'],
  },
  INCOMING: {
    CREATED: ['PENDING', 'FAILED', 'EXPIRED'],
    PENDING: ['PROCESSING', 'COMPLETED', 'REJECTED', 'FAILED', 'EXPIRED'],
    PROCESSING: ['COMPLETED', 'FAILED'],
    COMPLETED: ['REFUNDED'],
  },
};

/** Where a transaction of `type` may start. */
const INITIAL: Record<'OUTGOING' | 'INCOMING', readonly TransactionStatus[]> = {
  OUTGOING: ['PENDING', 'PENDING_AUTHORIZATION', 'EXPIRED'],
  INCOMING: ['CREATED', 'PENDING'],
};

export class IllegalTransition extends Error {
  constructor(type: string, from: TransactionStatus | null, to: TransactionStatus) {
    super(`illegal ${type} transaction transition ${from ?? '(new)'} → ${to}`);
    this.name = 'IllegalTransition';
  }
}

export function canTransition(type: 'OUTGOING' | 'INCOMING', from: TransactionStatus, to: TransactionStatus): boolean {
  return TRANSITIONS[type][from]?.includes(to) ?? false;
}

/** Throws unless `from → to` is an edge of the machine (`from` null: a new transaction). */
export function assertTransition(type: 'OUTGOING' | 'INCOMING', from: TransactionStatus | null, to: TransactionStatus): void {
  const allowed = from === null ? INITIAL[type].includes(to) : canTransition(type, from, to);
  if (!allowed) throw new IllegalTransition(type, from, to);
}
