import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { CapturingMessages, newClientKey, WalletClient } from '../helpers/wallet.js';

/**
 * A code sent to a contact proves nothing once the customer's contact (and the tied OTP
 * credential, spec §4.3) moved elsewhere: the move uses up the open codes, and a verify that
 * passed its code before the move is refused at its signed retry.
 */
let ctx: TestContext;
let prod: WalletClient;
let sandbox: WalletClient;
const messages = new CapturingMessages();

beforeAll(async () => {
  ctx = await createTestContext({ messages });
  prod = new WalletClient(ctx, await ctx.newPlatform('production'));
  sandbox = new WalletClient(ctx, ctx.platform);
  await prod.enableWallets();
  await sandbox.enableWallets();
});
afterAll(() => ctx.close());

describe('codes sent to a contact that moved', () => {
  it('e-mail: a code sent to the old address no longer verifies after the change', async () => {
    const wallet = await prod.newWallet();
    const { key } = await prod.login(wallet.credentialId, () => messages.lastCode());
    // A code goes to the current address; then the e-mail changes, signed by the end user.
    const bundle = await prod.challenge(wallet.credentialId);
    expect(messages.sent.at(-1)).toMatchObject({ channel: 'EMAIL', to: wallet.email });
    const oldCode = messages.lastCode();
    const changed = await prod.signed('PATCH', `/customers/${wallet.customerId}`, { customerType: 'INDIVIDUAL', email: `moved-${wallet.email}` }, key);
    expect(changed.statusCode, changed.body).toBe(200);
    const tek = newClientKey();
    const refused = expectEnvelope(
      await prod.call('POST', `/auth/credentials/${wallet.credentialId}/verify`, { type: 'EMAIL_OTP', encryptedOtpBundle: await prod.encryptOtp(bundle, oldCode, tek) }),
      401,
      'UNAUTHORIZED',
    );
    expect(refused.details).toEqual({ reason: 'OTP_NOT_ISSUED' });
    // A new code goes to the new address and logs in.
    await prod.login(wallet.credentialId, () => messages.lastCode());
    expect(messages.sent.at(-1)).toMatchObject({ channel: 'EMAIL', to: `moved-${wallet.email}` });
  });

  it('e-mail: a verify whose code was checked before the change is refused at its signed retry, and opens no session', async () => {
    const wallet = await prod.newWallet();
    const { key } = await prod.login(wallet.credentialId, () => messages.lastCode());
    const bundle = await prod.challenge(wallet.credentialId);
    const tek = newClientKey();
    const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await prod.encryptOtp(bundle, messages.lastCode(), tek) };
    const path = `/auth/credentials/${wallet.credentialId}/verify`;
    const challenge = await prod.firstLeg('POST', path, body);
    const changed = await prod.signed('PATCH', `/customers/${wallet.customerId}`, { customerType: 'INDIVIDUAL', email: `later-${wallet.email}` }, key);
    expect(changed.statusCode, changed.body).toBe(200);
    const before = ((await prod.call('GET', `/auth/sessions?accountId=${wallet.accountId}`)).json() as { data: unknown[] }).data.length;
    const refused = expectEnvelope(await prod.signedRetry('POST', path, body, challenge, tek), 401, 'UNAUTHORIZED');
    expect(refused.details).toEqual({ reason: 'OTP_CONTACT_CHANGED' });
    expect(((await prod.call('GET', `/auth/sessions?accountId=${wallet.accountId}`)).json() as { data: unknown[] }).data).toHaveLength(before);
  });

  it('phone: an open SMS code no longer verifies after the phone number changes', async () => {
    const wallet = await sandbox.newWallet({ phoneNumber: '+14155550731' });
    const email = await sandbox.login(wallet.credentialId);
    const added = await sandbox.signed('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: wallet.accountId }, email.key);
    expect(added.statusCode, added.body).toBe(201);
    const smsId = (added.json() as { id: string }).id;
    const bundle = await sandbox.challenge(smsId);
    const changed = await sandbox.signed('PATCH', `/customers/${wallet.customerId}`, { customerType: 'INDIVIDUAL', phoneNumber: '+14155550732' }, email.key);
    expect(changed.statusCode, changed.body).toBe(200);
    const refused = expectEnvelope(
      await sandbox.call('POST', `/auth/credentials/${smsId}/verify`, { type: 'SMS_OTP', encryptedOtpBundle: await sandbox.encryptOtp(bundle, '000000', newClientKey()) }),
      401,
      'UNAUTHORIZED',
    );
    expect(refused.details).toEqual({ reason: 'OTP_NOT_ISSUED' });
  });
});
