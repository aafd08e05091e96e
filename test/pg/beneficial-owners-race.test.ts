import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../src/platform/db/database.js';
import { parseId } from '../../src/platform/ids.js';
import { BASE, createTestContext, expectEnvelope, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';
import { holdLocks, openSide, started, waitingFor, type Started } from '../helpers/lock-queue.js';

/**
 * Two owner writes racing on one business (beneficial-owners/README: the customer row is locked
 * FOR UPDATE before the ownership total is read): forced into one order by a transaction the test
 * holds open on the customer's row, both queue behind it and then each other, so the second reads
 * the first's share and the business never passes 100 %.
 */
describe.runIf(onPostgres)('concurrent beneficial-owner writes on one business', () => {
  let ctx: TestContext;
  let side: DbHandle;
  beforeAll(async () => {
    ctx = await createTestContext();
    side = await openSide(ctx.handle.db, 3);
  });
  afterAll(async () => {
    await side?.close();
    await ctx.close();
  });

  type Body = Record<string, unknown>;
  type Answer = Awaited<ReturnType<TestContext['app']['inject']>>;
  const call = (p: TestPlatform, method: 'POST' | 'PATCH' | 'GET', path: string, payload?: unknown) =>
    ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });
  const owner = (customerId: unknown, ownershipPercentage: number) => ({
    customerId,
    roles: ['UBO'],
    ownershipPercentage,
    personalInfo: { firstName: 'Ann', lastName: 'Lee', birthDate: '1975-07-07', nationality: 'US', address: { line1: '2 Elm St', postalCode: '78702', country: 'US' }, idType: 'SSN', identifier: '123-45-6789' },
  });

  async function business(p: TestPlatform): Promise<string> {
    const created = await call(p, 'POST', '/customers', { customerType: 'BUSINESS', platformCustomerId: `race-${Math.random().toString(36).slice(2)}`, businessInfo: { legalName: 'Acme LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789' } });
    expect(created.statusCode, created.body).toBe(201);
    return (created.json() as Body).id as string;
  }

  /** Holds the business's row, queues `first` then `second` behind it, releases: both answers. */
  async function queued(customerId: string, first: () => Promise<Answer>, second: () => Promise<Answer>): Promise<[Answer, Answer]> {
    const held = await holdLocks(side.db, (trx) => trx.selectFrom('customers').select('id').where('id', '=', parseId('Customer', customerId)!).forUpdate().execute());
    const a = started(first());
    let b: Started<Answer>;
    try {
      const waiting = await waitingFor(side.db, [held.pid], a);
      b = started(second());
      await waitingFor(side.db, [held.pid, waiting], b, [waiting]);
    } finally {
      await held.release();
    }
    return [await a.request, await b.request];
  }

  const total = async (p: TestPlatform, customerId: string) =>
    (((await call(p, 'GET', `/beneficial-owners?customerId=${customerId}`)).json() as Body).data as Body[]).reduce((sum, o) => sum + (o.ownershipPercentage as number), 0);

  it('two creates of 60 % each: the first is stored, the second refused 400, the total stays 60', async () => {
    const p = await ctx.newPlatform();
    const customerId = await business(p);
    const [first, second] = await queued(
      customerId,
      () => call(p, 'POST', '/beneficial-owners', owner(customerId, 60)),
      () => call(p, 'POST', '/beneficial-owners', owner(customerId, 60)),
    );
    expect(first.statusCode, first.body).toBe(201);
    expect((expectEnvelope(second, 400, 'INVALID_INPUT').details!.errors as Body[]).map((e) => e.field)).toEqual(['ownershipPercentage']);
    expect(await total(p, customerId)).toBe(60);
  });

  it('two owners of 30 % each raised to 60 % at once: one raise is stored, the other refused, the total stays 90', async () => {
    const p = await ctx.newPlatform();
    const customerId = await business(p);
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const created = await call(p, 'POST', '/beneficial-owners', owner(customerId, 30));
      expect(created.statusCode, created.body).toBe(201);
      ids.push((created.json() as Body).id as string);
    }
    const [first, second] = await queued(
      customerId,
      () => call(p, 'PATCH', `/beneficial-owners/${ids[0]}`, { ownershipPercentage: 60 }),
      () => call(p, 'PATCH', `/beneficial-owners/${ids[1]}`, { ownershipPercentage: 60 }),
    );
    expect(first.statusCode, first.body).toBe(200);
    expect((expectEnvelope(second, 400, 'INVALID_INPUT').details!.errors as Body[]).map((e) => e.field)).toEqual(['ownershipPercentage']);
    expect(await total(p, customerId)).toBe(90);
  });
});
