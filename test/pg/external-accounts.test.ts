import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, onPostgres, type TestContext } from '../helpers/context.js';
import { evmWallet } from '../helpers/external-accounts.js';

/** Races between processes on one database: duplicates, ownership proofs and challenges. */
describe.runIf(onPostgres)('external accounts on PostgreSQL', () => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx.close());

  const post = (app: TestContext['app'], path: string, payload: object) =>
    app.inject({ method: 'POST', url: `${BASE}${path}`, headers: { authorization: ctx.platform.auth }, payload });

  it('the same destination created by two processes at once: one 201, one 409', async () => {
    const other = await ctx.secondApp();
    for (let round = 0; round < 5; round++) {
      const body = { currency: 'USDC', accountInfo: { accountType: 'BASE_WALLET', address: evmWallet().address } };
      const responses = await Promise.all([post(ctx.app, '/platform/external-accounts', body), post(other, '/platform/external-accounts', body)]);
      expect(responses.map((r) => r.statusCode).sort()).toEqual([201, 409]);
    }
  });

  it('one signature sent twice at once: one 200, one 409, and exactly one STATUS_UPDATED event', async () => {
    const other = await ctx.secondApp();
    for (let round = 0; round < 5; round++) {
      const wallet = evmWallet();
      const created = await post(ctx.app, '/platform/external-accounts', { currency: 'USDC', ownershipType: 'FIRST_PARTY', accountInfo: { accountType: 'BASE_WALLET', address: wallet.address } });
      const id = (created.json() as { id: string }).id;
      const challenge = (await post(ctx.app, `/platform/external-accounts/${id}/challenge`, { method: 'WALLET_SIGNATURE' })).json() as { messageToSign: string };
      const signature = await wallet.signMessage(challenge.messageToSign);
      const responses = await Promise.all([
        post(ctx.app, `/platform/external-accounts/${id}/verify`, { signature }),
        post(other, `/platform/external-accounts/${id}/verify`, { signature }),
      ]);
      expect(responses.map((r) => r.statusCode).sort()).toEqual([200, 409]);
      const events = await ctx.handle.db.selectFrom('events').select('data').where('resource_id', '=', id).execute();
      expect(events.map((e) => (e.data as { status: string }).status)).toEqual(['ACTIVE']);
    }
  });

  it('a liveness link answered twice at once (consent and refusal): one answer counts, the other is 404, and exactly one STATUS_UPDATED event', async () => {
    const other = await ctx.secondApp();
    for (let round = 0; round < 5; round++) {
      const created = await post(ctx.app, '/platform/external-accounts', { currency: 'USDC', ownershipType: 'FIRST_PARTY', accountInfo: { accountType: 'BASE_WALLET', address: evmWallet().address } });
      const id = (created.json() as { id: string }).id;
      const issued = (await post(ctx.app, `/platform/external-accounts/${id}/challenge`, { method: 'LIVENESS' })).json() as { verificationLink: string };
      const link = new URL(issued.verificationLink).pathname;
      const responses = await Promise.all([
        ctx.app.inject({ method: 'POST', url: link, payload: { consent: true } }),
        other.inject({ method: 'POST', url: link, payload: { consent: false } }),
      ]);
      expect(responses.map((r) => r.statusCode).sort()).toEqual([200, 404]);
      const events = await ctx.handle.db.selectFrom('events').select('data').where('resource_id', '=', id).execute();
      expect(events).toHaveLength(1);
    }
  });

  it('the kept totals of both lists match the rows after creates and deletes from two processes at once', async () => {
    const platform = await ctx.newPlatform();
    const apps = [ctx.app, await ctx.secondApp()];
    const call = (i: number, method: 'POST' | 'DELETE' | 'GET', path: string, payload?: object) =>
      apps[i % 2]!.inject({ method, url: `${BASE}${path}`, headers: { authorization: platform.auth }, ...(payload ? { payload } : {}) });
    const customerId = ((await call(0, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Counted' })).json() as { id: string }).id;
    const create = (path: string, n: number, extra: object) =>
      Promise.all(
        Array.from({ length: n }, async (_, i) => {
          const response = await call(i, 'POST', path, { ...extra, currency: 'USDC', accountInfo: { accountType: 'BASE_WALLET', address: evmWallet().address } });
          expect(response.statusCode).toBe(201);
          return (response.json() as { id: string }).id;
        }),
      );
    const [platformIds, customerIds] = await Promise.all([create('/platform/external-accounts', 8, {}), create('/customers/external-accounts', 16, { customerId })]);
    const deletes = [
      ...platformIds.slice(0, 3).map((id) => `/platform/external-accounts/${id}`),
      ...customerIds.slice(0, 5).map((id) => `/customers/external-accounts/${id}`),
    ];
    const deleted = await Promise.all(deletes.map((path, i) => call(i, 'DELETE', path)));
    expect(deleted.map((r) => r.statusCode)).toEqual(Array(deletes.length).fill(204));
    const total = async (path: string) => ((await call(0, 'GET', path)).json() as { totalCount: number }).totalCount;
    expect(await total('/platform/external-accounts')).toBe(5);
    expect(await total('/customers/external-accounts')).toBe(11);
  });
});
