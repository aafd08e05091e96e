import { describe, expect, it } from 'vitest';
import { assertTransition, canTransition, IllegalTransition, TRANSACTION_STATUSES, type TransactionStatus } from '../../src/modules/transactions/status.js';

/**
 * The whole status machine of src/modules/transactions/status.ts, edge by edge: every pair of
 * statuses not listed here must throw. A payment that was handed to the rail (PROCESSING) never
 * goes back to PENDING (it would be cancellable, and its debit refunded while the rail pays it), a
 * payment awaiting SCA (PENDING_AUTHORIZATION) is never handed to the rail before it is PENDING,
 * and a terminal status (COMPLETED, FAILED, EXPIRED outgoing; FAILED, EXPIRED, REJECTED, REFUNDED
 * incoming) never changes again.
 */
const EDGES: Record<'OUTGOING' | 'INCOMING', Partial<Record<TransactionStatus, TransactionStatus[]>>> = {
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
const INITIAL = { OUTGOING: ['PENDING', 'PENDING_AUTHORIZATION', 'EXPIRED'], INCOMING: ['CREATED', 'PENDING'] } as const;

describe('the transaction status machine, every pair of statuses', () => {
  for (const type of ['OUTGOING', 'INCOMING'] as const) {
    it(`${type}: exactly the listed edges are allowed, every other move throws`, () => {
      for (const from of TRANSACTION_STATUSES) {
        for (const to of TRANSACTION_STATUSES) {
          const allowed = EDGES[type][from]?.includes(to) ?? false;
          expect(canTransition(type, from, to), `${type} ${from} → ${to}`).toBe(allowed);
          if (allowed) expect(() => assertTransition(type, from, to)).not.toThrow();
          else expect(() => assertTransition(type, from, to), `${type} ${from} → ${to}`).toThrow(IllegalTransition);
        }
      }
    });

    it(`${type}: a new transaction starts only in its initial statuses`, () => {
      for (const to of TRANSACTION_STATUSES) {
        if ((INITIAL[type] as readonly string[]).includes(to)) expect(() => assertTransition(type, null, to)).not.toThrow();
        else expect(() => assertTransition(type, null, to), `${type} (new) → ${to}`).toThrow(IllegalTransition);
      }
    });
  }

  it('outgoing terminal statuses have no way out', () => {
    for (const terminal of ['COMPLETED', 'FAILED', 'EXPIRED'] as const) {
      for (const to of TRANSACTION_STATUSES) expect(canTransition('OUTGOING', terminal, to), `${terminal} → ${to}`).toBe(false);
    }
  });
});
