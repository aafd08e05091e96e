import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { newClientKey, WalletClient } from '../helpers/wallet.js';

/**
 * A session's last instant, at the operations that name a session by id (refresh, revoke): a
 * mutation audit found that a session still counted as active at its `expiresAt` went unnoticed
 * there (the signed retry refused it later, but the first call issued a challenge for it).
 * A session is active strictly before `expiresAt`, as the session list and the signer check have it.
 */
let ctx: TestContext;
let client: WalletClient;

beforeAll(async () => {
  ctx = await createTestContext();
  client = new WalletClient(ctx, ctx.platform);
  await client.enableWallets();
});
afterAll(async () => ctx.close());

async function loggedIn() {
  const wallet = await client.newWallet();
  const { key, session } = await client.login(wallet.credentialId);
  return { wallet, key, session, expiresAt: new Date(session.expiresAt).getTime() };
}

describe('a session at its expiresAt', () => {
  it('is not found by refresh or revoke (404), while one millisecond before it still is', async () => {
    const before = await loggedIn();
    ctx.clock.set(new Date(before.expiresAt - 1));
    const refresh = await client.call('POST', `/auth/sessions/${before.session.id}/refresh`, { clientPublicKey: newClientKey().publicKey });
    expect(refresh.statusCode, refresh.body).toBe(202);
    const revoke = await client.call('DELETE', `/auth/sessions/${before.session.id}`);
    expect(revoke.statusCode, revoke.body).toBe(202);

    const at = await loggedIn();
    ctx.clock.set(new Date(at.expiresAt));
    expectEnvelope(await client.call('POST', `/auth/sessions/${at.session.id}/refresh`, { clientPublicKey: newClientKey().publicKey }), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await client.call('DELETE', `/auth/sessions/${at.session.id}`), 404, 'REFERENCE_NOT_FOUND');
    const listed = (await client.call('GET', `/auth/sessions?accountId=${at.wallet.accountId}`)).json() as { data: unknown[] };
    expect(listed.data).toEqual([]);
  });
});

/**
 * A challenge is bound to its operation as well as to its target (signed-retry.ts): a mutation
 * audit found that a refresh's Request-Id presented on the revoke of the same session was refused
 * only because the bodies differ, not because the challenge names another operation.
 */
describe("a session refresh's Request-Id on that session's revoke", () => {
  it('is 401 REQUEST_ID_UNKNOWN, and the session stays active', async () => {
    const { wallet, key, session } = await loggedIn();
    const refresh = await client.firstLeg('POST', `/auth/sessions/${session.id}/refresh`, { clientPublicKey: newClientKey().publicKey });
    const refused = expectEnvelope(await client.signedRetry('DELETE', `/auth/sessions/${session.id}`, undefined, refresh, key), 401, 'UNAUTHORIZED');
    expect(refused.details).toEqual({ reason: 'REQUEST_ID_UNKNOWN' });
    const listed = (await client.call('GET', `/auth/sessions?accountId=${wallet.accountId}`)).json() as { data: Array<{ id: string }> };
    expect(listed.data.map((s) => s.id)).toContain(session.id);
  });
});

/**
 * EMAIL_OTP verify (spec §4.4 steps 2–4): the retry is signed with the private key of the pair
 * whose public key was encrypted with the OTP. A mutation audit found that a retry signed by any
 * other key (a valid stamp over the right payload) went unnoticed by the tests it ran.
 */
describe('an EMAIL_OTP verify retry signed by a key other than the one sent with the OTP', () => {
  it('is 401 WALLET_SIGNATURE_INVALID and opens no session; the right key then still redeems it', async () => {
    const wallet = await client.newWallet();
    const bundle = await client.challenge(wallet.credentialId);
    const key = newClientKey();
    const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(bundle, '000000', key) };
    const path = `/auth/credentials/${wallet.credentialId}/verify`;
    const challenge = await client.firstLeg('POST', path, body);
    expectEnvelope(await client.signedRetry('POST', path, body, challenge, newClientKey()), 401, 'WALLET_SIGNATURE_INVALID');
    const listed = (await client.call('GET', `/auth/sessions?accountId=${wallet.accountId}`)).json() as { data: unknown[] };
    expect(listed.data).toEqual([]);
    const verified = await client.signedRetry('POST', path, body, challenge, key);
    expect(verified.statusCode, verified.body).toBe(200);
  });
});
