import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ env: { CORRIDOR_TERMS_VERSION: 'V2', CORRIDOR_TERMS_URL: 'https://terms.example.com/v2' } });
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
type FieldErrors = Array<{ field: string; constraint?: Record<string, unknown>; message?: string }>;

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: unknown, headers: Record<string, string> = {}) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth, ...headers }, ...(payload === undefined ? {} : { payload: payload as object }) });

const consent = () => ({ acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V2', acceptanceMethod: 'CHECKBOX' });

let seq = 0;
const individual = (extra: Body = {}): Body => ({
  customerType: 'INDIVIDUAL',
  platformCustomerId: `ind-${++seq}`,
  fullName: 'Jane Doe',
  birthDate: '1990-01-15',
  nationality: 'US',
  email: 'jane@example.com',
  phoneNumber: '+14155550123',
  address: { line1: '1 Main St', city: 'Springfield', state: 'IL', postalCode: '62701', country: 'US' },
  idType: 'SSN',
  identifier: '123-45-6789',
  ...extra,
});
const business = (extra: Body = {}): Body => ({
  customerType: 'BUSINESS',
  platformCustomerId: `biz-${++seq}`,
  address: { line1: '400 Commerce Way', city: 'Austin', state: 'TX', postalCode: '78701', country: 'US' },
  businessInfo: { legalName: 'Acme LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789', entityType: 'LLC' },
  ...extra,
});

async function create(p: TestPlatform, body: Body): Promise<Body> {
  const response = await call(p, 'POST', '/customers', body);
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Body;
}

const fieldsOf = (body: { details?: Record<string, unknown> }) => (body.details!.errors as FieldErrors).map((e) => e.field).sort();
const errorFor = (body: { details?: Record<string, unknown> }, field: string) => (body.details!.errors as FieldErrors).find((e) => e.field === field);

async function countCustomers(p: TestPlatform): Promise<number> {
  return ((await call(p, 'GET', '/customers?isIncludingDeleted=true')).json() as { totalCount: number }).totalCount;
}

describe('POST /customers', () => {
  it('creates an individual with every field, never returning the identifier', async () => {
    const body = individual({
      region: 'US',
      currencies: ['USD', 'EUR'],
      umaAddress: '$jane@pay.example.com',
      endUserTermsConsent: consent(),
      sourceOfFundsCategories: ['SALARY', 'OTHER'],
      sourceOfFundsOtherDescription: 'Royalties',
      sourceOfWealthCategories: ['SAVINGS'],
      purposeOfAccount: 'P2P_TRANSFERS',
      expectedMonthlyTransactionCount: 'COUNT_10_TO_100',
      expectedMonthlyTransactionVolume: 'VOLUME_UNDER_10K',
      annualIncomeRange: 'RANGE_50K_100K',
      netWorthRange: 'RANGE_100K_500K',
      pepStatus: 'NONE',
    });
    const customer = await create(ctx.platform, body);
    const { identifier: _identifier, ...expected } = body;
    expect(customer).toEqual({
      ...expected,
      id: expect.stringMatching(/^Customer:[0-9a-f-]{36}$/),
      kycStatus: 'APPROVED',
      countryOfIssuance: 'US',
      isDeleted: false,
      createdAt: ctx.clock.now().toISOString(),
      updatedAt: ctx.clock.now().toISOString(),
    });
    expect(JSON.stringify(customer)).not.toContain('123-45-6789');
    const read = await call(ctx.platform, 'GET', `/customers/${customer.id}`);
    expect(read.statusCode).toBe(200);
    expect(read.json()).toEqual(customer);
  });

  it('creates a business with businessInfo and a generated umaAddress and platformCustomerId', async () => {
    const { platformCustomerId: _omit, ...body } = business();
    const customer = await create(ctx.platform, body);
    // taxId is write-only, like an individual's identifier: sealed at rest, never answered.
    const { taxId: _taxId, ...shownInfo } = body.businessInfo as Record<string, unknown>;
    expect(customer).toMatchObject({ customerType: 'BUSINESS', kybStatus: 'UNVERIFIED', businessInfo: shownInfo, address: body.address });
    expect(customer.businessInfo).not.toHaveProperty('taxId');
    expect(customer).not.toHaveProperty('kycStatus');
    expect(customer.platformCustomerId).toBe(String(customer.id).slice('Customer:'.length));
    expect(customer.umaAddress).toMatch(/^\$c[0-9a-f]{16}@uma\.corridor\.local$/);
  });

  it('reports every invalid field of an individual at once, with its constraint, and creates nothing', async () => {
    const before = await countCustomers(ctx.platform);
    const response = await call(ctx.platform, 'POST', '/customers', {
      customerType: 'INDIVIDUAL',
      fullName: 'x'.repeat(256),
      birthDate: '2023-02-30',
      nationality: 'XX',
      email: 'not-an-email',
      phoneNumber: '4155550123',
      region: 'ZZ',
      currencies: ['usd'],
      idType: 'SSN',
      identifier: '000-12-3456',
      countryOfIssuance: 'CA',
      address: { line1: '', postalCode: '1', country: 'U1', extra: 1 },
      sourceOfWealthCategories: ['OTHER'],
      purposeOfAccount: 'GAMBLING',
      pepStatus: 'MAYBE',
      endUserTermsConsent: { acceptedAt: 'yesterday', ipAddress: '999.1.1.1', termsVersion: 'V2', acceptanceMethod: 'NOD' },
      favouriteColour: 'blue',
    });
    const body = expectEnvelope(response, 400, 'INVALID_INPUT');
    expect(fieldsOf(body)).toEqual([
      'address.country',
      'address.extra',
      'address.line1',
      'birthDate',
      'countryOfIssuance',
      'currencies.0',
      'email',
      'endUserTermsConsent.acceptanceMethod',
      'endUserTermsConsent.acceptedAt',
      'endUserTermsConsent.ipAddress',
      'favouriteColour',
      'fullName',
      'identifier',
      'nationality',
      'pepStatus',
      'phoneNumber',
      'purposeOfAccount',
      'region',
      'sourceOfWealthOtherDescription',
    ]);
    expect(errorFor(body, 'fullName')!.constraint).toEqual({ maxLength: 255 });
    expect(errorFor(body, 'birthDate')!.constraint).toEqual({ format: 'date' });
    expect(errorFor(body, 'nationality')!.constraint).toEqual({ format: 'iso3166-1-alpha-2' });
    expect(errorFor(body, 'email')!.constraint).toEqual({ format: 'email' });
    expect(errorFor(body, 'phoneNumber')!.constraint).toEqual({ format: 'e.164' });
    expect(errorFor(body, 'identifier')!.constraint).toEqual({ format: 'us-ssn' });
    expect(errorFor(body, 'countryOfIssuance')!.constraint).toEqual({ enum: ['US'] });
    expect(errorFor(body, 'address.line1')!.constraint).toEqual({ minLength: 1 });
    expect(errorFor(body, 'pepStatus')!.constraint!.enum).toContain('FAMILY_OR_ASSOCIATE');
    expect(errorFor(body, 'favouriteColour')!.message).toBe('is not a known field');
    expect(errorFor(body, 'sourceOfWealthOtherDescription')!.message).toBe('is required when sourceOfWealthCategories holds OTHER');
    expect(await countCustomers(ctx.platform)).toBe(before);
  });

  it('rejects future birth dates, ITIN formats, descriptions without OTHER, and identifiers without a type', async () => {
    // The day after today's date at UTC+14, where a day starts first: in the future everywhere.
    const tomorrow = new Date(ctx.clock.now().getTime() + 14 * 3_600_000 + 86_400_000).toISOString().slice(0, 10);
    let body = expectEnvelope(
      await call(ctx.platform, 'POST', '/customers', individual({ birthDate: tomorrow, idType: 'ITIN', identifier: '123-45-6789', purposeOfAccountOtherDescription: 'x' })),
      400,
      'INVALID_INPUT',
    );
    expect(fieldsOf(body)).toEqual(['birthDate', 'identifier', 'purposeOfAccountOtherDescription']);
    expect(errorFor(body, 'birthDate')!.message).toBe('must not be in the future');
    expect(errorFor(body, 'identifier')!.constraint).toEqual({ format: 'us-itin' });
    body = expectEnvelope(await call(ctx.platform, 'POST', '/customers', individual({ idType: undefined })), 400, 'INVALID_INPUT');
    expect(fieldsOf(body)).toEqual(['idType']);
    body = expectEnvelope(await call(ctx.platform, 'POST', '/customers', individual({ identifier: undefined })), 400, 'INVALID_INPUT');
    expect(fieldsOf(body)).toEqual(['identifier']);
    const itin = await create(ctx.platform, individual({ idType: 'ITIN', identifier: '912-70-1234' }));
    expect(itin.idType).toBe('ITIN');
  });

  it('takes a birth date that is today somewhere on Earth (UTC+14), though not yet in UTC', async () => {
    // 20:00 UTC: already the next day at UTC+14 (the Line Islands). The clock only moves forward.
    const now = ctx.clock.now();
    const evening = new Date(`${now.toISOString().slice(0, 10)}T20:00:00.000Z`);
    ctx.clock.set(evening > now ? evening : new Date(evening.getTime() + 86_400_000));
    const bornToday = new Date(ctx.clock.now().getTime() + 14 * 3_600_000).toISOString().slice(0, 10);
    expect(bornToday > ctx.clock.now().toISOString().slice(0, 10)).toBe(true);
    const created = await call(ctx.platform, 'POST', '/customers', individual({ birthDate: bornToday }));
    expect(created.statusCode, created.body).toBe(201);
    expect((created.json() as { birthDate: string }).birthDate).toBe(bornToday);
  });

  it('reports every invalid field of a business, including a non-EIN US tax id and a future incorporation', async () => {
    const before = await countCustomers(ctx.platform);
    const response = await call(ctx.platform, 'POST', '/customers', {
      customerType: 'BUSINESS',
      businessInfo: {
        legalName: 'Acme',
        country: 'US',
        incorporatedOn: '2999-01-01',
        taxId: '123',
        entityType: 'COOPERATIVE',
        naicsCode: '1',
        countriesOfOperation: ['US', 'QQ'],
        sourceOfFundsCategories: ['OTHER'],
      },
      fullName: 'Not for businesses',
    });
    const body = expectEnvelope(response, 400, 'INVALID_INPUT');
    expect(fieldsOf(body)).toEqual([
      'businessInfo.countriesOfOperation.1',
      'businessInfo.entityType',
      'businessInfo.incorporatedOn',
      'businessInfo.naicsCode',
      'businessInfo.sourceOfFundsOtherDescription',
      'businessInfo.taxId',
      'fullName',
    ]);
    expect(errorFor(body, 'businessInfo.taxId')!.constraint).toEqual({ pattern: '^\\d{2}-?\\d{7}$' });
    expect(errorFor(body, 'businessInfo.naicsCode')!.constraint).toEqual({ pattern: '^\\d{2,6}$' });
    const missing = expectEnvelope(await call(ctx.platform, 'POST', '/customers', { customerType: 'BUSINESS' }), 400, 'INVALID_INPUT');
    expect(fieldsOf(missing)).toEqual(['businessInfo']);
    expect(await countCustomers(ctx.platform)).toBe(before);
  });

  it('takes the owner’s SSN or ITIN as the tax id of a US sole proprietorship, and only there', async () => {
    const info = { legalName: 'Ann Lee Consulting', country: 'US', incorporatedOn: '2015-03-01', taxId: '123-45-6789' };
    const sole = await create(ctx.platform, business({ businessInfo: { ...info, entityType: 'SOLE_PROPRIETORSHIP' } }));
    expect(sole.businessInfo).toMatchObject({ entityType: 'SOLE_PROPRIETORSHIP' });
    const llc = expectEnvelope(await call(ctx.platform, 'POST', '/customers', business({ businessInfo: { ...info, entityType: 'LLC' } })), 400, 'INVALID_INPUT');
    expect(errorFor(llc, 'businessInfo.taxId')!.constraint).toEqual({ pattern: '^\\d{2}-?\\d{7}$' });
    const unnamed = expectEnvelope(await call(ctx.platform, 'POST', '/customers', business({ businessInfo: info })), 400, 'INVALID_INPUT');
    expect(fieldsOf(unnamed)).toEqual(['businessInfo.taxId']);
    // By the same SSN and ITIN rules as an individual's identifier: an ITIN is taken, an SSN never issued is not.
    const itin = await create(ctx.platform, business({ businessInfo: { ...info, entityType: 'SOLE_PROPRIETORSHIP', taxId: '912-78-1234' } }));
    expect(itin.businessInfo).toMatchObject({ entityType: 'SOLE_PROPRIETORSHIP' });
    const neverIssued = { ...info, entityType: 'SOLE_PROPRIETORSHIP', taxId: '000-45-6789' };
    expect(fieldsOf(expectEnvelope(await call(ctx.platform, 'POST', '/customers', business({ businessInfo: neverIssued })), 400, 'INVALID_INPUT'))).toEqual(['businessInfo.taxId']);
  });

  it('refuses blank free text and control characters, naming each field once; line breaks only in the descriptions', async () => {
    const before = await countCustomers(ctx.platform);
    const bad = await call(ctx.platform, 'POST', '/customers', individual({ fullName: ' \u200b ', address: { line1: '1 Main\u001b[2J St', postalCode: '62701', country: 'US' }, identifier: '          ' }));
    expect(expectEnvelope(bad, 400, 'INVALID_INPUT').details!.errors).toEqual([
      { field: 'identifier', constraint: { format: 'us-ssn' }, message: 'must be a valid SSN (###-##-####)' },
      { field: 'fullName', message: 'must not be blank' },
      { field: 'address.line1', message: 'must not contain control characters (U+0000–U+001F, U+007F–U+009F)' },
    ]);
    const lineBreakInName = await call(ctx.platform, 'POST', '/customers', business({ businessInfo: { legalName: 'Acme\nLLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789' } }));
    expect(fieldsOf(expectEnvelope(lineBreakInName, 400, 'INVALID_INPUT'))).toEqual(['businessInfo.legalName']);
    expect(await countCustomers(ctx.platform)).toBe(before);

    const described = await create(ctx.platform, individual({ sourceOfFundsCategories: ['OTHER'], sourceOfFundsOtherDescription: 'Royalties\nand prizes' }));
    expect(described.sourceOfFundsOtherDescription).toBe('Royalties\nand prizes');
    const blanked = await call(ctx.platform, 'PATCH', `/customers/${String(described.id)}`, { customerType: 'INDIVIDUAL', fullName: '   ' });
    expect(fieldsOf(expectEnvelope(blanked, 400, 'INVALID_INPUT'))).toEqual(['fullName']);
    expect(((await call(ctx.platform, 'GET', `/customers/${String(described.id)}`)).json() as Body).fullName).toBe('Jane Doe');
  });

  it('holds the taxId on file to the rule of a country or entity type a PATCH moves to, changing nothing when it fails', async () => {
    const sole = await create(ctx.platform, business({ businessInfo: { legalName: 'Ann Lee', country: 'US', incorporatedOn: '2015-03-01', taxId: '123-45-6789', entityType: 'SOLE_PROPRIETORSHIP' } }));
    const toLlc = expectEnvelope(await call(ctx.platform, 'PATCH', `/customers/${String(sole.id)}`, { customerType: 'BUSINESS', businessInfo: { entityType: 'LLC' } }), 400, 'INVALID_INPUT');
    expect(toLlc.details!.errors).toEqual([
      { field: 'businessInfo.taxId', constraint: { pattern: '^\\d{2}-?\\d{7}$' }, message: 'must be an EIN (##-#######) for a US business: the taxId on file is not, so send one with this change' },
    ]);
    const withEin = await call(ctx.platform, 'PATCH', `/customers/${String(sole.id)}`, { customerType: 'BUSINESS', businessInfo: { entityType: 'LLC', taxId: '12-3456789' } });
    expect(withEin.statusCode, withEin.body).toBe(200);

    const foreign = await create(ctx.platform, business({ businessInfo: { legalName: 'Acme SA', country: 'MX', incorporatedOn: '2015-03-01', taxId: 'ACM150301AB1' } }));
    const before = (await call(ctx.platform, 'GET', `/customers/${String(foreign.id)}`)).json() as Body;
    const toUs = expectEnvelope(await call(ctx.platform, 'PATCH', `/customers/${String(foreign.id)}`, { customerType: 'BUSINESS', businessInfo: { country: 'US' } }), 400, 'INVALID_INPUT');
    expect(fieldsOf(toUs)).toEqual(['businessInfo.taxId']);
    expect((await call(ctx.platform, 'GET', `/customers/${String(foreign.id)}`)).json()).toEqual(before);
    // Another field of businessInfo is not held to it.
    expect((await call(ctx.platform, 'PATCH', `/customers/${String(foreign.id)}`, { customerType: 'BUSINESS', businessInfo: { doingBusinessAs: 'Acme' } })).statusCode).toBe(200);
  });

  it('names customerType with its allowed values when it is missing or unknown', async () => {
    for (const payload of [{}, { customerType: 'ROBOT' }, undefined]) {
      const body = expectEnvelope(await call(ctx.platform, 'POST', '/customers', payload), 400, 'INVALID_INPUT');
      expect(body.details!.errors).toEqual([
        { field: 'customerType', constraint: { enum: ['INDIVIDUAL', 'BUSINESS'] }, message: 'must be one of INDIVIDUAL, BUSINESS' },
      ]);
    }
  });

  it('takes an UMA address by the one rule every UMA path uses (platform/uma-address.ts)', async () => {
    const plus = await create(ctx.platform, individual({ umaAddress: '$ann+pay@Pay.Example.com:8443' }));
    expect(plus.umaAddress).toBe('$ann+pay@Pay.Example.com:8443');
    for (const umaAddress of ['$ann@pay..example.com', '$ann@-pay.example.com', '$ann@pay.example.com:0', '$ann@pay.example.com:65536', 'ann@pay.example.com']) {
      const body = expectEnvelope(await call(ctx.platform, 'POST', '/customers', individual({ umaAddress })), 400, 'INVALID_INPUT');
      expect(body.details!.errors, umaAddress).toEqual([expect.objectContaining({ field: 'umaAddress' })]);
    }
  });

  it('answers 409 for a live duplicate platformCustomerId or umaAddress, and allows reuse after delete', async () => {
    const first = await create(ctx.platform, individual({ platformCustomerId: 'dup-1', umaAddress: '$dup@pay.example.com' }));
    const conflict = expectEnvelope(await call(ctx.platform, 'POST', '/customers', individual({ platformCustomerId: 'dup-1' })), 409, 'CONFLICT');
    expect(conflict.details).toEqual({ field: 'platformCustomerId', platformCustomerId: 'dup-1' });
    expectEnvelope(await call(ctx.platform, 'POST', '/customers', individual({ umaAddress: '$DUP@pay.example.com' })), 409, 'UMA_ADDRESS_EXISTS');
    expect((await call(ctx.platform, 'DELETE', `/customers/${first.id}`)).statusCode).toBe(200);
    const again = await create(ctx.platform, individual({ platformCustomerId: 'dup-1', umaAddress: '$dup@pay.example.com' }));
    expect(again.id).not.toBe(first.id);
  });

  it('replays a create with the same Idempotency-Key and refuses the key with another body', async () => {
    const body = individual();
    const headers = { 'idempotency-key': `create-${seq}` };
    const first = await call(ctx.platform, 'POST', '/customers', body, headers);
    expect(first.statusCode).toBe(201);
    const replay = await call(ctx.platform, 'POST', '/customers', body, headers);
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(first.json());
    expectEnvelope(await call(ctx.platform, 'POST', '/customers', { ...body, fullName: 'Other' }, headers), 409, 'CONFLICT');
    const list = (await call(ctx.platform, 'GET', `/customers?platformCustomerId=${body.platformCustomerId}`)).json() as { data: Body[] };
    expect(list.data).toHaveLength(1);
  });

  it('needs the MANAGE permission', async () => {
    const viewer = await ctx.newToken(ctx.platform, ['VIEW']);
    expectEnvelope(await call(viewer, 'POST', '/customers', individual()), 403, 'FORBIDDEN');
    expectEnvelope(await ctx.app.inject({ method: 'POST', url: `${BASE}/customers`, payload: individual() }), 401, 'UNAUTHORIZED');
  });
});

describe('end-user terms', () => {
  it('returns the configured version and url', async () => {
    const response = await call(ctx.platform, 'GET', '/customers/end-user-terms');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ version: 'V2', url: 'https://terms.example.com/v2' });
  });

  it('refuses an unknown terms version on create and update, changing nothing', async () => {
    const before = await countCustomers(ctx.platform);
    const bad = { ...consent(), termsVersion: 'V1' };
    const body = expectEnvelope(await call(ctx.platform, 'POST', '/customers', individual({ endUserTermsConsent: bad })), 400, 'END_USER_TERMS_VERSION_NOT_FOUND');
    expect(body.details).toEqual({ termsVersion: 'V1', currentVersion: 'V2' });
    expect(await countCustomers(ctx.platform)).toBe(before);
    const customer = await create(ctx.platform, individual());
    expectEnvelope(
      await call(ctx.platform, 'PATCH', `/customers/${customer.id}`, { customerType: 'INDIVIDUAL', endUserTermsConsent: bad }),
      400,
      'END_USER_TERMS_VERSION_NOT_FOUND',
    );
    expect((await call(ctx.platform, 'GET', `/customers/${customer.id}`)).json()).toEqual(customer);
  });

  it('records consent given on update and returns it on the customer', async () => {
    const customer = await create(ctx.platform, individual());
    expect(customer).not.toHaveProperty('endUserTermsConsent');
    const given = { ...consent(), acceptanceMethod: 'CLICK_TO_ACCEPT', ipAddress: '2001:db8::1' };
    const response = await call(ctx.platform, 'PATCH', `/customers/${customer.id}`, { customerType: 'INDIVIDUAL', endUserTermsConsent: given });
    expect(response.statusCode).toBe(200);
    expect((await call(ctx.platform, 'GET', `/customers/${customer.id}`)).json()).toMatchObject({ endUserTermsConsent: given });
  });

  it('refuses a consent dated in the future', async () => {
    const future = { ...consent(), acceptedAt: new Date(ctx.clock.now().getTime() + 3_600_000).toISOString() };
    const body = expectEnvelope(await call(ctx.platform, 'POST', '/customers', individual({ endUserTermsConsent: future })), 400, 'INVALID_INPUT');
    expect(fieldsOf(body)).toEqual(['endUserTermsConsent.acceptedAt']);
  });
});

describe('GET /customers', () => {
  it('filters by every documented field and pages with a cursor', async () => {
    const p = await ctx.newPlatform();
    const a = await create(p, individual({ platformCustomerId: 'a', region: 'US', currencies: ['USD'], umaAddress: '$a@x.example.com' }));
    ctx.clock.advance(1000);
    const b = await create(p, business({ platformCustomerId: 'b', region: 'GB', currencies: ['GBP', 'EUR'] }));
    ctx.clock.advance(1000);
    const c = await create(p, individual({ platformCustomerId: 'c', region: 'MX', currencies: ['MXN'] }));
    ctx.clock.advance(1000);
    const ids = async (query: string) => ((await call(p, 'GET', `/customers${query}`)).json() as { data: Body[] }).data.map((x) => x.id);
    expect(await ids('')).toEqual([c.id, b.id, a.id]);
    expect(await ids('?platformCustomerId=b')).toEqual([b.id]);
    expect(await ids('?customerType=INDIVIDUAL')).toEqual([c.id, a.id]);
    expect(await ids('?region=GB')).toEqual([b.id]);
    expect(await ids('?currency=EUR')).toEqual([b.id]);
    expect(await ids(`?umaAddress=${encodeURIComponent('$A@x.example.com')}`)).toEqual([a.id]);
    expect(await ids(`?createdAfter=${encodeURIComponent(String(b.createdAt))}`)).toEqual([c.id, b.id]);
    expect(await ids(`?createdBefore=${encodeURIComponent(String(b.createdAt))}`)).toEqual([b.id, a.id]);
    await call(p, 'PATCH', `/customers/${a.id}`, { customerType: 'INDIVIDUAL', fullName: 'Later' });
    const updatedAt = encodeURIComponent(ctx.clock.now().toISOString());
    expect(await ids(`?updatedAfter=${updatedAt}`)).toEqual([a.id]);
    expect(await ids(`?updatedBefore=${encodeURIComponent(String(c.updatedAt))}`)).toEqual([c.id, b.id]);

    const first = (await call(p, 'GET', '/customers?limit=2')).json() as { data: Body[]; hasMore: boolean; nextCursor: string; totalCount: number };
    expect(first).toMatchObject({ hasMore: true, totalCount: 3 });
    expect(first.data.map((x) => x.id)).toEqual([c.id, b.id]);
    const second = (await call(p, 'GET', `/customers?limit=2&cursor=${first.nextCursor}`)).json() as Body;
    expect(second).toEqual({ data: [expect.objectContaining({ id: a.id })], hasMore: false, totalCount: 3 });

    await call(p, 'DELETE', `/customers/${b.id}`);
    expect(await ids('')).toEqual([c.id, a.id]);
    expect(await ids('?isIncludingDeleted=true')).toEqual([c.id, b.id, a.id]);
  });

  it('rejects bad filters, naming each', async () => {
    const body = expectEnvelope(await call(ctx.platform, 'GET', '/customers?customerType=ROBOT&region=XX&limit=0&createdAfter=soon&colour=red'), 400, 'INVALID_INPUT');
    expect(fieldsOf(body)).toEqual(['colour', 'createdAfter', 'customerType', 'limit', 'region']);
  });
  it('answers every optional field of both types in exactly the bytes it always has, listed and read alone', async () => {
    const p = await ctx.newPlatform();
    const person = await create(p, individual({
      platformCustomerId: 'pinned-individual',
      fullName: 'Zoë "Jo" O\\Brien',
      region: 'US',
      currencies: ['USD', 'EUR'],
      umaAddress: '$zoe@pay.example.com',
      endUserTermsConsent: consent(),
      address: { line1: '1 Main St', line2: 'Apt 2', city: 'Springfield', state: 'IL', postalCode: '62701', country: 'US' },
      sourceOfFundsCategories: ['SALARY', 'OTHER'],
      sourceOfFundsOtherDescription: 'Royalties',
      sourceOfWealthCategories: ['SAVINGS', 'OTHER'],
      sourceOfWealthOtherDescription: 'Lottery',
      purposeOfAccount: 'OTHER',
      purposeOfAccountOtherDescription: 'Allowance',
      expectedMonthlyTransactionCount: 'COUNT_10_TO_100',
      expectedMonthlyTransactionVolume: 'VOLUME_UNDER_10K',
      annualIncomeRange: 'RANGE_50K_100K',
      netWorthRange: 'RANGE_100K_500K',
      pepStatus: 'NONE',
    }));
    const company = await create(p, business({
      platformCustomerId: 'pinned-business',
      region: 'GB',
      currencies: ['GBP'],
      email: 'ops@acme.example.com',
      phoneNumber: '+442071838750',
      umaAddress: '$acme@pay.example.com',
      businessInfo: {
        legalName: 'Acme "Widgets" Ltd',
        doingBusinessAs: 'Acme',
        country: 'GB',
        registrationNumber: '01234567',
        incorporatedOn: '2015-03-01',
        entityType: 'LLC',
        taxId: '12-3456789',
        countriesOfOperation: ['GB', 'FR'],
        businessType: 'MANUFACTURING',
        purposeOfAccount: 'OTHER',
        purposeOfAccountOtherDescription: 'Tooling',
        sourceOfFunds: 'Sales',
        sourceOfFundsCategories: ['OPERATING_REVENUE', 'OTHER'],
        sourceOfFundsOtherDescription: 'Grants',
        expectedMonthlyTransactionCount: 'COUNT_100_TO_500',
        expectedMonthlyTransactionVolume: 'VOLUME_100K_TO_1M',
        expectedRecipientJurisdictions: ['DE'],
        expectedCounterpartyCountries: ['US', 'IE'],
        naicsCode: '332510',
        primaryContactFirstName: 'Ada',
        primaryContactLastName: 'Byron',
      },
    }));
    // Instants with microseconds, as now() stores them: the answer shows milliseconds, truncated.
    await ctx.handle.db
      .updateTable('customers')
      .set({ terms_accepted_at: new Date('2026-01-02T03:04:05.678Z'), created_at: new Date('0950-06-07T08:09:10.000Z') })
      .where('platform_customer_id', '=', 'pinned-individual')
      .execute();
    await sql`update customers set updated_at = '2026-01-02 03:04:05.123999+00' where platform_customer_id in ('pinned-individual', 'pinned-business')`.execute(ctx.handle.db);
    // The order is the serializer's: a shape's required fields first, then the optional ones in schema order.
    const personJson =
      `{"id":"${String(person.id)}","platformCustomerId":"pinned-individual","customerType":"INDIVIDUAL","umaAddress":"$zoe@pay.example.com",` +
      '"isDeleted":false,"createdAt":"0950-06-07T08:09:10.000Z","updatedAt":"2026-01-02T03:04:05.123Z","kycStatus":"APPROVED","region":"US",' +
      '"currencies":["USD","EUR"],"email":"jane@example.com","phoneNumber":"+14155550123",' +
      '"endUserTermsConsent":{"acceptedAt":"2026-01-02T03:04:05.678Z","ipAddress":"203.0.113.7","termsVersion":"V2","acceptanceMethod":"CHECKBOX"},' +
      '"fullName":"Zoë \\"Jo\\" O\\\\Brien","birthDate":"1990-01-15","nationality":"US",' +
      '"address":{"line1":"1 Main St","postalCode":"62701","country":"US","line2":"Apt 2","city":"Springfield","state":"IL"},' +
      '"idType":"SSN","countryOfIssuance":"US","sourceOfFundsCategories":["SALARY","OTHER"],"sourceOfFundsOtherDescription":"Royalties",' +
      '"sourceOfWealthCategories":["SAVINGS","OTHER"],"sourceOfWealthOtherDescription":"Lottery","purposeOfAccount":"OTHER",' +
      '"purposeOfAccountOtherDescription":"Allowance","expectedMonthlyTransactionCount":"COUNT_10_TO_100","expectedMonthlyTransactionVolume":"VOLUME_UNDER_10K",' +
      '"annualIncomeRange":"RANGE_50K_100K","netWorthRange":"RANGE_100K_500K","pepStatus":"NONE"}';
    const companyJson =
      `{"id":"${String(company.id)}","platformCustomerId":"pinned-business","customerType":"BUSINESS","umaAddress":"$acme@pay.example.com",` +
      `"isDeleted":false,"createdAt":"${String(company.createdAt)}","updatedAt":"2026-01-02T03:04:05.123Z","kybStatus":"UNVERIFIED","region":"GB",` +
      '"currencies":["GBP"],"email":"ops@acme.example.com","phoneNumber":"+442071838750",' +
      '"address":{"line1":"400 Commerce Way","postalCode":"78701","country":"US","city":"Austin","state":"TX"},' +
      '"businessInfo":{"legalName":"Acme \\"Widgets\\" Ltd","doingBusinessAs":"Acme","country":"GB","registrationNumber":"01234567",' +
      '"incorporatedOn":"2015-03-01","entityType":"LLC","countriesOfOperation":["GB","FR"],"businessType":"MANUFACTURING","purposeOfAccount":"OTHER",' +
      '"sourceOfFunds":"Sales","expectedMonthlyTransactionCount":"COUNT_100_TO_500","expectedMonthlyTransactionVolume":"VOLUME_100K_TO_1M",' +
      '"expectedRecipientJurisdictions":["DE"],"naicsCode":"332510","sourceOfFundsCategories":["OPERATING_REVENUE","OTHER"],' +
      '"sourceOfFundsOtherDescription":"Grants","purposeOfAccountOtherDescription":"Tooling","expectedCounterpartyCountries":["US","IE"],' +
      '"primaryContactFirstName":"Ada","primaryContactLastName":"Byron"},"beneficialOwners":[]}';
    expect((await call(p, 'GET', '/customers')).body).toBe(`{"data":[${companyJson},${personJson}],"hasMore":false,"totalCount":2}`);
    expect((await call(p, 'GET', '/customers?limit=1')).body).toBe(
      `{"data":[${companyJson}],"hasMore":true,"nextCursor":"${Buffer.from(JSON.stringify({ k: String(company.id).slice('Customer:'.length) })).toString('base64url')}","totalCount":2}`,
    );
    expect((await call(p, 'GET', `/customers/${String(person.id)}`)).body).toBe(personJson);
    expect((await call(p, 'GET', `/customers/${String(company.id)}`)).body).toBe(companyJson);
  });
});

describe('PATCH /customers/{customerId}', () => {
  it('changes only the fields sent; nested businessInfo merges; reading back shows the change', async () => {
    const customer = await create(ctx.platform, business({ currencies: ['USD'] }));
    ctx.clock.advance(5000);
    const response = await call(ctx.platform, 'PATCH', `/customers/${customer.id}`, {
      customerType: 'BUSINESS',
      currencies: ['EUR'],
      businessInfo: { doingBusinessAs: 'Acme', purposeOfAccount: 'OTHER', purposeOfAccountOtherDescription: 'Escrow' },
    });
    expect(response.statusCode).toBe(200);
    const expected = {
      ...customer,
      currencies: ['EUR'],
      businessInfo: { ...(customer.businessInfo as Body), doingBusinessAs: 'Acme', purposeOfAccount: 'OTHER', purposeOfAccountOtherDescription: 'Escrow' },
      updatedAt: ctx.clock.now().toISOString(),
    };
    expect(response.json()).toEqual(expected);
    expect((await call(ctx.platform, 'GET', `/customers/${customer.id}`)).json()).toEqual(expected);
    const dropped = await call(ctx.platform, 'PATCH', `/customers/${customer.id}`, { customerType: 'BUSINESS', businessInfo: { purposeOfAccount: 'AP_AUTOMATION' } });
    expect((dropped.json() as { businessInfo: Body }).businessInfo).not.toHaveProperty('purposeOfAccountOtherDescription');
  });

  it('reports every invalid field against the stored customer and changes nothing', async () => {
    const customer = await create(ctx.platform, individual());
    const response = await call(ctx.platform, 'PATCH', `/customers/${customer.id}`, {
      customerType: 'INDIVIDUAL',
      email: 'nope',
      phoneNumber: '+14155550999',
      birthDate: '1990-13-01',
      sourceOfFundsCategories: ['OTHER'],
      platformCustomerId: 'cannot-change',
      identifier: '000-00-0000',
    });
    const body = expectEnvelope(response, 400, 'INVALID_INPUT');
    expect(fieldsOf(body)).toEqual(['birthDate', 'email', 'identifier', 'phoneNumber', 'platformCustomerId', 'sourceOfFundsOtherDescription']);
    expect(errorFor(body, 'phoneNumber')!.message).toBe('cannot change in the same request as email');
    expect((await call(ctx.platform, 'GET', `/customers/${customer.id}`)).json()).toEqual(customer);
  });

  it("refuses a customerType other than the customer's", async () => {
    const customer = await create(ctx.platform, individual());
    const body = expectEnvelope(await call(ctx.platform, 'PATCH', `/customers/${customer.id}`, { customerType: 'BUSINESS' }), 400, 'INVALID_INPUT');
    expect(body.details!.errors).toEqual([{ field: 'customerType', constraint: { enum: ['INDIVIDUAL'] }, message: 'must be INDIVIDUAL, the type of this customer' }]);
  });

  it('answers 409 UMA_ADDRESS_EXISTS when taking another customer’s address', async () => {
    await create(ctx.platform, individual({ umaAddress: '$taken@pay.example.com' }));
    const customer = await create(ctx.platform, individual());
    expectEnvelope(await call(ctx.platform, 'PATCH', `/customers/${customer.id}`, { customerType: 'INDIVIDUAL', umaAddress: '$taken@pay.example.com' }), 409, 'UMA_ADDRESS_EXISTS');
    const own = await call(ctx.platform, 'PATCH', `/customers/${customer.id}`, { customerType: 'INDIVIDUAL', umaAddress: customer.umaAddress });
    expect(own.statusCode).toBe(200);
  });
});

describe('DELETE /customers/{customerId}', () => {
  it('answers the customer marked deleted, then 410 for delete and update', async () => {
    const customer = await create(ctx.platform, individual());
    ctx.clock.advance(1000);
    const response = await call(ctx.platform, 'DELETE', `/customers/${customer.id}`);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ ...customer, isDeleted: true, updatedAt: ctx.clock.now().toISOString() });
    expectEnvelope(await call(ctx.platform, 'DELETE', `/customers/${customer.id}`), 410, 'CUSTOMER_DELETED');
    expectEnvelope(await call(ctx.platform, 'PATCH', `/customers/${customer.id}`, { customerType: 'INDIVIDUAL', fullName: 'X' }), 410, 'CUSTOMER_DELETED');
    expect(((await call(ctx.platform, 'GET', `/customers/${customer.id}`)).json() as Body).isDeleted).toBe(true);
  });
});

describe('tenancy and unknown ids', () => {
  it("answers 404 USER_NOT_FOUND for another platform's customer and for unknown ids", async () => {
    const other = await ctx.newPlatform();
    const theirs = await create(other, individual());
    for (const id of [theirs.id, 'Customer:019542f5-b3e7-7d02-8000-000000000001']) {
      expectEnvelope(await call(ctx.platform, 'GET', `/customers/${id}`), 404, 'USER_NOT_FOUND');
      expectEnvelope(await call(ctx.platform, 'PATCH', `/customers/${id}`, { customerType: 'INDIVIDUAL', fullName: 'Mine now' }), 404, 'USER_NOT_FOUND');
      expectEnvelope(await call(ctx.platform, 'DELETE', `/customers/${id}`), 404, 'USER_NOT_FOUND');
    }
    expect(((await call(ctx.platform, 'GET', `/customers?platformCustomerId=${theirs.platformCustomerId}`)).json() as { data: Body[] }).data).toEqual([]);
    expect((await call(other, 'GET', `/customers/${theirs.id}`)).json()).toEqual(theirs);
    for (const id of ['Token:019542f5-b3e7-7d02-8000-000000000001', 'abc']) {
      expectEnvelope(await call(ctx.platform, 'GET', `/customers/${id}`), 404, 'USER_NOT_FOUND');
      expectEnvelope(await call(ctx.platform, 'PATCH', `/customers/${id}`, { customerType: 'INDIVIDUAL', fullName: 'x'.repeat(300) }), 404, 'USER_NOT_FOUND');
    }
  });

  it('lets two platforms use the same platformCustomerId and umaAddress', async () => {
    const [p1, p2] = [await ctx.newPlatform(), await ctx.newPlatform()];
    await create(p1, individual({ platformCustomerId: 'shared', umaAddress: '$shared@pay.example.com' }));
    await create(p2, individual({ platformCustomerId: 'shared', umaAddress: '$shared@pay.example.com' }));
  });
});
