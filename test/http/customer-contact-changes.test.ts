import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { CapturingMessages, newClientKey, WalletClient, type WalletFixture } from '../helpers/wallet.js';

/**
 * Contact changes of a customer whose wallet has OTP credentials tied to them (spec §4.3;
 * upstream PATCH /customers/{id}): e-mail ↔ EMAIL_OTP, phone ↔ SMS_OTP. The change is a signed
 * retry, the customer contact and every tied credential move together or not at all.
 */
let ctx: TestContext;
let sandbox: WalletClient;
let prod: WalletClient;
const messages = new CapturingMessages();

beforeAll(async () => {
  ctx = await createTestContext({ messages });
  sandbox = new WalletClient(ctx, ctx.platform);
  prod = new WalletClient(ctx, await ctx.newPlatform('production'));
  await sandbox.enableWallets();
  await prod.enableWallets();
});
afterAll(async () => ctx.close());

type Body = Record<string, unknown>;
const credentialsOf = async (client: WalletClient, w: WalletFixture) =>
  ((await client.call('GET', `/auth/credentials?accountId=${w.accountId}`)).json() as { data: Array<Body & { id: string; type: string; nickname: string }> }).data;
const customerOf = async (client: WalletClient, w: WalletFixture) => (await client.call('GET', `/customers/${w.customerId}`)).json() as Body;

/** A sandbox wallet with a phone, logged in with EMAIL_OTP, with an SMS_OTP credential added and logged in too. */
async function walletWithPhoneCredential(phoneNumber: string) {
  const wallet = await sandbox.newWallet({ phoneNumber });
  const email = await sandbox.login(wallet.credentialId);
  const added = await sandbox.signed('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: wallet.accountId }, email.key);
  expect(added.statusCode, added.body).toBe(201);
  const smsId = (added.json() as { id: string }).id;
  const sms = await sandbox.login(smsId, '000000', 'SMS_OTP');
  return { wallet, email, sms, smsId };
}

describe('e-mail change', () => {
  it('works on a wallet that never had a session: the first login (OTP to the old e-mail) opens the session that signs', async () => {
    const wallet = await prod.newWallet();
    const path = `/customers/${wallet.customerId}`;
    const body = { customerType: 'INDIVIDUAL', email: 'moved@example.com' };
    const challenge = await prod.firstLeg('PATCH', path, body);
    expect(JSON.parse(challenge.payloadToSign)).toMatchObject({ type: 'ACTIVITY_TYPE_UPDATE_USER_EMAIL', parameters: { userEmail: 'moved@example.com', userId: wallet.accountId } });
    // Nobody can sign yet: no session exists.
    expectEnvelope(await prod.signedRetry('PATCH', path, body, challenge, newClientKey()), 401, 'WALLET_SIGNATURE_INVALID');
    // The end user logs in with the EMAIL_OTP credential; its code goes to the e-mail on file.
    const { key } = await prod.login(wallet.credentialId, () => messages.lastCode());
    expect(messages.sent.at(-1)).toMatchObject({ channel: 'EMAIL', to: wallet.email });
    const changed = await prod.signedRetry('PATCH', path, body, challenge, key);
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json()).toMatchObject({ email: 'moved@example.com' });
    expect(await credentialsOf(prod, wallet)).toEqual([expect.objectContaining({ type: 'EMAIL_OTP', nickname: 'moved@example.com' })]);
    // The credential moved with the customer: the next code goes to the new address.
    await prod.challenge(wallet.credentialId);
    expect(messages.sent.at(-1)).toMatchObject({ channel: 'EMAIL', to: 'moved@example.com' });
  });

  it('refuses an e-mail another wallet’s EMAIL_OTP credential carries: 409 EMAIL_OTP_EMAIL_ALREADY_EXISTS, at the first call and at the retry', async () => {
    const taken = await sandbox.newWallet();
    const wallet = await sandbox.newWallet();
    const { key } = await sandbox.login(wallet.credentialId);
    const path = `/customers/${wallet.customerId}`;
    const conflict = expectEnvelope(await sandbox.call('PATCH', path, { customerType: 'INDIVIDUAL', email: taken.email.toUpperCase() }), 409, 'EMAIL_OTP_EMAIL_ALREADY_EXISTS');
    expect(conflict.details).toEqual({ field: 'email' });
    // A race: the address was free at the 202, and another wallet took it before the retry.
    const contested = 'contested@example.com';
    const body = { customerType: 'INDIVIDUAL', email: contested };
    const challenge = await sandbox.firstLeg('PATCH', path, body);
    const other = await sandbox.login(taken.credentialId);
    expect((await sandbox.signed('PATCH', `/customers/${taken.customerId}`, { customerType: 'INDIVIDUAL', email: contested }, other.key)).statusCode).toBe(200);
    expectEnvelope(await sandbox.signedRetry('PATCH', path, body, challenge, key), 409, 'EMAIL_OTP_EMAIL_ALREADY_EXISTS');
    expect((await customerOf(sandbox, wallet)).email).toBe(wallet.email);
    expect((await credentialsOf(sandbox, wallet))[0]).toMatchObject({ nickname: wallet.email });
  });

  it('answers 409 EMAIL_OTP_CREDENTIAL_SET_CHANGED when the tied credentials changed after the challenge, and changes nothing', async () => {
    const { wallet, sms } = await walletWithPhoneCredential('+14155550201');
    const path = `/customers/${wallet.customerId}`;
    const body = { customerType: 'INDIVIDUAL', email: 'set-changed@example.com' };
    const challenge = await sandbox.firstLeg('PATCH', path, body);
    // The EMAIL_OTP credential bound at the 202 is revoked before the retry.
    expect((await sandbox.signed('DELETE', `/auth/credentials/${wallet.credentialId}`, undefined, sms.key)).statusCode).toBe(204);
    expectEnvelope(await sandbox.signedRetry('PATCH', path, body, challenge, sms.key), 409, 'EMAIL_OTP_CREDENTIAL_SET_CHANGED');
    expect((await customerOf(sandbox, wallet)).email).toBe(wallet.email);
  });

  it('answers 424 EMAIL_OTP_CREDENTIAL_SYNC_FAILED when a competing change was signed first, and changes nothing', async () => {
    const wallet = await sandbox.newWallet();
    const { key } = await sandbox.login(wallet.credentialId);
    const path = `/customers/${wallet.customerId}`;
    const first = { customerType: 'INDIVIDUAL', email: 'first@example.com' };
    const second = { customerType: 'INDIVIDUAL', email: 'second@example.com' };
    const firstChallenge = await sandbox.firstLeg('PATCH', path, first);
    const secondChallenge = await sandbox.firstLeg('PATCH', path, second);
    expect((await sandbox.signedRetry('PATCH', path, first, firstChallenge, key)).statusCode).toBe(200);
    const failed = expectEnvelope(await sandbox.signedRetry('PATCH', path, second, secondChallenge, key), 424, 'EMAIL_OTP_CREDENTIAL_SYNC_FAILED');
    expect(failed.details).toEqual({ credentialId: wallet.credentialId });
    expect((await customerOf(sandbox, wallet)).email).toBe('first@example.com');
    expect((await credentialsOf(sandbox, wallet))[0]).toMatchObject({ nickname: 'first@example.com' });
  });

  it('changes an e-mail no credential is tied to at once', async () => {
    const wallet = await sandbox.newWallet({ phoneNumber: '+14155550202' });
    const email = await sandbox.login(wallet.credentialId);
    const sms = (await sandbox.signed('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: wallet.accountId }, email.key)).json() as { id: string };
    const smsSession = await sandbox.login(sms.id, '000000', 'SMS_OTP');
    expect((await sandbox.signed('DELETE', `/auth/credentials/${wallet.credentialId}`, undefined, smsSession.key)).statusCode).toBe(204);
    const plain = await sandbox.call('PATCH', `/customers/${wallet.customerId}`, { customerType: 'INDIVIDUAL', email: 'untied@example.com' });
    expect(plain.statusCode, plain.body).toBe(200);
    expect(plain.json()).toMatchObject({ email: 'untied@example.com' });
  });

  it('sending the e-mail already on file is no change: 200 at once, no challenge, the credential stays', async () => {
    const wallet = await sandbox.newWallet();
    const same = await sandbox.call('PATCH', `/customers/${wallet.customerId}`, { customerType: 'INDIVIDUAL', email: wallet.email });
    expect(same.statusCode, same.body).toBe(200);
    expect(same.json()).toMatchObject({ email: wallet.email });
    expect(await credentialsOf(sandbox, wallet)).toEqual([expect.objectContaining({ type: 'EMAIL_OTP', nickname: wallet.email })]);
  });
});

describe('phone change', () => {
  it('goes through a signed retry when an SMS_OTP credential is tied to it, and moves the credential with it', async () => {
    const { wallet, sms, smsId } = await walletWithPhoneCredential('+14155550203');
    const path = `/customers/${wallet.customerId}`;
    const body = { customerType: 'INDIVIDUAL', phoneNumber: '+14155550299' };
    const challenge = await sandbox.firstLeg('PATCH', path, body);
    expect(JSON.parse(challenge.payloadToSign)).toMatchObject({ type: 'ACTIVITY_TYPE_UPDATE_USER_PHONE_NUMBER', parameters: { userPhoneNumber: '+14155550299', userId: wallet.accountId } });
    expect((await customerOf(sandbox, wallet)).phoneNumber).toBe('+14155550203');
    const changed = await sandbox.signedRetry('PATCH', path, body, challenge, sms.key);
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json()).toMatchObject({ phoneNumber: '+14155550299', email: wallet.email });
    const list = await credentialsOf(sandbox, wallet);
    expect(list.find((c) => c.id === smsId)).toMatchObject({ type: 'SMS_OTP', nickname: '+14155550299' });
    expect(list.find((c) => c.type === 'EMAIL_OTP')).toMatchObject({ nickname: wallet.email });
  });

  it('changes a phone no credential is tied to at once', async () => {
    const wallet = await sandbox.newWallet({ phoneNumber: '+14155550204' });
    const plain = await sandbox.call('PATCH', `/customers/${wallet.customerId}`, { customerType: 'INDIVIDUAL', phoneNumber: '+14155550205' });
    expect(plain.statusCode, plain.body).toBe(200);
    expect(plain.json()).toMatchObject({ phoneNumber: '+14155550205' });
  });

  it('refuses a phone another wallet’s SMS_OTP credential carries with 409 CONFLICT', async () => {
    await walletWithPhoneCredential('+14155550206');
    const { wallet } = await walletWithPhoneCredential('+14155550207');
    const conflict = expectEnvelope(await sandbox.call('PATCH', `/customers/${wallet.customerId}`, { customerType: 'INDIVIDUAL', phoneNumber: '+14155550206' }), 409, 'CONFLICT');
    expect(conflict.details).toEqual({ field: 'phoneNumber' });
  });
});

it('refuses e-mail and phone in one PATCH with 400, before any challenge', async () => {
  const { wallet } = await walletWithPhoneCredential('+14155550208');
  const refused = expectEnvelope(
    await sandbox.call('PATCH', `/customers/${wallet.customerId}`, { customerType: 'INDIVIDUAL', email: 'both@example.com', phoneNumber: '+14155550209' }),
    400,
    'INVALID_INPUT',
  );
  expect(refused.details).toMatchObject({ errors: [{ field: 'phoneNumber' }] });
  expect(await customerOf(sandbox, wallet)).toMatchObject({ email: wallet.email, phoneNumber: '+14155550208' });
});
