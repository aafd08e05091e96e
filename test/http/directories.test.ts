import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDirectories, parseDirectoryFile, readDirectoryFile, SHIPPED_DIRECTORY_FILE } from '../../src/modules/directories/index.js';
import { MAX_FILE_BYTES } from '../../src/modules/directories/schemas.js';
import { listUmaProviders } from '../../src/modules/directories/service.js';
import type { Db } from '../../src/platform/db/database.js';
import { BASE, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { kyselyOn } from '../helpers/recording-db.js';

let ctx: TestContext;
let shipped: ReturnType<typeof parseDirectoryFile>;
beforeAll(async () => {
  ctx = await createTestContext();
  shipped = parseDirectoryFile(await readFile(SHIPPED_DIRECTORY_FILE, 'utf8'));
});
afterAll(() => ctx.close());

const get = (path: string) => ctx.app.inject({ method: 'GET', url: `${BASE}${path}`, headers: { authorization: ctx.platform.auth } });

interface Listed<T> {
  data: T[];
  hasMore: boolean;
  nextCursor?: string;
  totalCount?: number;
}

async function pages<T>(path: string): Promise<T[]> {
  const all: T[] = [];
  let cursor: string | undefined;
  for (;;) {
    const response = await get(`${path}${path.includes('?') ? '&' : '?'}limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(response.statusCode).toBe(200);
    const page = response.json() as Listed<T>;
    all.push(...page.data);
    if (!page.hasMore) {
      expect(page.nextCursor).toBeUndefined();
      return all;
    }
    cursor = page.nextCursor;
  }
}

/**
 * A handle on `db` that runs the first statement it is given, then `between`, and every later
 * statement only once `between` is done: the interleaving of a concurrent write that timing alone
 * would not promise.
 */
function interleaving(db: Db, between: () => Promise<unknown>): Db {
  let first: Promise<unknown> | undefined;
  return kyselyOn(async <R,>(query: CompiledQuery) => {
    if (first) {
      await first;
      return db.executeQuery<R>(query);
    }
    const ran = db.executeQuery<R>(query);
    first = ran.then(between);
    await first;
    return ran;
  }, 'an interleaving handle');
}

/** A directory file built from the shipped one, with another version and some entries changed. */
function variant(version: number, change: (file: ReturnType<typeof parseDirectoryFile>) => void) {
  const file = structuredClone(shipped);
  file.version = version;
  change(file);
  return file;
}

describe('the shipped directory', () => {
  it('is loaded at start, names its sources, and says its version', async () => {
    expect(shipped.sources.vasps.length).toBeGreaterThan(0);
    expect(shipped.sources.discoveries.length).toBeGreaterThan(0);
    const row = await ctx.handle.db.selectFrom('directory_versions').selectAll().executeTakeFirstOrThrow();
    expect(row).toMatchObject({ version: shipped.version, origin: 'shipped', published_on: shipped.publishedOn });
  });

  it('is not loaded again by another start (idempotent by version)', async () => {
    const before = await ctx.handle.db.selectFrom('directory_versions').selectAll().executeTakeFirstOrThrow();
    const result = await loadDirectories(ctx.handle.db, ctx.clock, shipped, 'shipped');
    expect(result).toEqual({ loaded: false, version: shipped.version, previousVersion: shipped.version });
    const after = await ctx.handle.db.selectFrom('directory_versions').selectAll().executeTakeFirstOrThrow();
    expect(after.loaded_at.getTime()).toBe(before.loaded_at.getTime());
  });
});

describe('GET /vasps', () => {
  it('lists every VASP of the file once, by name, page by page, without totalCount', async () => {
    const first = (await get('/vasps?limit=5')).json() as Listed<{ vaspName: string; url?: string }>;
    expect(first.data).toHaveLength(5);
    expect(first.hasMore).toBe(true);
    expect(first).not.toHaveProperty('totalCount');
    const all = await pages<{ vaspName: string; url?: string }>('/vasps');
    const names = all.map((v) => v.vaspName);
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1))).toEqual(names);
    expect(names.sort()).toEqual(shipped.vasps.map((v) => v.vaspName).sort());
    expect(all.find((v) => v.vaspName === 'Kraken')).toEqual({ vaspName: 'Kraken', url: 'https://www.kraken.com' });
  });

  it('refuses a cursor it did not issue and a bad limit', async () => {
    const bad = expectEnvelope(await get('/vasps?cursor=nonsense'), 400, 'INVALID_INPUT');
    expect(bad.details).toMatchObject({ errors: [{ field: 'cursor' }] });
    // A well-formed cursor whose key holds U+0000, which PostgreSQL cannot compare with (was 500).
    const nul = Buffer.from(JSON.stringify({ k: 'a\u0000b' })).toString('base64url');
    for (const list of ['/vasps', '/uma-providers']) {
      expect(expectEnvelope(await get(`${list}?cursor=${nul}`), 400, 'INVALID_INPUT').details).toMatchObject({ errors: [{ field: 'cursor' }] });
    }
    expectEnvelope(await get('/vasps?limit=0'), 400, 'INVALID_INPUT');
    expectEnvelope(await get('/vasps?limit=101'), 400, 'INVALID_INPUT');
    expectEnvelope(await get('/vasps?country=US'), 400, 'INVALID_INPUT');
  });

  it('needs authentication', async () => {
    const response = await ctx.app.inject({ method: 'GET', url: `${BASE}/vasps` });
    expectEnvelope(response, 401, 'UNAUTHORIZED');
  });
});

describe('GET /uma-providers', () => {
  it('lists providers with their currencies, filtered by country and currency, with totalCount', async () => {
    const response = await get('/uma-providers');
    expect(response.statusCode).toBe(200);
    const body = response.json() as Listed<{ name: string; domain: string; supportedRegions: string[]; supportedCurrencies: Array<{ code: string }>; allowListStatus: boolean }>;
    expect(body.totalCount).toBe(shipped.umaProviders.length);
    const names = body.data.map((p) => p.name);
    expect(names).toEqual([...names].sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? 1 : -1)));
    const lightspark = body.data.find((p) => p.domain === 'uma.me')!;
    expect(lightspark.supportedCurrencies[0]).toEqual({ code: 'USD', name: 'US Dollar', symbol: '$', decimals: 2 });
    expect(lightspark.allowListStatus).toBe(true);

    const ng = (await get('/uma-providers?countryCode=NG')).json() as typeof body;
    expect(ng.data.length).toBeGreaterThan(0);
    expect(ng.totalCount).toBe(ng.data.length);
    for (const p of ng.data) expect(p.supportedRegions).toContain('NG');
    const ngn = (await get('/uma-providers?currencyCode=NGN&countryCode=NG')).json() as typeof body;
    for (const p of ngn.data) expect(p.supportedCurrencies.map((c) => c.code)).toContain('NGN');
    const none = (await get('/uma-providers?countryCode=AQ')).json() as typeof body;
    expect(none).toEqual({ data: [], hasMore: false, totalCount: 0 });
  });

  it('reads a page and its totalCount from one version of the directory, even when a reload commits between its statements', async () => {
    const providers = (count: number) =>
      Array.from({ length: count }, (_, i) => ({ name: `Provider ${i}`, domain: `p${i}.example.com`, supportedRegions: ['US'], supportedCurrencies: ['USD'] }));
    const before = variant(shipped.version + 20, (f) => (f.umaProviders = providers(3)));
    const after = variant(shipped.version + 21, (f) => (f.umaProviders = providers(5)));
    expect((await loadDirectories(ctx.handle.db, ctx.clock, before, 'test')).loaded).toBe(true);
    try {
      const reload = async () => expect((await loadDirectories(ctx.handle.db, ctx.clock, after, 'test')).loaded).toBe(true);
      const page = await listUmaProviders(interleaving(ctx.handle.db, reload), { limit: 100 });
      // The reload ran: the next read is of the new version.
      expect(((await get('/uma-providers')).json() as Listed<unknown>).totalCount).toBe(5);
      // The page is the version before it, whole: the count is the page's (was 5 beside a page of 3).
      expect(page.data.map((p) => p.name)).toEqual(['Provider 2', 'Provider 1', 'Provider 0']);
      expect(page.totalCount).toBe(3);
    } finally {
      expect((await loadDirectories(ctx.handle.db, ctx.clock, shipped, 'shipped', { force: true })).loaded).toBe(true);
    }
  });

  it('filters by currency as well as by country, each alone and together, counting what matches', async () => {
    const next = variant(shipped.version + 50, (f) => {
      f.umaProviders = [
        { name: 'Dollars Only', domain: 'usd.example.com', supportedRegions: ['US'], supportedCurrencies: ['USD'] },
        { name: 'Dollars And Euros', domain: 'both.example.com', supportedRegions: ['US', 'DE'], supportedCurrencies: ['USD', 'EUR'] },
        { name: 'Euros Only', domain: 'eur.example.com', supportedRegions: ['DE'], supportedCurrencies: ['EUR'] },
      ];
    });
    expect((await loadDirectories(ctx.handle.db, ctx.clock, next, 'test')).loaded).toBe(true);
    try {
      const names = async (query: string) => {
        const body = (await get(`/uma-providers?sortOrder=asc&${query}`)).json() as Listed<{ name: string }>;
        expect(body.totalCount, query).toBe(body.data.length);
        return body.data.map((p) => p.name);
      };
      expect(await names('currencyCode=EUR')).toEqual(['Dollars And Euros', 'Euros Only']);
      expect(await names('currencyCode=USD&countryCode=US')).toEqual(['Dollars And Euros', 'Dollars Only']);
      expect(await names('currencyCode=EUR&countryCode=US')).toEqual(['Dollars And Euros']);
      expect(await names('countryCode=DE')).toEqual(['Dollars And Euros', 'Euros Only']);
      expect(await names('currencyCode=MXN')).toEqual([]);
    } finally {
      expect((await loadDirectories(ctx.handle.db, ctx.clock, shipped, 'shipped', { force: true })).loaded).toBe(true);
    }
  });

  it('leaves out a currency code the currency registry does not know, rather than failing the list', async () => {
    const next = variant(shipped.version + 40, (f) => {
      f.umaProviders = [{ name: 'Stale Provider', domain: 'stale.example.com', supportedRegions: ['US'], supportedCurrencies: ['USD'] }];
    });
    expect((await loadDirectories(ctx.handle.db, ctx.clock, next, 'test')).loaded).toBe(true);
    try {
      // As a file loaded by an older package would hold a code a later one stopped knowing.
      await ctx.handle.db.updateTable('directory_uma_providers').set({ supported_currencies: sql`'["USD","XYZ"]'::jsonb` as never }).execute();
      const response = await get('/uma-providers');
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json() as Listed<{ name: string; supportedCurrencies: Array<{ code: string }> }>;
      expect(body.data.map((p) => [p.name, p.supportedCurrencies.map((c) => c.code)])).toEqual([['Stale Provider', ['USD']]]);
    } finally {
      expect((await loadDirectories(ctx.handle.db, ctx.clock, shipped, 'shipped', { force: true })).loaded).toBe(true);
    }
  });

  it('refuses unknown countries and currencies', async () => {
    expectEnvelope(await get('/uma-providers?countryCode=ZZ'), 400, 'INVALID_INPUT');
    expectEnvelope(await get('/uma-providers?currencyCode=ABC'), 400, 'INVALID_CURRENCY');
    expectEnvelope(await get('/uma-providers?sortOrder=up'), 400, 'INVALID_INPUT');
  });
});

describe('GET /discoveries', () => {
  it('returns the institutions of a corridor, or all of them without filters', async () => {
    const ph = (await get('/discoveries?country=PH&currency=PHP')).json() as { data: Array<Record<string, string>> };
    expect(ph.data).toContainEqual({ bankName: 'BDO Unibank', displayName: 'BDO Unibank', country: 'PH', currency: 'PHP' });
    expect(ph.data).toContainEqual({ bankName: 'GCash', displayName: 'GCash (G-Xchange)', country: 'PH', currency: 'PHP' });
    for (const d of ph.data) expect(d).toMatchObject({ country: 'PH', currency: 'PHP' });
    const eur = (await get('/discoveries?currency=EUR')).json() as typeof ph;
    expect(new Set(eur.data.map((d) => d.country))).toEqual(new Set(['DE', 'ES', 'FR']));
    const all = (await get('/discoveries')).json() as typeof ph;
    expect(all.data).toHaveLength(shipped.discoveries.length);
    expect(Object.keys(all)).toEqual(['data']);
    expect((await get('/discoveries?country=AQ')).json()).toEqual({ data: [] });
  });

  it('orders them by country, then currency, then bank name byte by byte', async () => {
    const all = ((await get('/discoveries')).json() as { data: Array<Record<string, string>> }).data;
    expect(new Set(all.map((d) => d.country)).size).toBeGreaterThan(1);
    const bytes = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
    const sorted = [...all].sort((a, b) => bytes(a.country!, b.country!) || bytes(a.currency!, b.currency!) || bytes(a.bankName!, b.bankName!));
    expect(all).toEqual(sorted);
  });

  it('refuses malformed filters', async () => {
    expectEnvelope(await get('/discoveries?country=ph'), 400, 'INVALID_INPUT');
    expectEnvelope(await get('/discoveries?currency=XYZ'), 400, 'INVALID_CURRENCY');
  });
});

describe('updating the directory without a release', () => {
  it('a higher version replaces everything at once; a lower one changes nothing unless forced', async () => {
    const next = variant(shipped.version + 1, (f) => {
      f.vasps = [{ vaspName: 'Example Exchange', url: 'https://exchange.example' }];
      f.discoveries = [{ bankName: 'Example Bank', displayName: 'Example Bank PLC', country: 'PH', currency: 'PHP' }];
    });
    expect(await loadDirectories(ctx.handle.db, ctx.clock, next, '/etc/corridor/directories.json')).toEqual({
      loaded: true,
      version: shipped.version + 1,
      previousVersion: shipped.version,
    });
    expect(((await get('/vasps')).json() as Listed<unknown>).data).toEqual([{ vaspName: 'Example Exchange', url: 'https://exchange.example' }]);
    expect(((await get('/discoveries?country=PH')).json() as Listed<unknown>).data).toEqual([
      { bankName: 'Example Bank', displayName: 'Example Bank PLC', country: 'PH', currency: 'PHP' },
    ]);

    // The shipped file is older now: a start leaves the operator's file in place.
    expect((await loadDirectories(ctx.handle.db, ctx.clock, shipped, 'shipped')).loaded).toBe(false);
    expect(((await get('/vasps')).json() as Listed<unknown>).data).toHaveLength(1);

    // --force puts it back.
    expect((await loadDirectories(ctx.handle.db, ctx.clock, shipped, 'shipped', { force: true })).loaded).toBe(true);
    expect(((await get('/vasps?limit=100')).json() as Listed<unknown>).data).toHaveLength(shipped.vasps.length);
  });

  it('pages past the longest names a file may hold, whatever their characters', async () => {
    // The cursor carrying such a name was refused: 400 on the cursor the list itself had issued
    // (past 256 characters of cursor, and past 200 UTF-16 units of name once lower-cased).
    const long = ['v'.repeat(200), '\u{1D401}'.repeat(200), 'İ'.repeat(200), 'Ä'.repeat(200)];
    const next = variant(shipped.version + 10, (f) => {
      f.vasps = [...long, 'Kraken', 'Binance'].map((vaspName) => ({ vaspName }));
    });
    expect(parseDirectoryFile(JSON.stringify(next)).vasps).toHaveLength(6);
    expect((await loadDirectories(ctx.handle.db, ctx.clock, next, 'test')).loaded).toBe(true);
    const listed: string[] = [];
    let cursor: string | undefined;
    do {
      const response = await get(`/vasps?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(response.statusCode, response.body).toBe(200);
      const page = response.json() as Listed<{ vaspName: string }>;
      listed.push(...page.data.map((v) => v.vaspName));
      cursor = page.nextCursor;
    } while (cursor);
    expect(listed.sort()).toEqual(next.vasps.map((v) => v.vaspName).sort());
    expect((await loadDirectories(ctx.handle.db, ctx.clock, shipped, 'shipped', { force: true })).loaded).toBe(true);
  });

  it('--force loads a higher version as well as a lower one, but not the version already loaded', async () => {
    const next = variant(shipped.version + 30, (f) => {
      f.vasps = [{ vaspName: 'Forced Exchange' }];
    });
    try {
      expect(await loadDirectories(ctx.handle.db, ctx.clock, next, 'test', { force: true })).toEqual({ loaded: true, version: shipped.version + 30, previousVersion: shipped.version });
      expect(((await get('/vasps')).json() as Listed<unknown>).data).toEqual([{ vaspName: 'Forced Exchange' }]);
      const before = await ctx.handle.db.selectFrom('directory_versions').selectAll().executeTakeFirstOrThrow();
      ctx.clock.advance(1_000);
      expect(await loadDirectories(ctx.handle.db, ctx.clock, next, 'again', { force: true })).toEqual({ loaded: false, version: shipped.version + 30, previousVersion: shipped.version + 30 });
      expect(await ctx.handle.db.selectFrom('directory_versions').selectAll().executeTakeFirstOrThrow()).toEqual(before);
    } finally {
      expect((await loadDirectories(ctx.handle.db, ctx.clock, shipped, 'shipped', { force: true })).loaded).toBe(true);
    }
  });

  it('takes a file of exactly 4 MiB, read or given, and refuses one byte more', async () => {
    const text = JSON.stringify(shipped);
    const exact = text + ' '.repeat(MAX_FILE_BYTES - Buffer.byteLength(text, 'utf8'));
    expect(Buffer.byteLength(exact, 'utf8')).toBe(MAX_FILE_BYTES);
    expect(parseDirectoryFile(exact).version).toBe(shipped.version);
    expect(() => parseDirectoryFile(`${exact} `)).toThrow(/larger than/);
    const dir = await mkdtemp(join(tmpdir(), 'directories-'));
    try {
      await writeFile(join(dir, 'exact.json'), exact);
      expect((await readDirectoryFile(join(dir, 'exact.json'))).version).toBe(shipped.version);
      await writeFile(join(dir, 'over.json'), `${exact} `);
      await expect(readDirectoryFile(join(dir, 'over.json'))).rejects.toThrow(/larger than/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses a bad file before touching the database, naming every problem', () => {
    expect(() => parseDirectoryFile('{')).toThrow(/not JSON/);
    const doubled = variant(99, (f) => f.vasps.push({ vaspName: f.vasps[0]!.vaspName.toUpperCase() }));
    expect(() => parseDirectoryFile(JSON.stringify(doubled))).toThrow(/appears twice/);
    const badCodes = variant(99, (f) => {
      f.discoveries.push({ bankName: 'X', displayName: 'X', country: 'ZZ', currency: 'PHP' });
      f.umaProviders[0]!.supportedCurrencies = ['NOPE'];
    });
    expect(() => parseDirectoryFile(JSON.stringify(badCodes))).toThrow(/discoveries\.\d+\.country.*umaProviders\.0\.supportedCurrencies|umaProviders\.0\.supportedCurrencies.*discoveries/);
    expect(() => parseDirectoryFile(' '.repeat(4 * 1024 * 1024 + 1))).toThrow(/larger than/);
  });
});
