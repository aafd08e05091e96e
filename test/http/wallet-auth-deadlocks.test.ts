import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { deadlocksDetected } from '../helpers/deadlocks.js';
import { newClientKey, stamp, uniquePhoneNumber, WalletClient, type SignedLeg, type WalletFixture } from '../helpers/wallet.js';

/**
 * Signed operations of one wallet run at the same time take their locks in one global order
 * (wallet-auth README, "Lock order"), so none waits out PostgreSQL's deadlock detection: crossed
 * credential revocations, and a contact change beside other operations signed by a session of a
 * credential it moves. On PGlite (one connection) they run one after another: the outcomes hold.
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
type Login = Awaited<ReturnType<WalletClient['login']>>;


const credentials = async (w: WalletFixture) => ((await client.call('GET', `/auth/credentials?accountId=${w.accountId}`)).json() as { data: Array<Body & { id: string }> }).data;
const sessions = async (w: WalletFixture) => ((await client.call('GET', `/auth/sessions?accountId=${w.accountId}`)).json() as { data: Array<Body & { id: string }> }).data;

/** The signed retries of `legs` sent at once (`WalletClient.raceSigned`), each answer as `{response}`. */
async function race(legs: SignedLeg[]) {
  const [responses] = await client.raceSigned([legs]);
  return responses!.map((response) => ({ response }));
}

async function walletWithTwoCredentials(): Promise<{ wallet: WalletFixture; email: Login; sms: Login; smsId: string }> {
  const wallet = await client.newWallet({ phoneNumber: uniquePhoneNumber() });
  const email = await client.login(wallet.credentialId);
  const added = await client.signed('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: wallet.accountId }, email.key);
  expect(added.statusCode, added.body).toBe(201);
  const smsId = (added.json() as { id: string }).id;
  return { wallet, email, sms: await client.login(smsId, '000000', 'SMS_OTP'), smsId };
}

describe('two crossed credential revocations sent at once (no settle delay)', () => {
  it('exactly one succeeds, the other is refused as signed by a session that ended; none waits out a deadlock', async () => {
    const wallets = [];
    for (let i = 0; i < 4; i++) wallets.push(await walletWithTwoCredentials());
    const before = await deadlocksDetected(ctx.handle.db);
    const rounds = await Promise.all(
      wallets.map(({ wallet, email, sms, smsId }) =>
        race([
          { method: 'DELETE', path: `/auth/credentials/${smsId}`, body: undefined, key: email.key },
          { method: 'DELETE', path: `/auth/credentials/${wallet.credentialId}`, body: undefined, key: sms.key },
        ]),
      ),
    );
    expect((await deadlocksDetected(ctx.handle.db)) - before).toBe(0);
    for (const [i, results] of rounds.entries()) {
      const { wallet, email, sms } = wallets[i]!;
      const statuses = results.map((r) => r.response.statusCode);
      expect([...statuses].sort()).toEqual([204, 401]);
      expectEnvelope(results.find((r) => r.response.statusCode === 401)!.response, 401, 'WALLET_SIGNATURE_INVALID');
      // The survivor is the credential whose session signed the revocation that won; the other's sessions ended.
      const survivor = statuses[0] === 204 ? email : sms;
      const left = await credentials(wallet);
      expect(left).toHaveLength(1);
      expect((await sessions(wallet)).map((s) => s.id)).toEqual([survivor.session.id]);
    }
  });

  it('one settled late (sandbox settle delay) while the crossed one is sent: one succeeds, the other is 401, never a deadlock', async () => {
    const wallets = [];
    for (let i = 0; i < 3; i++) wallets.push(await walletWithTwoCredentials());
    const deferred: Array<{ path: string; headers: Record<string, string> }> = [];
    for (const { email, smsId } of wallets) {
      const path = `/auth/credentials/${smsId}`;
      const challenge = await client.firstLeg('DELETE', path);
      const headers = { 'service-wallet-signature': await stamp(email.key, challenge.payloadToSign), 'request-id': challenge.requestId, 'sandbox-settle-delay': '30' };
      expect((await client.call('DELETE', path, undefined, headers)).json()).toEqual({ status: 'PROCESSING' });
      deferred.push({ path, headers });
    }
    const crossed: Array<{ path: string; headers: Record<string, string> }> = [];
    for (const { wallet, sms } of wallets) {
      const path = `/auth/credentials/${wallet.credentialId}`;
      const challenge = await client.firstLeg('DELETE', path);
      crossed.push({ path, headers: { 'service-wallet-signature': await stamp(sms.key, challenge.payloadToSign), 'request-id': challenge.requestId } });
    }
    ctx.clock.advance(30_000);
    const before = await deadlocksDetected(ctx.handle.db);
    const rounds = await Promise.all(wallets.map((_, i) => Promise.all([deferred[i]!, crossed[i]!].map(({ path, headers }) => client.call('DELETE', path, undefined, headers)))));
    expect((await deadlocksDetected(ctx.handle.db)) - before).toBe(0);
    for (const [i, settled] of rounds.entries()) {
      const [won, lost] = [...settled].sort((a, b) => a.statusCode - b.statusCode);
      expect(won!.statusCode).toBe(204);
      expectEnvelope(lost!, 401, 'WALLET_SIGNATURE_INVALID');
      expect(await credentials(wallets[i]!.wallet)).toHaveLength(1);
    }
    // The settle jobs (the re-sends settled their requests already), so later tests find only their own due.
    while ((await ctx.jobs.runDue(50)) > 0);
  });
});

describe('a signed contact change beside other signed operations of a session of a credential it moves', () => {
  const patch = (w: WalletFixture, change: Body) => ({ method: 'PATCH' as const, path: `/customers/${w.customerId}`, body: { customerType: 'INDIVIDUAL', ...change } });

  it('an e-mail change, an SMS_OTP add and a refresh signed by one session all complete', async () => {
    const wallets = [await client.newWallet({ phoneNumber: uniquePhoneNumber() }), await client.newWallet({ phoneNumber: uniquePhoneNumber() })];
    const logins = [await client.login(wallets[0]!.credentialId), await client.login(wallets[1]!.credentialId)];
    const before = await deadlocksDetected(ctx.handle.db);
    const rounds = await Promise.all(
      wallets.map((wallet, i) => {
        const { key, session } = logins[i]!;
        return race([
          { ...patch(wallet, { email: `moved-${wallet.email}` }), key },
          { method: 'POST', path: '/auth/credentials', body: { type: 'SMS_OTP', accountId: wallet.accountId }, key },
          { method: 'POST', path: `/auth/sessions/${session.id}/refresh`, body: { clientPublicKey: newClientKey().publicKey }, key },
        ]);
      }),
    );
    expect((await deadlocksDetected(ctx.handle.db)) - before).toBe(0);
    for (const [i, results] of rounds.entries()) {
      const wallet = wallets[i]!;
      expect(results.map((r) => r.response.statusCode)).toEqual([200, 201, 201]);
      const byType = Object.fromEntries((await credentials(wallet)).map((c) => [c.type, c.nickname]));
      expect(byType).toMatchObject({ EMAIL_OTP: `moved-${wallet.email}` });
      expect(Object.keys(byType).sort()).toEqual(['EMAIL_OTP', 'SMS_OTP']);
      expect(await sessions(wallet)).toHaveLength(2);
    }
  });

  it('two competing e-mail changes signed by one session: one moves the credential, the other is 424 and changes nothing', async () => {
    const wallet = await client.newWallet();
    const { key } = await client.login(wallet.credentialId);
    const before = await deadlocksDetected(ctx.handle.db);
    const results = await race([
      { ...patch(wallet, { email: `first-${wallet.email}` }), key },
      { ...patch(wallet, { email: `second-${wallet.email}` }), key },
    ]);
    expect((await deadlocksDetected(ctx.handle.db)) - before).toBe(0);
    expect(results.map((r) => r.response.statusCode).sort()).toEqual([200, 424]);
    expectEnvelope(results.find((r) => r.response.statusCode === 424)!.response, 424, 'EMAIL_OTP_CREDENTIAL_SYNC_FAILED');
    const winner = (results.find((r) => r.response.statusCode === 200)!.response.json() as { email: string }).email;
    const customer = (await client.call('GET', `/customers/${wallet.customerId}`)).json() as { email: string };
    expect(customer.email).toBe(winner);
    expect((await credentials(wallet)).map((c) => c.nickname)).toEqual([winner]);
  });

  it('an e-mail change signed by the SMS_OTP session beside the revocation of that SMS_OTP credential: no deadlock, one credential at least', async () => {
    const { wallet, email, sms, smsId } = await walletWithTwoCredentials();
    const before = await deadlocksDetected(ctx.handle.db);
    const [change, revoke] = await race([
      { ...patch(wallet, { email: `moved-${wallet.email}` }), key: sms.key },
      { method: 'DELETE', path: `/auth/credentials/${smsId}`, body: undefined, key: email.key },
    ]);
    expect((await deadlocksDetected(ctx.handle.db)) - before).toBe(0);
    expect(revoke!.response.statusCode, revoke!.response.body).toBe(204);
    // Ordered before the revocation it moves the e-mail; after it, its signing session has ended.
    const left = await credentials(wallet);
    expect(left.map((c) => c.type)).toEqual(['EMAIL_OTP']);
    if (change!.response.statusCode === 200) {
      expect(left[0]!.nickname).toBe(`moved-${wallet.email}`);
    } else {
      expectEnvelope(change!.response, 401, 'WALLET_SIGNATURE_INVALID');
      expect(left[0]!.nickname).toBe(wallet.email);
    }
    expect((await sessions(wallet)).map((s) => s.id)).toEqual([email.session.id]);
  });
});
