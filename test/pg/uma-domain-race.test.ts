import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updatePlatformConfig } from '../../src/modules/config/service.js';
import { createTestContext, onPostgres, type TestContext } from '../helpers/context.js';

/**
 * Two production platforms claiming one umaDomain in overlapping transactions: the second passes
 * the service's check (the first has not committed), waits on the unique index, and loses there
 * once the first commits. It answers 409 CONFLICT, as the check would have, not a 500.
 */
describe.runIf(onPostgres)('a production umaDomain claimed twice at once, on PostgreSQL', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx?.close());

  it('the second claim loses on the unique index and answers CONFLICT', async () => {
    const claim = (platformId: string) => (trx: Parameters<typeof updatePlatformConfig>[0]) =>
      updatePlatformConfig(trx, ctx.clock, { platformId, environment: 'production' }, { umaDomain: 'race.example' }, { guardSandboxWebhooks: false });
    const one = await ctx.newPlatform('production');
    const two = await ctx.newPlatform('production');
    let commit!: () => void;
    const committing = new Promise<void>((resolve) => (commit = resolve));
    let claimed!: () => void;
    const firstClaimed = new Promise<void>((resolve) => (claimed = resolve));
    const first = ctx.handle.db.transaction().execute(async (trx) => {
      await claim(one.uuid)(trx);
      claimed();
      await committing;
    });
    await firstClaimed;
    const second = ctx.handle.db.transaction().execute((trx) => claim(two.uuid)(trx));
    // Awaited from now: the refusal may come in before the first's commit is seen here.
    const refused = expect(second).rejects.toMatchObject({ code: 'CONFLICT', details: { field: 'umaDomain', umaDomain: 'race.example' } });
    // The second has passed its check and waits on the index when the first commits.
    await new Promise((resolve) => setTimeout(resolve, 300));
    commit();
    await first;
    await refused;
  });
});
