import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BeneficiaryQuery, InstitutionDirectory } from '../../src/modules/external-accounts/beneficiary.js';
import { AppError } from '../../src/platform/errors.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { bolt11Invoice, person } from '../helpers/external-accounts.js';

/**
 * A retry with the same Idempotency-Key answers the stored response: the account checks and the
 * name-check provider ran once, for the first request, and do not run again.
 */

/** The production name-check provider: counts its calls, answers a name or fails as told. */
const provider = {
  calls: [] as BeneficiaryQuery[],
  down: false,
};
const productionInstitution: InstitutionDirectory = {
  async holderName(query) {
    provider.calls.push(query);
    if (provider.down) throw new AppError('SERVICE_UNAVAILABLE', 'The beneficiary verification provider did not answer (stub down); no account was created. Retry later.');
    return 'DOE JOHN';
  },
};

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({ institutions: { production: productionInstitution } });
});
afterAll(() => ctx.close());

const call = (p: TestPlatform, path: string, payload: unknown, key?: string) =>
  ctx.app.inject({
    method: 'POST',
    url: `${BASE}${path}`,
    headers: { authorization: p.auth, ...(key ? { 'idempotency-key': key } : {}) },
    payload: payload as object,
  });

const usd = () => ({
  currency: 'USD',
  accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: `${String(Date.now()).slice(-10)}${Math.floor(Math.random() * 1e5)}9`, routingNumber: '021000021', beneficiary: person('John Doe') },
});

describe('replaying a create with the same Idempotency-Key', () => {
  it('answers the stored 201 after the invoice it checked has expired (platform path), without checking it again', async () => {
    const p = await ctx.newPlatform();
    const body = { currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', invoice: bolt11Invoice(ctx.clock.now()) } };
    const first = await call(p, '/platform/external-accounts', body, 'ln-1');
    expect(first.statusCode, first.body).toBe(201);
    // Two hours later (the invoice expired after one), on the platform's test clock and on the shared clock.
    expect((await ctx.app.inject({ method: 'POST', url: `${BASE}/sandbox/clock/advance`, headers: { authorization: p.auth }, payload: { seconds: 7200 } })).statusCode).toBe(200);
    ctx.clock.advance(2 * 3600_000);
    const replay = await call(p, '/platform/external-accounts', body, 'ln-1');
    expect(replay.statusCode, replay.body).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(first.json());
    // A new key is a new request: the invoice is checked, and has expired.
    const fresh = await call(p, '/platform/external-accounts', body, 'ln-2');
    expect(expectEnvelope(fresh, 400, 'INVALID_BANK_ACCOUNT').details).toMatchObject({ errors: [{ field: 'accountInfo.invoice', message: 'has expired' }] });
  });

  it('answers the stored 201 on the customer path too', async () => {
    const p = await ctx.newPlatform();
    const customer = await ctx.app.inject({
      method: 'POST',
      url: `${BASE}/customers`,
      headers: { authorization: p.auth },
      payload: { customerType: 'INDIVIDUAL', platformCustomerId: 'replay-1', fullName: 'Ann Lee' },
    });
    const customerId = (customer.json() as { id: string }).id;
    const body = { customerId, currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', invoice: bolt11Invoice(ctx.clock.now()) } };
    const first = await call(p, '/customers/external-accounts', body, 'ln-1');
    expect(first.statusCode, first.body).toBe(201);
    ctx.clock.advance(2 * 3600_000);
    const replay = await call(p, '/customers/external-accounts', body, 'ln-1');
    expect(replay.statusCode, replay.body).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(first.json());
  });

  it('does not ask the production name-check provider again, and answers the stored 201 while it is down', async () => {
    const production = await ctx.newPlatform('production');
    const body = usd();
    provider.calls.length = 0;
    provider.down = false;
    const first = await call(production, '/platform/external-accounts', body, 'acct-1');
    expect(first.statusCode, first.body).toBe(201);
    expect(first.json()).toMatchObject({ beneficiaryVerificationStatus: 'MATCHED' });
    expect(provider.calls).toHaveLength(1);

    const replay = await call(production, '/platform/external-accounts', body, 'acct-1');
    expect(replay.statusCode, replay.body).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(first.json());
    expect(provider.calls).toHaveLength(1);

    provider.down = true;
    const whileDown = await call(production, '/platform/external-accounts', body, 'acct-1');
    expect(whileDown.statusCode, whileDown.body).toBe(201);
    expect(whileDown.json()).toEqual(first.json());
    expect(provider.calls).toHaveLength(1);

    // Without a stored answer the provider is asked (and, down, nothing is created).
    expectEnvelope(await call(production, '/platform/external-accounts', usd(), 'acct-2'), 503, 'SERVICE_UNAVAILABLE');
    expect(provider.calls).toHaveLength(2);
    provider.down = false;
    // The same key with another request is still 409, without a provider call.
    expectEnvelope(await call(production, '/platform/external-accounts', usd(), 'acct-1'), 409, 'CONFLICT');
    expect(provider.calls).toHaveLength(2);
  });
});
