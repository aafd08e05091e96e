import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { cardPhotoJpeg } from '../helpers/document-files.js';
import { validSamples } from '../helpers/external-accounts.js';
import { sendDocumentForm, textParts } from '../helpers/multipart.js';
import { fundedCustomer, paymentInput, startPayment } from '../helpers/payments.js';

/**
 * The list rules of docs/conventions.md ("Lists", "Ids, times, money") as an integrator syncing
 * into its own system meets them: paging through everything while rows come and go, cursors it
 * did not get from the list, and time bounds at the edge of what answers print.
 */

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
interface ListBody {
  data: Body[];
  hasMore: boolean;
  nextCursor?: string;
  totalCount?: number;
}

const request = (p: TestPlatform, method: 'GET' | 'POST' | 'DELETE', path: string, payload?: object) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload ? { payload } : {}) });

async function list(p: TestPlatform, path: string): Promise<ListBody> {
  const response = await request(p, 'GET', path);
  expect(response.statusCode, `${path}: ${response.body}`).toBe(200);
  return response.json() as ListBody;
}

const withQuery = (path: string, query: string) => `${path}${path.includes('?') ? '&' : '?'}${query}`;
const uuidOf = (id: string) => id.slice(id.indexOf(':') + 1);
const cursorOf = (key: unknown) => Buffer.from(JSON.stringify({ k: key })).toString('base64url');

let seq = 0;
async function newCustomer(p: TestPlatform, customerType: 'INDIVIDUAL' | 'BUSINESS' = 'INDIVIDUAL'): Promise<string> {
  const body =
    customerType === 'INDIVIDUAL'
      ? { customerType, platformCustomerId: `paging-${++seq}`, fullName: 'Jane Doe', birthDate: '1990-01-15', nationality: 'US' }
      : {
          customerType,
          platformCustomerId: `paging-${++seq}`,
          businessInfo: { legalName: 'Acme LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789', entityType: 'LLC' },
        };
  const response = await request(p, 'POST', '/customers', body);
  expect(response.statusCode, response.body).toBe(201);
  return (response.json() as Body).id as string;
}

async function created(response: { statusCode: number; body: string; json(): unknown }): Promise<string> {
  expect(response.statusCode, response.body).toBe(201);
  return (response.json() as Body).id as string;
}

/** The lists paged through below, in the order they are filled (the first while the platform has few customers, each of which has accounts). */
const PAGED = [
  'customers’ internal accounts',
  'customers',
  'customers, deleted included',
  'tokens',
  'customers’ external accounts',
  'the platform’s external accounts',
  'beneficial owners',
  'documents',
  'verifications',
  'transactions',
] as const;

/** A list, how to add one of its items, and, where the API can, how to take one away. */
interface Listed {
  name: (typeof PAGED)[number];
  path: string;
  add(): Promise<string>;
  remove?(id: string): Promise<void>;
}

/** Every paginated list of one platform that the test can fill, over the API (transactions through the payment service). */
async function listsOf(p: TestPlatform): Promise<Listed[]> {
  const usd = validSamples(ctx.clock.now()).USD_ACCOUNT!;
  // A fresh account number each time, never ending in one of the sandbox's reserved suffixes (1xx).
  const accountInfo = () => ({ ...usd.accountInfo, accountNumber: `${20_000_000 + ++seq}990` });
  const business = await newCustomer(p, 'BUSINESS');
  const holder = await newCustomer(p);
  const payer = await fundedCustomer(ctx, p, 1_000_000);
  const kept = new Set([business, holder, payer.customerId]);
  const jpeg = await cardPhotoJpeg();
  const deleted = async (path: string, status: number) => {
    const response = await request(p, 'DELETE', path);
    expect(response.statusCode, response.body).toBe(status);
  };
  return [
    { name: 'customers’ internal accounts', path: '/customers/internal-accounts', add: () => newCustomer(p) },
    {
      name: 'customers',
      path: '/customers',
      add: () => newCustomer(p),
      remove: async (id) => (kept.has(id) ? undefined : deleted(`/customers/${id}`, 200)),
    },
    {
      // A deleted customer stays on this list: deleting one that already is answers 410.
      name: 'customers, deleted included',
      path: '/customers?isIncludingDeleted=true',
      add: () => newCustomer(p),
      remove: async (id) => {
        if (!kept.has(id)) expect([200, 410]).toContain((await request(p, 'DELETE', `/customers/${id}`)).statusCode);
      },
    },
    {
      name: 'tokens',
      path: '/tokens',
      add: async () => created(await request(p, 'POST', '/tokens', { name: `paging-${++seq}`, permissions: ['VIEW'] })),
      remove: async (id) => (id === p.tokenId ? undefined : deleted(`/tokens/${id}`, 204)),
    },
    {
      name: 'customers’ external accounts',
      path: '/customers/external-accounts',
      add: async () => created(await request(p, 'POST', '/customers/external-accounts', { customerId: holder, currency: usd.currency, accountInfo: accountInfo() })),
      remove: (id) => deleted(`/customers/external-accounts/${id}`, 204),
    },
    {
      name: 'the platform’s external accounts',
      path: '/platform/external-accounts',
      add: async () => created(await request(p, 'POST', '/platform/external-accounts', { currency: usd.currency, accountInfo: accountInfo() })),
      remove: (id) => deleted(`/platform/external-accounts/${id}`, 204),
    },
    {
      name: 'beneficial owners',
      path: `/beneficial-owners?customerId=${business}`,
      add: async () =>
        created(
          await request(p, 'POST', '/beneficial-owners', {
            customerId: business,
            roles: ['DIRECTOR'],
            ownershipPercentage: 0,
            personalInfo: {
              firstName: 'Maria',
              lastName: 'Garcia',
              birthDate: '1980-05-20',
              nationality: 'MX',
              address: { line1: 'Av. Reforma 1', city: 'CDMX', postalCode: '06600', country: 'MX' },
              idType: 'NON_US_TAX_ID',
              identifier: 'GAMM800520XX1',
            },
          }),
        ),
    },
    {
      name: 'documents',
      path: '/documents',
      add: async () =>
        created(
          await sendDocumentForm(ctx.app, p, 'POST', '/documents', [
            ...textParts({ documentHolder: holder, documentType: 'PASSPORT', country: 'US' }),
            { name: 'file', filename: 'passport.jpg', data: jpeg, contentType: 'image/jpeg' },
          ]),
        ),
      remove: (id) => deleted(`/documents/${id}`, 204),
    },
    {
      name: 'verifications',
      path: '/verifications',
      add: async () => {
        const response = await request(p, 'POST', '/verifications', { customerId: await newCustomer(p) });
        expect(response.statusCode, response.body).toBeLessThan(300);
        return (response.json() as Body).id as string;
      },
    },
    {
      name: 'transactions',
      path: '/transactions',
      add: async () => {
        const input = paymentInput(p, payer, { sentAmount: 100n, fees: 0n, platformFees: 0n });
        await startPayment(ctx, input);
        return input.transactionId;
      },
    },
  ];
}

/**
 * Reads a whole list `limit` items at a time; between pages, `churn` adds an item and takes away
 * the one the cursor names. Answers the ids read, checking each page's envelope.
 */
async function readAll(p: TestPlatform, listed: Listed, limit: number, churn: boolean): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; ; pages++) {
    expect(pages, `${listed.path} keeps answering pages`).toBeLessThan(300);
    const page = await list(p, withQuery(listed.path, `limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`));
    expect(page.data.length).toBeLessThanOrEqual(limit);
    seen.push(...page.data.map((item) => item.id as string));
    if (!page.hasMore) {
      expect(page).not.toHaveProperty('nextCursor');
      return seen;
    }
    expect(page.data.length, `${listed.path}: a page before the last is full`).toBe(limit);
    expect(page.nextCursor).toEqual(expect.any(String));
    if (churn) {
      await listed.add();
      await listed.remove?.(seen[seen.length - 1]!);
    }
    cursor = page.nextCursor;
  }
}

describe('paging through every list', () => {
  let p: TestPlatform;
  let lists: Listed[];
  beforeAll(async () => {
    p = await ctx.newPlatform();
    lists = await listsOf(p);
    expect(lists.map((listed) => listed.name)).toEqual([...PAGED]);
  });

  it.each(PAGED)('%s: reads each item once, newest first, with writes between pages, and ends with hasMore false and no nextCursor', async (name) => {
    const listed = lists.find((candidate) => candidate.name === name)!;
    for (let i = 0; i < 4; i++) await listed.add();
    for (const [limit, churn] of [[1, false], [2, true], [3, true]] as const) {
      const before = await readAll(p, listed, 100, false);
      expect(before.length, listed.path).toBeGreaterThan(3);
      const seen = await readAll(p, listed, limit, churn);
      // Rows added while paging are newer than the cursor: none shows up, none shifts a later page.
      expect(seen, `${listed.path} limit=${limit}${churn ? ' with writes' : ''}`).toEqual(before);
      expect([...seen].sort((a, b) => (uuidOf(a) < uuidOf(b) ? 1 : -1)), `${listed.path}: newest first`).toEqual(seen);
    }
  });

  it('answers an empty list as one page: no data, hasMore false, no nextCursor', async () => {
    const p = await ctx.newPlatform();
    const customerId = await newCustomer(p, 'BUSINESS');
    for (const path of ['/customers/external-accounts', '/platform/external-accounts', `/beneficial-owners?customerId=${customerId}`, '/documents', '/verifications', '/transactions', '/webhooks/deliveries']) {
      const page = await list(p, path);
      expect(page.data, path).toEqual([]);
      expect(page.hasMore, path).toBe(false);
      expect(page, path).not.toHaveProperty('nextCursor');
    }
    // Past the oldest item: the same empty last page.
    const below = await list(p, `/customers?cursor=${cursorOf('00000000-0000-7000-8000-000000000000')}`);
    expect(below).toEqual({ data: [], hasMore: false, totalCount: 1 });
  });
});

const EVERY_LIST = [
  '/customers',
  '/customers/internal-accounts',
  '/customers/external-accounts',
  '/platform/external-accounts',
  '/verifications',
  '/documents',
  '/tokens',
  '/transactions',
  '/webhooks/deliveries',
];

describe('cursors and limits', () => {
  it('refuses a cursor the list did not give with 400 INVALID_INPUT naming `cursor`, on every list', async () => {
    const p = ctx.platform;
    const customerId = await newCustomer(p, 'BUSINESS');
    const bad = [
      'x',
      '!!!!',
      cursorOf('not-a-uuid'),
      cursorOf(5),
      cursorOf('0194F1E2-0000-7000-8000-000000000000'),
      cursorOf('0194f1e2-0000-7000-8000-000000000000\u0000'),
      cursorOf('binance'), // a directory's key
      Buffer.from('null').toString('base64url'),
      Buffer.from('[1]').toString('base64url'),
      cursorOf('0194f1e2-0000-7000-8000-000000000000').slice(0, 20), // truncated
      'é😀',
      'a'.repeat(257),
    ];
    // customerId naming another platform lists nothing, but its cursor is still checked.
    const elsewhere = `/transactions?customerId=${(await ctx.newPlatform()).id}`;
    for (const path of [...EVERY_LIST, `/beneficial-owners?customerId=${customerId}`, elsewhere]) {
      for (const cursor of bad) {
        const response = await request(p, 'GET', withQuery(path, `cursor=${encodeURIComponent(cursor)}`));
        const body = expectEnvelope(response, 400, 'INVALID_INPUT');
        expect((body.details!.errors as Array<{ field: string }>).map((e) => e.field), `${path} cursor=${cursor}`).toEqual(['cursor']);
        // Worded as every other bad query parameter, whether the schema or the list refused it.
        expect(body.message).toBe('The request query parameters are invalid.');
      }
    }
  });

  it('refuses a repeated cursor, naming it', async () => {
    const p = await ctx.newPlatform();
    await request(p, 'POST', '/tokens', { name: 'second', permissions: ['VIEW'] });
    const cursor = (await list(p, '/tokens?limit=1')).nextCursor!;
    for (const path of EVERY_LIST) {
      const body = expectEnvelope(await request(p, 'GET', `${path}?cursor=${cursor}&cursor=${cursor}`), 400, 'INVALID_INPUT');
      expect((body.details!.errors as Array<{ field: string }>).map((e) => e.field), path).toEqual(['cursor']);
    }
  });

  it('reads a cursor as a position in the list asked for: another platform’s cursor or another list’s answers only this list’s own rows', async () => {
    const mine = await ctx.newPlatform();
    const theirs = await ctx.newPlatform();
    const mineIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      await newCustomer(theirs);
      mineIds.push(await newCustomer(mine));
    }
    const theirCursor = (await list(theirs, '/customers?limit=1')).nextCursor!;
    const read = await list(mine, `/customers?cursor=${theirCursor}`);
    expect(read.data.length).toBeGreaterThan(0);
    for (const item of read.data) expect(mineIds).toContain(item.id);
    // A token list's cursor on the customer list: a position among customers, nothing else.
    await request(mine, 'POST', '/tokens', { name: 'second', permissions: ['VIEW'] });
    const tokenCursor = (await list(mine, '/tokens?limit=1')).nextCursor!;
    for (const item of (await list(mine, `/customers?cursor=${tokenCursor}`)).data) expect(mineIds).toContain(item.id);
  });

  it('keeps a cursor a position, not a saved query: sent with other filters, it reads what those filters match below it', async () => {
    const p = await ctx.newPlatform();
    const individual1 = await newCustomer(p);
    const business1 = await newCustomer(p, 'BUSINESS');
    const individual2 = await newCustomer(p);
    const business2 = await newCustomer(p, 'BUSINESS');
    const first = await list(p, '/customers?limit=1');
    expect(first.data.map((c) => c.id)).toEqual([business2]);
    expect((await list(p, `/customers?customerType=INDIVIDUAL&cursor=${first.nextCursor}`)).data.map((c) => c.id)).toEqual([individual2, individual1]);
    expect((await list(p, `/customers?customerType=BUSINESS&cursor=${first.nextCursor}`)).data.map((c) => c.id)).toEqual([business1]);
  });

  it('takes limit 1–100 in plain digits, default 20, and refuses the rest naming `limit`', async () => {
    const p = await ctx.newPlatform();
    for (let i = 0; i < 21; i++) await newCustomer(p);
    expect((await list(p, '/customers')).data).toHaveLength(20);
    expect((await list(p, '/customers?limit=100')).data).toHaveLength(21);
    for (const path of [...EVERY_LIST, '/vasps', '/uma-providers']) {
      for (const limit of ['0', '101', '1.5', '-1', '1e1', '0x10', 'ten', '', '5&limit=6']) {
        const body = expectEnvelope(await request(p, 'GET', withQuery(path, `limit=${limit}`)), 400, 'INVALID_INPUT');
        expect((body.details!.errors as Array<{ field: string }>).map((e) => e.field), `${path} limit=${limit}`).toEqual(['limit']);
      }
      for (const limit of ['1', '100']) await list(p, withQuery(path, `limit=${limit}`));
    }
  });
});

describe('time filters', () => {
  /** Moves a row's stored instants by `micros` microseconds, as a row written by SQL's now() would hold them. */
  async function shiftStored(table: 'customers' | 'api_tokens', id: string, micros: number) {
    await sql`update ${sql.table(table)} set created_at = created_at + make_interval(secs => ${micros / 1e6}), updated_at = updated_at + make_interval(secs => ${micros / 1e6}) where id = ${uuidOf(id)}`.execute(
      ctx.handle.db,
    );
  }

  it('includes an item at both bounds of its own printed createdAt and updatedAt, whatever microseconds the database holds', async () => {
    const p = await ctx.newPlatform();
    const customerId = await newCustomer(p);
    const tokenId = await created(await request(p, 'POST', '/tokens', { name: 'timed', permissions: ['VIEW'] }));
    for (const [path, id, table] of [['/customers', customerId, 'customers'], ['/tokens', tokenId, 'api_tokens']] as const) {
      for (const micros of [0, 456, 999]) {
        if (micros) await shiftStored(table, id, micros - (micros === 999 ? 456 : 0));
        const item = (await request(p, 'GET', `${path}/${id}`)).json() as { createdAt: string; updatedAt: string };
        const next = new Date(Date.parse(item.createdAt) + 1).toISOString();
        const previous = new Date(Date.parse(item.createdAt) - 1).toISOString();
        const ids = async (query: string) => (await list(p, `${path}?${query}`)).data.map((i) => i.id);
        for (const query of [
          `createdAfter=${item.createdAt}`,
          `createdBefore=${item.createdAt}`,
          `createdAfter=${item.createdAt}&createdBefore=${item.createdAt}`,
          `updatedAfter=${item.updatedAt}&updatedBefore=${item.updatedAt}`,
          // Digits past the millisecond are dropped: the bound is the item's own millisecond.
          `createdBefore=${item.createdAt.replace('Z', '000Z')}`,
        ]) {
          expect(await ids(query), `${path} ${query} (stored +${micros} µs)`).toContain(id);
        }
        expect(await ids(`createdAfter=${next}`), `${path} after its millisecond`).not.toContain(id);
        expect(await ids(`createdBefore=${previous}`), `${path} before its millisecond`).not.toContain(id);
      }
    }
    // An item updated after it was created is found by its updatedAt, not its createdAt.
    await sql`update customers set updated_at = updated_at + interval '1 second' where id = ${uuidOf(customerId)}`.execute(ctx.handle.db);
    const customer = (await request(p, 'GET', `/customers/${customerId}`)).json() as { createdAt: string; updatedAt: string };
    const customerIds = async (query: string) => (await list(p, `/customers?${query}`)).data.map((i) => i.id);
    expect(await customerIds(`updatedAfter=${customer.updatedAt}`)).toContain(customerId);
    expect(await customerIds(`createdAfter=${customer.updatedAt}`)).not.toContain(customerId);
    expect(await customerIds(`updatedBefore=${customer.createdAt}`)).not.toContain(customerId);
  });

  it('GET /transactions: startDate and endDate at a payment’s own createdAt include it, whatever microseconds the database holds', async () => {
    const p = await ctx.newPlatform();
    const payer = await fundedCustomer(ctx, p, 10_000);
    const input = paymentInput(p, payer, { sentAmount: 100n, fees: 0n, platformFees: 0n });
    await startPayment(ctx, input);
    await sql`update transactions set created_at = created_at + interval '456 microseconds' where id = ${uuidOf(input.transactionId)}`.execute(ctx.handle.db);
    const createdAt = ((await request(p, 'GET', `/transactions/${input.transactionId}`)).json() as Body).createdAt as string;
    const ids = async (query: string) => (await list(p, `/transactions?${query}`)).data.map((t) => t.id);
    expect(await ids(`endDate=${createdAt}`)).toEqual([input.transactionId]);
    expect(await ids(`startDate=${createdAt}&endDate=${createdAt}`)).toEqual([input.transactionId]);
    expect(await ids(`endDate=${new Date(Date.parse(createdAt) - 1).toISOString()}`)).toEqual([]);
    expect(await ids(`startDate=${new Date(Date.parse(createdAt) + 1).toISOString()}`)).toEqual([]);
  });

  it('reads offsets, a space for T, a leap second and the ends of the range as docs/conventions.md says; refuses anything else naming the field', async () => {
    const p = await ctx.newPlatform();
    const customerId = await newCustomer(p);
    const createdAt = ((await request(p, 'GET', `/customers/${customerId}`)).json() as { createdAt: string }).createdAt;
    const at = new Date(createdAt);
    const inZone = (hours: number) => {
      const local = new Date(at.getTime() + hours * 3_600_000).toISOString().slice(0, 23);
      return `${local}${hours >= 0 ? '+' : '-'}${String(Math.abs(hours)).padStart(2, '0')}:00`;
    };
    const ids = async (query: string) => (await list(p, `/customers?${query}`)).data.map((c) => c.id);
    for (const bound of [inZone(2), inZone(-5), createdAt.replace('T', ' '), createdAt.toLowerCase()]) {
      expect(await ids(`createdAfter=${encodeURIComponent(bound)}&createdBefore=${encodeURIComponent(bound)}`), bound).toEqual([customerId]);
    }
    expect(await ids('createdAfter=0001-01-01T00:00:00Z&createdBefore=9999-12-31T23:59:59.999Z')).toEqual([customerId]);
    expect(await ids('createdAfter=9999-12-31T23:59:59.999Z')).toEqual([]);
    expect(await ids('createdBefore=0001-01-01T00:00:00Z')).toEqual([]);
    // A leap second is the next minute's first instant; the range can be empty.
    expect(await ids('createdBefore=2016-12-31T23:59:60Z')).toEqual([]);
    expect(await ids(`createdAfter=${encodeURIComponent(createdAt)}&createdBefore=2016-12-31T23:59:60Z`)).toEqual([]);
    for (const value of [
      createdAt.slice(0, 23), // no zone
      createdAt.slice(0, 10),
      '2016-12-31T22:59:60Z', // a leap second not at 23:59 UTC
      '0000-12-31T23:59:59Z',
      '10000-01-01T00:00:00Z',
      '0001-01-01T00:00:00+01:00', // before year 1 in UTC
      '2026-02-30T00:00:00Z',
      '2026-01-01T24:00:00Z',
      'yesterday',
    ]) {
      for (const [path, field] of [['/customers', 'createdAfter'], ['/tokens', 'updatedBefore'], ['/transactions', 'startDate']]) {
        const body = expectEnvelope(await request(p, 'GET', `${path}?${field}=${encodeURIComponent(value)}`), 400, 'INVALID_INPUT');
        expect((body.details!.errors as Array<{ field: string }>).map((e) => e.field), `${path} ${field}=${value}`).toEqual([field]);
      }
    }
  });
});

describe('totalCount', () => {
  it('is given where docs/conventions.md says it costs the same whatever the rows, and left out elsewhere', async () => {
    const p = await ctx.newPlatform();
    const customerId = await newCustomer(p);
    const platformCustomerId = ((await request(p, 'GET', `/customers/${customerId}`)).json() as Body).platformCustomerId as string;
    const now = new Date(ctx.clock.now().getTime() - 60_000).toISOString();
    const counted = [
      '/customers',
      '/customers?isIncludingDeleted=true',
      `/customers?platformCustomerId=${platformCustomerId}`,
      `/customers/internal-accounts?customerId=${customerId}`,
      `/customers/external-accounts?customerId=${customerId}`,
      `/documents?documentHolder=${customerId}`,
      `/verifications?customerId=${customerId}`,
      '/tokens',
      `/tokens?createdAfter=${now}`,
      '/transactions',
    ];
    for (const path of counted) expect(await list(p, path), path).toHaveProperty('totalCount');
    const uncounted = [
      '/customers?customerType=INDIVIDUAL',
      `/customers?createdAfter=${now}`,
      '/customers/internal-accounts?currency=USD',
      '/customers/external-accounts?currency=USD',
      '/verifications?verificationStatus=APPROVED',
      `/transactions?customerId=${customerId}`,
      `/transactions?startDate=${now}`,
      '/webhooks/deliveries?status=PENDING',
    ];
    for (const path of uncounted) expect(await list(p, path), path).not.toHaveProperty('totalCount');
    // The count is of the whole list, not of the page.
    await newCustomer(p);
    expect(await list(p, '/customers?limit=1')).toMatchObject({ totalCount: 2, hasMore: true });
  });
});
