import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertCanReceive, findExternalAccount, OWNERSHIP_THRESHOLD, receiveDecision } from '../../src/modules/external-accounts/index.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { evmWallet, person, solanaWallet, sparkWallet, tronWallet, validSamples } from '../helpers/external-accounts.js';

/** The institution a production platform asks, over HTTP: answers holder names by account number. */
const institutionRequests: Array<Record<string, unknown>> = [];
let institutionAnswer: (body: Record<string, unknown>) => { status: number; body: string } = () => ({ status: 200, body: '{"holderName":null}' });
let institution: Server;

let ctx: TestContext;
beforeAll(async () => {
  institution = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk) => (text += chunk));
    request.on('end', () => {
      const body = JSON.parse(text) as Record<string, unknown>;
      institutionRequests.push({ ...body, authorization: request.headers.authorization });
      const answer = institutionAnswer(body);
      response.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
    });
  });
  await new Promise<void>((resolve) => institution.listen(0, '127.0.0.1', resolve));
  const { port } = institution.address() as { port: number };
  ctx = await createTestContext({ env: { CORRIDOR_BENEFICIARY_URL: `http://127.0.0.1:${port}/names`, CORRIDOR_BENEFICIARY_TOKEN: 'institution-secret' } });
});
afterAll(async () => {
  await ctx.close();
  await new Promise((resolve) => institution.close(resolve));
});

type Body = Record<string, unknown>;
type Account = Body & { id: string; status: string };
const call = (p: TestPlatform, method: 'GET' | 'POST', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

async function create(p: TestPlatform, body: Body): Promise<Account> {
  const response = await call(p, 'POST', '/platform/external-accounts', body);
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as Account;
}

// Unique per call; the final 9 keeps it clear of the sandbox's test suffixes (…102–107 choose the name check's outcome).
const usd = (beneficiary: Body) => ({ currency: 'USD', accountInfo: { accountType: 'USD_ACCOUNT', accountNumber: `${String(Date.now() + Math.random()).replace('.', '').slice(0, 15)}9`, routingNumber: '021000021', beneficiary } });

/** STATUS_UPDATED events of one account, oldest first. */
async function statusEvents(accountId: string): Promise<string[]> {
  const rows = await ctx.handle.db
    .selectFrom('events')
    .select(['type', 'data'])
    .where('resource_id', '=', accountId)
    .orderBy('id')
    .execute();
  expect(rows.every((r) => r.type === 'EXTERNAL_ACCOUNT.STATUS_UPDATED')).toBe(true);
  return rows.map((r) => (r.data as { status: string }).status);
}

describe('beneficiary verification', () => {
  it('checks the holder name against the simulated institution of a sandbox platform, with the documented trigger names', async () => {
    const cases: Array<[Body, string, string | undefined]> = [
      [person('John Doe'), 'MATCHED', 'DOE JOHN'],
      [person('Jürgen Müller'), 'MATCHED', 'MULLER JURGEN'],
      [person('Maria Partial'), 'PARTIAL_MATCH', 'PARTIAL MARIA JONES'],
      [person('Alex Nomatch'), 'NOT_MATCHED', undefined],
      [person('Sam Unsupported'), 'UNSUPPORTED', undefined],
      [{ beneficiaryType: 'BUSINESS', legalName: 'Acme Trading Ltd' }, 'MATCHED', 'ACME TRADING LTD'],
    ];
    for (const [beneficiary, status, verified] of cases) {
      const account = await create(ctx.platform, usd(beneficiary));
      expect(account.beneficiaryVerificationStatus).toBe(status);
      expect(account.beneficiaryVerifiedData).toEqual(verified ? { fullName: verified } : undefined);
    }
    expect(institutionRequests).toEqual([]);
  });

  it('follows the upstream sandbox’s account suffixes 102–107 on sandbox platforms, and only there', async () => {
    const ending = (digits: string) => {
      const body = usd(person('John Doe'));
      return { ...body, accountInfo: { ...body.accountInfo, accountNumber: `${body.accountInfo.accountNumber.slice(0, 12)}${digits}` } };
    };
    const cases: Array<[string, string, string | undefined]> = [
      ['102', 'NOT_MATCHED', undefined],
      ['103', 'PARTIAL_MATCH', 'DOE JOHN JONES'],
      ['104', 'PENDING', undefined],
      ['106', 'UNSUPPORTED', undefined],
      ['107', 'CHECKED_BY_RECEIVING_FI', undefined],
      ['108', 'MATCHED', 'DOE JOHN'],
    ];
    for (const [digits, status, verified] of cases) {
      const account = await create(ctx.platform, ending(digits));
      expect(account.beneficiaryVerificationStatus, digits).toBe(status);
      expect(account.beneficiaryVerifiedData).toEqual(verified ? { fullName: verified } : undefined);
    }
    const before = ((await call(ctx.platform, 'GET', '/platform/external-accounts')).json() as { totalCount: number }).totalCount;
    expectEnvelope(await call(ctx.platform, 'POST', '/platform/external-accounts', ending('105')), 400, 'INVALID_BANK_ACCOUNT');
    expect(((await call(ctx.platform, 'GET', '/platform/external-accounts')).json() as { totalCount: number }).totalCount).toBe(before);
    expect(institutionRequests).toEqual([]);

    const production = await ctx.newPlatform('production');
    institutionAnswer = () => ({ status: 200, body: JSON.stringify({ holderName: 'JOHN DOE' }) });
    for (const digits of ['102', '104', '105']) expect((await create(production, ending(digits))).beneficiaryVerificationStatus).toBe('MATCHED');
  });

  it('asks the configured institution for a production platform, and creates nothing when it fails', async () => {
    const production = await ctx.newPlatform('production');
    institutionAnswer = () => ({ status: 200, body: JSON.stringify({ holderName: 'JON DOE' }) });
    const partial = await create(production, usd(person('John Doe')));
    expect(partial).toMatchObject({ beneficiaryVerificationStatus: 'PARTIAL_MATCH', beneficiaryVerifiedData: { fullName: 'JON DOE' } });
    expect(institutionRequests.at(-1)).toEqual({
      accountType: 'USD_ACCOUNT',
      currency: 'USD',
      account: { accountType: 'USD_ACCOUNT', accountNumber: expect.any(String), routingNumber: '021000021' },
      beneficiaryType: 'INDIVIDUAL',
      name: 'John Doe',
      authorization: 'Bearer institution-secret',
    });
    institutionAnswer = () => ({ status: 200, body: '{"holderName":null}' });
    expect((await create(production, usd(person('John Doe')))).beneficiaryVerificationStatus).toBe('UNSUPPORTED');
    for (const answer of [{ status: 500, body: '{}' }, { status: 200, body: 'not json' }, { status: 200, body: '{"holderName":42}' }]) {
      institutionAnswer = () => answer;
      expectEnvelope(await call(production, 'POST', '/platform/external-accounts', usd(person('John Doe'))), 503, 'SERVICE_UNAVAILABLE');
    }
    expect(((await call(production, 'GET', '/platform/external-accounts')).json() as { totalCount: number }).totalCount).toBe(2);
  });
});

type Signer = { address: string; sign: (message: string) => Promise<string> | string };
const wallets: Record<string, { accountType: string; currency: string; make: () => Signer }> = {
  BASE: { accountType: 'BASE_WALLET', currency: 'USDC', make: () => evmSigner() },
  ETHEREUM: { accountType: 'ETHEREUM_WALLET', currency: 'USDC', make: () => evmSigner() },
  POLYGON: { accountType: 'POLYGON_WALLET', currency: 'USDC', make: () => evmSigner() },
  PLASMA: { accountType: 'PLASMA_WALLET', currency: 'USDT', make: () => evmSigner() },
  SOLANA: { accountType: 'SOLANA_WALLET', currency: 'USDC', make: () => withSign(solanaWallet()) },
  TRON: { accountType: 'TRON_WALLET', currency: 'USDT', make: () => withSign(tronWallet()) },
  'SPARK (bip137)': { accountType: 'SPARK_WALLET', currency: 'BTC', make: () => sparkSigner('bip137') },
  'SPARK (electrum)': { accountType: 'SPARK_WALLET', currency: 'BTC', make: () => sparkSigner('electrum') },
};
function evmSigner(): Signer {
  const wallet = evmWallet();
  return { address: wallet.address, sign: (m) => wallet.signMessage(m) };
}
function withSign(wallet: { address: string; signMessage: (m: string) => Promise<string> | string }): Signer {
  return { address: wallet.address, sign: (m) => wallet.signMessage(m) };
}
function sparkSigner(scheme: 'bip137' | 'electrum'): Signer & { scheme: string } {
  const wallet = sparkWallet('sparkrt');
  return { address: wallet.address, scheme, sign: (m) => (scheme === 'bip137' ? wallet.signBip137(m) : wallet.signElectrum(m)) };
}
const schemeOf = (signer: Signer) => ('scheme' in signer ? { signatureScheme: (signer as { scheme: string }).scheme } : {});

async function selfCustody(kind: string, p: TestPlatform = ctx.platform) {
  const signer = wallets[kind]!.make();
  const account = await create(p, { currency: wallets[kind]!.currency, ownershipType: 'FIRST_PARTY', accountInfo: { accountType: wallets[kind]!.accountType, address: signer.address } });
  expect(account.status).toBe('PENDING_OWNERSHIP_VERIFICATION');
  return { signer, account, path: `/platform/external-accounts/${account.id}` };
}

async function challenge(path: string, p: TestPlatform = ctx.platform) {
  const response = await call(p, 'POST', `${path}/challenge`, { method: 'WALLET_SIGNATURE' });
  expect(response.statusCode, response.body).toBe(201);
  return response.json() as { method: string; messageToSign: string; expiresAt: string };
}

describe('ownership verification by wallet signature', () => {
  it.each(Object.keys(wallets))('%s: a signature by the wallet key makes the account ACTIVE, with one event', async (kind) => {
    const { signer, account, path } = await selfCustody(kind);
    const issued = await challenge(path);
    expect(issued).toEqual({ method: 'WALLET_SIGNATURE', messageToSign: expect.stringContaining(signer.address), expiresAt: new Date(ctx.clock.now().getTime() + 600_000).toISOString() });
    expect(await statusEvents(account.id)).toEqual([]);
    const verified = await call(ctx.platform, 'POST', `${path}/verify`, { signature: await signer.sign(issued.messageToSign), ...schemeOf(signer) });
    expect(verified.statusCode, verified.body).toBe(200);
    expect(verified.json()).toMatchObject({ id: account.id, status: 'ACTIVE' });
    expect(await statusEvents(account.id)).toEqual(['ACTIVE']);
    expectEnvelope(await call(ctx.platform, 'POST', `${path}/verify`, { signature: await signer.sign(issued.messageToSign) }), 409, 'INVALID_STATE_TRANSITION');
    expectEnvelope(await call(ctx.platform, 'POST', `${path}/challenge`, { method: 'WALLET_SIGNATURE' }), 409, 'INVALID_STATE_TRANSITION');
  });

  it.each(Object.keys(wallets))("%s: another key's signature fails the attempt (UNVERIFIED); a new challenge returns to PENDING and can succeed", async (kind) => {
    const { signer, account, path } = await selfCustody(kind);
    const first = await challenge(path);
    const stranger = wallets[kind]!.make();
    const failed = await call(ctx.platform, 'POST', `${path}/verify`, { signature: await stranger.sign(first.messageToSign), ...schemeOf(stranger) });
    expect(expectEnvelope(failed, 400, 'INVALID_INPUT').details).toMatchObject({ reason: 'SIGNATURE_INVALID', status: 'UNVERIFIED' });
    expect((await call(ctx.platform, 'GET', path)).json()).toMatchObject({ status: 'UNVERIFIED' });
    expectEnvelope(await call(ctx.platform, 'POST', `${path}/verify`, { signature: await signer.sign(first.messageToSign) }), 409, 'INVALID_STATE_TRANSITION');
    const second = await challenge(path);
    expect(second.messageToSign).not.toBe(first.messageToSign);
    expect((await call(ctx.platform, 'GET', path)).json()).toMatchObject({ status: 'PENDING_OWNERSHIP_VERIFICATION' });
    const verified = await call(ctx.platform, 'POST', `${path}/verify`, { signature: await signer.sign(second.messageToSign), ...schemeOf(signer) });
    expect(verified.statusCode, verified.body).toBe(200);
    expect(await statusEvents(account.id)).toEqual(['UNVERIFIED', 'PENDING_OWNERSHIP_VERIFICATION', 'ACTIVE']);
  });

  it('fails an attempt on an expired challenge, even with a good signature', async () => {
    const { signer, account, path } = await selfCustody('BASE');
    const issued = await challenge(path);
    ctx.clock.advance(600_000);
    const failed = await call(ctx.platform, 'POST', `${path}/verify`, { signature: await signer.sign(issued.messageToSign) });
    expect(expectEnvelope(failed, 400, 'INVALID_INPUT').details).toMatchObject({ reason: 'CHALLENGE_EXPIRED', status: 'UNVERIFIED' });
    expect(await statusEvents(account.id)).toEqual(['UNVERIFIED']);
  });

  it('refuses a signature that cannot be one of the network and changes nothing', async () => {
    const { signer, account, path } = await selfCustody('SOLANA');
    const issued = await challenge(path);
    for (const signature of ['0x1234', 'not base58 0OIl', '3'.repeat(20)]) {
      const response = await call(ctx.platform, 'POST', `${path}/verify`, { signature });
      expect(expectEnvelope(response, 400, 'INVALID_INPUT').details).toMatchObject({ errors: [{ field: 'signature', message: expect.stringContaining('base58 of 64 bytes') }] });
    }
    expect(await statusEvents(account.id)).toEqual([]);
    expect((await call(ctx.platform, 'POST', `${path}/verify`, { signature: await signer.sign(issued.messageToSign) })).statusCode).toBe(200);
  });

  it('takes the signature form from signatureScheme: a BIP-137 segwit signature is not an Electrum one', async () => {
    const wallet = sparkWallet('sparkrt');
    const account = await create(ctx.platform, { currency: 'BTC', ownershipType: 'FIRST_PARTY', accountInfo: { accountType: 'SPARK_WALLET', address: wallet.address } });
    const path = `/platform/external-accounts/${account.id}`;
    const issued = await challenge(path);
    const failed = await call(ctx.platform, 'POST', `${path}/verify`, { signature: wallet.signBip137(issued.messageToSign), signatureScheme: 'electrum' });
    expect(expectEnvelope(failed, 400, 'INVALID_INPUT').details).toMatchObject({ reason: 'SIGNATURE_INVALID' });
    const again = await challenge(path);
    expect((await call(ctx.platform, 'POST', `${path}/verify`, { signature: wallet.signBip137(again.messageToSign) })).statusCode).toBe(200);
  });

  it('abandons the previous challenge when a new one is issued', async () => {
    const { signer, account, path } = await selfCustody('TRON');
    const first = await challenge(path);
    const second = await challenge(path);
    const stale = await call(ctx.platform, 'POST', `${path}/verify`, { signature: await signer.sign(first.messageToSign) });
    expect(expectEnvelope(stale, 400, 'INVALID_INPUT').details).toMatchObject({ reason: 'SIGNATURE_INVALID' });
    expect(second.messageToSign).not.toBe(first.messageToSign);
    expect(await statusEvents(account.id)).toEqual(['UNVERIFIED']);
  });

  it('applies only to FIRST_PARTY self-custody wallets', async () => {
    const samples = validSamples(ctx.clock.now());
    const bank = await create(ctx.platform, { ...samples.USD_ACCOUNT!, ownershipType: 'FIRST_PARTY' });
    const custodial = await create(ctx.platform, { currency: 'USDC', ownershipType: 'FIRST_PARTY', accountInfo: { accountType: 'BASE_WALLET', address: evmWallet().address, vaspName: 'Kraken' } });
    const unspecified = await create(ctx.platform, { currency: 'USDC', accountInfo: { accountType: 'BASE_WALLET', address: evmWallet().address } });
    const lightning = await create(ctx.platform, { currency: 'BTC', ownershipType: 'FIRST_PARTY', accountInfo: { accountType: 'LIGHTNING', lightningAddress: 'ann@wallet.example.com' } });
    for (const account of [bank, custodial, unspecified, lightning]) {
      expect(account.status).toBe('ACTIVE');
      const refused = await call(ctx.platform, 'POST', `/platform/external-accounts/${account.id}/challenge`, { method: 'WALLET_SIGNATURE' });
      expect(expectEnvelope(refused, 409, 'INVALID_STATE_TRANSITION').details).toEqual({ reason: 'NOT_APPLICABLE' });
      expectEnvelope(await call(ctx.platform, 'POST', `/platform/external-accounts/${account.id}/verify`, { signature: '0x00' }), 409, 'INVALID_STATE_TRANSITION');
    }
  });

  it('validates the challenge and verify bodies', async () => {
    const { path } = await selfCustody('BASE');
    expectEnvelope(await call(ctx.platform, 'POST', `${path}/challenge`, { method: 'SMS' }), 400, 'INVALID_INPUT');
    expectEnvelope(await call(ctx.platform, 'POST', `${path}/verify`, {}), 400, 'INVALID_INPUT');
    expectEnvelope(await call(ctx.platform, 'POST', `${path}/verify`, { signature: 'x', signatureScheme: 'bip322' }), 400, 'INVALID_INPUT');
  });
});

describe('ownership verification by hosted liveness check', () => {
  async function liveness(p: TestPlatform = ctx.platform) {
    const { account, path } = await selfCustody('SOLANA', p);
    const response = await call(p, 'POST', `${path}/challenge`, { method: 'LIVENESS' });
    return { account, path, response };
  }
  const pagePath = (link: string) => new URL(link).pathname;

  it('serves a consent page; consenting completes the check (ACTIVE), once', async () => {
    const { account, path, response } = await liveness();
    expect(response.statusCode, response.body).toBe(201);
    const issued = response.json() as { method: string; verificationLink: string; expiresAt: string };
    expect(issued).toEqual({ method: 'LIVENESS', verificationLink: expect.stringMatching(/\/2025-10-13\/ownership\/liveness\/[A-Za-z0-9_-]{43}$/), expiresAt: new Date(ctx.clock.now().getTime() + 1_800_000).toISOString() });
    const page = await ctx.app.inject({ method: 'GET', url: pagePath(issued.verificationLink) });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.body).toContain((account.accountInfo as { address: string }).address);
    expectEnvelope(await call(ctx.platform, 'POST', `${path}/verify`, { signature: '0x00' }), 409, 'INVALID_STATE_TRANSITION');
    const answer = await ctx.app.inject({ method: 'POST', url: pagePath(issued.verificationLink), payload: { consent: true } });
    expect(answer.json()).toEqual({ outcome: 'VERIFIED' });
    expect((await call(ctx.platform, 'GET', path)).json()).toMatchObject({ status: 'ACTIVE' });
    expect(await statusEvents(account.id)).toEqual(['ACTIVE']);
    expectEnvelope(await ctx.app.inject({ method: 'POST', url: pagePath(issued.verificationLink), payload: { consent: true } }), 404, 'REFERENCE_NOT_FOUND');
    expect((await ctx.app.inject({ method: 'GET', url: pagePath(issued.verificationLink) })).statusCode).toBe(404);
  });

  it('fails the check when the owner declines, or answers after the link expired (whose page is 410 and offers no form)', async () => {
    const declined = await liveness();
    const link = pagePath((declined.response.json() as { verificationLink: string }).verificationLink);
    expect((await ctx.app.inject({ method: 'POST', url: link, payload: { consent: false } })).json()).toEqual({ outcome: 'FAILED', reason: 'CONSENT_DECLINED' });
    expect(await statusEvents(declined.account.id)).toEqual(['UNVERIFIED']);

    const late = await liveness();
    const lateLink = pagePath((late.response.json() as { verificationLink: string }).verificationLink);
    ctx.clock.advance(1_800_000);
    const expired = await ctx.app.inject({ method: 'GET', url: lateLink });
    expect(expired.statusCode).toBe(410);
    expect(expired.headers['cache-control']).toBe('no-store');
    expect(expired.body).toContain('has expired');
    for (const live of ['id="check"', 'id="complete"', 'id="decline"', '<script']) expect(expired.body).not.toContain(live);
    // Opening the expired page changes nothing; an answer POSTed anyway is still the documented failed attempt.
    expect(await statusEvents(late.account.id)).toEqual([]);
    expect((await ctx.app.inject({ method: 'POST', url: lateLink, payload: { consent: true } })).json()).toEqual({ outcome: 'FAILED', reason: 'CHALLENGE_EXPIRED' });
    expect(await statusEvents(late.account.id)).toEqual(['UNVERIFIED']);
  });

  it('takes one answer per link when two arrive at once: the other is 404 and the account keeps the first', async () => {
    // On PostgreSQL both answers read the link before either takes the account's lock (a few rounds make that near certain).
    for (let round = 0; round < 4; round++) {
      const { account, path, response } = await liveness();
      const link = pagePath((response.json() as { verificationLink: string }).verificationLink);
      const answers = await Promise.all([true, false].map((consent) => ctx.app.inject({ method: 'POST', url: link, payload: { consent } })));
      expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 404]);
      const taken = answers.find((a) => a.statusCode === 200)!.json() as { outcome: string };
      const status = taken.outcome === 'VERIFIED' ? 'ACTIVE' : 'UNVERIFIED';
      expect((await call(ctx.platform, 'GET', path)).json()).toMatchObject({ status });
      expect(await statusEvents(account.id)).toEqual([status]);
    }
  });

  it('is not offered to production platforms (no liveness provider)', async () => {
    const production = await ctx.newPlatform('production');
    const signer = evmWallet();
    const account = await create(production, { currency: 'USDC', ownershipType: 'FIRST_PARTY', accountInfo: { accountType: 'BASE_WALLET', address: signer.address } });
    expectEnvelope(await call(production, 'POST', `/platform/external-accounts/${account.id}/challenge`, { method: 'LIVENESS' }), 501, 'NOT_IMPLEMENTED');
    expect(await statusEvents(account.id)).toEqual([]);
  });
});

describe('the lookup other modules use (index.ts)', () => {
  it('answers rails, network, status and pull rails, scoped to the paying customer', async () => {
    const samples = validSamples(ctx.clock.now());
    const customer = (await call(ctx.platform, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `lookup-${Date.now()}`, fullName: 'Ann Lee' })).json() as { id: string };
    const customerUuid = customer.id.slice('Customer:'.length);
    const ownUsd = (await call(ctx.platform, 'POST', '/customers/external-accounts', { customerId: customer.id, ownershipType: 'FIRST_PARTY', ...samples.USD_ACCOUNT })).json() as Account;
    const found = await findExternalAccount(ctx.handle.db, ctx.platform.uuid, ownUsd.id, { payer: customerUuid });
    expect(found).toMatchObject({ id: ownUsd.id, customerUuid, accountType: 'USD_ACCOUNT', currency: 'USD', kind: 'bank', rails: ['ACH', 'WIRE', 'RTP', 'FEDNOW'], status: 'ACTIVE', requiresOwnershipProof: false, pullRails: ['ACH'] });
    expect(found.account).toEqual(ownUsd);
    const thirdParty = await create(ctx.platform, { ...samples.EUR_ACCOUNT, ownershipType: 'THIRD_PARTY' });
    expect((await findExternalAccount(ctx.handle.db, ctx.platform.uuid, thirdParty.id, { payer: customerUuid })).pullRails).toEqual([]);
    const other = await ctx.newPlatform();
    for (const [platformUuid, id, scope] of [
      [other.uuid, ownUsd.id, {}],
      [ctx.platform.uuid, ownUsd.id, { payer: '019542f5-b3e7-7d02-8000-000000000001' }],
      [ctx.platform.uuid, 'ExternalAccount:nope', {}],
    ] as const) {
      await expect(findExternalAccount(ctx.handle.db, platformUuid, id, scope)).rejects.toMatchObject({ code: 'REFERENCE_NOT_FOUND' });
    }
  });

  it('lets a wallet pending ownership proof receive up to the Travel Rule threshold only; an UNVERIFIED one nothing', async () => {
    const { signer, account, path } = await selfCustody('ETHEREUM');
    const pending = await findExternalAccount(ctx.handle.db, ctx.platform.uuid, account.id);
    expect(pending).toMatchObject({ status: 'PENDING_OWNERSHIP_VERIFICATION', requiresOwnershipProof: true, network: 'ETHEREUM', rails: [], pullRails: [] });
    expect(OWNERSHIP_THRESHOLD).toEqual({ currency: 'EUR', amountMinor: 100_000n });
    expect(receiveDecision(pending, 100_000n)).toEqual({ allowed: true });
    expect(receiveDecision(pending, 100_001n)).toMatchObject({ allowed: false, code: 'EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED' });
    expect(() => assertCanReceive(pending, 100_001n)).toThrow(expect.objectContaining({ code: 'EXTERNAL_ACCOUNT_VERIFICATION_REQUIRED' }));
    const stranger = evmWallet();
    await call(ctx.platform, 'POST', `${path}/verify`, { signature: await stranger.signMessage((await challenge(path)).messageToSign) });
    const unverified = await findExternalAccount(ctx.handle.db, ctx.platform.uuid, account.id);
    expect(receiveDecision(unverified, 1n)).toMatchObject({ allowed: false });
    const issued = await challenge(path);
    await call(ctx.platform, 'POST', `${path}/verify`, { signature: await signer.sign(issued.messageToSign) });
    expect(receiveDecision(await findExternalAccount(ctx.handle.db, ctx.platform.uuid, account.id), 10n ** 12n)).toEqual({ allowed: true });
  });
});
