import Type from 'typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { fundedCustomer, paymentInput, startPayment, type Json } from '../helpers/payments.js';

/**
 * Query parameters arrive as text: a number is taken only as plain decimal digits (ajv alone took
 * whatever JavaScript's `+value` reads), a boolean only as `true` or `false`; anything else is
 * 400 INVALID_INPUT naming the parameter, on every route.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext({
    beforeReady: (app) => {
      // No route of the API takes a negative or fractional number in its query; this one does.
      app.get(
        `${BASE}/test/numerals`,
        {
          schema: {
            querystring: Type.Object(
              { offset: Type.Optional(Type.Integer({ minimum: -10, maximum: 10 })), ratio: Type.Optional(Type.Number()), name: Type.Optional(Type.String({ maxLength: 3 })) },
              { additionalProperties: false },
            ),
          },
        },
        async (request) => request.query,
      );
    },
  });
});
afterAll(() => ctx.close());

const get = (path: string) => ctx.app.inject({ method: 'GET', url: `${BASE}${path}`, headers: { authorization: ctx.platform.auth } });

function refused(response: Awaited<ReturnType<typeof get>>) {
  const body = expectEnvelope(response, 400, 'INVALID_INPUT');
  expect(body.message).toBe('The request query parameters are invalid.');
  return body.details!.errors as Array<{ field: string; constraint?: { pattern?: string }; message: string }>;
}

describe('integers in the query string', () => {
  // `+` in a query string is a space; `%2B` is the plus sign.
  it.each(['0x10', '%2B5', '+5', '1e1', '1E1', '', '%205', '5%20', '%095', '5.0', '5.', '.5', '0b1', '0o7', '1_0', '-0', '-5', '5%0A', 'Infinity', 'abc'])(
    'refuses limit=%s, naming limit',
    async (value) => {
      const errors = refused(await get(`/tokens?limit=${value}`));
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatchObject({ field: 'limit', constraint: { pattern: '^[0-9]+$' } });
      expect(errors[0]!.message).toMatch(/whole number written in plain decimal digits/);
    },
  );

  it('takes plain decimal digits, and leaves an omitted limit at its default', async () => {
    for (const [query, length] of [['?limit=1', 1], ['?limit=01', 1], ['?limit=100', 2], ['', 2]] as const) {
      const response = await get(`/tokens${query}`);
      expect(response.statusCode, response.body).toBe(200);
      expect((response.json() as { data: unknown[] }).data.length).toBeLessThanOrEqual(length);
    }
    // Range checks still speak for well-formed numbers.
    expect(refused(await get('/tokens?limit=0'))).toEqual([expect.objectContaining({ field: 'limit', message: 'must be >= 1' })]);
  });

  it('refuses a repeated parameter when any of its values is loose', async () => {
    expect(refused(await get('/tokens?limit=5&limit=0x10')).map((e) => e.field)).toEqual(['limit']);
  });

  it('holds on every route: sendingAmount on GET /exchange-rates', async () => {
    for (const value of ['0x10', '1e4', '10000.0', '-0']) {
      expect(refused(await get(`/exchange-rates?sendingAmount=${value}`)).map((e) => e.field)).toEqual(['sendingAmount']);
    }
    expect((await get('/exchange-rates?sendingAmount=10000')).statusCode).toBe(200);
  });

  it('takes a minus sign only where the schema admits negatives, and reports the loose numeral beside every other invalid parameter', async () => {
    const taken = await get('/test/numerals?offset=-5&ratio=-0.25');
    expect(taken.statusCode, taken.body).toBe(200);
    expect(taken.json()).toEqual({ offset: -5, ratio: -0.25 });
    expect(refused(await get('/test/numerals?offset=-11'))).toEqual([expect.objectContaining({ field: 'offset', message: 'must be >= -10' })]);
    for (const value of ['1e2', '.5', '5.', '0x1', '%2B1.5', '']) {
      const [error] = refused(await get(`/test/numerals?ratio=${value}`));
      expect(error).toMatchObject({ field: 'ratio', constraint: { pattern: '^-?[0-9]+(\\.[0-9]+)?$' } });
    }
    const errors = refused(await get('/test/numerals?offset=0x1&ratio=1e2&name=toolong&colour=red'));
    expect(errors.map((e) => e.field).sort()).toEqual(['colour', 'name', 'offset', 'ratio']);
    expect(errors.find((e) => e.field === 'offset')).toMatchObject({ constraint: { pattern: '^-?[0-9]+$' } });
  });
});

describe('booleans in the query string', () => {
  it.each(['1', '0', 'TRUE', 'yes', ''])('refuses isIncludingDeleted=%s, naming it', async (value) => {
    expect(refused(await get(`/customers?isIncludingDeleted=${value}`)).map((e) => e.field)).toEqual(['isIncludingDeleted']);
  });

  it('takes true and false', async () => {
    for (const value of ['true', 'false']) expect((await get(`/customers?isIncludingDeleted=${value}`)).statusCode).toBe(200);
  });
});

describe('GET /transactions account identifier filters', () => {
  it('find an account whatever the case of its uuid, as paths do; its type is spelt one way only', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 100_000);
    // One payment holds the id as ids are minted (lower case), one as a request may spell it (upper case).
    const lower = paymentInput(p, customer);
    const upperDestination = `ExternalAccount:${'019542f5-b3e7-7d02-8000-00000000abcd'.toUpperCase()}`;
    const upper = paymentInput(p, customer, { destination: { destinationType: 'ACCOUNT', accountId: upperDestination, paymentRail: 'RTP' } });
    await startPayment(ctx, lower);
    await startPayment(ctx, upper);
    const list = async (query: string) => {
      const response = await ctx.app.inject({ method: 'GET', url: `${BASE}/transactions${query}`, headers: { authorization: p.auth } });
      expect(response.statusCode, response.body).toBe(200);
      return (response.json() as { data: Json[] }).data.map((t) => t.id as string);
    };
    const [type, uuid] = customer.accountId.split(':') as [string, string];
    const both = [upper.transactionId, lower.transactionId];
    for (const name of ['accountIdentifier', 'senderAccountIdentifier']) {
      expect(await list(`?${name}=${customer.accountId}`)).toEqual(both);
      expect(await list(`?${name}=${type}:${uuid.toUpperCase()}`)).toEqual(both);
    }
    const lowerDestination = upperDestination.replace(/:(.*)$/, (_m, id: string) => `:${id.toLowerCase()}`);
    for (const name of ['accountIdentifier', 'receiverAccountIdentifier']) {
      expect(await list(`?${name}=${upperDestination}`)).toEqual([upper.transactionId]);
      expect(await list(`?${name}=${lowerDestination}`)).toEqual([upper.transactionId]);
      expect(await list(`?${name}=${(lower.destination as { accountId: string }).accountId.toUpperCase().replace('EXTERNALACCOUNT', 'ExternalAccount')}`)).toEqual([lower.transactionId]);
    }
    // The type is spelt one way only, as in paths.
    expect(await list(`?accountIdentifier=${type.toLowerCase()}:${uuid}`)).toEqual([]);
    expect(await list(`?accountIdentifier=${lowerDestination.replace('ExternalAccount', 'externalaccount')}`)).toEqual([]);
  });
});
