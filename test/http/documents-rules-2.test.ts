/**
 * Documents at the edges of their documented numbers (documents/README.md, spec §8): the
 * longest document number and issuing authority, and an external screening provider's answer
 * at its bounds (64 KiB in all, 20 precheck errors of 100 characters). The numbers are written
 * out, not imported, so a changed bound fails rather than follows.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cardPhotoJpeg } from '../helpers/document-files.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { sendDocumentForm, textParts, type Part } from '../helpers/multipart.js';

type Body = Record<string, unknown>;
type FieldErrors = { field: string; constraint?: Record<string, unknown>; message?: string }[];

let seq = 0;
async function newCustomer(ctx: TestContext, platform: TestPlatform): Promise<string> {
  const response = await ctx.app.inject({
    method: 'POST',
    url: `${BASE}/customers`,
    headers: { authorization: platform.auth },
    payload: { customerType: 'INDIVIDUAL', platformCustomerId: `rules-2-${++seq}`, fullName: 'Jane Doe', birthDate: '1990-01-15', nationality: 'US' },
  });
  expect(response.statusCode, response.body).toBe(201);
  return (response.json() as Body).id as string;
}

async function storedRows(ctx: TestContext) {
  const count = async (table: 'documents' | 'document_files' | 'blobs') =>
    Number((await ctx.handle.db.selectFrom(table).select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n);
  return { documents: await count('documents'), files: await count('document_files'), blobs: await count('blobs') };
}

const photoPart = async (): Promise<Part> => ({ name: 'file', filename: 'passport.jpg', contentType: 'image/jpeg', data: await cardPhotoJpeg() });

describe('the free-text parts’ lengths', () => {
  let ctx: TestContext;
  let holder: string;
  beforeAll(async () => {
    ctx = await createTestContext();
    holder = await newCustomer(ctx, ctx.platform);
  });
  afterAll(() => ctx.close());

  const upload = async (fields: Record<string, string>) =>
    sendDocumentForm(ctx.app, ctx.platform, 'POST', '/documents', [
      ...textParts({ documentHolder: holder, documentType: 'PASSPORT', country: 'US', ...fields }),
      await photoPart(),
    ]);

  it('takes a document number of 64 characters and an issuing authority of 255, and refuses one more of either, storing nothing', async () => {
    const longest = await upload({ documentNumber: 'N'.repeat(64), issuingAuthority: 'A'.repeat(255) });
    expect(longest.statusCode, longest.body).toBe(201);
    expect(longest.json()).toMatchObject({ documentNumber: 'N'.repeat(64), issuingAuthority: 'A'.repeat(255) });

    const before = await storedRows(ctx);
    const errors = expectEnvelope(await upload({ documentNumber: 'N'.repeat(65), issuingAuthority: 'A'.repeat(256) }), 400, 'INVALID_INPUT').details!.errors as FieldErrors;
    expect(errors.map((e) => [e.field, e.constraint])).toEqual([
      ['documentNumber', { maxLength: 64 }],
      ['issuingAuthority', { maxLength: 255 }],
    ]);
    expect(await storedRows(ctx)).toEqual(before);
  });
});

describe("an external screening provider's answer at its bounds", () => {
  let provider: Server;
  /** The next answer's body. */
  let answer = '{"precheckErrors":[]}';
  let ctx: TestContext;
  let production: TestPlatform;
  let holder: string;

  beforeAll(async () => {
    provider = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(answer);
      });
    });
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
    const { port } = provider.address() as AddressInfo;
    ctx = await createTestContext({ env: { CORRIDOR_SCREENING_URL: `http://127.0.0.1:${port}/screen` } });
    production = await ctx.newPlatform('production');
    holder = await newCustomer(ctx, production);
  });
  afterAll(async () => {
    await ctx.close();
    provider.closeAllConnections();
    await new Promise((resolve) => provider.close(resolve));
  });

  const upload = async () =>
    sendDocumentForm(ctx.app, production, 'POST', '/documents', [...textParts({ documentHolder: holder, documentType: 'PASSPORT', country: 'US' }), await photoPart()]);

  /** A contract-following answer padded with an ignored field to exactly `bytes` bytes. */
  function paddedAnswer(errors: string[], bytes: number): string {
    const bare = JSON.stringify({ precheckErrors: errors, padding: '' });
    const padded = JSON.stringify({ precheckErrors: errors, padding: 'p'.repeat(bytes - Buffer.byteLength(bare)) });
    expect(Buffer.byteLength(padded)).toBe(bytes);
    return padded;
  }

  it('is read whole up to 64 KiB; one byte more is 503 and stores nothing', async () => {
    answer = paddedAnswer(['glare'], 64 * 1024);
    expect(expectEnvelope(await upload(), 422, 'DOCUMENT_REJECTED')).toMatchObject({ precheckErrors: ['glare'] });

    answer = paddedAnswer(['glare'], 64 * 1024 + 1);
    const before = await storedRows(ctx);
    expect(expectEnvelope(await upload(), 503, 'SERVICE_UNAVAILABLE').message).toContain('the answer is larger than 65536 bytes');
    expect(await storedRows(ctx)).toEqual(before);
  });

  it('passes 20 precheck errors of up to 100 characters through verbatim', async () => {
    const errors = Array.from({ length: 20 }, (_, i) => `${String(i).padStart(2, '0')}${'e'.repeat(98)}`);
    expect(errors.every((e) => e.length === 100)).toBe(true);
    answer = JSON.stringify({ precheckErrors: errors });
    const before = await storedRows(ctx);
    expect(expectEnvelope(await upload(), 422, 'DOCUMENT_REJECTED')).toMatchObject({ precheckErrors: errors });
    expect(await storedRows(ctx)).toEqual(before);
  });
});
