import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OTP_CHALLENGES_PER_WINDOW } from '../../src/modules/wallet-auth/otp.js';
import { parseId } from '../../src/platform/ids.js';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { newClientKey, WalletClient } from '../helpers/wallet.js';

/**
 * The two OTP throttles of the README (OTPs): at most 10 codes per credential in 15 minutes
 * (each one a message sent to the end user in production), and the 15-minute pause after five
 * wrong codes, which verify answers as well as challenge.
 */
let ctx: TestContext;
let client: WalletClient;

beforeAll(async () => {
  ctx = await createTestContext();
  client = new WalletClient(ctx, ctx.platform);
  await client.enableWallets();
});
afterAll(() => ctx?.close());

const challengesOf = async (credentialId: string) =>
  (await ctx.handle.db.selectFrom('otp_challenges').select('id').where('credential_id', '=', parseId('AuthMethod', credentialId)!).execute()).length;

describe('OTP throttles', () => {
  it(`issues at most ${OTP_CHALLENGES_PER_WINDOW} codes per credential in 15 minutes: the next is 429 with Retry-After until the oldest leaves the window, issues nothing, and leaves the latest code valid`, async () => {
    const wallet = await client.newWallet();
    const path = `/auth/credentials/${wallet.credentialId}/challenge`;
    expect(await challengesOf(wallet.credentialId)).toBe(0);
    let latest = '';
    // A code a minute: the window's oldest code leaves it 15 minutes after it was issued, and the
    // refusal, a minute after the last one, says when that is.
    for (let i = 0; i < OTP_CHALLENGES_PER_WINDOW; i++) {
      ctx.clock.advance(60_000);
      latest = await client.challenge(wallet.credentialId);
    }
    const retryAfter = 900 - 60 * (OTP_CHALLENGES_PER_WINDOW - 1);
    const refused = await client.call('POST', path, {});
    expect(expectEnvelope(refused, 429, 'RATE_LIMITED').details).toEqual({ retryAfterSeconds: retryAfter });
    expect(refused.headers['retry-after']).toBe(String(retryAfter));
    expect(await challengesOf(wallet.credentialId)).toBe(OTP_CHALLENGES_PER_WINDOW);

    // The refusal did not replace the code the end user holds.
    const key = newClientKey();
    const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(latest, '000000', key) };
    const verifyPath = `/auth/credentials/${wallet.credentialId}/verify`;
    const signedIn = await client.signedRetry('POST', verifyPath, body, await client.firstLeg('POST', verifyPath, body), key);
    expect(signedIn.statusCode, signedIn.body).toBe(200);

    // A second early is still refused, with one second left; then the next code is issued.
    ctx.clock.advance((retryAfter - 1) * 1000);
    expect(expectEnvelope(await client.call('POST', path, {}), 429, 'RATE_LIMITED').details).toEqual({ retryAfterSeconds: 1 });
    ctx.clock.advance(1000);
    expect((await client.call('POST', path, {})).statusCode).toBe(200);
  });

  it('verify during the pause after five wrong codes answers 429 with the time left, even for a bundle of the voided code', async () => {
    const wallet = await client.newWallet();
    const bundle = await client.challenge(wallet.credentialId);
    const path = `/auth/credentials/${wallet.credentialId}/verify`;
    const attempt = async (code: string) => client.call('POST', path, { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(bundle, code, newClientKey()) });
    for (let i = 0; i < 4; i++) expectEnvelope(await attempt('123456'), 401, 'UNAUTHORIZED');
    expectEnvelope(await attempt('123456'), 429, 'RATE_LIMITED');
    ctx.clock.advance(5 * 60_000);
    const paused = await attempt('000000');
    expect(expectEnvelope(paused, 429, 'RATE_LIMITED').details).toEqual({ retryAfterSeconds: 600 });
    expect(paused.headers['retry-after']).toBe('600');
  });
});
