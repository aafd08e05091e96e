import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDirectories, readDirectoryFile, SHIPPED_DIRECTORY_FILE } from '../../src/modules/directories/index.js';
import { BASE, createTestContext, expectEnvelope, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';

/**
 * Claims (and cancels) racing across processes on one database: the conditional UPDATE lets
 * exactly one win, the others find what won (400 INVITATION_ALREADY_CLAIMED or
 * INVITATION_CANCELLED; 200 for a copy of the winning claim), and one event is recorded. A claim refused after its UPDATE (another
 * environment's invitation) rolls back and leaves the row to the claims queued behind it.
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

  it('copies of one claim from two processes at once all answer 200 with one invitation, one event; other claims racing them are INVITATION_ALREADY_CLAIMED', async () => {
    const apps = [ctx.app, await ctx.secondApp()];
    for (let round = 0; round < 5; round++) {
      const invitation = await ctx.app.inject({ method: 'POST', url: `${BASE}/invitations`, headers: { authorization: ctx.platform.auth }, payload: { inviterUma: '$ann@a.example.com' } });
      const { code } = invitation.json() as { code: string };
      // Even i: copies of claimers[0]'s claim for $twin; odd i: claimers[1] for the same address, or claimers[0] for another.
      const claims = Array.from({ length: 10 }, (_, i) =>
        i % 2 === 0 ? { claimer: claimers[0]!, inviteeUma: '$twin@b.example.com' } : i % 4 === 1 ? { claimer: claimers[1]!, inviteeUma: '$twin@b.example.com' } : { claimer: claimers[0]!, inviteeUma: `$other${i}@b.example.com` },
      );
      const responses = await Promise.all(
        claims.map(({ claimer, inviteeUma }, i) => apps[i % 2]!.inject({ method: 'POST', url: `${BASE}/invitations/${code}/claim`, headers: { authorization: claimer.auth }, payload: { inviteeUma } })),
      );
      const winners = responses.filter((r) => r.statusCode === 200);
      expect(new Set(winners.map((r) => r.body)).size).toBe(1);
      const won = winners[0]!.json() as { inviteeUma: string };
      const events = await ctx.handle.db.selectFrom('events').selectAll().where('resource_id', '=', code).where('type', '=', 'INVITATION.CLAIMED').execute();
      expect(events).toHaveLength(1);
      expect(events[0]!.data).toEqual(won);
      const winner = await ctx.handle.db.selectFrom('invitations').select('claimed_by_platform_id').where('code', '=', code).executeTakeFirstOrThrow();
      // Exactly the copies of the winning claim answer 200.
      claims.forEach(({ claimer, inviteeUma }, i) => {
        if (claimer.uuid === winner.claimed_by_platform_id && inviteeUma === won.inviteeUma) expect(responses[i]!.statusCode, responses[i]!.body).toBe(200);
        else expectEnvelope(responses[i]!, 400, 'INVITATION_ALREADY_CLAIMED');
      });
    }
  });

  it('claims and cancels racing from two processes: exactly one wins, the rest are refused by what won, and only its event is recorded', async () => {
    const apps = [ctx.app, await ctx.secondApp()];
    for (let round = 0; round < 6; round++) {
      const created = await ctx.app.inject({ method: 'POST', url: `${BASE}/invitations`, headers: { authorization: ctx.platform.auth }, payload: { inviterUma: '$ann@a.example.com' } });
      const { code } = created.json() as { code: string };
      const responses = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          i % 2 === 0
            ? apps[(i / 2) % 2]!.inject({ method: 'POST', url: `${BASE}/invitations/${code}/claim`, headers: { authorization: claimers[0]!.auth }, payload: { inviteeUma: `$racer${i}@b.example.com` } })
            : apps[((i - 1) / 2) % 2]!.inject({ method: 'POST', url: `${BASE}/invitations/${code}/cancel`, headers: { authorization: ctx.platform.auth } }),
        ),
      );
      const winners = responses.filter((r) => r.statusCode === 200);
      expect(winners).toHaveLength(1);
      const won = winners[0]!.json() as { status: 'CLAIMED' | 'CANCELLED' };
      for (const loser of responses.filter((r) => r.statusCode !== 200)) expectEnvelope(loser, 400, won.status === 'CLAIMED' ? 'INVITATION_ALREADY_CLAIMED' : 'INVITATION_CANCELLED');
      const stored = await ctx.app.inject({ method: 'GET', url: `${BASE}/invitations/${code}`, headers: { authorization: claimers[1]!.auth } });
      expect(stored.json()).toEqual(won);
      const events = await ctx.handle.db.selectFrom('events').select('type').where('resource_id', '=', code).orderBy('id').execute();
      expect(events.map((e) => e.type)).toEqual(['INVITATION.CREATED', won.status === 'CLAIMED' ? 'INVITATION.CLAIMED' : 'INVITATION.CANCELLED']);
    }
  });

  it("claims from the other environment racing real ones are 404 and neither win nor keep the winner from winning", async () => {
    const production = await ctx.newPlatform('production');
    const patched = await ctx.app.inject({ method: 'PATCH', url: `${BASE}/config`, headers: { authorization: production.auth }, payload: { umaDomain: 'prod.example.com' } });
    expect(patched.statusCode).toBe(200);
    const apps = [ctx.app, await ctx.secondApp()];
    for (let round = 0; round < 4; round++) {
      const created = await ctx.app.inject({ method: 'POST', url: `${BASE}/invitations`, headers: { authorization: ctx.platform.auth }, payload: { inviterUma: '$ann@a.example.com' } });
      const { code } = created.json() as { code: string };
      const responses = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          apps[i % 2]!.inject({
            method: 'POST',
            url: `${BASE}/invitations/${code}/claim`,
            headers: { authorization: (i < 4 ? production : claimers[0]!).auth },
            payload: { inviteeUma: `$racer${i}@example.com` },
          }),
        ),
      );
      for (const outsider of responses.slice(0, 4)) expectEnvelope(outsider, 404, 'INVITATION_NOT_FOUND');
      const own = responses.slice(4);
      expect(own.filter((r) => r.statusCode === 200)).toHaveLength(1);
      for (const loser of own.filter((r) => r.statusCode !== 200)) expectEnvelope(loser, 400, 'INVITATION_ALREADY_CLAIMED');
      const events = await ctx.handle.db.selectFrom('events').selectAll().where('resource_id', '=', code).where('type', '=', 'INVITATION.CLAIMED').execute();
      expect(events).toHaveLength(1);
      expect((events[0]!.data as { inviteeUma: string }).inviteeUma).toMatch(/^\$racer[4-7]@example\.com$/);
    }
  });

  it('a claim waits for a deletion of the inviter in progress, and then refuses: INVITATION_CANCELLED', async () => {
    const created = await ctx.app.inject({
      method: 'POST',
      url: `${BASE}/customers`,
      headers: { authorization: ctx.platform.auth },
      payload: { customerType: 'INDIVIDUAL', platformCustomerId: 'leaving', fullName: 'Lee Ving', umaAddress: '$leaving@a.example.com' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const customerUuid = (created.json() as { id: string }).id.slice('Customer:'.length);
    const invitation = await ctx.app.inject({ method: 'POST', url: `${BASE}/invitations`, headers: { authorization: ctx.platform.auth }, payload: { inviterUma: '$leaving@a.example.com' } });
    const { code } = invitation.json() as { code: string };
    // What DELETE /customers/{id} does (create-update.ts deleteCustomer): lock the row, mark it deleted; the claim runs meanwhile.
    let claim: Promise<{ statusCode: number; json(): unknown }> | undefined;
    await ctx.handle.db.transaction().execute(async (trx) => {
      await sql`select id from customers where id = ${customerUuid} for update`.execute(trx);
      await sql`update customers set deleted_at = now(), updated_at = now() where id = ${customerUuid}`.execute(trx);
      claim = ctx.app.inject({ method: 'POST', url: `${BASE}/invitations/${code}/claim`, headers: { authorization: claimers[0]!.auth }, payload: { inviteeUma: '$zoe@b.example.com' } });
      await new Promise((resolve) => setTimeout(resolve, 1000));
    });
    expect(expectEnvelope(await claim!, 400, 'INVITATION_CANCELLED').details).toEqual({ reason: 'INVITER_DELETED' });
    const events = await ctx.handle.db.selectFrom('events').select('type').where('resource_id', '=', code).execute();
    expect(events.map((e) => e.type)).toEqual(['INVITATION.CREATED']);
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
