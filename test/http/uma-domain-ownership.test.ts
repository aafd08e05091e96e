import { getSignedLnurlpRequestUrl } from '@uma-sdk/core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { platformsWithUmaDomain } from '../../src/modules/config/index.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { startFakeVasp, type FakeVasp } from '../helpers/uma.js';

/**
 * Whose customer `$user@<umaDomain>` is, when a VASP asks. A production platform's umaDomain is
 * its own (PATCH /config answers 409 CONFLICT to any other platform, and the database refuses a
 * second production holder); sandbox platforms may share a domain no production platform holds.
 * A production holder receives alone for its domain, even when sandbox platforms set it before
 * it did; among sandbox platforms the one that set the domain first receives.
 */
let ctx: TestContext;
let sender: FakeVasp;

beforeAll(async () => {
  ctx = await createTestContext();
  sender = await startFakeVasp();
}, 120_000);
// The SDK stamps the messages it signs with the system time; the manual clock that judges them follows it.
beforeEach(() => ctx.clock.set(new Date()));
afterAll(async () => {
  await new Promise((resolve) => sender?.server.close(resolve));
  await ctx?.close();
});

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

const receiving = (code: string) => ({ currencyCode: code, minAmount: 1, maxAmount: 1_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] });

async function configure(p: TestPlatform, body: Record<string, unknown>): Promise<void> {
  const response = await call(p, 'PATCH', '/config', body);
  expect(response.statusCode, response.body).toBe(200);
}

async function customerAt(p: TestPlatform, umaAddress: string): Promise<void> {
  const response = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `c-${umaAddress}`, fullName: 'Alice Doe', umaAddress });
  expect(response.statusCode, response.body).toBe(201);
}

/** A signed lnurlp request for `address`, as another VASP sends it to the address's domain. */
async function askFor(address: string) {
  const url = await getSignedLnurlpRequestUrl({ isSubjectToTravelRule: true, receiverAddress: address, senderVaspDomain: sender.domain, signingPrivateKey: sender.signing.privateKey });
  return ctx.app.inject({ method: 'GET', url: url.pathname + url.search, headers: { host: address.split('@')[1]! } });
}

describe('a production umaDomain belongs to one platform', () => {
  it('no other platform, production or sandbox, can take it, in any case: 409 CONFLICT naming the field, nothing changed', async () => {
    const owner = await ctx.newPlatform('production');
    const other = await ctx.newPlatform('production');
    const sandbox = await ctx.newPlatform();
    await configure(owner, { umaDomain: 'claimed.example' });
    for (const p of [other, sandbox]) {
      const before = (await call(p, 'GET', '/config')).json();
      for (const umaDomain of ['claimed.example', 'Claimed.EXAMPLE']) {
        const refused = expectEnvelope(await call(p, 'PATCH', '/config', { umaDomain, webhookEndpoint: 'https://hooks.other.example/in' }), 409, 'CONFLICT');
        expect(refused.details).toMatchObject({ field: 'umaDomain', umaDomain });
      }
      expect((await call(p, 'GET', '/config')).json()).toEqual(before);
    }
    // The owner may set it again (another spelling too); once it lets go, another may take it.
    await configure(owner, { umaDomain: 'CLAIMED.example' });
    await configure(owner, { umaDomain: null });
    await configure(other, { umaDomain: 'claimed.example' });
  });

  it('the database refuses a second production holder written past the service', async () => {
    const owner = await ctx.newPlatform('production');
    const other = await ctx.newPlatform('production');
    await configure(owner, { umaDomain: 'direct.example' });
    await expect(
      ctx.handle.db.updateTable('platform_configs').set({ uma_domain: 'DIRECT.example', uma_domain_claimed_at: new Date() }).where('platform_id', '=', other.uuid).execute(),
    ).rejects.toMatchObject({ code: '23505' });
  });

  it('two production platforms asking for the same domain at once: one gets it, the other 409', async () => {
    const one = await ctx.newPlatform('production');
    const two = await ctx.newPlatform('production');
    const answers = await Promise.all([one, two].map((p) => call(p, 'PATCH', '/config', { umaDomain: 'race.example' })));
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 409]);
    expect(await platformsWithUmaDomain(ctx.handle.db, 'race.example')).toHaveLength(1);
  });

  it('a sandbox platform that set it first keeps it, but the production platform receives alone: a sandbox customer of the same address never takes its payments', async () => {
    // The sandbox platform is older and set the domain first (no production platform held it): before the fix, its customer answered.
    const squatter = await ctx.newPlatform();
    await configure(squatter, { umaDomain: 'bank.example', supportedCurrencies: [receiving('MXN')] });
    await customerAt(squatter, '$alice@bank.example');
    ctx.clock.advance(1_000);
    const bank = await ctx.newPlatform('production');
    await configure(bank, { umaDomain: 'bank.example', supportedCurrencies: [receiving('EUR')] });
    await customerAt(bank, '$alice@bank.example');

    // The production platform's customer is the receiver: it takes nothing from a local VASP such as this test's.
    expectEnvelope(await askFor('$alice@bank.example'), 400, 'SENDER_NOT_ACCEPTED');
    expect(await platformsWithUmaDomain(ctx.handle.db, 'BANK.example')).toEqual([bank.uuid]);
    // An address only the sandbox platform has is no one's at a production platform's domain.
    await customerAt(squatter, '$mallory@bank.example');
    expectEnvelope(await askFor('$mallory@bank.example'), 404, 'UMA_NOT_FOUND');
    // Once a production platform holds it, no other sandbox platform may set it.
    const late = await ctx.newPlatform();
    expect(expectEnvelope(await call(late, 'PATCH', '/config', { umaDomain: 'Bank.Example' }), 409, 'CONFLICT').details).toMatchObject({ field: 'umaDomain' });
  });
});

describe('sandbox platforms sharing a umaDomain', () => {
  it('the platform that set it first receives for an address several have, whatever else changes', async () => {
    const later = await ctx.newPlatform();
    const first = await ctx.newPlatform();
    await configure(first, { umaDomain: 'shared.example', supportedCurrencies: [receiving('EUR')] });
    ctx.clock.advance(1_000);
    await configure(later, { umaDomain: 'Shared.Example', supportedCurrencies: [receiving('MXN')] });
    await customerAt(later, '$carol@shared.example');
    await customerAt(first, '$carol@shared.example');
    // Setting the same domain again (another spelling) and other changes keep the first claim.
    ctx.clock.advance(1_000);
    await configure(first, { umaDomain: 'SHARED.example', supportedCurrencies: [receiving('EUR'), receiving('GBP')] });

    for (let i = 0; i < 3; i++) {
      const answer = await askFor('$carol@shared.example');
      expect(answer.statusCode, answer.body).toBe(200);
      expect((answer.json() as { currencies: Array<{ code: string }> }).currencies.map((c) => c.code)).toEqual(['EUR', 'GBP']);
    }
    expect(await platformsWithUmaDomain(ctx.handle.db, 'shared.example')).toEqual([first.uuid, later.uuid]);

    // An address only the later platform has is still its own.
    await customerAt(later, '$dan@shared.example');
    const dan = await askFor('$dan@shared.example');
    expect(dan.statusCode, dan.body).toBe(200);
    expect((dan.json() as { currencies: Array<{ code: string }> }).currencies.map((c) => c.code)).toEqual(['MXN']);

    // A platform that lets the domain go and sets it again queues behind the others.
    await configure(first, { umaDomain: null });
    ctx.clock.advance(1_000);
    await configure(first, { umaDomain: 'shared.example' });
    expect(await platformsWithUmaDomain(ctx.handle.db, 'shared.example')).toEqual([later.uuid, first.uuid]);
  });
});
