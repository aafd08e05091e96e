import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DocumentType } from '../../src/modules/documents/catalogue.js';
import { decideManualReview } from '../../src/modules/verifications/index.js';
import { withTx } from '../../src/platform/db/tx.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { customerUsdAccount, readySender } from '../helpers/payments.js';
import { startVerification, uploadPdf } from '../helpers/verifications.js';

// A platform holding a valid token tries to get money moving for a customer nobody approved, or to
// change who an approved customer is, through the HTTP API only. Each case is one attempt.

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;

const call = (pl: TestPlatform, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: pl.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });
const read = async (pl: TestPlatform, path: string) => (await call(pl, 'GET', path)).json() as Body;
const doc = (pl: TestPlatform, holder: unknown, documentType: DocumentType, extra: Record<string, string> = {}) => uploadPdf(ctx.app, pl, holder, documentType, extra);

let seq = 0;
const ADDRESS = { line1: '1 Main St', postalCode: '62701', country: 'US' };

/** A production individual with everything a review reads, approved by the operator's decision. */
async function approvedInProduction(pl: TestPlatform, extra: Body = {}): Promise<Body> {
  const created = await call(pl, 'POST', '/customers', {
    customerType: 'INDIVIDUAL',
    platformCustomerId: `rt-${++seq}`,
    fullName: 'Jane Doe',
    birthDate: '1990-01-15',
    nationality: 'US',
    address: ADDRESS,
    idType: 'SSN',
    identifier: '123-45-6789',
    ...extra,
  });
  expect(created.statusCode, created.body).toBe(201);
  const c = created.json() as Body;
  expect(c.kycStatus).toBe('UNVERIFIED');
  await doc(pl, c.id, 'PASSPORT');
  const v = await startVerification(ctx.app, pl, c.id);
  await ctx.jobs.runDue();
  expect((await read(pl, `/verifications/${v.id}`)).verificationStatus).toBe('PENDING_MANUAL_REVIEW');
  await withTx(ctx.handle.db, (trx) => decideManualReview(trx, ctx.clock, pl.uuid, v.id, { verificationStatus: 'APPROVED' }));
  expect((await read(pl, `/customers/${String(c.id)}`)).kycStatus).toBe('APPROVED');
  return c;
}

describe('changing who an approved customer is', () => {
  it('production: a new name, birth date, nationality, address or SSN sets kycStatus back to UNVERIFIED; the same values, contact fields and filling a gap do not', async () => {
    const pl = await ctx.newPlatform('production');
    const changes: Body[] = [
      { fullName: 'Someone Else' },
      { birthDate: '1961-02-03' },
      { nationality: 'CA' },
      { address: { ...ADDRESS, line1: '9 Elsewhere Rd' } },
      { idType: 'SSN', identifier: '234-56-7890' },
    ];
    for (const change of changes) {
      const c = await approvedInProduction(pl);
      const same = await call(pl, 'PATCH', `/customers/${String(c.id)}`, { customerType: 'INDIVIDUAL', fullName: 'Jane Doe', idType: 'SSN', identifier: '123-45-6789', email: 'jane@example.com', purposeOfAccount: 'P2P_TRANSFERS' });
      expect(same.statusCode, same.body).toBe(200);
      expect((same.json() as Body).kycStatus, JSON.stringify(change)).toBe('APPROVED');
      const patched = await call(pl, 'PATCH', `/customers/${String(c.id)}`, { customerType: 'INDIVIDUAL', ...change });
      expect(patched.statusCode, patched.body).toBe(200);
      expect((patched.json() as Body).kycStatus, JSON.stringify(change)).toBe('UNVERIFIED');
      expect((await read(pl, `/customers/${String(c.id)}`)).kycStatus).toBe('UNVERIFIED');
    }
  });

  it('sandbox: an auto-approved sender renamed can no longer quote (USER_NOT_READY) until a review approves the new person', async () => {
    const pl = await ctx.newPlatform('sandbox');
    const sender = await readySender(ctx, pl, 100_000);
    const payee = await customerUsdAccount(ctx, pl, sender.customerId, '000111222333');
    const quote = { source: { sourceType: 'ACCOUNT', accountId: sender.accountId }, destination: { destinationType: 'ACCOUNT', accountId: payee }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 1_000 };
    const before = await call(pl, 'POST', '/quotes', quote);
    expect(before.statusCode, before.body).toBe(201);
    // Auto-approval approved a name and nothing else: filling in what was missing changes nobody.
    const filled = await call(pl, 'PATCH', `/customers/${sender.customerId}`, { customerType: 'INDIVIDUAL', birthDate: '1980-04-04', nationality: 'US' });
    expect((filled.json() as Body).kycStatus, filled.body).toBe('APPROVED');

    const renamed = await call(pl, 'PATCH', `/customers/${sender.customerId}`, { customerType: 'INDIVIDUAL', fullName: 'Mallory Stranger' });
    expect((renamed.json() as Body).kycStatus).toBe('UNVERIFIED');
    expectEnvelope(await call(pl, 'POST', '/quotes', quote), 403, 'USER_NOT_READY');
    expectEnvelope(await call(pl, 'POST', '/quotes', { ...quote, immediatelyExecute: true }), 403, 'USER_NOT_READY');
    // A quote made for the approved person is not executed for the one now on file.
    expectEnvelope(await call(pl, 'POST', `/quotes/${String((before.json() as Body).id)}/execute`), 403, 'USER_NOT_READY');
  });

  it('production: a business’s legal name, registration number or tax id changed after approval is UNVERIFIED again', async () => {
    const pl = await ctx.newPlatform('production');
    for (const businessInfo of [{ legalName: 'Other Corp' }, { registrationNumber: 'DE-7654321' }, { taxId: '98-7654321' }]) {
      const { b } = await approvedBusiness(pl);
      const same = await call(pl, 'PATCH', `/customers/${String(b.id)}`, { customerType: 'BUSINESS', businessInfo: { legalName: 'Acme LLC', taxId: '12-3456789', doingBusinessAs: 'Acme' } });
      expect((same.json() as Body).kybStatus, same.body).toBe('APPROVED');
      const patched = await call(pl, 'PATCH', `/customers/${String(b.id)}`, { customerType: 'BUSINESS', businessInfo });
      expect(patched.statusCode, patched.body).toBe(200);
      expect((patched.json() as Body).kybStatus, JSON.stringify(businessInfo)).toBe('UNVERIFIED');
    }
  });

  it('production: an owner added after approval, or an owner who became another person, leaves the business UNVERIFIED until a review approves them', async () => {
    const pl = await ctx.newPlatform('production');
    const added = await approvedBusiness(pl);
    const newcomer = await addOwner(pl, added.b.id, 'Park', 10);
    expect((newcomer.json() as Body).kycStatus).toBe('UNVERIFIED');
    expect((await read(pl, `/customers/${String(added.b.id)}`)).kybStatus).toBe('UNVERIFIED');
    await doc(pl, (newcomer.json() as Body).id, 'PASSPORT');
    const again = await startVerification(ctx.app, pl, added.b.id);
    await ctx.jobs.runDue();
    await withTx(ctx.handle.db, (trx) => decideManualReview(trx, ctx.clock, pl.uuid, again.id, { verificationStatus: 'APPROVED' }));
    expect((await read(pl, `/customers/${String(added.b.id)}`)).kybStatus).toBe('APPROVED');
    expect((await read(pl, `/beneficial-owners/${String((newcomer.json() as Body).id)}`)).kycStatus).toBe('APPROVED');

    const changed = await approvedBusiness(pl);
    // A new share is the structure the approval judged with the same person: the status holds.
    const reshared = await call(pl, 'PATCH', `/beneficial-owners/${String(changed.owner.id)}`, { ownershipPercentage: 70 });
    expect(reshared.statusCode, reshared.body).toBe(200);
    expect((await read(pl, `/customers/${String(changed.b.id)}`)).kybStatus).toBe('APPROVED');
    const swapped = await call(pl, 'PATCH', `/beneficial-owners/${String(changed.owner.id)}`, { personalInfo: { firstName: 'Mallory', identifier: '234-56-7890' } });
    expect((swapped.json() as Body).kycStatus).toBe('UNVERIFIED');
    expect((await read(pl, `/customers/${String(changed.b.id)}`)).kybStatus).toBe('UNVERIFIED');
  });
});

const addOwner = (pl: TestPlatform, customerId: unknown, lastName: string, ownershipPercentage: number) =>
  call(pl, 'POST', '/beneficial-owners', {
    customerId,
    roles: ['UBO', 'CONTROL_PERSON'],
    ownershipPercentage,
    personalInfo: { firstName: 'Ann', lastName, birthDate: '1975-07-07', nationality: 'US', address: ADDRESS, idType: 'SSN', identifier: '123-45-6789' },
  });

/** A production business with one owner and every document a review reads, approved by the operator's decision. */
async function approvedBusiness(pl: TestPlatform): Promise<{ b: Body; owner: Body }> {
  const created = await call(pl, 'POST', '/customers', {
    customerType: 'BUSINESS',
    platformCustomerId: `rt-b-${++seq}`,
    address: { line1: '400 Commerce Way', postalCode: '78701', country: 'US' },
    businessInfo: { legalName: 'Acme LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789', registrationNumber: 'DE-1234567' },
  });
  expect(created.statusCode, created.body).toBe(201);
  const b = created.json() as Body;
  const added = await addOwner(pl, b.id, 'Lee', 80);
  expect(added.statusCode, added.body).toBe(201);
  const owner = added.json() as Body;
  expect((await read(pl, `/customers/${String(b.id)}`)).kybStatus).toBe('UNVERIFIED');
  await doc(pl, b.id, 'CERTIFICATE_OF_INCORPORATION', { documentNumber: 'DE-1234567' });
  await doc(pl, b.id, 'DIRECTOR_REGISTRY');
  await doc(pl, b.id, 'SHAREHOLDER_REGISTER');
  await doc(pl, b.id, 'BANK_STATEMENT');
  await doc(pl, owner.id, 'PASSPORT');
  const v = await startVerification(ctx.app, pl, b.id);
  await ctx.jobs.runDue();
  await withTx(ctx.handle.db, (trx) => decideManualReview(trx, ctx.clock, pl.uuid, v.id, { verificationStatus: 'APPROVED' }));
  expect((await read(pl, `/customers/${String(b.id)}`)).kybStatus).toBe('APPROVED');
  return { b, owner };
}

describe('a platform running its own KYC', () => {
  it('decides for itself: a change sent with its kycStatus keeps that status and records no second approval; a change without one is UNVERIFIED', async () => {
    const pl = await ctx.newPlatform('production', { regulated: true });
    expect((await call(pl, 'PATCH', '/customers/settings', { platformKyc: true })).statusCode).toBe(200);
    const created = (await call(pl, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Jane Doe', kycStatus: 'APPROVED' })).json() as Body;
    const kept = await call(pl, 'PATCH', `/customers/${String(created.id)}`, { customerType: 'INDIVIDUAL', fullName: 'Jane Q Doe', kycStatus: 'APPROVED' });
    expect((kept.json() as Body).kycStatus, kept.body).toBe('APPROVED');
    const renamed = await call(pl, 'PATCH', `/customers/${String(created.id)}`, { customerType: 'INDIVIDUAL', fullName: 'Someone Else' });
    expect((renamed.json() as Body).kycStatus, renamed.body).toBe('UNVERIFIED');
    const approvals = await ctx.handle.db.selectFrom('events').select('type').where('resource_id', '=', String(created.id)).where('type', '=', 'CUSTOMER.KYC_APPROVED').execute();
    expect(approvals).toHaveLength(1);
  });
});

describe('starting over', () => {
  it('production: a customer deleted after approval and created again under its platformCustomerId inherits nothing: UNVERIFIED, no review, documents or accounts', async () => {
    const pl = await ctx.newPlatform('production');
    const approved = await approvedInProduction(pl);
    expect((await call(pl, 'DELETE', `/customers/${String(approved.id)}`)).statusCode).toBe(200);
    const again = await call(pl, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: approved.platformCustomerId, fullName: 'Jane Doe', birthDate: '1990-01-15', nationality: 'US', address: ADDRESS });
    expect(again.statusCode, again.body).toBe(201);
    const id = String((again.json() as Body).id);
    expect(id).not.toBe(approved.id);
    expect((again.json() as Body).kycStatus).toBe('UNVERIFIED');
    for (const path of [`/verifications?customerId=${id}`, `/documents?documentHolder=${id}`, `/customers/internal-accounts?customerId=${id}`]) {
      expect((await read(pl, path)).data, path).toEqual([]);
    }
  });
});
