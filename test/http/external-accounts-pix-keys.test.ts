import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { person } from '../helpers/external-accounts.js';

/**
 * A PIX key is what the rail is told to pay, so it is kept only in the one form the PIX
 * directory (DICT) registers: a PHONE key is +55 and the digits, nothing else. A spelling
 * libphonenumber merely tolerates ("tel:" URIs, spaces, an extension, full-width digits) is
 * refused, not stored: stored, it would reach the rail unusable and, compared as given
 * (identity.ts), let the same key in twice.
 */

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
const post = (p: TestPlatform, body: Body) => ctx.app.inject({ method: 'POST', url: `${BASE}/platform/external-accounts`, headers: { authorization: p.auth }, payload: body });
const list = async (p: TestPlatform) =>
  (await ctx.app.inject({ method: 'GET', url: `${BASE}/platform/external-accounts`, headers: { authorization: p.auth } })).json() as { totalCount: number };

const pix = (pixKeyType: string, pixKey: string) => ({
  currency: 'BRL',
  accountInfo: { accountType: 'BRL_ACCOUNT', pixKey, pixKeyType, taxId: '52998224725', paymentRails: ['PIX'], beneficiary: person('Ana Souza') },
});

describe('PIX keys of every type', () => {
  it('a PHONE key is +55 and digits only: other spellings of a valid mobile are 400 INVALID_BANK_ACCOUNT on accountInfo.pixKey and nothing is created', async () => {
    const p = await ctx.newPlatform();
    for (const spelling of ['+55 11 98765-4321', '+55 (11) 98765-4321', 'tel:+5511987654321', '+5511987654321;ext=1', '+55 11 98765 4321 x12', '+5511９８７６５４３２１']) {
      const refused = expectEnvelope(await post(p, pix('PHONE', spelling)), 400, 'INVALID_BANK_ACCOUNT');
      expect((refused.details?.errors as Array<{ field: string }>).map((e) => e.field), spelling).toEqual(['accountInfo.pixKey']);
    }
    expect((await list(p)).totalCount).toBe(0);
    expect((await post(p, pix('PHONE', '+5511987654321'))).statusCode).toBe(201);
    expectEnvelope(await post(p, pix('PHONE', '+5511987654321')), 409, 'CONFLICT');
    // A landline is not a PIX phone key.
    expectEnvelope(await post(p, pix('PHONE', '+551133334444')), 400, 'INVALID_BANK_ACCOUNT');
  });

  it('CPF, CNPJ and RANDOM keys: check digits verified, no punctuation (a CNPJ may be alphanumeric, in capitals); a RANDOM key is one account in either case', async () => {
    const p = await ctx.newPlatform();
    expect((await post(p, pix('CPF', '52998224725'))).statusCode).toBe(201);
    expectEnvelope(await post(p, pix('CPF', '529.982.247-25')), 400, 'INVALID_BANK_ACCOUNT');
    expectEnvelope(await post(p, pix('CPF', '52998224726')), 400, 'INVALID_BANK_ACCOUNT');
    expect((await post(p, pix('CNPJ', '11222333000181'))).statusCode).toBe(201);
    expectEnvelope(await post(p, pix('CNPJ', '11.222.333/0001-81')), 400, 'INVALID_BANK_ACCOUNT');
    // An alphanumeric CNPJ (issued since July 2026; the Receita Federal's example), in capitals only, as issued.
    expect((await post(p, pix('CNPJ', '12ABC34501DE35'))).statusCode).toBe(201);
    expectEnvelope(await post(p, pix('CNPJ', '12abc34501de35')), 400, 'INVALID_BANK_ACCOUNT');
    expectEnvelope(await post(p, pix('CNPJ', '12ABC34501DE36')), 400, 'INVALID_BANK_ACCOUNT');
    expectEnvelope(await post(p, pix('RANDOM', '123e4567-e89b-12d3-a456-426614174000')), 400, 'INVALID_BANK_ACCOUNT');
    expect((await post(p, pix('RANDOM', '123e4567-e89b-42d3-a456-426614174000'))).statusCode).toBe(201);
    expectEnvelope(await post(p, pix('RANDOM', '123E4567-E89B-42D3-A456-426614174000')), 409, 'CONFLICT');
    expect((await list(p)).totalCount).toBe(4);
  });
});
