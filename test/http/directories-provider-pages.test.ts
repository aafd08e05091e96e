import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDirectories, parseDirectoryFile, SHIPPED_DIRECTORY_FILE } from '../../src/modules/directories/index.js';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';

/**
 * GET /uma-providers page by page: the cursor carries the sort key (the lower-cased name), so
 * each page must start exactly after the last one, in either order and under a filter, with the
 * same totalCount on every page; and no two providers may share a key, or a page boundary between
 * them would skip one — the file loader refuses such a file.
 */
let ctx: TestContext;
let shipped: ReturnType<typeof parseDirectoryFile>;
beforeAll(async () => {
  ctx = await createTestContext();
  shipped = parseDirectoryFile(await readFile(SHIPPED_DIRECTORY_FILE, 'utf8'));
});
afterAll(() => ctx.close());

interface Listed {
  data: Array<{ name: string }>;
  hasMore: boolean;
  nextCursor?: string;
  totalCount?: number;
}

const get = (path: string) => ctx.app.inject({ method: 'GET', url: `${BASE}${path}`, headers: { authorization: ctx.platform.auth } });

async function allPages(query: string, limit: number): Promise<{ names: string[]; totals: number[] }> {
  const names: string[] = [];
  const totals: number[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 100; i++) {
    const response = await get(`/uma-providers?${query}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(response.statusCode, response.body).toBe(200);
    const page = response.json() as Listed;
    expect(page.data.length).toBeLessThanOrEqual(limit);
    names.push(...page.data.map((p) => p.name));
    totals.push(page.totalCount!);
    if (!page.hasMore) return { names, totals };
    cursor = page.nextCursor;
  }
  throw new Error('the pages never ended');
}

const provider = (name: string, regions: string[]) => ({ name, domain: `${name.toLowerCase().replace(/[^a-z0-9]/g, '')}.example.com`, supportedRegions: regions, supportedCurrencies: ['USD'] });

describe('UMA providers page by page', () => {
  it('every provider once, in name order either way, and the same totalCount on every page, filtered or not', async () => {
    const names = ['alpha Pay', 'Bravo', 'charlie', 'Delta Money', 'echo', 'Foxtrot', 'golf', 'Hotel Wallet', 'india', 'Ünicode Pay', 'zulu'];
    const file = structuredClone(shipped);
    file.version = shipped.version + 30;
    file.umaProviders = names.map((name, i) => provider(name, i % 2 === 0 ? ['US', 'NG'] : ['US']));
    expect((await loadDirectories(ctx.handle.db, ctx.clock, parseDirectoryFile(JSON.stringify(file)), 'test')).loaded).toBe(true);
    try {
      const byKey = (a: string, b: string) => (a.toLowerCase() < b.toLowerCase() ? -1 : a.toLowerCase() > b.toLowerCase() ? 1 : 0);
      const ascending = [...names].sort(byKey);
      for (const limit of [1, 2, 3]) {
        const desc = await allPages('sortOrder=desc', limit);
        expect(desc.names).toEqual([...ascending].reverse());
        expect(new Set(desc.totals)).toEqual(new Set([names.length]));
        const asc = await allPages('sortOrder=asc', limit);
        expect(asc.names).toEqual(ascending);
        expect(new Set(asc.totals)).toEqual(new Set([names.length]));
      }
      const inNigeria = ascending.filter((n) => names.indexOf(n) % 2 === 0);
      const filtered = await allPages('sortOrder=asc&countryCode=NG', 2);
      expect(filtered.names).toEqual(inNigeria);
      expect(new Set(filtered.totals)).toEqual(new Set([inNigeria.length]));
      const filteredDesc = await allPages('countryCode=NG', 2);
      expect(filteredDesc.names).toEqual([...inNigeria].reverse());
    } finally {
      expect((await loadDirectories(ctx.handle.db, ctx.clock, shipped, 'shipped', { force: true })).loaded).toBe(true);
    }
  });

  it('a file naming a provider twice (in any case), a domain twice, or a discovery twice is refused, naming each', () => {
    const file = structuredClone(shipped);
    file.version = shipped.version + 31;
    const first = file.umaProviders[0]!;
    file.umaProviders.push({ ...first, name: first.name.toUpperCase(), domain: 'other.example.com' });
    file.umaProviders.push({ ...first, name: 'Another Name Entirely', domain: first.domain.toUpperCase() });
    file.discoveries.push({ ...file.discoveries[0]! });
    expect(() => parseDirectoryFile(JSON.stringify(file))).toThrow(
      new RegExp(`umaProviders name "${first.name.toLowerCase()}" appears twice.*umaProviders domain "${first.domain.toLowerCase()}" appears twice.*discovery ".*" appears twice`),
    );
  });
});
