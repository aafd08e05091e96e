import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';
import { holdLocks, openSide, waiterBehind } from '../helpers/lock-queue.js';

/**
 * A platform keeps a token that can manage tokens: deleting its last MANAGE token would leave
 * no token able to create or delete one over the API again (a token gives only what it holds).
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const del = (caller: TestPlatform, tokenId: string) => ctx.app.inject({ method: 'DELETE', url: `${BASE}/tokens/${tokenId}`, headers: { authorization: caller.auth } });
const readConfig = (caller: TestPlatform) => ctx.app.inject({ method: 'GET', url: `${BASE}/config`, headers: { authorization: caller.auth } });

describe('DELETE /tokens/{tokenId}: the last MANAGE token', () => {
  it('cannot be deleted, by itself or by another token; it keeps working and nothing is recorded', async () => {
    const p = await ctx.newPlatform();
    const viewer = await ctx.newToken(p, ['VIEW', 'TRANSACT']);
    const refused = expectEnvelope(await del(p, p.tokenId), 400, 'INVALID_INPUT');
    expect(refused.details).toEqual({ reason: 'LAST_MANAGE_TOKEN' });
    expect((await readConfig(p)).statusCode).toBe(200);
    const events = await ctx.handle.db.selectFrom('events').select('type').where('resource_id', '=', p.tokenId).execute();
    expect(events.map((e) => e.type)).toEqual(['API_TOKEN.CREATED']);
    // Tokens without MANAGE go as before.
    expect((await del(p, viewer.tokenId)).statusCode).toBe(204);
    expectEnvelope(await readConfig(viewer), 401, 'UNAUTHORIZED');
  });

  it('lets a token delete itself while another MANAGE token remains; the deleted one stops at once', async () => {
    const p = await ctx.newPlatform();
    const second = await ctx.newToken(p, ['MANAGE']);
    expect((await del(second, second.tokenId)).statusCode).toBe(204);
    expectEnvelope(await readConfig(second), 401, 'UNAUTHORIZED');
    expectEnvelope(await del(p, p.tokenId), 400, 'INVALID_INPUT');
  });

  it('of two deletes at once of the last two MANAGE tokens, lets exactly one through', async () => {
    const p = await ctx.newPlatform();
    const second = await ctx.newToken(p, ['VIEW', 'MANAGE']);
    const answers = await Promise.all([del(p, second.tokenId), del(second, p.tokenId)]);
    // The other is refused: 400, or 401 when its caller was the token already deleted.
    expect(answers.filter((a) => a.statusCode === 204)).toHaveLength(1);
    expect(answers.filter((a) => a.statusCode === 400 || a.statusCode === 401)).toHaveLength(1);
    const live = await ctx.handle.db.selectFrom('api_tokens').select('id').where('platform_id', '=', p.uuid).where('deleted_at', 'is', null).execute();
    expect(live).toHaveLength(1);
  });

  it('answers 404 for another platform’s last MANAGE token, as for any token not the caller’s', async () => {
    const other = await ctx.newPlatform();
    expectEnvelope(await del(ctx.platform, other.tokenId), 404, 'TOKEN_NOT_FOUND');
  });

  it.runIf(onPostgres)('of two deletes of the last two MANAGE tokens queued behind one lock, lets exactly one through (PostgreSQL)', async () => {
    // Both deletes are made to wait behind a side transaction holding the platform's token rows,
    // then released together: each must read what the other left, not the two live tokens both
    // saw before either deleted (which would let each delete the other's, leaving none).
    const p = await ctx.newPlatform();
    const second = await ctx.newToken(p, ['VIEW', 'MANAGE']);
    const side = await openSide(ctx.handle.db, 2);
    const held = await holdLocks(side.db, (trx) => trx.selectFrom('api_tokens').select('id').where('platform_id', '=', p.uuid).forUpdate().execute());
    try {
      const first = del(p, second.tokenId);
      const firstPid = await waiterBehind(side.db, [held.pid]);
      const other = del(second, p.tokenId);
      await waiterBehind(side.db, [held.pid, firstPid], { besides: [firstPid] });
      await held.release();
      const answers = await Promise.all([first, other]);
      expect(answers.filter((a) => a.statusCode === 204), answers.map((a) => a.body).join('\n')).toHaveLength(1);
      expect(answers.filter((a) => a.statusCode === 400 || a.statusCode === 401)).toHaveLength(1);
      const live = await ctx.handle.db.selectFrom('api_tokens').select('id').where('platform_id', '=', p.uuid).where('deleted_at', 'is', null).execute();
      expect(live).toHaveLength(1);
    } finally {
      await held.release();
      await side.close();
    }
  });
});
