import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_DOCUMENT_BYTES } from '../../src/modules/documents/schemas.js';
import { DatabaseBlobStore } from '../../src/platform/blob-store.js';
import {
  blurredJpeg,
  bytesOfSize,
  cardPhotoJpeg,
  cardPhotoPng,
  corruptPdf,
  glareJpeg,
  grayscaleJpeg,
  heicImage,
  screenCapturePng,
  tiffImage,
  tinyJpeg,
  truncatedJpeg,
  validPdf,
  webpImage,
} from '../helpers/document-files.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { sendDocumentForm, textParts, type Part } from '../helpers/multipart.js';

let ctx: TestContext;
let p: TestPlatform;
let customerId: string;
let uploadRoot: string;
beforeAll(async () => {
  // A private spool root, so the leftover check sees only this file's uploads.
  uploadRoot = await mkdtemp(join(tmpdir(), 'documents-test-'));
  ctx = await createTestContext({ env: { CORRIDOR_UPLOAD_DIR: uploadRoot } });
  p = ctx.platform;
  customerId = await newCustomer(p);
});
afterAll(async () => {
  await ctx.close();
  await rm(uploadRoot, { recursive: true, force: true });
});

type Body = Record<string, unknown>;
type FieldErrors = { field: string; constraint?: Record<string, unknown>; message?: string }[];

let seq = 0;
async function newCustomer(pl: TestPlatform): Promise<string> {
  const response = await ctx.app.inject({
    method: 'POST',
    url: `${BASE}/customers`,
    headers: { authorization: pl.auth },
    payload: { customerType: 'INDIVIDUAL', platformCustomerId: `doc-${++seq}`, fullName: 'Jane Doe', birthDate: '1990-01-15', nationality: 'US' },
  });
  expect(response.statusCode, response.body).toBe(201);
  return (response.json() as Body).id as string;
}

const filePart = (data: Buffer, contentType: string | undefined, filename = 'passport.jpg'): Part => ({
  name: 'file',
  filename,
  data,
  ...(contentType === undefined ? {} : { contentType }),
});

async function upload(fields: Record<string, string | undefined>, file?: Part, pl: TestPlatform = p) {
  return sendDocumentForm(ctx.app, pl, 'POST', '/documents', [...textParts(fields), ...(file ? [file] : [])]);
}

async function uploadPassport(holder = customerId, data?: Buffer, extra: Record<string, string> = {}) {
  const response = await upload({ documentHolder: holder, documentType: 'PASSPORT', country: 'US', ...extra }, filePart(data ?? (await cardPhotoJpeg()), 'image/jpeg'));
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Body;
}

const get = (path: string, pl: TestPlatform = p) => ctx.app.inject({ method: 'GET', url: `${BASE}${path}`, headers: { authorization: pl.auth } });
const del = (path: string, pl: TestPlatform = p) => ctx.app.inject({ method: 'DELETE', url: `${BASE}${path}`, headers: { authorization: pl.auth } });

/** Row counts of everything an upload writes: a rejected request must leave them all unchanged. */
async function stored() {
  const count = async (table: 'documents' | 'document_files' | 'blobs' | 'blob_chunks') =>
    Number((await ctx.handle.db.selectFrom(table).select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n);
  return { documents: await count('documents'), files: await count('document_files'), blobs: await count('blobs'), chunks: await count('blob_chunks') };
}

async function filesOf(documentId: string) {
  return ctx.handle.db
    .selectFrom('document_files')
    .selectAll()
    .where('document_id', '=', documentId.slice('Document:'.length))
    .orderBy('id')
    .execute();
}

async function storedBytes(sha256: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of new DatabaseBlobStore(() => new Date()).read(ctx.handle.db, sha256)) chunks.push(chunk);
  return Buffer.concat(chunks);
}

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

describe('POST /documents', () => {
  it('stores a screened file and answers the spec Document', async () => {
    const data = await cardPhotoJpeg();
    const response = await upload(
      { documentHolder: customerId, documentType: 'PASSPORT', country: 'US', documentNumber: 'P1234567', issuingAuthority: 'U.S. Department of State' },
      filePart(data, 'image/jpeg', 'my passport.jpg'),
    );
    expect(response.statusCode, response.body).toBe(201);
    const document = response.json() as Body;
    expect(Object.keys(document).sort()).toEqual(
      ['country', 'createdAt', 'documentHolder', 'documentNumber', 'documentType', 'fileName', 'id', 'issuingAuthority', 'updatedAt'].sort(),
    );
    expect(document).toMatchObject({
      documentHolder: customerId,
      documentType: 'PASSPORT',
      country: 'US',
      documentNumber: 'P1234567',
      issuingAuthority: 'U.S. Department of State',
      fileName: 'my passport.jpg',
    });
    expect(document.id).toMatch(/^Document:[0-9a-f-]{36}$/);
    expect(document.createdAt).toBe(ctx.clock.now().toISOString());

    const [file, ...others] = await filesOf(document.id as string);
    expect(others).toEqual([]);
    expect(file).toMatchObject({ active: true, content_type: 'image/jpeg', sha256: sha256(data), size_bytes: BigInt(data.length), deactivated_at: null });
    expect((await storedBytes(file!.sha256)).equals(data)).toBe(true);

    expect((await get(`/documents/${String(document.id)}`)).json()).toEqual(document);
  });

  it('judges the type by the part Content-Type, never by the file name', async () => {
    const response = await upload({ documentHolder: customerId, documentType: 'PASSPORT', country: 'US' }, filePart(await cardPhotoPng(), 'image/png', 'scan.heic'));
    expect(response.statusCode, response.body).toBe(201);
    expect((response.json() as Body).fileName).toBe('scan.heic');

    const pdf = await upload({ documentHolder: customerId, documentType: 'UTILITY_BILL', country: 'US' }, filePart(await validPdf(), 'application/pdf', 'bill.jpg'));
    expect(pdf.statusCode, pdf.body).toBe(201);
  });

  it('accepts a beneficial owner as the holder', async () => {
    const business = await ctx.app.inject({
      method: 'POST',
      url: `${BASE}/customers`,
      headers: { authorization: p.auth },
      payload: { customerType: 'BUSINESS', platformCustomerId: `doc-b-${++seq}`, businessInfo: { legalName: 'Acme LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789' } },
    });
    expect(business.statusCode, business.body).toBe(201);
    const owner = await ctx.app.inject({
      method: 'POST',
      url: `${BASE}/beneficial-owners`,
      headers: { authorization: p.auth },
      payload: {
        customerId: (business.json() as Body).id,
        roles: ['UBO'],
        ownershipPercentage: 50,
        personalInfo: {
          firstName: 'Ann',
          lastName: 'Owner',
          birthDate: '1980-02-02',
          nationality: 'NO',
          address: { line1: 'Gate 1', postalCode: '0150', country: 'NO' },
          idType: 'NON_US_TAX_ID',
          identifier: '02028012345',
        },
      },
    });
    expect(owner.statusCode, owner.body).toBe(201);
    const ownerId = (owner.json() as Body).id as string;
    const document = await uploadPassport(ownerId);
    expect(document.documentHolder).toBe(ownerId);
    const list = (await get(`/documents?documentHolder=${ownerId}`)).json() as { data: Body[]; totalCount: number };
    expect(list.data.map((d) => d.id)).toEqual([document.id]);
    expect(list.totalCount).toBe(1);
  });

  it('answers 404 for a holder that is not one of the platform’s, and stores nothing', async () => {
    const other = await ctx.newPlatform();
    const foreignCustomer = await newCustomer(other);
    const before = await stored();
    expectEnvelope(
      await upload({ documentHolder: foreignCustomer, documentType: 'PASSPORT', country: 'US' }, filePart(await cardPhotoJpeg(), 'image/jpeg')),
      404,
      'USER_NOT_FOUND',
    );
    expectEnvelope(
      await upload(
        { documentHolder: 'BeneficialOwner:019542f5-b3e7-7d02-8000-000000000001', documentType: 'PASSPORT', country: 'US' },
        filePart(await cardPhotoJpeg(), 'image/jpeg'),
      ),
      404,
      'REFERENCE_NOT_FOUND',
    );
    // The holder is checked before any screening: a file screening would refuse is still 404.
    expectEnvelope(
      await upload({ documentHolder: foreignCustomer, documentType: 'PASSPORT', country: 'US' }, filePart(await cardPhotoJpeg(), 'image/jpeg', 'passport.precheck-glare.jpg')),
      404,
      'USER_NOT_FOUND',
    );
    expect(await stored()).toEqual(before);
  });

  it("answers 410 CUSTOMER_DELETED for an owner's upload once the business is deleted, storing nothing", async () => {
    const inject = (method: 'POST' | 'DELETE', path: string, payload?: Body) =>
      ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload ? { payload } : {}) });
    const biz = await inject('POST', '/customers', {
      customerType: 'BUSINESS',
      businessInfo: { legalName: 'Gone LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789' },
    });
    expect(biz.statusCode, biz.body).toBe(201);
    const bizId = (biz.json() as Body).id as string;
    const owner = await inject('POST', '/beneficial-owners', {
      customerId: bizId,
      roles: ['UBO'],
      ownershipPercentage: 50,
      personalInfo: {
        firstName: 'Maria',
        lastName: 'Garcia',
        birthDate: '1980-05-20',
        nationality: 'MX',
        address: { line1: 'Av. Reforma 1', city: 'CDMX', postalCode: '06600', country: 'MX' },
        idType: 'NON_US_TAX_ID',
        identifier: 'GAMM800520XX1',
      },
    });
    expect(owner.statusCode, owner.body).toBe(201);
    const ownerId = (owner.json() as Body).id as string;
    const kept = await uploadPassport(ownerId);
    expect((await inject('DELETE', `/customers/${bizId}`)).statusCode).toBe(200);

    const before = await stored();
    expectEnvelope(await upload({ documentHolder: ownerId, documentType: 'PASSPORT', country: 'US' }, filePart(await cardPhotoJpeg(), 'image/jpeg')), 410, 'CUSTOMER_DELETED');
    expect(await stored()).toEqual(before);
    // What was uploaded before stays readable.
    expect((await get(`/documents/${String(kept.id)}`)).statusCode).toBe(200);
  });

  it('keeps both documents when the same holder uploads the same type twice', async () => {
    const holder = await newCustomer(p);
    const first = await uploadPassport(holder);
    const second = await uploadPassport(holder, await cardPhotoPng().then(() => cardPhotoJpeg()));
    const list = (await get(`/documents?documentHolder=${holder}`)).json() as { data: Body[] };
    expect(list.data.map((d) => d.id)).toEqual([second.id, first.id]);
    for (const document of [first, second]) {
      expect((await filesOf(document.id as string)).filter((f) => f.active)).toHaveLength(1);
    }
  });
});

describe('upload validation', () => {
  const ENUM = ['application/pdf', 'image/jpeg', 'image/png'];

  it.each([
    ['image/heic', heicImage],
    ['image/webp', webpImage],
    ['image/tiff', tiffImage],
    ['text/plain', async () => Buffer.from('hello')],
    ['image/gif', cardPhotoJpeg],
  ])('rejects a %s part with a FieldError carrying constraint.enum', async (contentType, data) => {
    const before = await stored();
    const response = await upload({ documentHolder: customerId, documentType: 'PASSPORT', country: 'US' }, filePart(await data(), contentType, 'passport.jpg'));
    const body = expectEnvelope(response, 400, 'INVALID_INPUT');
    const errors = body.details!.errors as FieldErrors;
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ field: 'file', constraint: { enum: ENUM } });
    expect(errors[0]!.message).toContain(contentType);
    expect(await stored()).toEqual(before);
  });

  it('rejects a file part without a Content-Type, even with a .jpg name', async () => {
    const response = await upload({ documentHolder: customerId, documentType: 'PASSPORT', country: 'US' }, filePart(await cardPhotoJpeg(), undefined, 'passport.jpg'));
    const errors = expectEnvelope(response, 400, 'INVALID_INPUT').details!.errors as FieldErrors;
    expect(errors).toEqual([expect.objectContaining({ field: 'file', constraint: { enum: ENUM } })]);
  });

  it('accepts exactly 10 MiB and rejects one byte more with 400, storing nothing', async () => {
    const before = await stored();
    const over = await upload(
      { documentHolder: customerId, documentType: 'PASSPORT', country: 'US' },
      filePart(bytesOfSize(MAX_DOCUMENT_BYTES + 1, 'image/jpeg'), 'image/jpeg'),
    );
    const errors = expectEnvelope(over, 400, 'INVALID_INPUT').details!.errors as FieldErrors;
    expect(errors).toEqual([{ field: 'file', message: 'must be at most 10485760 bytes (10 MiB)' }]);
    expect(await stored()).toEqual(before);

    // At the limit the size is fine; the (meaningless) bytes then fail screening instead.
    const at = await upload({ documentHolder: customerId, documentType: 'PASSPORT', country: 'US' }, filePart(bytesOfSize(MAX_DOCUMENT_BYTES, 'image/jpeg'), 'image/jpeg'));
    expect(expectEnvelope(at, 422, 'DOCUMENT_REJECTED')).toMatchObject({ precheckErrors: ['dataNotReadable'] });
    expect(await stored()).toEqual(before);
  });

  it('reports every missing part in one response', async () => {
    const response = await upload({});
    const errors = expectEnvelope(response, 400, 'INVALID_INPUT').details!.errors as FieldErrors;
    expect(errors.map((e) => e.field).sort()).toEqual(['country', 'documentHolder', 'documentType', 'file']);
  });

  it('reports every bad value, an oversized file and unknown parts in one response', async () => {
    const response = await upload(
      { documentHolder: 'Customer:nope', documentType: 'VISA', country: 'XX', side: 'TOP', colour: 'red' },
      filePart(bytesOfSize(MAX_DOCUMENT_BYTES + 1), 'image/webp'),
    );
    const errors = expectEnvelope(response, 400, 'INVALID_INPUT').details!.errors as FieldErrors;
    const byField = Object.fromEntries(errors.map((e) => [e.field, e]));
    expect(Object.keys(byField).sort()).toEqual(['colour', 'country', 'documentHolder', 'documentType', 'file', 'side']);
    expect(byField.documentType!.constraint).toMatchObject({ enum: expect.arrayContaining(['PASSPORT', 'SELFIE', 'OTHER']) });
    expect(byField.country!.constraint).toEqual({ format: 'iso3166-1-alpha-2' });
    expect(byField.side!.constraint).toEqual({ enum: ['FRONT', 'BACK'] });
    expect(byField.file!.constraint).toEqual({ enum: ENUM });
    expect(byField.file!.message).toContain('at most 10485760 bytes');
  });

  it('refuses a blank issuing authority and control characters in the document number, storing nothing', async () => {
    const before = await stored();
    const response = await upload(
      { documentHolder: customerId, documentType: 'PASSPORT', country: 'US', documentNumber: 'X1\u001b[2J', issuingAuthority: ' \u200b' },
      filePart(await cardPhotoJpeg(), 'image/jpeg'),
    );
    expect(expectEnvelope(response, 400, 'INVALID_INPUT').details!.errors).toEqual([
      { field: 'documentNumber', message: 'must not contain control characters (U+0000–U+001F, U+007F–U+009F)' },
      { field: 'issuingAuthority', message: 'must not be blank' },
    ]);
    expect(await stored()).toEqual(before);
  });

  it('takes at most 10 text parts of at most 1 KiB each, and one file part, named file; storing nothing otherwise', async () => {
    const before = await stored();
    const base = { documentHolder: customerId, documentType: 'PASSPORT', country: 'US' };
    const photo = filePart(await cardPhotoJpeg(), 'image/jpeg');
    const extras = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`extra${i}`, 'x']));
    expect(expectEnvelope(await upload({ ...base, ...extras }, photo), 400, 'INVALID_INPUT').details!.errors).toEqual([
      { field: 'body', message: 'at most 10 text parts may be sent' },
    ]);
    expect(expectEnvelope(await upload({ ...base, issuingAuthority: 'a'.repeat(1025) }, photo), 400, 'INVALID_INPUT').details!.errors).toEqual([
      { field: 'issuingAuthority', message: 'must be at most 1024 bytes' },
    ]);
    const twoFiles = await sendDocumentForm(ctx.app, p, 'POST', '/documents', [...textParts(base), photo, filePart(await cardPhotoJpeg(), 'image/jpeg', 'second.jpg')]);
    expect(expectEnvelope(twoFiles, 400, 'INVALID_INPUT').details!.errors).toEqual([{ field: 'file', message: 'at most 1 file part(s) may be sent' }]);
    // A file under another part's name is named as unknown, beside the missing file part.
    const misnamed = await sendDocumentForm(ctx.app, p, 'POST', '/documents', [...textParts(base), { ...photo, name: 'photo' }]);
    expect(expectEnvelope(misnamed, 400, 'INVALID_INPUT').details!.errors).toEqual([
      { field: 'file', message: 'is required' },
      { field: 'photo', message: 'is not a known part; the file goes in the part named file' },
    ]);
    expect(await stored()).toEqual(before);
  });

  it('reports a file sent as a text part', async () => {
    const response = await upload({ documentHolder: customerId, documentType: 'PASSPORT', country: 'US', file: 'not a file' });
    const errors = expectEnvelope(response, 400, 'INVALID_INPUT').details!.errors as FieldErrors;
    expect(errors).toEqual([{ field: 'file', message: 'must be a file part (with a filename), not a text part' }]);
  });

  it.each([
    ['JSON', { 'content-type': 'application/json' }, JSON.stringify({ documentHolder: 'x' })],
    ['text', { 'content-type': 'text/plain' }, 'hello'],
    ['form-urlencoded', { 'content-type': 'application/x-www-form-urlencoded' }, 'a=b'],
    ['no body', {}, undefined],
    ['multipart without a boundary', { 'content-type': 'multipart/form-data' }, 'garbage'],
    ['broken multipart', { 'content-type': 'multipart/form-data; boundary=xyz' }, '--xyz\r\nContent-Disposition: form-data; name="a"\r\n\r\nunterminated'],
  ])('answers 400 INVALID_INPUT to a %s body', async (_name, headers, payload) => {
    const before = await stored();
    const response = await ctx.app.inject({
      method: 'POST',
      url: `${BASE}/documents`,
      headers: { ...headers, authorization: p.auth },
      ...(payload === undefined ? {} : { payload }),
    });
    expectEnvelope(response, 400, 'INVALID_INPUT');
    expect(await stored()).toEqual(before);
  });

  it('leaves no spooled file behind', async () => {
    const dirs = (await readdir(ctx.config.uploadDir)).filter((d) => d.startsWith('corridor-uploads-'));
    for (const dir of dirs) {
      const path = `${ctx.config.uploadDir}/${dir}`;
      const leftovers = await readdir(path).catch(() => []);
      expect(leftovers, path).toEqual([]);
    }
  });
});

describe('screening', () => {
  // The quality checks are judged as production platforms see them; sandbox passes any file that decodes (below).
  let production: TestPlatform;
  let productionHolder: string;
  beforeAll(async () => {
    production = await ctx.newPlatform('production');
    productionHolder = await newCustomer(production);
  });

  it.each([
    ['a desaturated photo', grayscaleJpeg, 'image/jpeg', ['grayscale']],
    ['a heavily blurred photo', blurredJpeg, 'image/jpeg', ['dataNotReadable']],
    ['a photo too small to read', tinyJpeg, 'image/jpeg', ['dataNotReadable']],
    ['a truncated JPEG', truncatedJpeg, 'image/jpeg', ['dataNotReadable']],
    ['PNG bytes sent as image/jpeg', cardPhotoPng, 'image/jpeg', ['dataNotReadable']],
    ['a flat, screen-sized UI capture', screenCapturePng, 'image/png', ['screenshot']],
    ['a photo with blown-out glare', glareJpeg, 'image/jpeg', ['glare']],
    ['a corrupt PDF', corruptPdf, 'application/pdf', ['dataNotReadable']],
    ['a JPEG sent as application/pdf', cardPhotoJpeg, 'application/pdf', ['dataNotReadable']],
  ] as const)('rejects %s with 422 DOCUMENT_REJECTED and stores nothing', async (_name, data, contentType, precheckErrors) => {
    const before = await stored();
    const response = await upload({ documentHolder: productionHolder, documentType: 'PASSPORT', country: 'US' }, filePart(await data(), contentType), production);
    const body = expectEnvelope(response, 422, 'DOCUMENT_REJECTED') as Body;
    expect(body.precheckErrors).toEqual(precheckErrors);
    expect(Object.keys(body).sort()).toEqual(['code', 'message', 'precheckErrors', 'status']);
    expect(await stored()).toEqual(before);
  });

  it('accepts in sandbox, without a trigger, any file that is what its content type says, whatever its quality', async () => {
    for (const data of [grayscaleJpeg, blurredJpeg, tinyJpeg, glareJpeg]) {
      const response = await upload({ documentHolder: customerId, documentType: 'PASSPORT', country: 'US' }, filePart(await data(), 'image/jpeg'));
      expect(response.statusCode, response.body).toBe(201);
    }
    expect((await upload({ documentHolder: customerId, documentType: 'PASSPORT', country: 'US' }, filePart(await screenCapturePng(), 'image/png'))).statusCode).toBe(201);
    for (const [data, contentType] of [[truncatedJpeg, 'image/jpeg'], [cardPhotoPng, 'image/jpeg'], [corruptPdf, 'application/pdf'], [cardPhotoJpeg, 'application/pdf']] as const) {
      const before = await stored();
      const refused = await upload({ documentHolder: customerId, documentType: 'PASSPORT', country: 'US' }, filePart(await data(), contentType));
      expect(expectEnvelope(refused, 422, 'DOCUMENT_REJECTED')).toMatchObject({ precheckErrors: ['dataNotReadable'] });
      expect(await stored()).toEqual(before);
    }
  });

  it('lets sandbox platforms force any precheck error from the file name', async () => {
    const before = await stored();
    const forced = await upload(
      { documentHolder: customerId, documentType: 'PASSPORT', country: 'US' },
      filePart(await cardPhotoJpeg(), 'image/jpeg', 'passport.precheck-glare.precheck-documentExpired.jpg'),
    );
    expect(expectEnvelope(forced, 422, 'DOCUMENT_REJECTED')).toMatchObject({ precheckErrors: ['documentExpired', 'glare'] });
    expect(await stored()).toEqual(before);
  });

  it('ignores the triggers on production platforms', async () => {
    const production = await ctx.newPlatform('production');
    const holder = await newCustomer(production);
    const response = await upload(
      { documentHolder: holder, documentType: 'PASSPORT', country: 'US' },
      filePart(await cardPhotoJpeg(), 'image/jpeg', 'passport.precheck-documentExpired.jpg'),
      production,
    );
    expect(response.statusCode, response.body).toBe(201);
  });
});

describe('GET /documents', () => {
  it('pages newest first with a cursor and counts the matches', async () => {
    const holder = await newCustomer(p);
    const ids: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      ctx.clock.advance(1000);
      ids.push((await uploadPassport(holder)).id);
    }
    const first = (await get(`/documents?documentHolder=${holder}&limit=2`)).json() as { data: Body[]; hasMore: boolean; nextCursor: string; totalCount: number };
    expect(first.data.map((d) => d.id)).toEqual([ids[2], ids[1]]);
    expect(first).toMatchObject({ hasMore: true, totalCount: 3 });
    const second = (await get(`/documents?documentHolder=${holder}&limit=2&cursor=${first.nextCursor}`)).json() as { data: Body[]; hasMore: boolean };
    expect(second.data.map((d) => d.id)).toEqual([ids[0]]);
    expect(second.hasMore).toBe(false);
  });

  it('counts all of the platform’s documents as they are uploaded and deleted', async () => {
    const total = async () => ((await get('/documents?limit=1')).json() as { totalCount: number }).totalCount;
    const before = await total();
    const document = await uploadPassport(await newCustomer(p));
    expect(await total()).toBe(before + 1);
    expect((await del(`/documents/${String(document.id)}`)).statusCode).toBe(204);
    expect(await total()).toBe(before);
  });

  it('filters by the holder as named, type and uuid: another type with the same uuid holds nothing', async () => {
    const holder = await newCustomer(p);
    const document = await uploadPassport(holder);
    const uuid = holder.slice('Customer:'.length);
    const byCustomer = (await get(`/documents?documentHolder=Customer:${uuid.toUpperCase()}`)).json() as { data: Body[]; totalCount: number };
    expect(byCustomer.data.map((d) => d.id)).toEqual([document.id]);
    expect(byCustomer.totalCount).toBe(1);
    const byOwner = await get(`/documents?documentHolder=BeneficialOwner:${uuid}`);
    expect(byOwner.statusCode).toBe(200);
    expect(byOwner.json()).toEqual({ data: [], hasMore: false, totalCount: 0 });
  });

  it('lists only the platform’s own documents', async () => {
    const other = await ctx.newPlatform();
    const list = (await get('/documents', other)).json() as { data: Body[]; totalCount: number };
    expect(list).toMatchObject({ data: [], totalCount: 0, hasMore: false });
  });

  it('validates the filter and answers 404 for unknown or foreign documents', async () => {
    expectEnvelope(await get('/documents?documentHolder=Quote:019542f5-b3e7-7d02-8000-000000000001'), 400, 'INVALID_INPUT');
    expectEnvelope(await get('/documents/Document:019542f5-b3e7-7d02-8000-000000000001'), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await get('/documents/nope'), 404, 'REFERENCE_NOT_FOUND');
    const mine = await uploadPassport();
    const other = await ctx.newPlatform();
    expectEnvelope(await get(`/documents/${String(mine.id)}`, other), 404, 'REFERENCE_NOT_FOUND');
  });
});

describe('PUT /documents/{documentId}', () => {
  const put = (documentId: unknown, fields: Record<string, string | undefined>, file?: Part, pl: TestPlatform = p) =>
    sendDocumentForm(ctx.app, pl, 'PUT', `/documents/${String(documentId)}`, [...textParts(fields), ...(file ? [file] : [])]);

  it('deactivates the previous file, keeps it, and applies the new file and metadata', async () => {
    const original = await uploadPassport(customerId, await cardPhotoJpeg(), { documentNumber: 'OLD-1', issuingAuthority: 'Old office' });
    const [oldFile] = await filesOf(original.id as string);
    ctx.clock.advance(60_000);
    const replacement = await cardPhotoPng();
    const response = await put(original.id, { documentType: 'NATIONAL_ID', country: 'CA', side: 'FRONT' }, filePart(replacement, 'image/png', 'id-front.png'));
    expect(response.statusCode, response.body).toBe(200);
    const replaced = response.json() as Body;
    expect(replaced).toEqual({
      id: original.id,
      documentHolder: customerId,
      documentType: 'NATIONAL_ID',
      side: 'FRONT',
      country: 'CA',
      fileName: 'id-front.png',
      createdAt: original.createdAt,
      updatedAt: ctx.clock.now().toISOString(),
    });
    const files = await filesOf(original.id as string);
    expect(files).toHaveLength(2);
    expect(files[0]).toMatchObject({
      id: oldFile!.id,
      active: false,
      sha256: oldFile!.sha256,
      size_bytes: oldFile!.size_bytes,
      content_type: 'image/jpeg',
      created_at: oldFile!.created_at,
      deactivated_at: ctx.clock.now(),
    });
    expect(files[1]).toMatchObject({ active: true, content_type: 'image/png', sha256: sha256(replacement), file_name: 'id-front.png' });
    expect((await storedBytes(oldFile!.sha256)).length).toBe(Number(oldFile!.size_bytes));
    expect((await get(`/documents/${String(original.id)}`)).json()).toEqual(replaced);
  });

  it('keeps the previous file and metadata when the new file is rejected', async () => {
    const original = await uploadPassport(customerId, await cardPhotoJpeg(), { documentNumber: 'KEEP-1' });
    const filesBefore = await filesOf(original.id as string);
    const before = await stored();
    ctx.clock.advance(1000);
    const response = await put(original.id, { documentType: 'DRIVERS_LICENSE', country: 'GB' }, filePart(await grayscaleJpeg(), 'image/jpeg', 'licence.precheck-grayscale.jpg'));
    expect(expectEnvelope(response, 422, 'DOCUMENT_REJECTED')).toMatchObject({ precheckErrors: ['grayscale'] });
    expect((await get(`/documents/${String(original.id)}`)).json()).toEqual(original);
    expect(await filesOf(original.id as string)).toEqual(filesBefore);
    expect(await stored()).toEqual(before);
  });

  it('validates like an upload, without documentHolder, and 404s an unknown document', async () => {
    const original = await uploadPassport();
    const invalid = await put(original.id, { documentHolder: customerId, country: 'US' }, filePart(await cardPhotoJpeg(), 'image/heic'));
    const errors = expectEnvelope(invalid, 400, 'INVALID_INPUT').details!.errors as FieldErrors;
    expect(errors.map((e) => e.field).sort()).toEqual(['documentHolder', 'documentType', 'file']);

    const unknown = await put('Document:019542f5-b3e7-7d02-8000-000000000009', { documentType: 'PASSPORT', country: 'US' }, filePart(await cardPhotoJpeg(), 'image/jpeg'));
    expectEnvelope(unknown, 404, 'REFERENCE_NOT_FOUND');
    // The path's document is looked up before the form: an unknown one is 404 however bad the form.
    const unknownAndInvalid = await put('Document:019542f5-b3e7-7d02-8000-000000000009', { country: 'us' }, filePart(await cardPhotoJpeg(), 'image/heic'));
    expectEnvelope(unknownAndInvalid, 404, 'REFERENCE_NOT_FOUND');
    const other = await ctx.newPlatform();
    const foreign = await put(original.id, { documentType: 'PASSPORT', country: 'US' }, filePart(await cardPhotoJpeg(), 'image/jpeg'), other);
    expectEnvelope(foreign, 404, 'REFERENCE_NOT_FOUND');
  });

  it('keeps exactly one active file under concurrent replaces', async () => {
    const original = await uploadPassport();
    const responses = await Promise.all([
      put(original.id, { documentType: 'PASSPORT', country: 'US' }, filePart(await cardPhotoJpeg(), 'image/jpeg', 'a.jpg')),
      put(original.id, { documentType: 'PASSPORT', country: 'US' }, filePart(await cardPhotoPng(), 'image/png', 'b.png')),
    ]);
    expect(responses.map((r) => r.statusCode)).toEqual([200, 200]);
    const files = await filesOf(original.id as string);
    expect(files).toHaveLength(3);
    const active = files.filter((f) => f.active);
    expect(active).toHaveLength(1);
    expect((await get(`/documents/${String(original.id)}`)).json()).toMatchObject({ fileName: active[0]!.file_name });
  });
});

describe('DELETE /documents/{documentId}', () => {
  it('deletes the document and its files, and the bytes no other document uses', async () => {
    const shared = await cardPhotoJpeg();
    const keep = await uploadPassport(customerId, shared);
    const gone = await uploadPassport(customerId, shared);
    const response = await del(`/documents/${String(gone.id)}`);
    expect(response.statusCode, response.body).toBe(204);
    expect(response.body).toBe('');
    expectEnvelope(await get(`/documents/${String(gone.id)}`), 404, 'REFERENCE_NOT_FOUND');
    expect(await filesOf(gone.id as string)).toEqual([]);
    expect((await storedBytes(sha256(shared))).equals(shared)).toBe(true);

    const unique = await uploadPassport(customerId, await cardPhotoPng().then(async (png) => (await import('sharp')).default(png).jpeg({ quality: 77 }).toBuffer()));
    const [file] = await filesOf(unique.id as string);
    expect((await del(`/documents/${String(unique.id)}`)).statusCode).toBe(204);
    const blob = await ctx.handle.db.selectFrom('blobs').select('sha256').where('sha256', '=', file!.sha256).executeTakeFirst();
    expect(blob).toBeUndefined();
    expect((await get(`/documents/${String(keep.id)}`)).statusCode).toBe(200);
  });

  it("deletes a deleted customer's document that no review read", async () => {
    const holder = await newCustomer(p);
    const document = await uploadPassport(holder);
    expect((await del(`/customers/${holder}`)).statusCode).toBe(200);
    expect((await del(`/documents/${String(document.id)}`)).statusCode).toBe(204);
    expectEnvelope(await get(`/documents/${String(document.id)}`), 404, 'REFERENCE_NOT_FOUND');
  });

  it('answers 404 for unknown and foreign documents', async () => {
    expectEnvelope(await del('/documents/Document:019542f5-b3e7-7d02-8000-000000000001'), 404, 'REFERENCE_NOT_FOUND');
    const mine = await uploadPassport();
    expectEnvelope(await del(`/documents/${String(mine.id)}`, await ctx.newPlatform()), 404, 'REFERENCE_NOT_FOUND');
    expect((await get(`/documents/${String(mine.id)}`)).statusCode).toBe(200);
  });
});

describe('documents and verifications', () => {
  async function reviewablePlatform() {
    const platform = await ctx.newPlatform();
    const settings = await ctx.app.inject({
      method: 'PATCH',
      url: `${BASE}/customers/settings`,
      headers: { authorization: platform.auth },
      payload: { sandboxAutoApprove: false },
    });
    expect(settings.statusCode).toBe(200);
    const created = await ctx.app.inject({
      method: 'POST',
      url: `${BASE}/customers`,
      headers: { authorization: platform.auth },
      payload: {
        customerType: 'INDIVIDUAL',
        platformCustomerId: `rev-${++seq}`,
        fullName: 'Jane Doe',
        birthDate: '1990-01-15',
        nationality: 'US',
        address: { line1: '1 Main St', postalCode: '62701', country: 'US' },
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    return { platform, holder: (created.json() as Body).id as string };
  }

  const verify = async (platform: TestPlatform, customer: string) => {
    const response = await ctx.app.inject({ method: 'POST', url: `${BASE}/verifications`, headers: { authorization: platform.auth }, payload: { customerId: customer } });
    expect(response.statusCode, response.body).toBe(200);
    return response.json() as { id: string; verificationStatus: string; errors: Body[] };
  };

  it('refuses to delete a document once a verification has read it: while in progress and after the verdict', async () => {
    const { platform, holder } = await reviewablePlatform();
    const passport = await upload({ documentHolder: holder, documentType: 'PASSPORT', country: 'US' }, filePart(await cardPhotoJpeg(), 'image/jpeg'), platform);
    expect(passport.statusCode, passport.body).toBe(201);
    const documentId = (passport.json() as Body).id as string;
    expect((await verify(platform, holder)).verificationStatus).toBe('IN_PROGRESS');

    expectEnvelope(await del(`/documents/${documentId}`, platform), 409, 'CONFLICT');
    expect((await get(`/documents/${documentId}`, platform)).statusCode).toBe(200);

    await ctx.jobs.runDue();
    const afterVerdict = await del(`/documents/${documentId}`, platform);
    expectEnvelope(afterVerdict, 409, 'CONFLICT');
    expect((afterVerdict.json() as { details?: { reason?: string } }).details?.reason).toBe('SUBMITTED_FOR_VERIFICATION');
    expect((await get(`/documents/${documentId}`, platform)).statusCode).toBe(200);
  });

  it('keeps a verification’s document errors after a replace, until a new review', async () => {
    const { platform, holder } = await reviewablePlatform();
    const uploaded = await upload({ documentHolder: holder, documentType: 'PASSPORT', country: 'CA' }, filePart(await cardPhotoJpeg(), 'image/jpeg'), platform);
    const documentId = (uploaded.json() as Body).id as string;
    const first = await verify(platform, holder);
    expect(first.verificationStatus).toBe('IN_PROGRESS');
    await ctx.jobs.runDue();
    const judged = (await get(`/verifications/${first.id}`, platform)).json() as { verificationStatus: string; errors: Body[] };
    expect(judged.verificationStatus).toBe('RESOLVE_ERRORS');
    expect(judged.errors).toEqual([expect.objectContaining({ resourceId: documentId, code: 'DATA_MISMATCH' })]);

    const replaced = await sendDocumentForm(ctx.app, platform, 'PUT', `/documents/${documentId}`, [
      ...textParts({ documentType: 'PASSPORT', country: 'US' }),
      filePart(await cardPhotoJpeg(), 'image/jpeg'),
    ]);
    expect(replaced.statusCode, replaced.body).toBe(200);
    expect((await get(`/verifications/${first.id}`, platform)).json()).toEqual(judged);

    const second = await verify(platform, holder);
    expect(second.id).not.toBe(first.id);
    await ctx.jobs.runDue();
    expect(((await get(`/verifications/${second.id}`, platform)).json() as Body).verificationStatus).toBe('APPROVED');
  });
});
