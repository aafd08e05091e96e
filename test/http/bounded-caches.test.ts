import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEPT_PLATFORMS } from '../../src/modules/webhooks/signing-keys.js';
import { uuidv7 } from '../../src/platform/ids.js';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';

/**
 * What a process keeps between requests stays within its bound however many distinct inputs
 * callers send: a month of hostile traffic must not grow it. The structures are private, so the
 * tests read their sizes through a cast: their size is the rule, not something a caller sees.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

interface KeptSigningKeys {
  opened: Map<string, unknown>;
  cache: { entries: Map<string, { value: unknown[] }> };
}
const kept = () => ctx.app.webhooks.keys as unknown as KeptSigningKeys;

describe('webhook signing keys kept per process', () => {
  it('a platform rotating its key without end keeps one opened key and only its published keys', async () => {
    const p = await ctx.newPlatform();
    for (let i = 0; i < 40; i++) {
      const rotated = await ctx.app.inject({ method: 'POST', url: `${BASE}/webhooks/signing-keys/rotate`, headers: { authorization: p.auth }, payload: { overlapSeconds: 0 } });
      expect(rotated.statusCode).toBe(200);
      const active = (rotated.json() as { data: Array<{ id: string; status: string }> }).data.find((k) => k.status === 'ACTIVE')!;
      // What a webhook's delivery does: the key that signs is the new one.
      expect((await ctx.app.webhooks.keys.sign(p.uuid, '{}')).keyId).toBe(active.id);
    }
    expect(kept().opened.size).toBe(1);
    expect(kept().cache.entries.get(p.uuid)!.value.length).toBeLessThanOrEqual(2);
  });

  it(`signing for more than ${KEPT_PLATFORMS} platforms keeps at most ${KEPT_PLATFORMS} opened keys`, { timeout: 120_000 }, async () => {
    const now = ctx.clock.now();
    const ids = Array.from({ length: KEPT_PLATFORMS + 50 }, () => uuidv7(now.getTime()));
    await ctx.handle.db
      .insertInto('platforms')
      .values(ids.map((id) => ({ id, name: 'Signing platform', environment: 'sandbox' as const, identifier_key_version: 1, created_at: now, updated_at: now })))
      .execute();
    for (const [i, id] of ids.entries()) {
      await ctx.app.webhooks.keys.sign(id, '{}');
      // On the embedded database every statement settles without a turn of the event loop: give
      // it one now and then, or this loop holds the worker for its whole run (tens of seconds on a
      // loaded machine), its timeout and the runner's messages unattended.
      if (i % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    expect(kept().opened.size).toBeLessThanOrEqual(KEPT_PLATFORMS);
    expect(kept().cache.entries.size).toBeLessThanOrEqual(KEPT_PLATFORMS);
    // The platform used longest ago goes first: one signing again counts as used now, so a
    // platform that comes back drops the next oldest, not the one that just signed.
    await ctx.app.webhooks.keys.sign(ids[50]!, '{}');
    await ctx.app.webhooks.keys.sign(ids[0]!, '{}');
    expect(kept().opened.has(ids[50]!)).toBe(true);
    expect(kept().opened.has(ids[51]!)).toBe(false);
    expect(kept().opened.has(ids[0]!)).toBe(true);
  });
});
