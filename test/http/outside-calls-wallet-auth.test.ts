import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OidcVerifier } from '../../src/modules/wallet-auth/oidc.js';
import { AppError } from '../../src/platform/errors.js';
import type { MessageSender, OutgoingMessage } from '../../src/platform/messages.js';
import { BASE, createTestContext, expectEnvelope, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';
import { TestIssuer } from '../helpers/oidc.js';
import { newClientKey, stamp, uniquePhoneNumber, WalletClient } from '../helpers/wallet.js';

/**
 * Wallet-auth calls to other systems (the message provider sending a one-time code, an issuer's
 * JWKS fetched to verify an OAUTH token) run with no database transaction open: on the embedded
 * engine (one connection for every request) a transaction held across a call that hangs stalls
 * every other platform's requests for as long (up to CORRIDOR_MESSAGES_TIMEOUT_MS, two minutes);
 * on PostgreSQL as many hanging calls as the pool has connections take them all. Here the other
 * system holds each call until the test releases it, and another platform's request must be
 * answered meanwhile.
 */

/** A gate the test opens: calls that reach it wait until `release`. */
class Gate {
  private opened: Promise<void> | undefined;
  private open: (() => void) | undefined;
  arrived = 0;

  hold(): void {
    this.opened = new Promise((resolve) => (this.open = resolve));
  }

  release(): void {
    this.open?.();
    this.opened = undefined;
  }

  async pass(): Promise<void> {
    this.arrived++;
    await this.opened;
  }
}

/** A message provider that waits at its gate, then accepts the message, or refuses it while `failing`. */
class HeldMessages implements MessageSender {
  readonly gate = new Gate();
  readonly sent: OutgoingMessage[] = [];
  private failing = false;

  async send(message: OutgoingMessage): Promise<void> {
    await this.gate.pass();
    if (this.failing) throw new AppError('SERVICE_UNAVAILABLE', 'The message provider could not deliver the message (HTTP 500). Retry later.');
    this.sent.push(message);
  }

  /** What `call` answers while every message is refused. */
  async whileFailing<T>(call: () => Promise<T>): Promise<T> {
    this.failing = true;
    try {
      return await call();
    } finally {
      this.failing = false;
    }
  }

  codeFor(to: string): string {
    const text = this.sent.findLast((m) => m.to === to)?.text ?? '';
    return /code is ([A-Z0-9]+)\./.exec(text)![1]!;
  }
}

/** The test PostgreSQL pool's size (test/helpers/context.ts): so many held calls would take it all. */
const POOL_CONNECTIONS = 10;

const messages = new HeldMessages();
const jwksGate = new Gate();
let ctx: TestContext;
let issuer: TestIssuer;
let client: WalletClient;
let bystander: TestPlatform;

/** The issuer's JWKS, served under a public-looking https URL (production JWKS must be https), through the gate. */
const JWKS_URI = 'https://jwks.idp.example/jwks';
const platformJwksFetch = async (url: string, init: { signal?: AbortSignal | null }) => {
  if (url !== JWKS_URI) throw new Error(`no test JWKS at ${url}`);
  await jwksGate.pass();
  return fetch(issuer.jwksUri, { signal: init.signal ?? null });
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const until = async (what: () => boolean) => {
  const end = Date.now() + 10_000;
  while (!what()) {
    if (Date.now() > end) throw new Error('the other system was never called');
    await sleep(10);
  }
};

/**
 * While `waiting` is held at `gate` (`arrivals` calls have reached it), another platform's read,
 * which needs the database, is answered within 5 s; then the gate opens. Answers what `waiting` answers.
 */
async function servedMeanwhile<T>(gate: Gate, arrivals: number, waiting: Promise<T>): Promise<T> {
  let settled = false;
  void waiting.then(
    () => (settled = true),
    () => (settled = true),
  );
  try {
    await until(() => gate.arrived >= arrivals);
    const read = ctx.app.inject({ method: 'GET', url: `${BASE}/customers`, headers: { authorization: bystander.auth } });
    const answered = await Promise.race([read.then((response) => response.statusCode), sleep(5_000).then(() => 'no answer within 5 s')]);
    expect(answered).toBe(200);
    expect(settled).toBe(false);
  } finally {
    gate.release();
  }
  return waiting;
}

beforeAll(async () => {
  ctx = await createTestContext({ messages, oidc: new OidcVerifier({ cooldownMs: 0, cacheMaxAgeMs: 600_000, timeoutMs: 5_000, platformJwksFetch }) });
  issuer = await TestIssuer.start();
  bystander = await ctx.newPlatform('sandbox');
  client = new WalletClient(ctx, await ctx.newPlatform('production'));
  await client.enableWallets();
  const configured = await client.call('PATCH', '/config', { embeddedWalletConfig: { appName: 'Acme', oidcIssuers: [{ issuer: issuer.issuer, jwksUri: JWKS_URI }] } });
  expect(configured.statusCode, configured.body).toBe(200);
}, 120_000);

afterAll(async () => {
  messages.gate.release();
  jwksGate.release();
  await ctx?.close();
  await issuer?.close();
});

/** A login with the code the provider was given for `to`. */
const login = (credentialId: string, to: string, type = 'EMAIL_OTP') => client.login(credentialId, () => messages.codeFor(to), type);

const otpChallengesOf = (credentialId: string) =>
  ctx.handle.db.selectFrom('otp_challenges').select('id').where('credential_id', '=', credentialId.split(':')[1]!).execute();

/** A wallet whose only credential was revoked, so an add answers 201 at once (no signed retry). */
async function walletWithoutCredentials() {
  const wallet = await client.newWallet();
  const now = ctx.clock.now();
  await ctx.handle.db.updateTable('auth_credentials').set({ revoked_at: now, updated_at: now }).where('id', '=', wallet.credentialId.split(':')[1]!).execute();
  return wallet;
}

describe(`wallet-auth calls to other systems hold no transaction (${onPostgres ? 'PostgreSQL' : 'PGlite'})`, () => {
  it('POST /auth/credentials/{id}/challenge: the code is sent after the commit; other requests are served while the provider holds it', async () => {
    // On PostgreSQL, as many held challenges as the pool has connections.
    const wallets = [];
    for (let i = 0; i < (onPostgres ? POOL_CONNECTIONS : 1); i++) wallets.push(await client.newWallet());
    messages.gate.hold();
    const arrived = messages.gate.arrived;
    const challenged = await servedMeanwhile(
      messages.gate,
      arrived + wallets.length,
      Promise.all(wallets.map((w) => client.call('POST', `/auth/credentials/${w.credentialId}/challenge`))),
    );
    for (const response of challenged) expect(response.statusCode, response.body).toBe(200);
    // The code sent is the one the answer's bundle takes.
    const bundle = (challenged[0]!.json() as { otpEncryptionTargetBundle: string }).otpEncryptionTargetBundle;
    const key = newClientKey();
    const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(bundle, messages.codeFor(wallets[0]!.email), key) };
    const path = `/auth/credentials/${wallets[0]!.credentialId}/verify`;
    expect((await client.signedRetry('POST', path, body, await client.firstLeg('POST', path, body), key)).statusCode).toBe(200);
  }, 120_000);

  it('a challenge whose code cannot be sent answers 503 and leaves no code: the previous one is as it was', async () => {
    const wallet = await client.newWallet();
    const path = `/auth/credentials/${wallet.credentialId}/challenge`;
    const bundle = (await client.call('POST', path)).json().otpEncryptionTargetBundle as string;
    const code = messages.codeFor(wallet.email);
    const before = await otpChallengesOf(wallet.credentialId);
    expectEnvelope(await messages.whileFailing(() => client.call('POST', path)), 503, 'SERVICE_UNAVAILABLE');
    expect(await otpChallengesOf(wallet.credentialId)).toEqual(before);
    const key = newClientKey();
    const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(bundle, code, key) };
    const verifyPath = `/auth/credentials/${wallet.credentialId}/verify`;
    expect((await client.signedRetry('POST', verifyPath, body, await client.firstLeg('POST', verifyPath, body), key)).statusCode).toBe(200);
  });

  it('the first credential of an account (201 at once): its code is sent after the commit; other requests are served meanwhile', async () => {
    const wallet = await walletWithoutCredentials();
    messages.gate.hold();
    const added = await servedMeanwhile(messages.gate, messages.gate.arrived + 1, client.call('POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: wallet.accountId }));
    expect(added.statusCode, added.body).toBe(201);
    const credential = added.json() as { id: string; otpEncryptionTargetBundle: string };
    const key = newClientKey();
    const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(credential.otpEncryptionTargetBundle, messages.codeFor(wallet.email), key) };
    const path = `/auth/credentials/${credential.id}/verify`;
    expect((await client.signedRetry('POST', path, body, await client.firstLeg('POST', path, body), key)).statusCode).toBe(200);
  });

  it('the first credential of an account whose code cannot be sent is added (201) without a code: challenge sends one', async () => {
    const wallet = await walletWithoutCredentials();
    const added = await messages.whileFailing(() => client.call('POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: wallet.accountId }));
    expect(added.statusCode, added.body).toBe(201);
    const credential = added.json() as { id: string; otpEncryptionTargetBundle?: string };
    expect(credential.otpEncryptionTargetBundle).toBeUndefined();
    expect(await otpChallengesOf(credential.id)).toEqual([]);
    expect((await client.call('GET', `/auth/credentials?accountId=${wallet.accountId}`)).json().data.map((c: { id: string }) => c.id)).toEqual([credential.id]);
    await login(credential.id, wallet.email);
  });

  it('the signed retry of an OTP credential add: its code is sent after the commit; other requests are served meanwhile', async () => {
    const phoneNumber = uniquePhoneNumber();
    const wallet = await client.newWallet({ phoneNumber });
    const { key } = await login(wallet.credentialId, wallet.email);
    const body = { type: 'SMS_OTP', accountId: wallet.accountId };
    const challenge = await client.firstLeg('POST', '/auth/credentials', body);
    messages.gate.hold();
    const added = await servedMeanwhile(messages.gate, messages.gate.arrived + 1, client.signedRetry('POST', '/auth/credentials', body, challenge, key));
    expect(added.statusCode, added.body).toBe(201);
    const credential = added.json() as { id: string; otpEncryptionTargetBundle: string };
    const sessionKey = newClientKey();
    const verifyBody = { type: 'SMS_OTP', encryptedOtpBundle: await client.encryptOtp(credential.otpEncryptionTargetBundle, messages.codeFor(phoneNumber), sessionKey) };
    const path = `/auth/credentials/${credential.id}/verify`;
    expect((await client.signedRetry('POST', path, verifyBody, await client.firstLeg('POST', path, verifyBody), sessionKey)).statusCode).toBe(200);
  });

  it('a signed add whose code cannot be sent is added (201) without a code, also for an identical re-send: challenge sends one', async () => {
    const phoneNumber = uniquePhoneNumber();
    const wallet = await client.newWallet({ phoneNumber });
    const { key } = await login(wallet.credentialId, wallet.email);
    const body = { type: 'SMS_OTP', accountId: wallet.accountId };
    const challenge = await client.firstLeg('POST', '/auth/credentials', body);
    const headers = { 'service-wallet-signature': await stamp(key, challenge.payloadToSign), 'request-id': challenge.requestId };
    const added = await messages.whileFailing(() => client.call('POST', '/auth/credentials', body, headers));
    expect(added.statusCode, added.body).toBe(201);
    const credential = added.json() as { id: string; otpEncryptionTargetBundle?: string };
    expect(credential.otpEncryptionTargetBundle).toBeUndefined();
    expect(await otpChallengesOf(credential.id)).toEqual([]);
    const resent = await client.call('POST', '/auth/credentials', body, headers);
    expect(resent.statusCode).toBe(201);
    expect(resent.json()).toEqual(added.json());
    await login(credential.id, phoneNumber, 'SMS_OTP');
  });

  it('an OAUTH add verifies its token before the transaction: other requests are served while the JWKS is fetched', async () => {
    const wallet = await client.newWallet();
    const { key } = await login(wallet.credentialId, wallet.email);
    const token = await issuer.token({ sub: 'held-jwks', aud: 'acme-web', email: 'held@mail.example' }, { iat: Math.floor(ctx.clock.now().getTime() / 1000) });
    const body = { type: 'OAUTH', accountId: wallet.accountId, oidcToken: token };
    jwksGate.hold();
    const started = await servedMeanwhile(jwksGate, jwksGate.arrived + 1, client.call('POST', '/auth/credentials', body));
    expect(started.statusCode, started.body).toBe(202);
    const added = await client.signedRetry('POST', '/auth/credentials', body, started.json(), key);
    expect(added.statusCode, added.body).toBe(201);
    expect(added.json()).toMatchObject({ type: 'OAUTH', nickname: 'held@mail.example' });
  });
});
