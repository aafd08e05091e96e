import { getSignedLnurlpRequestUrl } from '@uma-sdk/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { BASE, createTestContext, onPostgres, type TestContext } from '../helpers/context.js';
import { startFakeVasp, type FakeVasp } from '../helpers/uma.js';

/** The nonce store under a race: the same signed message reaching two processes at once. */
describe.runIf(onPostgres)('UMA nonces on PostgreSQL', () => {
  let ctx: TestContext;
  let second: App;
  let fake: FakeVasp;
  let receiver: string;
  const domain = 'receive.example.com';

  beforeAll(async () => {
    ctx = await createTestContext();
    second = await ctx.secondApp();
    fake = await startFakeVasp();
    const headers = { authorization: ctx.platform.auth };
    expect((await ctx.app.inject({ method: 'PATCH', url: `${BASE}/config`, headers, payload: { umaDomain: domain } })).statusCode).toBe(200);
    const created = await ctx.app.inject({ method: 'POST', url: `${BASE}/customers`, headers, payload: { customerType: 'INDIVIDUAL', platformCustomerId: 'r', fullName: 'Re Ceiver' } });
    receiver = (created.json() as { umaAddress: string }).umaAddress;
  }, 300_000);

  afterAll(async () => {
    await new Promise((resolve) => fake?.server.close(resolve));
    await ctx?.close();
  });

  it('accepts a signed lnurlp request once, whichever process it reaches first', async () => {
    ctx.clock.set(new Date()); // the SDK signs with the system time
    for (let round = 0; round < 5; round++) {
      const url = await getSignedLnurlpRequestUrl({ isSubjectToTravelRule: true, receiverAddress: receiver, senderVaspDomain: fake.domain, signingPrivateKey: fake.signing.privateKey });
      const send = (app: App) => app.inject({ method: 'GET', url: url.pathname + url.search, headers: { host: domain } });
      const answers = await Promise.all([send(ctx.app), send(second), send(ctx.app), send(second)]);
      const codes = answers.map((r) => (r.statusCode === 200 ? 'OK' : (r.json() as { code: string }).code)).sort();
      expect(codes).toEqual(['INVALID_NONCE', 'INVALID_NONCE', 'INVALID_NONCE', 'OK']);
    }
  });
});
