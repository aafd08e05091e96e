import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeOtpChallenges } from '../../src/modules/wallet-auth/index.js';
import { parseId } from '../../src/platform/ids.js';
import { PURGE_BATCH_ROWS, RETENTION_MARGIN_MS } from '../../src/platform/retention.js';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { deadlocksDetected } from '../helpers/deadlocks.js';
import { newClientKey, stamp, uniquePhoneNumber, WalletClient, type ClientKey, type Method, type WalletFixture } from '../helpers/wallet.js';

/**
 * Wallet-auth audit: a deferred operation of a session that ended before it settled, OTP
 * credentials added for a contact that changed or that another customer's wallet carries,
 * concurrent refreshes of one credential's sessions, and the purge of OTP challenges.
 */
let ctx: TestContext;
let client: WalletClient;

beforeAll(async () => {
  ctx = await createTestContext();
  client = new WalletClient(ctx, ctx.platform);
  await client.enableWallets();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
const MINUTE = 60_000;

const credentials = async (w: WalletFixture) => ((await client.call('GET', `/auth/credentials?accountId=${w.accountId}`)).json() as { data: Body[] }).data;
const sessions = async (w: WalletFixture) => ((await client.call('GET', `/auth/sessions?accountId=${w.accountId}`)).json() as { data: Body[] }).data;

/** The first leg of a signed operation and its retry signed by `key` with a sandbox settle delay: PROCESSING. Answers the identical re-send. */
async function deferred(method: Method, path: string, body: unknown, key: ClientKey, seconds: number) {
  const challenge = await client.firstLeg(method, path, body);
  const headers = { 'service-wallet-signature': await stamp(key, challenge.payloadToSign), 'request-id': challenge.requestId, 'sandbox-settle-delay': String(seconds) };
  const pending = await client.call(method, path, body, headers);
  expect(pending.statusCode, pending.body).toBe(200);
  expect(pending.json()).toEqual({ status: 'PROCESSING' });
  return () => client.call(method, path, body, headers);
}

describe('a deferred operation whose signing session ended before it settled', () => {
  it('takes no effect when the session was revoked: the re-send answers 401 WALLET_SIGNATURE_INVALID', async () => {
    const wallet = await client.newWallet({ phoneNumber: uniquePhoneNumber() });
    const email = await client.login(wallet.credentialId);
    const resend = await deferred('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: wallet.accountId }, email.key, 30);
    // Self-logout, at once, while the add waits for the provider.
    const logout = `/auth/sessions/${email.session.id}`;
    expect((await client.signed('DELETE', logout, undefined, email.key)).statusCode).toBe(204);
    ctx.clock.advance(30_000);
    expectEnvelope(await resend(), 401, 'WALLET_SIGNATURE_INVALID');
    expect((await credentials(wallet)).map((c) => c.type)).toEqual(['EMAIL_OTP']);
    // The refusal is the request's stored outcome.
    expectEnvelope(await resend(), 401, 'WALLET_SIGNATURE_INVALID');
    expect(await ctx.jobs.runDue(50)).toBeGreaterThanOrEqual(0);
    expect((await credentials(wallet)).map((c) => c.type)).toEqual(['EMAIL_OTP']);
  });

  it('takes no effect when the credential that issued the session was revoked, settled by the reconciler', async () => {
    const wallet = await client.newWallet({ phoneNumber: uniquePhoneNumber() });
    const email = await client.login(wallet.credentialId);
    const added = await client.signed('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: wallet.accountId }, email.key);
    expect(added.statusCode, added.body).toBe(201);
    const sms = await client.login((added.json() as { id: string }).id, '000000', 'SMS_OTP');
    const resend = await deferred('POST', `/auth/sessions/${email.session.id}/refresh`, { clientPublicKey: newClientKey().publicKey }, email.key, 60);
    expect((await client.signed('DELETE', `/auth/credentials/${wallet.credentialId}`, undefined, sms.key)).statusCode).toBe(204);
    ctx.clock.advance(60_000);
    await ctx.jobs.runDue(50);
    expect((await sessions(wallet)).map((s) => s.id)).toEqual([sms.session.id]);
    const uuid = parseId('InternalAccount', wallet.accountId)!;
    const stored = await ctx.handle.db.selectFrom('auth_sessions').select('id').where('account_id', '=', uuid).execute();
    expect(stored).toHaveLength(2);
    expectEnvelope(await resend(), 401, 'WALLET_SIGNATURE_INVALID');
  });

  it('takes no effect when the session expired before it settled (wallet privacy, another module’s operation)', async () => {
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId);
    const resend = await deferred('PATCH', `/internal-accounts/${wallet.accountId}`, { privateEnabled: true }, key, 1800);
    ctx.clock.advance(1800_000);
    expectEnvelope(await resend(), 401, 'WALLET_SIGNATURE_INVALID');
    const accounts = (await client.call('GET', `/customers/internal-accounts?customerId=${wallet.customerId}&type=EMBEDDED_WALLET`)).json() as { data: Body[] };
    expect(accounts.data[0]).toMatchObject({ privateEnabled: false });
  });

  it('still settles when the session is active', async () => {
    const wallet = await client.newWallet({ phoneNumber: uniquePhoneNumber() });
    const email = await client.login(wallet.credentialId);
    const resend = await deferred('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: wallet.accountId }, email.key, 30);
    ctx.clock.advance(30_000);
    expect((await resend()).statusCode).toBe(201);
    expect((await credentials(wallet)).map((c) => c.type).sort()).toEqual(['EMAIL_OTP', 'SMS_OTP']);
  });
});

describe('adding an OTP credential', () => {
  const patchCustomer = (w: WalletFixture, change: Body) => client.call('PATCH', `/customers/${w.customerId}`, { customerType: 'INDIVIDUAL', ...change });

  it('refuses the signed retry with 409 CONFLICT (CONTACT_CHANGED) when the phone changed after the 202, and adds nothing', async () => {
    const phone = uniquePhoneNumber();
    const wallet = await client.newWallet({ phoneNumber: phone });
    const email = await client.login(wallet.credentialId);
    const body = { type: 'SMS_OTP', accountId: wallet.accountId };
    const challenge = await client.firstLeg('POST', '/auth/credentials', body);
    expect(challenge.payloadToSign).toContain(phone);
    // No SMS_OTP credential is tied to the phone yet, so the change needs no signature.
    const moved = uniquePhoneNumber();
    expect((await patchCustomer(wallet, { phoneNumber: moved })).statusCode).toBe(200);
    const refused = expectEnvelope(await client.signedRetry('POST', '/auth/credentials', body, challenge, email.key), 409, 'CONFLICT');
    expect(refused.details).toEqual({ field: 'phoneNumber', reason: 'CONTACT_CHANGED' });
    expect((await credentials(wallet)).map((c) => c.type)).toEqual(['EMAIL_OTP']);
    // A fresh add binds the phone the customer has now.
    const added = await client.signed('POST', '/auth/credentials', body, email.key);
    expect(added.statusCode, added.body).toBe(201);
    expect(added.json()).toMatchObject({ type: 'SMS_OTP', nickname: moved });
  });

  it('refuses an EMAIL_OTP add the same way when the e-mail changed after the 202', async () => {
    const wallet = await client.newWallet({ phoneNumber: uniquePhoneNumber() });
    const email = await client.login(wallet.credentialId);
    const added = await client.signed('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: wallet.accountId }, email.key);
    const sms = await client.login((added.json() as { id: string }).id, '000000', 'SMS_OTP');
    expect((await client.signed('DELETE', `/auth/credentials/${wallet.credentialId}`, undefined, sms.key)).statusCode).toBe(204);
    const body = { type: 'EMAIL_OTP', accountId: wallet.accountId };
    const challenge = await client.firstLeg('POST', '/auth/credentials', body);
    expect((await patchCustomer(wallet, { email: `moved-${wallet.email}` })).statusCode).toBe(200);
    const refused = expectEnvelope(await client.signedRetry('POST', '/auth/credentials', body, challenge, sms.key), 409, 'CONFLICT');
    expect(refused.details).toEqual({ field: 'email', reason: 'CONTACT_CHANGED' });
    expect((await credentials(wallet)).map((c) => c.type)).toEqual(['SMS_OTP']);
  });

  it('refuses an SMS_OTP for a phone that another customer’s wallet credential carries, at the first call and at the retry', async () => {
    const phone = uniquePhoneNumber();
    const first = await client.newWallet({ phoneNumber: phone });
    const second = await client.newWallet({ phoneNumber: phone });
    const firstLogin = await client.login(first.credentialId);
    const secondLogin = await client.login(second.credentialId);
    const secondBody = { type: 'SMS_OTP', accountId: second.accountId };
    const pending = await client.firstLeg('POST', '/auth/credentials', secondBody);
    expect((await client.signed('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: first.accountId }, firstLogin.key)).statusCode).toBe(201);
    const atRetry = expectEnvelope(await client.signedRetry('POST', '/auth/credentials', secondBody, pending, secondLogin.key), 409, 'CONFLICT');
    expect(atRetry.details).toEqual({ field: 'phoneNumber' });
    const atFirstCall = expectEnvelope(await client.call('POST', '/auth/credentials', secondBody), 409, 'CONFLICT');
    expect(atFirstCall.details).toEqual({ field: 'phoneNumber' });
    expect((await credentials(second)).map((c) => c.type)).toEqual(['EMAIL_OTP']);
  });
});

describe('concurrent refreshes of one credential’s sessions', () => {

  it('all complete, none waits out a deadlock, and each makes exactly one session', async () => {
    const wallet = await client.newWallet();
    const logins = [await client.login(wallet.credentialId), await client.login(wallet.credentialId)];
    const before = await deadlocksDetected(ctx.handle.db);
    const legs = [];
    for (let i = 0; i < 6; i++) {
      const { key, session } = logins[i % 2]!;
      const path = `/auth/sessions/${session.id}/refresh`;
      const body = { clientPublicKey: newClientKey().publicKey };
      legs.push({ path, body, key, challenge: await client.firstLeg('POST', path, body) });
    }
    const results = await Promise.all(
      legs.map(async ({ path, body, key, challenge }) => {
        const response = await client.signedRetry('POST', path, body, challenge, key);
        return { status: response.statusCode };
      }),
    );
    expect(results.map((r) => r.status)).toEqual(Array(6).fill(201));
    expect((await deadlocksDetected(ctx.handle.db)) - before).toBe(0);
    expect(await sessions(wallet)).toHaveLength(2 + 6);
  });

  it('deferred ones settled at once as well', async () => {
    const wallet = await client.newWallet();
    const { key, session } = await client.login(wallet.credentialId);
    const path = `/auth/sessions/${session.id}/refresh`;
    const resends = [];
    for (let i = 0; i < 6; i++) resends.push(await deferred('POST', path, { clientPublicKey: newClientKey().publicKey }, key, 30));
    const before = await deadlocksDetected(ctx.handle.db);
    ctx.clock.advance(30_000);
    const results = await Promise.all(
      resends.map(async (resend) => {
        const response = await resend();
        return { status: response.statusCode };
      }),
    );
    expect(results.map((r) => r.status)).toEqual(Array(6).fill(201));
    expect((await deadlocksDetected(ctx.handle.db)) - before).toBe(0);
    expect(await sessions(wallet)).toHaveLength(1 + 6);
    await ctx.jobs.runDue(50);
  });
});

describe('the purge of OTP challenges', () => {
  const stored = async (w: WalletFixture) =>
    (
      await ctx.handle.db
        .selectFrom('otp_challenges')
        .select('target_bundle')
        .where('credential_id', '=', parseId('AuthMethod', w.credentialId)!)
        .orderBy('created_at')
        .execute()
    ).map((r) => r.target_bundle);
  const purge = () => purgeOtpChallenges(ctx.handle.db, ctx.clock.now(), PURGE_BATCH_ROWS);
  const setExpiry = async (seconds: number) => {
    expect((await client.call('PATCH', '/config', { embeddedWalletConfig: { appName: 'Acme Wallet', expirationSeconds: seconds } })).statusCode).toBe(200);
  };
  const verify = async (w: WalletFixture, bundle: string) =>
    client.call('POST', `/auth/credentials/${w.credentialId}/verify`, { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(bundle, '000000', newClientKey()) });

  it('deletes challenges superseded or expired an hour ago, once out of the rate window, and keeps the latest open one', async () => {
    const superseded = await client.newWallet();
    const expired = await client.newWallet();
    const t0 = ctx.clock.now().getTime();
    const at = (ms: number) => ctx.clock.set(new Date(t0 + ms));
    const old = await client.challenge(superseded.credentialId);
    const lone = await client.challenge(expired.credentialId); // expires at t0 + 5 min
    at(20 * MINUTE);
    await setExpiry(3 * 3600);
    const latest = await client.challenge(superseded.credentialId); // supersedes `old`, open for 3 hours
    // Still inside the rate window plus the margin: both stay.
    at(RETENTION_MARGIN_MS + 15 * MINUTE - 1000);
    await purge();
    expect(await stored(superseded)).toEqual([old, latest]);
    expect(await stored(expired)).toEqual([lone]);
    at(RETENTION_MARGIN_MS + 15 * MINUTE + 1000);
    await purge();
    expect(await stored(superseded)).toEqual([latest]);
    expect(await stored(expired)).toEqual([]);
    // The latest, open code still logs in; the expired one's verify is still a 401.
    const challenged = await verify(superseded, latest);
    expect(challenged.statusCode, challenged.body).toBe(202);
    expect((expectEnvelope(await verify(expired, lone), 401, 'UNAUTHORIZED').details as Body).reason).toBe('OTP_NOT_ISSUED');
    await setExpiry(300);
  });

  it('never deletes a latest code before an older open one, which would make that one the latest again', async () => {
    const wallet = await client.newWallet();
    const t0 = ctx.clock.now().getTime();
    await setExpiry(86_400);
    const longLived = await client.challenge(wallet.credentialId); // open for a day
    await setExpiry(300);
    ctx.clock.set(new Date(t0 + MINUTE));
    const shortLived = await client.challenge(wallet.credentialId);
    // Issued in the same millisecond: the greater id is the latest (latestOtpChallenge), the other superseded.
    const sameInstant = await client.challenge(wallet.credentialId);
    ctx.clock.set(new Date(t0 + MINUTE + RETENTION_MARGIN_MS + 15 * MINUTE + 1000));
    await purge();
    expect(await stored(wallet)).toEqual([]);
    expect((expectEnvelope(await verify(wallet, longLived), 401, 'UNAUTHORIZED').details as Body).reason).toBe('OTP_NOT_ISSUED');
    expect((expectEnvelope(await verify(wallet, shortLived), 401, 'UNAUTHORIZED').details as Body).reason).toBe('OTP_NOT_ISSUED');
    expect((expectEnvelope(await verify(wallet, sameInstant), 401, 'UNAUTHORIZED').details as Body).reason).toBe('OTP_NOT_ISSUED');
  });

  it('walks its index, not the table', async () => {
    // The batch's select (retention.ts deleteOldest) with sequential scans priced out: it can use the index at all.
    const plan = await ctx.handle.db.transaction().execute(async (trx) => {
      await sql`set local enable_seqscan = off`.execute(trx);
      return sql<{ 'QUERY PLAN': string }>`explain select ctid from otp_challenges where (expires_at < now() or exists (
        select 1 from otp_challenges later where later.credential_id = otp_challenges.credential_id and (later.created_at, later.id) > (otp_challenges.created_at, otp_challenges.id)))
        and created_at < now() order by created_at limit 1000`.execute(trx);
    });
    const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
    expect(text).toContain('otp_challenges_created');
    expect(text).not.toMatch(/Seq Scan/);
  });
});
