import { describe, expect, it } from 'vitest';
import type { DbOrTx } from '../../src/platform/db/database.js';
import { AppError } from '../../src/platform/errors.js';
import { checkDocumentInScope } from '../../src/modules/verifications/kyc-links.js';

// The hosted KYC page may replace only its holders' documents (verifications/kyc-links.ts): an
// unknown one is 404, but a database that cannot answer is not an unknown document.
const scope = { platformId: '01a237a8-a15b-7199-a289-6fd0d5150a61', holderIds: new Set(['Customer:01a237a8-a15b-7199-a289-6fd0d5150a62']) };
const documentId = 'Document:01a237a8-a15b-7199-a289-6fd0d5150a63';

/** A database handle whose every read answers `rows`, or fails with `error`. */
function database(answer: { rows: unknown[] } | { error: Error }): DbOrTx {
  const query = new Proxy({} as Record<string, unknown>, {
    get: (_target, name) =>
      name === 'executeTakeFirst' ? async () => ('error' in answer ? Promise.reject(answer.error) : answer.rows[0]) : name === 'then' ? undefined : () => query,
  });
  return { selectFrom: () => query } as unknown as DbOrTx;
}

describe('checkDocumentInScope', () => {
  it('is 404 REFERENCE_NOT_FOUND for a document that does not exist or is malformed', async () => {
    for (const id of [documentId, 'Document:nope']) {
      const refusal = await checkDocumentInScope(database({ rows: [] }), scope, id).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(AppError);
      expect((refusal as AppError).code).toBe('REFERENCE_NOT_FOUND');
    }
  });

  it('lets a database failure through as itself (503 upstream), not as an unknown document', async () => {
    const down = Object.assign(new Error('Connection terminated unexpectedly'), { code: '57P01' });
    await expect(checkDocumentInScope(database({ error: down }), scope, documentId)).rejects.toBe(down);
  });
});
