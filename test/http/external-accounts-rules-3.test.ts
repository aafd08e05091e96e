import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { bech32, createBase58check } from '@scure/base';
import bolt11 from 'bolt11';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpInstitutionDirectory } from '../../src/modules/external-accounts/beneficiary.js';
import { matchNames } from '../../src/modules/external-accounts/name-match.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { bolt11Invoice, mobileOf, person, validSamples } from '../helpers/external-accounts.js';

/**
 * Account rules that no other test pins down (found by a mutation audit of the external-account
 * validation): each case is a real account the rule must take, or a wrong one it must refuse.
 */

type Body = Record<string, any>;
type Envelope = { code: string; details?: { errors?: Array<{ field: string; message: string }> } };

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const post = (p: TestPlatform, body: Body) => ctx.app.inject({ method: 'POST', url: `${BASE}/platform/external-accounts`, headers: { authorization: p.auth }, payload: body });
const fields = (response: { json(): unknown }) => ((response.json() as Envelope).details?.errors ?? []).map((e) => e.field).sort();

describe('account identifiers', () => {
  it('verifies the check digits of a CNPJ taxId, as of a CPF', async () => {
    const p = await ctx.newPlatform();
    const brl = (taxId: string) => ({ currency: 'BRL', accountInfo: { accountType: 'BRL_ACCOUNT', pixKey: `${taxId}@example.com`, pixKeyType: 'EMAIL', taxId, beneficiary: person('Ana Souza') } });
    const valid = '11222333000181';
    const refused = await post(p, brl('11222333000182'));
    expectEnvelope(refused, 400, 'INVALID_BANK_ACCOUNT');
    expect(fields(refused)).toEqual(['accountInfo.taxId']);
    expect((await post(p, brl(valid))).statusCode).toBe(201);
  });

  it('takes a PIX e-mail key with a 64-character local part, the most an address has, and refuses 65', async () => {
    const p = await ctx.newPlatform();
    const brl = (pixKey: string) => ({ currency: 'BRL', accountInfo: { accountType: 'BRL_ACCOUNT', pixKey, pixKeyType: 'EMAIL', taxId: '52998224725', beneficiary: person('Ana Souza') } });
    const refused = await post(p, brl(`${'a'.repeat(65)}@ex.com`));
    expectEnvelope(refused, 400, 'INVALID_BANK_ACCOUNT');
    expect(fields(refused)).toEqual(['accountInfo.pixKey']);
    expect((await post(p, brl(`${'a'.repeat(64)}@ex.com`))).statusCode).toBe(201);
  });

  it('refuses a Tron address whose 21 bytes do not start 0x41, however good its base58check', async () => {
    const base58check = createBase58check((bytes: Uint8Array) => createHash('sha256').update(bytes).digest());
    const address = base58check.encode(Uint8Array.from([0x42, ...Buffer.from('52908400098527886e0f7030069857d2e4169ee7', 'hex')]));
    expect(address).toHaveLength(34);
    const refused = await post(ctx.platform, { currency: 'USDT', accountInfo: { accountType: 'TRON_WALLET', address } });
    expectEnvelope(refused, 400, 'INVALID_BANK_ACCOUNT');
    expect(fields(refused)).toEqual(['accountInfo.address']);
  });

  it('refuses a BOLT12 offer of well-formed records that names neither an issuer key nor a blinded path', async () => {
    const description = Buffer.from('corridor test');
    const tlv = Buffer.concat([Buffer.from([10, description.length]), description]);
    const offer = `lno1${bech32.toWords(tlv).map((w) => 'qpzry9x8gf2tvdw0s3jn54khce6mua7l'[w]).join('')}`;
    const refused = await post(ctx.platform, { currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', bolt12: offer } });
    expectEnvelope(refused, 400, 'INVALID_BANK_ACCOUNT');
    expect((refused.json() as Envelope).details?.errors).toEqual([{ field: 'accountInfo.bolt12', message: 'is not a usable BOLT12 offer (no issuer key or path)' }]);
  });

  it('refuses a BOLT11 invoice whose on-chain fallback is no valid address (a version-0 witness program of 25 bytes)', async () => {
    const encoded = bolt11.encode({
      satoshis: 1000,
      timestamp: Math.floor(ctx.clock.now().getTime() / 1000),
      tags: [
        { tagName: 'payment_hash', data: randomBytes(32).toString('hex') },
        { tagName: 'payment_secret', data: randomBytes(32).toString('hex') },
        { tagName: 'description', data: 'corridor test' },
        { tagName: 'fallback_address', data: { code: 0, address: '', addressHash: 'ab'.repeat(25) } },
      ],
    });
    const invoice = bolt11.sign(encoded, randomBytes(32)).paymentRequest!;
    const refused = await post(ctx.platform, { currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', invoice } });
    expectEnvelope(refused, 400, 'INVALID_BANK_ACCOUNT');
    expect((refused.json() as Envelope).details?.errors).toEqual([{ field: 'accountInfo.invoice', message: 'carries an on-chain fallback address that is not valid for its network' }]);
  });

  it('treats a BOLT11 invoice as expired at the very second its expiry names', async () => {
    const now = new Date(Math.ceil(ctx.clock.now().getTime() / 1000) * 1000 + 1000);
    ctx.clock.set(now);
    const atExpiry = bolt11Invoice(new Date(now.getTime() - 3600_000));
    const refused = await post(ctx.platform, { currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', invoice: atExpiry } });
    expect(((refused.json() as Envelope).details?.errors ?? [])[0]).toMatchObject({ field: 'accountInfo.invoice', message: 'has expired' });
    expect((await post(ctx.platform, { currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', invoice: bolt11Invoice(new Date(now.getTime() - 3599_000)) } })).statusCode).toBe(201);
  });
});

describe('per-country and per-type requirements', () => {
  it('pays XOF mobile money in Togo, with a Togolese mobile number', async () => {
    const xof = { currency: 'XOF', accountInfo: { accountType: 'XOF_ACCOUNT', phoneNumber: mobileOf('TG'), provider: 'Moov Africa', region: 'TG', beneficiary: person() } };
    const created = await post(ctx.platform, xof);
    expect(created.statusCode, created.body).toBe(201);
    const refused = await post(ctx.platform, { ...xof, accountInfo: { ...xof.accountInfo, phoneNumber: mobileOf('SN') } });
    expectEnvelope(refused, 400, 'INVALID_BANK_ACCOUNT');
    expect(fields(refused)).toEqual(['accountInfo.phoneNumber']);
  });

  it("requires a EUR individual's countryOfResidence, and a wallet owner's", async () => {
    const { EUR_ACCOUNT: eur } = validSamples(ctx.clock.now());
    const noResidence = await post(ctx.platform, { ...eur, accountInfo: { ...eur!.accountInfo, beneficiary: person() } });
    expectEnvelope(noResidence, 400, 'INVALID_INPUT');
    expect(fields(noResidence)).toEqual(['accountInfo.beneficiary.countryOfResidence']);
    const { BASE_WALLET: wallet } = validSamples(ctx.clock.now());
    const owner = await post(ctx.platform, { ...wallet, ownershipType: 'THIRD_PARTY', accountInfo: { ...wallet!.accountInfo, beneficiary: person('Bo Chen') } });
    expectEnvelope(owner, 400, 'INVALID_INPUT');
    expect(fields(owner)).toEqual(['accountInfo.beneficiary.countryOfResidence']);
  });

  it("refuses countries that leave out the account's own country", async () => {
    const { GBP_ACCOUNT: gbp } = validSamples(ctx.clock.now());
    const refused = await post(ctx.platform, { ...gbp, accountInfo: { ...gbp!.accountInfo, countries: ['IE'] } });
    expectEnvelope(refused, 400, 'INVALID_INPUT');
    expect(fields(refused)).toEqual(['accountInfo.countries']);
  });

  it('takes one Lightning destination, not two', async () => {
    const refused = await post(ctx.platform, { currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', invoice: bolt11Invoice(ctx.clock.now()), lightningAddress: 'ann@wallet.example.com' } });
    expectEnvelope(refused, 400, 'INVALID_INPUT');
    expect(fields(refused)).toEqual(['accountInfo']);
  });

  it('pays a SWIFT account in fiat only', async () => {
    const { SWIFT_ACCOUNT: swift } = validSamples(ctx.clock.now());
    const refused = await post(ctx.platform, { ...swift, currency: 'USDC' });
    expectEnvelope(refused, 400, 'INVALID_INPUT');
    expect(fields(refused)).toEqual(['currency']);
  });
});

describe('name match threshold', () => {
  it('is a close match from token sort ratio 85 up, and not below: the boundary is the documented one, not only the constant', () => {
    // token sort ratios: "john doe" / "john dow" 88, "jon smith" / "john smyth" 84.
    expect(matchNames('John Doe', 'JOHN DOW', 'INDIVIDUAL')).toBe('PARTIAL_MATCH');
    expect(matchNames('Jon Smith', 'JOHN SMYTH', 'INDIVIDUAL')).toBe('NOT_MATCHED');
  });
});

describe('a name-check provider over HTTP', () => {
  it('answers a holder name of at most 255 characters; a longer one is outside the contract (503)', async () => {
    let holderName = '';
    const server = createServer((request, response) => {
      request.resume();
      request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ holderName })));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as { port: number };
      const directory = new HttpInstitutionDirectory({ url: `http://127.0.0.1:${port}/names`, timeoutMs: 5000 });
      const query = { accountType: 'GBP_ACCOUNT', currency: 'GBP', account: { sortCode: '200000', accountNumber: '55779911' }, beneficiaryType: 'INDIVIDUAL' as const, name: 'John Doe' };
      holderName = 'D'.repeat(255);
      expect(await directory.holderName(query)).toBe(holderName);
      holderName = 'D'.repeat(256);
      await expect(directory.holderName(query)).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      holderName = '';
      await expect(directory.holderName(query)).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
