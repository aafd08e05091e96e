import { getSignedLnurlpRequestUrl } from '@uma-sdk/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { fundedCustomer } from '../helpers/payments.js';
import { startFakeVasp, type FakeVasp } from '../helpers/uma.js';

/**
 * UMA addresses and VASP domains no URL can name. The address rule's host names are DNS-shaped,
 * but the URL parser reads a host whose last label is a number (`999.0`, `a.1`, `a.0x`) as an
 * IPv4 address, and refuses it when it is none; it refuses invalid punycode (`xn--a.com`) too.
 * Every request to such a VASP would throw while its URL is built, so the address is refused
 * where it comes in: 400, never a 500.
 */
const UNNAMEABLE = ['999.0', '99999999999999999999', '1.2.3.4.5', '256.1.1.1', 'a.1', 'a.0x', 'xn--a.com'];
const DOMAIN = 'uma-inputs.example';

let ctx: TestContext;
let fake: FakeVasp;
const auth = () => ({ authorization: ctx.platform.auth });

beforeAll(async () => {
  // No request leaves the machine: an UMA lookup that got as far as the network fails fast.
  ctx = await createTestContext({
    webhookResolver: async (hostname) => {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    },
  });
  fake = await startFakeVasp();
  const configured = await ctx.app.inject({ method: 'PATCH', url: `${BASE}/config`, headers: auth(), payload: { umaDomain: DOMAIN } });
  expect(configured.statusCode, configured.body).toBe(200);
});
afterAll(async () => {
  await new Promise((resolve) => fake?.server.close(resolve));
  await ctx?.close();
});

describe('a domain no URL can name', () => {
  it('GET /receiver/uma/{address}: 400 INVALID_UMA_ADDRESS before any request is built', async () => {
    const sender = await fundedCustomer(ctx, ctx.platform, 0);
    for (const domain of UNNAMEABLE) {
      const response = await ctx.app.inject({ method: 'GET', url: `${BASE}/receiver/uma/${encodeURIComponent(`$bob@${domain}`)}?customerId=${sender.customerId}`, headers: auth() });
      expectEnvelope(response, 400, 'INVALID_UMA_ADDRESS');
    }
  });

  it("another VASP's lnurlp request naming such a vaspDomain: 400 INVALID_REQUEST_FORMAT", async () => {
    const created = await ctx.app.inject({ method: 'POST', url: `${BASE}/customers`, headers: auth(), payload: { customerType: 'INDIVIDUAL', platformCustomerId: 'uma-inputs-bob', fullName: 'Bob Receiver' } });
    expect(created.statusCode, created.body).toBe(201);
    const receiver = (created.json() as { umaAddress: string }).umaAddress;
    const signed = await getSignedLnurlpRequestUrl({ isSubjectToTravelRule: true, receiverAddress: receiver, senderVaspDomain: fake.domain, signingPrivateKey: fake.signing.privateKey });
    for (const domain of UNNAMEABLE) {
      const query = new URLSearchParams(signed.search);
      query.set('vaspDomain', domain);
      const response = await ctx.app.inject({ method: 'GET', url: `${signed.pathname}?${query}`, headers: { host: DOMAIN } });
      expectEnvelope(response, 400, 'INVALID_REQUEST_FORMAT');
    }
  });

  it('PATCH /config umaDomain: 400 INVALID_INPUT naming the field, the domain unchanged', async () => {
    for (const umaDomain of UNNAMEABLE) {
      const response = await ctx.app.inject({ method: 'PATCH', url: `${BASE}/config`, headers: auth(), payload: { umaDomain } });
      expectEnvelope(response, 400, 'INVALID_INPUT');
      expect((response.json() as { details: { errors: Array<{ field: string }> } }).details.errors.map((e) => e.field)).toEqual(['umaDomain']);
    }
    const config = await ctx.app.inject({ method: 'GET', url: `${BASE}/config`, headers: auth() });
    expect((config.json() as { umaDomain: string }).umaDomain).toBe(DOMAIN);
  });

  it("a customer's umaAddress, at creation and update: 400 INVALID_INPUT naming the field, nothing written", async () => {
    const created = await ctx.app.inject({ method: 'POST', url: `${BASE}/customers`, headers: auth(), payload: { customerType: 'INDIVIDUAL', fullName: 'Una Reachable' } });
    expect(created.statusCode, created.body).toBe(201);
    const customer = created.json() as { id: string; umaAddress: string };
    for (const domain of UNNAMEABLE) {
      const umaAddress = `$una@${domain}`;
      const create = await ctx.app.inject({ method: 'POST', url: `${BASE}/customers`, headers: auth(), payload: { customerType: 'INDIVIDUAL', fullName: 'Una Unreachable', umaAddress } });
      expectEnvelope(create, 400, 'INVALID_INPUT');
      expect((create.json() as { details: { errors: Array<{ field: string }> } }).details.errors.map((e) => e.field)).toEqual(['umaAddress']);
      const update = await ctx.app.inject({ method: 'PATCH', url: `${BASE}/customers/${customer.id}`, headers: auth(), payload: { customerType: 'INDIVIDUAL', umaAddress } });
      expectEnvelope(update, 400, 'INVALID_INPUT');
      const listed = await ctx.app.inject({ method: 'GET', url: `${BASE}/customers?umaAddress=${encodeURIComponent(umaAddress)}`, headers: auth() });
      expect((listed.json() as { data: unknown[] }).data).toEqual([]);
    }
    const read = await ctx.app.inject({ method: 'GET', url: `${BASE}/customers/${customer.id}`, headers: auth() });
    expect((read.json() as { umaAddress: string }).umaAddress).toBe(customer.umaAddress);
  });
});
