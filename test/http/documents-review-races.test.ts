import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseBlobStore, type LocalFile } from '../../src/platform/blob-store.js';
import type { Tx } from '../../src/platform/db/database.js';
import { cardPhotoJpeg } from '../helpers/document-files.js';
import { BASE, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { sendDocumentForm, textParts } from '../helpers/multipart.js';

// A replace or delete of a document races a verification of its customer that is opening. Either
// the change commits first and the review reads what it left, or the review opens first and the
// change is 409: never a review whose verdict is about a file that is no longer on file.

/** Holds a storing (or releasing) transaction open at the gate, inside it, until `release` is called. */
class GatedBlobStore extends DatabaseBlobStore {
  private gate: { entered: () => void; wait: Promise<void> } | undefined;

  /** Arms the gate for the next put or release; resolves `entered` once a transaction is held there. */
  arm(): { entered: Promise<void>; release: () => void } {
    let release!: () => void;
    let entered!: () => void;
    const enteredPromise = new Promise<void>((resolve) => (entered = resolve));
    this.gate = { entered, wait: new Promise<void>((resolve) => (release = resolve)) };
    return { entered: enteredPromise, release };
  }

  private async pass(): Promise<void> {
    const gate = this.gate;
    this.gate = undefined;
    if (!gate) return;
    gate.entered();
    await gate.wait;
  }

  override async put(trx: Tx, file: LocalFile): Promise<void> {
    await this.pass();
    await super.put(trx, file);
  }

  override async release(trx: Tx, sha256: string, stillReferenced: () => Promise<boolean>): Promise<void> {
    await this.pass();
    await super.release(trx, sha256, stillReferenced);
  }
}

const blobs = new GatedBlobStore(() => new Date());
let ctx: TestContext;
let platform: TestPlatform;
beforeAll(async () => {
  ctx = await createTestContext({ blobStore: blobs });
  platform = ctx.platform;
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
let seq = 0;

/**
 * An individual with everything a review needs, whose sandbox name ends in 001: a review of it
 * is decided in the request (PENDING_MANUAL_REVIEW when clean), so what it read is in its answer.
 */
async function reviewableCustomer(): Promise<{ customerId: string; passportId: string }> {
  const created = await ctx.app.inject({
    method: 'POST',
    url: `${BASE}/customers`,
    headers: { authorization: platform.auth },
    payload: {
      customerType: 'INDIVIDUAL',
      platformCustomerId: `race-${++seq}`,
      fullName: 'Jane Doe 001',
      birthDate: '1990-01-15',
      nationality: 'US',
      address: { line1: '1 Main St', postalCode: '62701', country: 'US' },
    },
  });
  expect(created.statusCode, created.body).toBe(201);
  const customerId = (created.json() as Body).id as string;
  const passport = await sendPassport('POST', '/documents', { documentHolder: customerId, country: 'US' });
  expect(passport.statusCode, passport.body).toBe(201);
  return { customerId, passportId: (passport.json() as Body).id as string };
}

async function sendPassport(method: 'POST' | 'PUT', path: string, fields: Record<string, string>) {
  return sendDocumentForm(ctx.app, platform, method, path, [
    ...textParts({ documentType: 'PASSPORT', ...fields }),
    { name: 'file', filename: 'passport.jpg', contentType: 'image/jpeg', data: await cardPhotoJpeg() },
  ]);
}

const startVerification = () => (customerId: string) =>
  ctx.app.inject({ method: 'POST', url: `${BASE}/verifications`, headers: { authorization: platform.auth }, payload: { customerId } });

/** Runs `change` up to the gate, starts a verification meanwhile, then lets the change finish. */
async function race<T>(change: () => Promise<T>, customerId: string) {
  const gate = blobs.arm();
  const changed = change();
  await gate.entered;
  const verification = startVerification()(customerId);
  // Long enough for the verification to reach whatever the change holds.
  await new Promise((resolve) => setTimeout(resolve, 300));
  gate.release();
  const [changeResponse, verificationResponse] = await Promise.all([changed, verification]);
  expect(verificationResponse.statusCode, verificationResponse.body).toBe(200);
  return { change: changeResponse, verification: verificationResponse.json() as { verificationStatus: string; errors: Body[] } };
}

describe('a document change racing the opening of a review', () => {
  it('a replace either lands before the review reads the document, or is refused', async () => {
    const { customerId, passportId } = await reviewableCustomer();
    // The new passport is from another country than the nationality: a review that reads it finds a DATA_MISMATCH.
    const { change, verification } = await race(() => sendPassport('PUT', `/documents/${passportId}`, { country: 'FR' }), customerId);
    if (change.statusCode === 200) {
      expect(verification.verificationStatus).toBe('RESOLVE_ERRORS');
      expect(verification.errors).toEqual([expect.objectContaining({ resourceId: passportId, code: 'DATA_MISMATCH' })]);
    } else {
      expect(change.statusCode, change.body).toBe(409);
      expect(verification.verificationStatus).toBe('PENDING_MANUAL_REVIEW');
    }
  });

  it('a delete either lands before the review reads the document, or is refused', async () => {
    const { customerId, passportId } = await reviewableCustomer();
    const { change, verification } = await race(
      () => ctx.app.inject({ method: 'DELETE', url: `${BASE}/documents/${passportId}`, headers: { authorization: platform.auth } }),
      customerId,
    );
    if (change.statusCode === 204) {
      expect(verification.verificationStatus).toBe('RESOLVE_ERRORS');
      expect(verification.errors).toEqual([expect.objectContaining({ resourceId: customerId, type: 'MISSING_IDENTITY_DOCUMENT' })]);
    } else {
      expect(change.statusCode, change.body).toBe(409);
      expect(verification.verificationStatus).toBe('PENDING_MANUAL_REVIEW');
    }
  });
});
