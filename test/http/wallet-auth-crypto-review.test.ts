import { createHash, createPublicKey, generateKeyPairSync, randomBytes, verify, type KeyObject } from 'node:crypto';
import { exportJWK, FlattenedSign, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OidcVerifier } from '../../src/modules/wallet-auth/oidc.js';
import { AppError } from '../../src/platform/errors.js';
import { cbor, coseKeyOf, noneAttestation, signedAssertion } from '../helpers/authenticator.js';
import { highS, splitDer } from '../helpers/der.js';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { newClientKey, openSessionKey, WalletClient } from '../helpers/wallet.js';

/**
 * A cryptographer's second review of wallet authentication: the key material a caller may hand
 * the service in a passkey registration (and what a stored key may still verify), the forms of
 * an assertion signature, hostile CBOR, and OIDC tokens whose signed bytes are not their claims.
 */
let ctx: TestContext;
let client: WalletClient;
const RP = { rpId: 'wallet.example.com', origin: 'https://wallet.example.com' };

beforeAll(async () => {
  ctx = await createTestContext();
  client = new WalletClient(ctx, ctx.platform);
  await client.enableWallets();
  const configured = await client.call('PATCH', '/config', { embeddedWalletConfig: { passkeyRpId: RP.rpId, passkeyOrigins: [RP.origin] } });
  expect(configured.statusCode, configured.body).toBe(200);
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
type CoseKey = Map<number, unknown>;

/** A `none` attestation carrying `coseKey` for `credentialId`, on this file's relying party. */
function attestationWith(coseKey: CoseKey, challenge: string, credentialId = randomBytes(32), rawId = credentialId, flags?: number) {
  return noneAttestation({ ...RP, challenge }, coseKey, { credentialId, rawId, ...(flags === undefined ? {} : { flags }) });
}

/** An assertion by `privateKey` over `challenge` (the UTF-8 bytes of the challenge string); `extensions` sets the ED flag. */
function assertionBy(privateKey: KeyObject, credentialId: Buffer, challenge: string, counter: number, extensions?: Buffer) {
  return signedAssertion(privateKey, { ...RP, challenge: Buffer.from(challenge, 'utf8'), credentialId, counter, ...(extensions ? { extensions } : {}) });
}

const registrationChallenge = () => randomBytes(16).toString('base64url');

/** The first call of a passkey add on a fresh wallet: 202 when the registration verifies. */
async function registerFirstLeg(attestation: unknown, challenge: string) {
  const wallet = await client.newWallet();
  return client.call('POST', '/auth/credentials', { type: 'PASSKEY', accountId: wallet.accountId, nickname: 'Key', challenge, attestation });
}

const refusedAttestation = (response: Awaited<ReturnType<WalletClient['call']>>, name: string) => {
  expect(response.statusCode, `${name}: ${response.body}`).toBe(400);
  const error = expectEnvelope(response, 400, 'INVALID_INPUT');
  expect(error.details, name).toMatchObject({ errors: [{ field: 'attestation' }] });
};

/**
 * A passkey of `pair` (COSE `alg` and `crv`) added to a new wallet, and a login challenge issued
 * for it to `clientPublicKey`; `verify` sends an assertion against that challenge.
 */
async function passkeyToLogIn(pair: { publicKey: KeyObject }, alg: number, crv: number, clientPublicKey = newClientKey().publicKey) {
  const wallet = await client.newWallet();
  const { key } = await client.login(wallet.credentialId);
  const credentialId = randomBytes(32);
  const challenge = registrationChallenge();
  const added = await client.signed(
    'POST',
    '/auth/credentials',
    { type: 'PASSKEY', accountId: wallet.accountId, nickname: 'Key', challenge, attestation: attestationWith(coseKeyOf(pair.publicKey, alg, crv), challenge, credentialId) },
    key,
  );
  expect(added.statusCode, added.body).toBe(201);
  const credential = added.json() as { id: string };
  const issued = (await client.call('POST', `/auth/credentials/${credential.id}/challenge`, { clientPublicKey })).json() as { challenge: string; requestId: string };
  const verify = (assertion: unknown) => client.call('POST', `/auth/credentials/${credential.id}/verify`, { type: 'PASSKEY', assertion }, { 'request-id': issued.requestId });
  return { credentialId, credential, issued, verify };
}

describe('passkey registration: the credential public key (COSE_Key)', () => {
  it('refuses EC2 keys that are no P-256 point, on another curve, oversized or of another algorithm, with 400 naming attestation', async () => {
    const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey;
    const valid = coseKeyOf(p256, -7, 1);
    const withCoordinates = (x: Buffer, y: Buffer) => new Map(valid).set(-2, x).set(-3, y);
    const x = valid.get(-2) as Buffer;
    const y = valid.get(-3) as Buffer;
    const cases: Array<[string, CoseKey]> = [
      ['point off the curve', withCoordinates(Buffer.alloc(32, 0x11), Buffer.alloc(32, 0x11))],
      ['the point at infinity as (0, 0)', withCoordinates(Buffer.alloc(32), Buffer.alloc(32))],
      ['y of another point', withCoordinates(x, Buffer.from(y).fill(0x22, 0, 1))],
      ['x with a leading zero byte (33 bytes)', withCoordinates(Buffer.concat([Buffer.alloc(1), x]), y)],
      ['ES256 on P-384', coseKeyOf(p384, -7, 2)],
      ['ES384 on P-384', coseKeyOf(p384, -35, 2)],
      ['ES256 labelled P-256 with P-384 coordinates', new Map(coseKeyOf(p384, -7, 2)).set(-1, 1)],
      ['ES256 with P-256 coordinates labelled P-384', new Map(valid).set(-1, 2)],
      ['secp256k1 (ES256K)', coseKeyOf(generateKeyPairSync('ec', { namedCurve: 'secp256k1' }).publicKey, -47, 8)],
      ['ES256 key without y', new Map([...valid].filter(([label]) => label !== -3))],
      ['RSA key of 1024 bits', coseKeyOf(generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey, -257, 0)],
    ];
    for (const [name, coseKey] of cases) {
      const challenge = registrationChallenge();
      refusedAttestation(await registerFirstLeg(attestationWith(coseKey, challenge), challenge), name);
    }
    const challenge = registrationChallenge();
    expect((await registerFirstLeg(attestationWith(valid, challenge), challenge)).statusCode, 'a genuine ES256 key').toBe(202);
  });

  it('refuses a registration whose credentialId is not the one the authenticator data names', async () => {
    const challenge = registrationChallenge();
    const coseKey = coseKeyOf(generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey, -7, 1);
    refusedAttestation(await registerFirstLeg(attestationWith(coseKey, challenge, randomBytes(32), randomBytes(32)), challenge), 'credentialId mismatch');
    // An id longer than WebAuthn allows (1023 bytes) could never be named by an assertion.
    const long = randomBytes(1024);
    refusedAttestation(await registerFirstLeg(attestationWith(coseKey, challenge, long, long.subarray(0, 700)), challenge), 'credentialId too long');
  });

  it.each([
    ['ES256 (P-256)', () => generateKeyPairSync('ec', { namedCurve: 'P-256' }), -7, 1],
    ['EdDSA (Ed25519)', () => generateKeyPairSync('ed25519'), -8, 6],
    ['RS256 (2048-bit RSA)', () => generateKeyPairSync('rsa', { modulusLength: 2048 }), -257, 0],
  ] as const)('registers and logs in with a %s passkey, the algorithms upstream names', async (_name, generate, alg, crv) => {
    const pair = generate();
    const receiver = newClientKey();
    const { credentialId, issued, verify } = await passkeyToLogIn(pair, alg, crv, receiver.publicKey);
    const verified = await verify(assertionBy(pair.privateKey, credentialId, issued.challenge, 1));
    expect(verified.statusCode, verified.body).toBe(200);
    expect(openSessionKey(String((verified.json() as Body).encryptedSessionSigningKey), receiver).publicKey).toMatch(/^0[23]/);
  });
});

describe('passkey registration: Ed25519 keys of small order', () => {
  /** Encodings of Ed25519 points of order 1, 2, 4 and 8 (libsodium's blocklist), and a non-canonical one (y = p + 1). */
  const SMALL_ORDER = [
    ['identity (order 1)', `01${'00'.repeat(31)}`],
    ['order 2 (y = p − 1)', `ec${'ff'.repeat(30)}7f`],
    ['order 4 (y = 0)', '00'.repeat(32)],
    ['order 8', '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05'],
    ['order 8, x negative', 'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa'],
    ['identity, non-canonical y = p + 1', `ee${'ff'.repeat(30)}7f`],
  ] as const;
  const okp = (x: Buffer): CoseKey => new Map<number, unknown>([[1, 1], [3, -8], [-1, 6], [-2, x]]);

  it('refuses them at registration, with 400 naming attestation', async () => {
    for (const [name, hex] of SMALL_ORDER) {
      const challenge = registrationChallenge();
      refusedAttestation(await registerFirstLeg(attestationWith(okp(Buffer.from(hex, 'hex')), challenge), challenge), name);
    }
  });

  it('refuses the identity key, under which R = identity, S = 0 verifies for any message: no passkey is added', async () => {
    const identity = Buffer.from(SMALL_ORDER[0][1], 'hex');
    const identityKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: identity.toString('base64url') }, format: 'jwk' });
    expect(verify(null, Buffer.from('any assertion'), identityKey, Buffer.concat([identity, Buffer.alloc(32)]))).toBe(true);

    const wallet = await client.newWallet();
    await client.login(wallet.credentialId);
    const challenge = registrationChallenge();
    const body = { type: 'PASSKEY', accountId: wallet.accountId, nickname: 'Key', challenge, attestation: attestationWith(okp(identity), challenge) };
    refusedAttestation(await client.call('POST', '/auth/credentials', body), 'identity key');
    const passkeys = ((await client.call('GET', `/auth/credentials?accountId=${wallet.accountId}`)).json() as { data: Body[] }).data.filter((c) => c.type === 'PASSKEY');
    expect(passkeys).toEqual([]);
  });

  it('refuses assertions of a passkey stored with such a key before keys were checked: the forged login is 401 publicKey', async () => {
    const { credentialId, credential, issued, verify } = await passkeyToLogIn(generateKeyPairSync('ed25519'), -8, 6);
    // What a registration before the check could have stored: the identity point as the key.
    const identity = Buffer.from(SMALL_ORDER[0][1], 'hex');
    const uuid = credential.id.split(':')[1]!;
    const row = await ctx.handle.db.selectFrom('auth_credentials').select('details').where('id', '=', uuid).executeTakeFirstOrThrow();
    const details = { ...(row.details as Body), publicKey: cbor(okp(identity)).toString('base64url') };
    await ctx.handle.db.updateTable('auth_credentials').set({ details: JSON.stringify(details) as never }).where('id', '=', uuid).execute();

    const count = Buffer.alloc(4);
    count.writeUInt32BE(1);
    const authenticatorData = Buffer.concat([createHash('sha256').update(RP.rpId).digest(), Buffer.from([0x05]), count]);
    const clientDataJson = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge: Buffer.from(issued.challenge, 'utf8').toString('base64url'), origin: RP.origin, crossOrigin: false }));
    const forged = {
      credentialId: credentialId.toString('base64url'),
      clientDataJson: clientDataJson.toString('base64url'),
      authenticatorData: authenticatorData.toString('base64url'),
      signature: Buffer.concat([identity, Buffer.alloc(32)]).toString('base64url'),
    };
    const response = await verify(forged);
    expect(expectEnvelope(response, 401, 'UNAUTHORIZED').details).toEqual({ check: 'publicKey' });
  });
});

describe('passkeys: what held (user presence, hostile CBOR)', () => {
  /** CBOR nested `depth` arrays deep: within the schema's 16,384 characters, deeper than the decoder's stack. */
  const nestedCbor = (depth: number) => Buffer.concat([Buffer.alloc(depth, 0x81), Buffer.from([0x00])]);

  it('refuses a registration without user presence, and a deeply nested attestationObject with 400, never a 500', async () => {
    const coseKey = coseKeyOf(generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey, -7, 1);
    const challenge = registrationChallenge();
    const absent = await registerFirstLeg(attestationWith(coseKey, challenge, randomBytes(32), undefined, 0x40), challenge);
    refusedAttestation(absent, 'user not present');
    const nested = { ...attestationWith(coseKey, challenge), attestationObject: nestedCbor(12_000).toString('base64url') };
    refusedAttestation(await registerFirstLeg(nested, challenge), 'nested attestationObject');
  });

  it('answers an assertion whose authenticator-data extensions nest deeply with 401, never a 500, and the challenge stays usable', async () => {
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const { credentialId, issued, verify } = await passkeyToLogIn(pair, -7, 1);
    const hostile = await verify(assertionBy(pair.privateKey, credentialId, issued.challenge, 1, nestedCbor(9_000)));
    expect(expectEnvelope(hostile, 401, 'UNAUTHORIZED').details).toEqual({ check: 'format' });
    expect((await verify(assertionBy(pair.privateKey, credentialId, issued.challenge, 2))).statusCode).toBe(200);
  });

  it('takes an ES256 assertion signature only as DER, in its high-S form too (WebAuthn does not normalise S), and only from a get ceremony', async () => {
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const { credentialId, issued, verify } = await passkeyToLogIn(pair, -7, 1);

    const create = assertionBy(pair.privateKey, credentialId, issued.challenge, 1);
    const createJson = JSON.parse(Buffer.from(create.clientDataJson, 'base64url').toString()) as Body;
    const asCreate = { ...create, clientDataJson: Buffer.from(JSON.stringify({ ...createJson, type: 'webauthn.create' })).toString('base64url') };
    expect((await verify(asCreate)).statusCode, 'a create ceremony').toBe(401);

    const assertion = assertionBy(pair.privateKey, credentialId, issued.challenge, 2);
    const { r, s } = splitDer(Buffer.from(assertion.signature, 'base64url'));
    const raw = Buffer.from(r.toString(16).padStart(64, '0') + s.toString(16).padStart(64, '0'), 'hex');
    expect((await verify({ ...assertion, signature: raw.toString('base64url') })).statusCode, 'raw r||s').toBe(401);
    const high = Buffer.from(highS(Buffer.from(assertion.signature, 'base64url').toString('hex')), 'hex');
    const accepted = await verify({ ...assertion, signature: high.toString('base64url') });
    expect(accepted.statusCode, accepted.body).toBe(200);
  });
});

describe('OIDC tokens: the claims read are the bytes signed', () => {
  it('refuses a JWS with an unencoded payload (b64: false): jose verifies the raw segment while the claims were read base64url-decoded', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }] };
    const verifier = new OidcVerifier({
      cooldownMs: 0,
      cacheMaxAgeMs: 60_000,
      timeoutMs: 5_000,
      platformJwksFetch: async () => new Response(JSON.stringify(jwks), { headers: { 'content-type': 'application/json' } }),
    });
    const issuer = 'https://idp.platform.example';
    const trusted = [{ issuer, jwksUri: 'https://idp.platform.example/jwks' }];
    const now = new Date();
    const iat = Math.floor(now.getTime() / 1000);
    const claims = { iss: issuer, aud: 'app', sub: 'victim', iat, exp: iat + 600 };
    const input = { trusted, now, checkSignature: true };

    const genuine = await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).sign(privateKey);
    expect((await verifier.verify(genuine, input)).identity.sub).toBe('victim');

    // What the key signed is the text "eyJ…" itself, not the claims it spells in base64url.
    const raw = Buffer.from(JSON.stringify(claims)).toString('base64url');
    const signed = await new FlattenedSign(new TextEncoder().encode(raw)).setProtectedHeader({ alg: 'ES256', kid: 'k1', b64: false, crit: ['b64'] }).sign(privateKey);
    const unencoded = `${signed.protected}.${raw}.${signed.signature}`;
    const refused = await verifier.verify(unencoded, input).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).code).toBe('INVALID_INPUT');
  });
});
