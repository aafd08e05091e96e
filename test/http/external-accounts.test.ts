import { base58 } from '@scure/base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { bolt11Invoice, bolt12Offer, evmWallet, mobileOf, person, solanaWallet, sparkWallet, typo, validSamples, type Sample } from '../helpers/external-accounts.js';

let ctx: TestContext;
let samples: Record<string, Sample>;
beforeAll(async () => {
  ctx = await createTestContext();
  samples = validSamples(ctx.clock.now());
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
type Account = Body & { id: string; status: string; accountInfo: Body };
type Envelope = { code: string; details?: { errors?: Array<{ field: string; message: string; constraint?: Body }> } };

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'DELETE', path: string, payload?: unknown, headers: Record<string, string> = {}) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth, ...headers }, ...(payload === undefined ? {} : { payload: payload as object }) });

let seq = 0;
async function newCustomer(p: TestPlatform): Promise<string> {
  const response = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `ext-${++seq}`, fullName: 'Ann Lee' });
  expect(response.statusCode, response.body).toBe(201);
  return (response.json() as { id: string }).id;
}

async function create(p: TestPlatform, body: Body | Sample, path = '/customers/external-accounts'): Promise<Account> {
  const response = await call(p, 'POST', path, body);
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Account;
}

const fields = (response: { json(): unknown }) => ((response.json() as Envelope).details?.errors ?? []).map((e) => e.field).sort();

/** One bad account per accountType: the answer's code and the field it names. */
const INVALID: Record<string, { change: (info: Body) => Body; code: 'INVALID_INPUT' | 'INVALID_BANK_ACCOUNT'; field: string }> = {
  AED_ACCOUNT: { change: (i) => ({ ...i, iban: typo(i.iban as string) }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.iban' },
  BDT_ACCOUNT: { change: (i) => ({ ...i, swiftCode: 'SBININBB' }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.swiftCode' },
  BRL_ACCOUNT: { change: (i) => ({ ...i, taxId: '12345678900' }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.taxId' },
  BWP_ACCOUNT: { change: (i) => ({ ...i, phoneNumber: mobileOf('KE') }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.phoneNumber' },
  CAD_ACCOUNT: { change: (i) => ({ ...i, accountNumber: '123' }), code: 'INVALID_INPUT', field: 'accountInfo.accountNumber' },
  CNY_ACCOUNT: { change: (i) => ({ ...i, beneficiary: person() }), code: 'INVALID_INPUT', field: 'accountInfo.beneficiary.beneficiaryType' },
  COP_ACCOUNT: { change: ({ phoneNumber: _p, ...i }) => i, code: 'INVALID_INPUT', field: 'accountInfo' },
  DKK_ACCOUNT: { change: (i) => ({ ...i, iban: typo(i.iban as string) }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.iban' },
  EGP_ACCOUNT: { change: (i) => ({ ...i, iban: typo(i.iban as string) }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.iban' },
  EUR_ACCOUNT: { change: (i) => ({ ...i, iban: 'TR330006100519786457841326' }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.iban' },
  GBP_ACCOUNT: { change: (i) => ({ ...i, sortCode: '20000' }), code: 'INVALID_INPUT', field: 'accountInfo.sortCode' },
  GHS_ACCOUNT: { change: (i) => ({ ...i, phoneNumber: mobileOf('NG') }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.phoneNumber' },
  GTQ_ACCOUNT: { change: (i) => ({ ...i, beneficiary: { ...(i.beneficiary as Body), phoneNumber: undefined } }), code: 'INVALID_INPUT', field: 'accountInfo.beneficiary.phoneNumber' },
  HKD_ACCOUNT: { change: (i) => ({ ...i, swiftCode: 'DBSSSGSG' }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.swiftCode' },
  HTG_ACCOUNT: { change: (i) => ({ ...i, phoneNumber: mobileOf('US') }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.phoneNumber' },
  IDR_ACCOUNT: { change: (i) => ({ ...i, phoneNumber: '+62000000000' }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.phoneNumber' },
  INR_ACCOUNT: { change: (i) => ({ ...i, ifsc: 'HDFC1001234' }), code: 'INVALID_INPUT', field: 'accountInfo.ifsc' },
  JMD_ACCOUNT: { change: (i) => ({ ...i, beneficiary: { ...(i.beneficiary as Body), address: undefined } }), code: 'INVALID_INPUT', field: 'accountInfo.beneficiary.address' },
  KES_ACCOUNT: { change: (i) => ({ ...i, phoneNumber: '+254000000000' }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.phoneNumber' },
  MWK_ACCOUNT: { change: (i) => ({ ...i, phoneNumber: mobileOf('KE') }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.phoneNumber' },
  MXN_ACCOUNT: { change: (i) => ({ ...i, clabeNumber: typo(i.clabeNumber as string, 17) }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.clabeNumber' },
  MYR_ACCOUNT: { change: (i) => ({ ...i, swiftCode: 'MBBEXXKL' }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.swiftCode' },
  NGN_ACCOUNT: { change: (i) => ({ ...i, accountNumber: '012345678' }), code: 'INVALID_INPUT', field: 'accountInfo.accountNumber' },
  PHP_ACCOUNT: { change: (i) => ({ ...i, accountNumber: 'ABC12345' }), code: 'INVALID_INPUT', field: 'accountInfo.accountNumber' },
  PKR_ACCOUNT: { change: (i) => ({ ...i, iban: typo(i.iban as string) }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.iban' },
  RWF_ACCOUNT: { change: (i) => ({ ...i, phoneNumber: '+250000000000' }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.phoneNumber' },
  SGD_ACCOUNT: { change: ({ swiftCode: _s, ...i }) => i, code: 'INVALID_INPUT', field: 'accountInfo.swiftCode' },
  SLV_ACCOUNT: { change: ({ accountNumber: _a, ...i }) => i, code: 'INVALID_INPUT', field: 'accountInfo' },
  THB_ACCOUNT: { change: (i) => ({ ...i, swiftCode: 'BKKBJPJT' }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.swiftCode' },
  TZS_ACCOUNT: { change: (i) => ({ ...i, phoneNumber: '+255000000000' }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.phoneNumber' },
  UGX_ACCOUNT: { change: (i) => ({ ...i, phoneNumber: mobileOf('TZ') }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.phoneNumber' },
  USD_ACCOUNT: { change: (i) => ({ ...i, routingNumber: '021000022' }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.routingNumber' },
  VND_ACCOUNT: { change: (i) => ({ ...i, swiftCode: 'BFTVTHBK' }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.swiftCode' },
  XAF_ACCOUNT: { change: (i) => ({ ...i, phoneNumber: mobileOf('CM') }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.phoneNumber' },
  XOF_ACCOUNT: { change: (i) => ({ ...i, region: 'NG' }), code: 'INVALID_INPUT', field: 'accountInfo.region' },
  ZAR_ACCOUNT: { change: (i) => ({ ...i, accountNumber: '12345678' }), code: 'INVALID_INPUT', field: 'accountInfo.accountNumber' },
  ZMW_ACCOUNT: { change: (i) => ({ ...i, phoneNumber: '+260000000000' }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.phoneNumber' },
  SWIFT_ACCOUNT: { change: (i) => ({ ...i, iban: 'DE89370400440532013000' }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.iban' },
  BASE_WALLET: {
    // Mixed case with one letter's case flipped: the EIP-55 checksum fails.
    change: (i) => ({ ...i, address: flipCase(i.address as string) }),
    code: 'INVALID_BANK_ACCOUNT',
    field: 'accountInfo.address',
  },
  ETHEREUM_WALLET: { change: (i) => ({ ...i, address: `0x${'g'.repeat(40)}` }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.address' },
  POLYGON_WALLET: { change: (i) => ({ ...i, address: flipCase(i.address as string) }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.address' },
  PLASMA_WALLET: { change: (i) => ({ ...i, address: (i.address as string).slice(0, 41) }), code: 'INVALID_INPUT', field: 'accountInfo.address' },
  SOLANA_WALLET: { change: (i) => ({ ...i, address: '2'.repeat(40) }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.address' },
  SPARK_WALLET: { change: (i) => ({ ...i, address: typo(i.address as string) }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.address' },
  TRON_WALLET: { change: (i) => ({ ...i, address: typo(i.address as string) }), code: 'INVALID_BANK_ACCOUNT', field: 'accountInfo.address' },
  LIGHTNING: { change: (i) => ({ ...i, lightningAddress: 'alice@wallet.example.com' }), code: 'INVALID_INPUT', field: 'accountInfo' },
};

function flipCase(address: string): string {
  const index = [...address].findIndex((c, i) => i > 1 && /[a-fA-F]/.test(c));
  const c = address[index]!;
  return address.slice(0, index) + (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) + address.slice(index + 1);
}

describe('every accountType', () => {
  it('has a valid and an invalid case here', () => {
    expect(Object.keys(INVALID).sort()).toEqual(Object.keys(samples).sort());
    expect(Object.keys(samples)).toHaveLength(46);
  });

  it.each(Object.keys(INVALID))('%s: a valid account is created and read back; a bad one is refused naming the field', async (type) => {
    const sample = samples[type]!;
    const p = ctx.platform;
    const customerId = await newCustomer(p);
    const account = await create(p, { customerId, ...sample });
    expect(account).toMatchObject({ customerId, currency: sample.currency, status: 'ACTIVE' });
    expect(account.accountInfo).toMatchObject(sample.accountInfo);
    expect((await call(p, 'GET', `/customers/external-accounts/${account.id}`)).json()).toEqual(account);

    const bad = INVALID[type]!;
    const refused = await call(p, 'POST', '/customers/external-accounts', { customerId, currency: sample.currency, accountInfo: bad.change(sample.accountInfo) });
    expectEnvelope(refused, 400, bad.code);
    expect(fields(refused)).toContain(bad.field);
  });
});

describe('account rules', () => {
  it('answers paymentRails by the fields given, and a bank account is paid on its rails only', async () => {
    const customerId = await newCustomer(ctx.platform);
    const upi = await create(ctx.platform, { customerId, currency: 'INR', accountInfo: { accountType: 'INR_ACCOUNT', vpa: 'ann@okbank', beneficiary: person() } });
    expect(upi.accountInfo.paymentRails).toEqual(['UPI']);
    const both = await create(ctx.platform, {
      customerId,
      currency: 'GHS',
      accountInfo: { accountType: 'GHS_ACCOUNT', bankName: 'GCB', accountNumber: '1234567', phoneNumber: mobileOf('GH'), beneficiary: person() },
    });
    expect(both.accountInfo.paymentRails).toEqual(['BANK_TRANSFER', 'MOBILE_MONEY']);
  });

  it('takes paymentRails on create, as the upstream SDKs send them: some of the allowed rails narrow the account, others are refused', async () => {
    const customerId = await newCustomer(ctx.platform);
    const ghana = { accountType: 'GHS_ACCOUNT', bankName: 'GCB', accountNumber: '7654321', phoneNumber: mobileOf('GH'), beneficiary: person() };
    const mobileOnly = await create(ctx.platform, { customerId, currency: 'GHS', accountInfo: { ...ghana, paymentRails: ['MOBILE_MONEY'] } });
    expect(mobileOnly.accountInfo.paymentRails).toEqual(['MOBILE_MONEY']);
    const usd = samples.USD_ACCOUNT!;
    const allowed = (await create(ctx.platform, { customerId, ...usd })).accountInfo.paymentRails as string[];
    expect(allowed.length).toBeGreaterThan(1);
    const narrowed = await create(ctx.platform, { customerId: await newCustomer(ctx.platform), currency: usd.currency, accountInfo: { ...usd.accountInfo, paymentRails: [allowed[1]] } });
    expect(narrowed.accountInfo.paymentRails).toEqual([allowed[1]]);
    const upiOnly = { accountType: 'INR_ACCOUNT', vpa: 'raj@okbank', beneficiary: person() };
    const refused = await call(ctx.platform, 'POST', '/customers/external-accounts', { customerId, currency: 'INR', accountInfo: { ...upiOnly, paymentRails: ['UPI', 'NEFT'] } });
    expect(expectEnvelope(refused, 400, 'INVALID_INPUT').details).toMatchObject({ errors: [{ field: 'accountInfo.paymentRails.1' }] });
    expectEnvelope(await call(ctx.platform, 'POST', '/customers/external-accounts', { customerId, currency: 'INR', accountInfo: { ...upiOnly, paymentRails: ['ACH'] } }), 400, 'INVALID_INPUT');
    expectEnvelope(await call(ctx.platform, 'POST', '/customers/external-accounts', { customerId, currency: 'INR', accountInfo: { ...upiOnly, paymentRails: [] } }), 400, 'INVALID_INPUT');
  });

  it('reports every problem of a request at once, schema and account rules together', async () => {
    const response = await call(ctx.platform, 'POST', '/customers/external-accounts', {
      currency: 'USD',
      nickname: 'x',
      accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: '12', routingNumber: '021000022', beneficiary: { beneficiaryType: 'INDIVIDUAL' } },
    });
    expectEnvelope(response, 400, 'INVALID_INPUT');
    expect(fields(response)).toEqual(['accountInfo.accountNumber', 'accountInfo.beneficiary.fullName', 'accountInfo.routingNumber', 'nickname']);
  });

  it('lists every account failure in one INVALID_BANK_ACCOUNT', async () => {
    const info = { ...samples.EUR_ACCOUNT!.accountInfo, iban: typo('DE89370400440532013000'), swiftCode: 'COBAXXFF' };
    const response = await call(ctx.platform, 'POST', '/platform/external-accounts', { currency: 'EUR', accountInfo: info });
    expectEnvelope(response, 400, 'INVALID_BANK_ACCOUNT');
    expect(fields(response)).toEqual(['accountInfo.iban', 'accountInfo.swiftCode']);
  });

  it('names an unknown accountType with the allowed values, an unknown currency as INVALID_CURRENCY, and a currency the type does not carry', async () => {
    const unknownType = await call(ctx.platform, 'POST', '/platform/external-accounts', { currency: 'USD', accountInfo: { accountType: 'ARS_ACCOUNT' } });
    const body = expectEnvelope(unknownType, 400, 'INVALID_INPUT') as Envelope;
    expect(body.details!.errors![0]).toMatchObject({ field: 'accountInfo.accountType', constraint: { enum: expect.arrayContaining(['USD_ACCOUNT', 'LIGHTNING']) } });
    expectEnvelope(await call(ctx.platform, 'POST', '/platform/external-accounts', { ...samples.SWIFT_ACCOUNT, currency: 'XYZ' }), 400, 'INVALID_CURRENCY');
    const wrong = await call(ctx.platform, 'POST', '/platform/external-accounts', { ...samples.USD_ACCOUNT, currency: 'EUR' });
    expectEnvelope(wrong, 400, 'INVALID_INPUT');
    expect((wrong.json() as Envelope).details!.errors).toEqual([expect.objectContaining({ field: 'currency', constraint: { enum: ['USD'] } })]);
    expectEnvelope(await call(ctx.platform, 'POST', '/platform/external-accounts', { ...samples.SWIFT_ACCOUNT, currency: 'BTC' }), 400, 'INVALID_INPUT');
  });

  it('checks Lightning invoices (signature, expiry, network), BOLT12 offers and lightning addresses', async () => {
    const lightning = (info: Body) => call(ctx.platform, 'POST', '/platform/external-accounts', { currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', ...info } });
    expect((await lightning({ bolt12: bolt12Offer() })).statusCode).toBe(201);
    expect((await lightning({ lightningAddress: 'ann.lee+pay@wallet.example.com' })).statusCode).toBe(201);
    expect(fields(await lightning({ lightningAddress: 'Ann@wallet.example.com' }))).toEqual(['accountInfo.lightningAddress']);
    expect(fields(await lightning({ lightningAddress: 'ann@localhost' }))).toEqual(['accountInfo.lightningAddress']);
    expect(fields(await lightning({ bolt12: 'lno1qqqq' }))).toEqual(['accountInfo.bolt12']);
    const invoice = bolt11Invoice(ctx.clock.now());
    expectEnvelope(await lightning({ invoice: `${invoice.slice(0, -8)}${typo(invoice.slice(-8), 3)}` }), 400, 'INVALID_BANK_ACCOUNT');
    expect((await lightning({ invoice: bolt11Invoice(ctx.clock.now(), 'tb') })).statusCode).toBe(201);
    expect((await lightning({ invoice })).statusCode).toBe(201);
    const expired = bolt11Invoice(new Date(ctx.clock.now().getTime() - 2 * 3600_000));
    expect(((await lightning({ invoice: expired })).json() as Envelope).details!.errors![0]).toMatchObject({ field: 'accountInfo.invoice', message: 'has expired' });
  });

  it('on a production platform accepts only mainnet Spark addresses and invoices', async () => {
    const production = await ctx.newPlatform('production');
    const spark = (address: string) => call(production, 'POST', '/platform/external-accounts', { currency: 'BTC', accountInfo: { accountType: 'SPARK_WALLET', address } });
    expectEnvelope(await spark(sparkWallet('sparkrt').address), 400, 'INVALID_BANK_ACCOUNT');
    expect((await spark(sparkWallet('spark').address)).statusCode).toBe(201);
    const invoice = (value: string) => call(production, 'POST', '/platform/external-accounts', { currency: 'BTC', accountInfo: { accountType: 'LIGHTNING', invoice: value } });
    expectEnvelope(await invoice(bolt11Invoice(ctx.clock.now(), 'tb')), 400, 'INVALID_BANK_ACCOUNT');
    expect((await sparkOk(ctx.platform, sparkWallet('sparkrt').address)).statusCode).toBe(201);
  });

  it('refuses the same destination twice for one owner (409) but not for another owner, and after a delete', async () => {
    const customerId = await newCustomer(ctx.platform);
    const wallet = evmWallet();
    const body = { customerId, currency: 'USDC', accountInfo: { accountType: 'BASE_WALLET', address: wallet.address } };
    const first = await create(ctx.platform, body);
    const again = await call(ctx.platform, 'POST', '/customers/external-accounts', { ...body, accountInfo: { ...body.accountInfo, address: wallet.address.toLowerCase() } });
    expectEnvelope(again, 409, 'CONFLICT');
    await create(ctx.platform, { ...body, customerId: await newCustomer(ctx.platform) });
    await create(ctx.platform, { currency: 'USDC', accountInfo: body.accountInfo }, '/platform/external-accounts');
    expect((await call(ctx.platform, 'DELETE', `/customers/external-accounts/${first.id}`)).statusCode).toBe(204);
    await create(ctx.platform, body);
  });

  it('refuses blank and control-character free text in accountInfo and beneficiaries, naming each field', async () => {
    const usd = samples.USD_ACCOUNT!.accountInfo;
    const cases: Array<[Body, string[]]> = [
      [{ currency: 'USD', accountInfo: { ...usd, bankName: '   ' } }, ['accountInfo.bankName']],
      [{ currency: 'USD', accountInfo: { ...usd, beneficiary: person('   ') } }, ['accountInfo.beneficiary.fullName']],
      [{ ...samples.KES_ACCOUNT!, accountInfo: { ...samples.KES_ACCOUNT!.accountInfo, provider: '\u0007\u001b[31m' } }, ['accountInfo.provider']],
      [
        { currency: 'USD', accountInfo: { ...usd, bankName: 'Chase\tBank', beneficiary: { beneficiaryType: 'BUSINESS', legalName: '\u200b ', address: { line1: '1 Main St\n', postalCode: '10001', country: 'US' } } } },
        ['accountInfo.bankName', 'accountInfo.beneficiary.address.line1', 'accountInfo.beneficiary.legalName'],
      ],
      [{ currency: 'USD', accountInfo: { ...usd, fiToFiInformation: 'ref 42\u001b' } }, ['accountInfo.fiToFiInformation']],
      [{ currency: 'USDC', accountInfo: { accountType: 'SOLANA_WALLET', address: solanaWallet().address, vaspName: '\u0085' } }, ['accountInfo.vaspName']],
    ];
    for (const [body, named] of cases) {
      const response = await call(ctx.platform, 'POST', '/platform/external-accounts', body);
      expectEnvelope(response, 400, 'INVALID_INPUT');
      expect(fields(response), JSON.stringify(body)).toEqual(named);
    }
    // Line breaks are text in bank-to-bank instructions; accents and inner spaces anywhere.
    const customerId = await newCustomer(ctx.platform);
    const wire = await create(ctx.platform, { customerId, currency: 'USD', accountInfo: { ...usd, bankName: 'Banco de Crédito', fiToFiInformation: '/ACC/ref 42\n/INS/Bank', beneficiary: person('José  Núñez') } });
    expect(wire.accountInfo).toMatchObject({ fiToFiInformation: '/ACC/ref 42\n/INS/Bank' });
  });

  it('takes an EVM address all in capitals as one without a checksum, like all lower case, and proves it with the same key', async () => {
    const wallet = evmWallet();
    const capitals = `0x${wallet.address.slice(2).toUpperCase()}`;
    const account = await create(ctx.platform, { currency: 'USDC', ownershipType: 'FIRST_PARTY', accountInfo: { accountType: 'BASE_WALLET', address: capitals } }, '/platform/external-accounts');
    expect(account).toMatchObject({ status: 'PENDING_OWNERSHIP_VERIFICATION', accountInfo: { address: capitals } });
    const challenge = (await call(ctx.platform, 'POST', `/platform/external-accounts/${account.id}/challenge`, { method: 'WALLET_SIGNATURE' })).json() as { messageToSign: string };
    const verified = await call(ctx.platform, 'POST', `/platform/external-accounts/${account.id}/verify`, { signature: await wallet.signMessage(challenge.messageToSign) });
    expect(verified.statusCode, verified.body).toBe(200);
    expect(verified.json()).toMatchObject({ status: 'ACTIVE' });
    // The same address in lower case is the same destination; mixed case still needs its checksum.
    expectEnvelope(await call(ctx.platform, 'POST', '/platform/external-accounts', { currency: 'USDC', accountInfo: { accountType: 'BASE_WALLET', address: wallet.address.toLowerCase() } }), 409, 'CONFLICT');
    const flipped = await call(ctx.platform, 'POST', '/platform/external-accounts', { currency: 'USDC', accountInfo: { accountType: 'BASE_WALLET', address: flipCase(evmWallet().address) } });
    expectEnvelope(flipped, 400, 'INVALID_BANK_ACCOUNT');
    expect(fields(flipped)).toEqual(['accountInfo.address']);
  });

  it("holds a EUR account's BIC to the IBAN's country, SEPA territories that use its IBANs included", async () => {
    const p = await ctx.newPlatform();
    const eur = (iban: string, swiftCode: string) => ({ currency: 'EUR', accountInfo: { accountType: 'EUR_ACCOUNT', iban, swiftCode, beneficiary: { ...person(), countryOfResidence: 'FR' } } });
    const french = 'FR1420041010050500013M02606';
    const refused = await call(p, 'POST', '/platform/external-accounts', eur(french, 'COBADEFF'));
    expect(expectEnvelope(refused, 400, 'INVALID_BANK_ACCOUNT').details).toMatchObject({
      errors: [{ field: 'accountInfo.swiftCode', message: "must be the BIC of a bank in FR, the IBAN's country (it names DE)" }],
    });
    expectEnvelope(await call(p, 'POST', '/platform/external-accounts', eur('GB29NWBK60161331926819', 'COBADEFF')), 400, 'INVALID_BANK_ACCOUNT');
    // France's overseas departments (Réunion), Åland and Jersey bank on FR, FI and GB IBANs.
    for (const [iban, bic] of [[french, 'BNPAFRPP'], ['FR7630006000011234567890189', 'BNPARERX'], ['FI2112345600000785', 'AABAAX22'], ['GB29NWBK60161331926819', 'MIDLJESH']] as const) {
      const response = await call(p, 'POST', '/platform/external-accounts', eur(iban, bic));
      expect(response.statusCode, `${iban} ${bic}: ${response.body}`).toBe(201);
    }
  });

  it('requires the owner of a THIRD_PARTY wallet (Travel Rule)', async () => {
    const response = await call(ctx.platform, 'POST', '/platform/external-accounts', { currency: 'USDC', ownershipType: 'THIRD_PARTY', accountInfo: { accountType: 'SOLANA_WALLET', address: solanaWallet().address } });
    expectEnvelope(response, 400, 'INVALID_INPUT');
    expect(fields(response)).toEqual(['accountInfo.beneficiary']);
    const owner = { beneficiaryType: 'INDIVIDUAL', fullName: 'Bo Chen', countryOfResidence: 'SG' };
    const created = await create(ctx.platform, { currency: 'USDC', ownershipType: 'THIRD_PARTY', accountInfo: { accountType: 'SOLANA_WALLET', address: solanaWallet().address, beneficiary: owner } }, '/platform/external-accounts');
    expect(created).toMatchObject({ status: 'ACTIVE', ownershipType: 'THIRD_PARTY', beneficiaryVerificationStatus: 'UNSUPPORTED' });
  });

  it('a Solana address is exactly a 32-byte key: one byte more or fewer is refused naming the address', async () => {
    const customerId = await newCustomer(ctx.platform);
    const key = base58.decode(solanaWallet().address);
    // A leading byte of 1 keeps the 33 bytes within the 44 characters the schema allows.
    for (const bytes of [Uint8Array.from([1, ...key]), key.subarray(1)]) {
      const refused = await call(ctx.platform, 'POST', '/customers/external-accounts', { customerId, currency: 'USDC', accountInfo: { accountType: 'SOLANA_WALLET', address: base58.encode(bytes) } });
      expectEnvelope(refused, 400, 'INVALID_BANK_ACCOUNT');
      expect(fields(refused)).toEqual(['accountInfo.address']);
    }
  });
});

async function sparkOk(p: TestPlatform, address: string) {
  return call(p, 'POST', '/platform/external-accounts', { currency: 'BTC', accountInfo: { accountType: 'SPARK_WALLET', address } });
}

describe('tenancy, lists and deletes', () => {
  it("answers 404 for another platform's account, a platform account on the customer path and the reverse", async () => {
    const other = await ctx.newPlatform();
    const customerId = await newCustomer(ctx.platform);
    const customerAccount = await create(ctx.platform, { customerId, ...samples.GBP_ACCOUNT });
    const platformAccount = await create(ctx.platform, samples.MXN_ACCOUNT!, '/platform/external-accounts');
    for (const [p, path] of [
      [other, `/customers/external-accounts/${customerAccount.id}`],
      [other, `/platform/external-accounts/${platformAccount.id}`],
      [ctx.platform, `/platform/external-accounts/${customerAccount.id}`],
      [ctx.platform, `/customers/external-accounts/${platformAccount.id}`],
    ] as const) {
      expectEnvelope(await call(p, 'GET', path), 404, 'REFERENCE_NOT_FOUND');
      expectEnvelope(await call(p, 'DELETE', path), 404, 'REFERENCE_NOT_FOUND');
      expectEnvelope(await call(p, 'POST', `${path}/challenge`, { method: 'WALLET_SIGNATURE' }), 404, 'REFERENCE_NOT_FOUND');
      expectEnvelope(await call(p, 'POST', `${path}/verify`, { signature: '0x00' }), 404, 'REFERENCE_NOT_FOUND');
    }
    expectEnvelope(await call(other, 'POST', '/customers/external-accounts', { customerId, ...samples.GBP_ACCOUNT }), 404, 'USER_NOT_FOUND');
    expectEnvelope(await call(ctx.platform, 'GET', '/customers/external-accounts/InternalAccount:019542f5-b3e7-1d02-0000-000000000001'), 404, 'REFERENCE_NOT_FOUND');
    expect((await call(other, 'GET', `/customers/external-accounts?customerId=${customerId}`)).json()).toMatchObject({ data: [], totalCount: 0 });
  });

  it('lists newest first with filters and cursor pages, without deleted accounts', async () => {
    const p = await ctx.newPlatform();
    const customerId = await newCustomer(p);
    const otherCustomer = await newCustomer(p);
    const ids: string[] = [];
    for (const type of ['USD_ACCOUNT', 'EUR_ACCOUNT', 'GBP_ACCOUNT', 'MXN_ACCOUNT']) ids.push((await create(p, { customerId, ...samples[type]! })).id);
    await create(p, { customerId: otherCustomer, ...samples.USD_ACCOUNT! });
    await create(p, samples.USD_ACCOUNT!, '/platform/external-accounts');
    const list = (query: string) => call(p, 'GET', `/customers/external-accounts${query}`).then((r) => r.json() as { data: Account[]; hasMore: boolean; nextCursor?: string; totalCount?: number });
    const first = await list(`?customerId=${customerId}&limit=3`);
    expect(first).toMatchObject({ hasMore: true, totalCount: 4 });
    const second = await list(`?customerId=${customerId}&limit=3&cursor=${first.nextCursor}`);
    expect([...first.data, ...second.data].map((a) => a.id)).toEqual([...ids].reverse());
    const usd = await list('?currency=USD');
    expect(usd.data.map((a) => a.customerId).sort()).toEqual([customerId, otherCustomer].sort());
    // Counting what a currency matches would read every match: that list has no total.
    expect(usd).not.toHaveProperty('totalCount');
    expect((await list('')).totalCount).toBe(5);
    const platformList = (await call(p, 'GET', '/platform/external-accounts')).json() as { data: Account[]; totalCount: number };
    expect(platformList.totalCount).toBe(1);
    expect((await call(p, 'DELETE', `/customers/external-accounts/${ids[0]}`)).statusCode).toBe(204);
    expect((await list(`?customerId=${customerId}`)).data.map((a) => a.id)).toEqual(ids.slice(1).reverse());
    expect((await list('')).totalCount).toBe(4);
    expect(((await call(p, 'GET', '/platform/external-accounts')).json() as { totalCount: number }).totalCount).toBe(1);
    expectEnvelope(await call(p, 'DELETE', `/customers/external-accounts/${ids[0]}`), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await call(p, 'GET', '/customers/external-accounts?cursor=nope'), 400, 'INVALID_INPUT');
  });

  it('keeps at most one default UMA deposit account per customer, and replays an Idempotency-Key', async () => {
    const customerId = await newCustomer(ctx.platform);
    const first = await create(ctx.platform, { customerId, defaultUmaDepositAccount: true, ...samples.USD_ACCOUNT });
    const body = { customerId, defaultUmaDepositAccount: true, ...samples.EUR_ACCOUNT };
    const second = await call(ctx.platform, 'POST', '/customers/external-accounts', body, { 'idempotency-key': `k-${customerId}` });
    expect(second.statusCode).toBe(201);
    const replay = await call(ctx.platform, 'POST', '/customers/external-accounts', body, { 'idempotency-key': `k-${customerId}` });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(second.json());
    expect((await call(ctx.platform, 'GET', `/customers/external-accounts/${first.id}`)).json()).toMatchObject({ defaultUmaDepositAccount: false });
    expect(second.json()).toMatchObject({ defaultUmaDepositAccount: true });
  });

  it('needs the MANAGE permission to write', async () => {
    const viewer = await ctx.newToken(ctx.platform, ['VIEW']);
    expectEnvelope(await call(viewer, 'POST', '/platform/external-accounts', samples.USD_ACCOUNT), 403, 'FORBIDDEN');
    expect((await call(viewer, 'GET', '/platform/external-accounts')).statusCode).toBe(200);
  });
});
