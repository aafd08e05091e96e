/**
 * Wallet-auth operations racing on PostgreSQL, in the order the README's Lock order gives: a
 * login takes the credential it logs in with FOR UPDATE; a signed operation that writes existing
 * credentials takes them FOR UPDATE (step 3) before any signer check or customer row. A side
 * transaction holds a row as a concurrent operation would, the requests queue behind it, then
 * the side commits.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../src/platform/db/database.js';
import { parseId } from '../../src/platform/ids.js';
import { createTestContext, expectEnvelope, onPostgres, type TestContext } from '../helpers/context.js';
import { SoftwareAuthenticator } from '../helpers/authenticator.js';
import { deadlocksDetected } from '../helpers/deadlocks.js';
import { holdLocks, openSide, started, waitingFor } from '../helpers/lock-queue.js';
import { newClientKey, uniquePhoneNumber, WalletClient } from '../helpers/wallet.js';

describe.runIf(onPostgres)('wallet-auth operations queued behind a transaction the test holds', () => {
  const RP = { rpId: 'wallet.example.com', origin: 'https://wallet.example.com' };
  let ctx: TestContext;
  let client: WalletClient;
  let side: DbHandle;
  beforeAll(async () => {
    ctx = await createTestContext();
    side = await openSide(ctx.handle.db, 2);
    client = new WalletClient(ctx, ctx.platform);
    await client.enableWallets();
    const configured = await client.call('PATCH', '/config', { embeddedWalletConfig: { passkeyRpId: RP.rpId, passkeyOrigins: [RP.origin] } });
    expect(configured.statusCode, configured.body).toBe(200);
  });
  afterAll(async () => {
    await side?.close();
    await ctx.close();
  });

  describe('an OTP verify while another wrong code of the credential is being counted', () => {
    it('waits for it on the credential row and counts both: three attempts remain, not four', async () => {
      const wallet = await client.newWallet();
      const bundle = await client.challenge(wallet.credentialId);
      const uuid = parseId('AuthMethod', wallet.credentialId)!;
      // The side does what a wrong code's verify does to the credential: one more failure, uncommitted.
      const held = await holdLocks(side.db, async (trx) => {
        await trx.updateTable('auth_credentials').set({ otp_failures: sql`otp_failures + 1` }).where('id', '=', uuid).execute();
      });
      try {
        const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(bundle, '123456', newClientKey()) };
        const verify = started(client.call('POST', `/auth/credentials/${wallet.credentialId}/verify`, body));
        await waitingFor(side.db, [held.pid], verify);
        await held.release();
        const wrong = expectEnvelope(await verify.request, 401, 'UNAUTHORIZED');
        expect(wrong.details).toEqual({ reason: 'OTP_INVALID', attemptsRemaining: 3 });
        const stored = await ctx.handle.db.selectFrom('auth_credentials').select('otp_failures').where('id', '=', uuid).executeTakeFirstOrThrow();
        expect(stored.otp_failures).toBe(2);
      } finally {
        await held.release();
      }
    });
  });

  describe('a passkey login settling while another assertion of the same counter settles', () => {
    it('waits for it on the credential row, then reads the counter it stored: 401 counter, no session', async () => {
      const wallet = await client.newWallet();
      const { key } = await client.login(wallet.credentialId);
      const authenticator = new SoftwareAuthenticator();
      const registration = Buffer.from('registration-race').toString('base64url');
      const body = { type: 'PASSKEY', accountId: wallet.accountId, nickname: 'Laptop', challenge: registration, attestation: authenticator.create({ ...RP, challenge: registration }) };
      const added = await client.signed('POST', '/auth/credentials', body, key);
      expect(added.statusCode, added.body).toBe(201);
      const credentialId = (added.json() as { id: string }).id;
      const uuid = parseId('AuthMethod', credentialId)!;
      const issued = (await client.call('POST', `/auth/credentials/${credentialId}/challenge`, { clientPublicKey: newClientKey().publicKey })).json() as { challenge: string; requestId: string };
      const counter = authenticator.counter + 1;
      const assertion = authenticator.get({ ...RP, challenge: Buffer.from(issued.challenge, 'utf8'), counter });
      const sessions = () => ctx.handle.db.selectFrom('auth_sessions').select('id').where('credential_id', '=', uuid).execute();
      const before = await sessions();

      // The side does what a clone's assertion of the same counter does as it settles: the credential row, its new counter.
      const held = await holdLocks(side.db, async (trx) => {
        const row = await trx.selectFrom('auth_credentials').select('details').where('id', '=', uuid).forUpdate().executeTakeFirstOrThrow();
        await trx.updateTable('auth_credentials').set({ details: JSON.stringify({ ...(row.details as object), counter }) as never }).where('id', '=', uuid).execute();
      });
      try {
        const verify = started(client.call('POST', `/auth/credentials/${credentialId}/verify`, { type: 'PASSKEY', assertion }, { 'request-id': issued.requestId }));
        await waitingFor(side.db, [held.pid], verify);
        await held.release();
        expect(expectEnvelope(await verify.request, 401, 'UNAUTHORIZED').details).toEqual({ check: 'counter' });
        expect(await sessions()).toEqual(before);
      } finally {
        await held.release();
      }
    });
  });

  describe('a contact change and an add signed by one session, the change first at the customer row', () => {
    it('the add waits at the credential the change moves, not at the customer row: both complete, no deadlock (README, Lock order step 3)', async () => {
      const wallet = await client.newWallet({ phoneNumber: uniquePhoneNumber() });
      const { key } = await client.login(wallet.credentialId);
      const path = `/customers/${wallet.customerId}`;
      const change = { customerType: 'INDIVIDUAL', email: `moved-${wallet.email}` };
      const add = { type: 'SMS_OTP', accountId: wallet.accountId };
      const changeChallenge = await client.firstLeg('PATCH', path, change);
      const addChallenge = await client.firstLeg('POST', '/auth/credentials', add);
      const before = await deadlocksDetected(ctx.handle.db);

      const held = await holdLocks(side.db, (trx) => trx.selectFrom('customers').select('id').where('id', '=', parseId('Customer', wallet.customerId)!).forUpdate().execute());
      try {
        const changing = started(client.signedRetry('PATCH', path, change, changeChallenge, key));
        const changer = await waitingFor(side.db, [held.pid], changing);
        const adding = started(client.signedRetry('POST', '/auth/credentials', add, addChallenge, key));
        await waitingFor(side.db, [held.pid, changer], adding, [changer]);
        await held.release();
        const [changed, added] = [await changing.request, await adding.request];
        expect(changed.statusCode, changed.body).toBe(200);
        expect(added.statusCode, added.body).toBe(201);
      } finally {
        await held.release();
      }
      expect((await deadlocksDetected(ctx.handle.db)) - before).toBe(0);
    });
  });
});
