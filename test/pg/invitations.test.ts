import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDirectories, readDirectoryFile, SHIPPED_DIRECTORY_FILE } from '../../src/modules/directories/index.js';
import { BASE, createTestContext, expectEnvelope, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';

/**
 * Claims racing across processes on one database: the conditional UPDATE lets exactly one win,
 * the others find it claimed (400 INVITATION_ALREADY_CLAIMED), and one event is recorded.
 */
describe.runIf(onPostgres)('invitations on PostgreSQL', () => {
  let ctx: TestContext;
  let claimers: TestPlatform[];
  beforeAll(async () => {
    ctx = await createTestContext();
    claimers = [await ctx.newPlatform(), await ctx.newPlatform()];
    for (const [p, domain] of [[ctx.platform, 'a.example.com'], [claimers[0]!, 'b.example.com'], [claimers[1]!, 'c.example.com']] as const) {
      const patched = await ctx.app.inject({ method: 'PATCH', url: `${BASE}/config`, headers: { authorization: p.auth }, payload: { umaDomain: domain } });
      expect(patched.statusCode).toBe(200);
    }
    const created = await ctx.app.inject({
      method: 'POST',
      url: `${BASE}/customers`,
      headers: { authorization: ctx.platform.auth },
      payload: { customerType: 'INDIVIDUAL', platformCustomerId: 'inviter', fullName: 'Ann Lee', umaAddress: '$ann@a.example.com' },
    });
    expect(created.statusCode).toBe(201);
  });
  afterAll(() => ctx.close());

  it('many claims from two processes and two platforms at once: one 200, the rest INVITATION_ALREADY_CLAIMED', async () => {
    const apps = [ctx.app, await ctx.secondApp()];
    for (let round = 0; round < 5; round++) {
      const invitation = await ctx.app.inject({ method: 'POST', url: `${BASE}/invitations`, headers: { authorization: ctx.platform.auth }, payload: { inviterUma: '$ann@a.example.com' } });
      const { code } = invitation.json() as { code: string };
      const responses = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          apps[i % 2]!.inject({
            method: 'POST',
            url: `${BASE}/invitations/${code}/claim`,
            headers: { authorization: claimers[Math.floor(i / 2) % 2]!.auth },
            payload: { inviteeUma: `$racer${i}@example.com` },
          }),
        ),
      );
      const winners = responses.filter((r) => r.statusCode === 200);
      expect(winners).toHaveLength(1);
      for (const loser of responses.filter((r) => r.statusCode !== 200)) expectEnvelope(loser, 400, 'INVITATION_ALREADY_CLAIMED');
      const events = await ctx.handle.db.selectFrom('events').selectAll().where('resource_id', '=', code).where('type', '=', 'INVITATION.CLAIMED').execute();
      expect(events).toHaveLength(1);
      expect((events[0]!.data as { inviteeUma: string }).inviteeUma).toBe((winners[0]!.json() as { inviteeUma: string }).inviteeUma);
    }
  });

  it('two loaders of one newer directory file at once: one loads it, the other finds it loaded', async () => {
    const shipped = await readDirectoryFile(SHIPPED_DIRECTORY_FILE);
    const next = { ...shipped, version: shipped.version + 1, vasps: [{ vaspName: 'Raced Exchange' }] };
    const results = await Promise.all([
      loadDirectories(ctx.handle.db, ctx.clock, next, 'a'),
      loadDirectories(ctx.handle.db, ctx.clock, next, 'b'),
    ]);
    expect(results.map((r) => r.loaded).sort()).toEqual([false, true]);
    const vasps = await ctx.handle.db.selectFrom('directory_vasps').select('vasp_name').execute();
    expect(vasps).toEqual([{ vasp_name: 'Raced Exchange' }]);
  });
});
