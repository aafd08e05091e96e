import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listPublishedSigningKeys, PUBLISHABLE_GENERATIONS } from '../../src/modules/webhooks/repo.js';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';
import { recordingDb } from '../helpers/recording-db.js';

/**
 * Every rotation leaves a retired key row behind, and a process reads a platform's keys on every
 * miss of its cache (each rotation's NOTIFY makes one in every process): that read takes only the
 * newest generations, however many times the platform rotated, and publishes what reading every
 * row and keeping the unretired ones did.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const ROTATIONS = 50;

interface PlanNode {
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

/** Rows of webhook_signing_keys a plan's scans read: those they returned and those their filters dropped. */
function keyRowsRead(node: PlanNode): number {
  const own = node['Relation Name'] === 'webhook_signing_keys' ? (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0)) * node['Actual Loops'] : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + keyRowsRead(child), 0);
}

describe('reading a platform’s published signing keys', () => {
  it(`after ${ROTATIONS} rotations reads at most ${PUBLISHABLE_GENERATIONS} rows and publishes every unretired key`, { timeout: 60_000 }, async () => {
    const p = await ctx.newPlatform();
    const rotate = (overlapSeconds: number) => ctx.app.inject({ method: 'POST', url: `${BASE}/webhooks/signing-keys/rotate`, headers: { authorization: p.auth }, payload: { overlapSeconds } });
    const publishedIds = async () => ((await ctx.app.inject({ method: 'GET', url: `${BASE}/webhooks/signing-keys`, headers: { authorization: p.auth } })).json() as { data: Array<{ id: string }> }).data.map((k) => k.id);
    /** What was published before: every row of the platform's, less the retired ones. */
    const unretiredIds = async () => {
      const now = ctx.clock.now().getTime();
      const rows = await ctx.handle.db.selectFrom('webhook_signing_keys').selectAll().where('platform_id', '=', p.uuid).orderBy('generation').execute();
      return rows.filter((r) => !r.retires_at || r.retires_at.getTime() > now).map((r) => `WebhookSigningKey:${r.id}`);
    };
    for (let i = 0; i < ROTATIONS; i++) {
      // Switching at once, with an overlap, and at once during an overlap (which retires both keys).
      const overlapSeconds = i % 3 === 1 ? 60 : 0;
      expect((await rotate(overlapSeconds)).statusCode).toBe(200);
      if (overlapSeconds) {
        expect(await publishedIds()).toEqual(await unretiredIds());
        expect((await rotate(60)).statusCode).toBe(409);
        ctx.clock.advance(30_000);
      }
      expect(await publishedIds()).toEqual(await unretiredIds());
    }
    // The last rotation overlaps, once the one before has ended: the signing key and the next one are published.
    ctx.clock.advance(60_000);
    expect((await rotate(3600)).statusCode).toBe(200);
    expect(await publishedIds()).toHaveLength(2);
    expect(await publishedIds()).toEqual(await unretiredIds());
    ctx.clock.advance(3600_000);
    expect(await publishedIds()).toEqual(await unretiredIds());
    expect(await publishedIds()).toHaveLength(1);

    const recording = recordingDb();
    await listPublishedSigningKeys(recording.db, p.uuid, ctx.clock.now());
    expect(recording.sent).toHaveLength(1);
    const [statement] = recording.sent;
    // Planned with statistics, as a table autovacuum has analysed is.
    await sql`analyze webhook_signing_keys`.execute(ctx.handle.db);
    const explained = await ctx.handle.db.executeQuery<{ 'QUERY PLAN': unknown }>(CompiledQuery.raw(`explain (analyze, format json) ${statement!.sql}`, [...statement!.parameters]));
    const json = explained.rows[0]!['QUERY PLAN'];
    const [{ Plan: plan }] = (typeof json === 'string' ? JSON.parse(json) : json) as [{ Plan: PlanNode }];
    const rowsRead = keyRowsRead(plan);
    expect(rowsRead).toBeGreaterThan(0);
    expect(rowsRead).toBeLessThanOrEqual(PUBLISHABLE_GENERATIONS);
  });
});
