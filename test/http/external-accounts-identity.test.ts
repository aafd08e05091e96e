import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { bech32m } from '@scure/base';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityOf } from '../../src/modules/external-accounts/identity.js';
import { VARIANT_BY_TYPE } from '../../src/modules/external-accounts/variants.js';
import { parseId } from '../../src/platform/ids.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { bolt11Invoice, bolt12Offer, person, sparkWallet } from '../helpers/external-accounts.js';

/**
 * The same destination twice for one owner is 409 CONFLICT, whatever the spelling: identifying
 * values are compared in their canonical form (identity.ts), and migration 0037 moved the
 * accounts created before to the same rule.
 */

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
const post = (p: TestPlatform, body: Body, path = '/platform/external-accounts') =>
  ctx.app.inject({ method: 'POST', url: `${BASE}${path}`, headers: { authorization: p.auth }, payload: body });

async function create(p: TestPlatform, body: Body, path?: string): Promise<{ id: string }> {
  const response = await post(p, body, path);
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as { id: string };
}

const pix = (pixKey: string) => ({
  currency: 'BRL',
  accountInfo: { accountType: 'BRL_ACCOUNT', pixKey, pixKeyType: 'EMAIL', taxId: '52998224725', beneficiary: person('Ana Souza') },
});
const lightningAddress = (address: string) => ({ currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', lightningAddress: address } });
const spark = (address: string) => ({ currency: 'BTC', accountInfo: { accountType: 'SPARK_WALLET', address } });
const kes = (provider: string, phoneNumber: string) => ({
  currency: 'KES',
  accountInfo: { accountType: 'KES_ACCOUNT', phoneNumber, provider, beneficiary: person('Wanjiru Kamau') },
});
/** The Spark address of the same identity key under another prefix (`sp`: legacy mainnet). */
const withPrefix = (address: string, prefix: string) => bech32m.encode(prefix, bech32m.decode(address as `${string}1${string}`, 200).words, 200);

/** A Kenyan mobile number not used before in this file. */
let phoneSeq = 0;
const kenyanMobile = () => `+2547${String(10_000_000 + ++phoneSeq).slice(-8)}`;

describe('one destination, spelled two ways', () => {
  it('is one account: e-mail PIX keys and lightning addresses without case, Spark addresses by identity key, providers without case or punctuation', async () => {
    const p = await ctx.newPlatform();
    const wallet = sparkWallet('spark');
    const phone = kenyanMobile();
    const pairs: Array<[Body, Body]> = [
      [pix('ana@example.com'), pix('ANA@EXAMPLE.COM')],
      [lightningAddress('ann@wallet.example.com'), lightningAddress('ann@WALLET.EXAMPLE.COM')],
      [spark(wallet.address), spark(withPrefix(wallet.address, 'sp'))],
      [kes('M-Pesa', phone), kes('mpesa', phone)],
    ];
    for (const [first, second] of pairs) {
      await create(p, first);
      expectEnvelope(await post(p, second), 409, 'CONFLICT');
    }
    // Still distinct: another provider for the number, and the same key on another Spark network.
    await create(p, kes('Airtel Money', phone));
    await create(p, spark(withPrefix(wallet.address, 'sparkt')));
    // Another owner may hold the same destination.
    const customer = await ctx.app.inject({
      method: 'POST',
      url: `${BASE}/customers`,
      headers: { authorization: p.auth },
      payload: { customerType: 'INDIVIDUAL', platformCustomerId: 'identity-1', fullName: 'Ana Souza' },
    });
    const customerId = (customer.json() as { id: string }).id;
    await create(p, { customerId, ...pix('ANA@example.com') }, '/customers/external-accounts');
    expectEnvelope(await post(p, { customerId, ...pix('ana@EXAMPLE.com') }, '/customers/external-accounts'), 409, 'CONFLICT');
  });

  it('compares bank names without case or punctuation, a BIC with and without its XXX branch, invoices and offers without case', async () => {
    const p = await ctx.newPlatform();
    const ngn = (bankName: string) => ({ currency: 'NGN', accountInfo: { accountType: 'NGN_ACCOUNT', accountNumber: '0123456789', bankName, beneficiary: person() } });
    const sgd = (swiftCode: string) => ({ currency: 'SGD', accountInfo: { accountType: 'SGD_ACCOUNT', accountNumber: '0123456789', swiftCode, beneficiary: person() } });
    const invoice = bolt11Invoice(ctx.clock.now());
    const offer = bolt12Offer();
    const pairs: Array<[Body, Body]> = [
      [ngn('Access Bank'), ngn('ACCESS-BANK')],
      [sgd('DBSSSGSG'), sgd('DBSSSGSGXXX')],
      [{ currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', invoice } }, { currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', invoice: invoice.toUpperCase() } }],
      [{ currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', bolt12: offer } }, { currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', bolt12: `${offer.slice(0, 20)}+ ${offer.slice(20).toUpperCase()}` } }],
    ];
    for (const [first, second] of pairs) {
      await create(p, first);
      expectEnvelope(await post(p, second), 409, 'CONFLICT');
    }
    await create(p, sgd('DBSSSGSGABC'));
  });
});

/** The hash as accounts were stored before canonical forms: raw values, EVM addresses in lower case. */
function oldIdentity(accountType: string, info: Record<string, unknown>): string {
  const variant = VARIANT_BY_TYPE.get(accountType)!;
  const values = variant.identity.map((name) => {
    const value = info[name];
    if (typeof value !== 'string') return null;
    return variant.kind === 'wallet' && /^0x/i.test(value) ? value.toLowerCase() : value;
  });
  return createHash('sha256').update(JSON.stringify([accountType, ...values])).digest('hex');
}

type Row = { id: string; account_type: string; account_info: Record<string, unknown>; identity_sha256: string };
const rowOf = async (id: string): Promise<Row> =>
  (await ctx.handle.db.selectFrom('external_accounts').select(['id', 'account_type', 'account_info', 'identity_sha256']).where('id', '=', parseId('ExternalAccount', id) ?? id).executeTakeFirstOrThrow()) as Row;
const canonicalIdentity = (row: Row) => identityOf({ variant: VARIANT_BY_TYPE.get(row.account_type)!, info: row.account_info as never, rails: [] });
/** Puts an account back as it was stored before canonical forms. */
async function storeTheOldWay(id: string): Promise<Row> {
  const row = await rowOf(id);
  await ctx.handle.db.updateTable('external_accounts').set({ identity_sha256: oldIdentity(row.account_type, row.account_info) }).where('id', '=', row.id).execute();
  return rowOf(id);
}
const migration = readFileSync(new URL('../../migrations/0037_external_account_identity.sql', import.meta.url), 'utf8');
const runMigration = () => sql.raw(migration).execute(ctx.handle.db);

describe('migration 0037 (accounts created before canonical forms)', () => {
  it('gives old accounts the canonical hash, so a variant of them is 409; keeps earlier duplicates; changes nothing on a second run', async () => {
    const p = await ctx.newPlatform();
    const wallet = sparkWallet('spark');
    const phone = kenyanMobile();
    const offer = bolt12Offer();
    const bodies: Body[] = [
      pix('ANA@EXAMPLE.COM'),
      lightningAddress('ann@WALLET.EXAMPLE.COM'),
      spark(withPrefix(wallet.address, 'sp')),
      spark(sparkWallet('sparkrt').address),
      kes('M-Pesa', phone),
      { currency: 'NGN', accountInfo: { accountType: 'NGN_ACCOUNT', accountNumber: '0123456789', bankName: 'First "Bank" \\ of Nigeria', beneficiary: person() } },
      { currency: 'SGD', accountInfo: { accountType: 'SGD_ACCOUNT', accountNumber: '0123456789', swiftCode: 'DBSSSGSGXXX', beneficiary: person() } },
      { currency: 'INR', accountInfo: { accountType: 'INR_ACCOUNT', vpa: 'Ann.Lee@OKBANK', beneficiary: person() } },
      { currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', invoice: bolt11Invoice(ctx.clock.now()).toUpperCase() } },
      { currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', bolt12: `${offer.slice(0, 30).toUpperCase()}+\n${offer.slice(30)}` } },
      { currency: 'USD', accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '12345678901', routingNumber: '021000021', beneficiary: person() } },
    ];
    const ids: string[] = [];
    for (const body of bodies) ids.push((await create(p, body)).id);
    const before = await Promise.all(ids.map(storeTheOldWay));
    // Before the migration a variant of an old account slips through.
    const slipped = await create(p, kes('MPESA', phone));
    await storeTheOldWay(slipped.id);
    // A name outside printable ASCII keeps its hash: SQL and the application could map its case apart.
    const accented = await create(p, { currency: 'NGN', accountInfo: { accountType: 'NGN_ACCOUNT', accountNumber: '1123456789', bankName: 'Banque Générale', beneficiary: person() } });
    const accentedBefore = await storeTheOldWay(accented.id);

    await runMigration();
    for (const row of before) expect((await rowOf(row.id)).identity_sha256, row.account_type).toBe(canonicalIdentity(row));
    // Of the two spellings of one mobile-money account, the older takes the canonical hash; the other keeps its own.
    expect((await rowOf(slipped.id)).identity_sha256).toBe(oldIdentity('KES_ACCOUNT', { phoneNumber: phone, provider: 'MPESA' }));
    expect((await rowOf(accented.id)).identity_sha256).toBe(accentedBefore.identity_sha256);

    const variants: Body[] = [
      pix('ana@example.com'),
      lightningAddress('ann@wallet.example.com'),
      spark(wallet.address),
      kes('mpesa', phone),
      { currency: 'NGN', accountInfo: { accountType: 'NGN_ACCOUNT', accountNumber: '0123456789', bankName: 'FIRST BANK OF NIGERIA', beneficiary: person() } },
      { currency: 'SGD', accountInfo: { accountType: 'SGD_ACCOUNT', accountNumber: '0123456789', swiftCode: 'DBSSSGSG', beneficiary: person() } },
      { currency: 'INR', accountInfo: { accountType: 'INR_ACCOUNT', vpa: 'ann.lee@okbank', beneficiary: person() } },
    ];
    for (const body of variants) expectEnvelope(await post(p, body), 409, 'CONFLICT');

    const after = await ctx.handle.db.selectFrom('external_accounts').select(['id', 'identity_sha256']).orderBy('id').execute();
    await runMigration();
    expect(await ctx.handle.db.selectFrom('external_accounts').select(['id', 'identity_sha256']).orderBy('id').execute()).toEqual(after);
  });
});
