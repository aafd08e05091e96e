/**
 * Wallet-auth logins racing on PostgreSQL (wallet-auth README, Lock order: a login takes the
 * credential it logs in with FOR UPDATE). A side transaction holds the credential row as a
 * concurrent login would, the request queues behind it, then the side commits.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseId } from '../../src/platform/ids.js';
import { createTestContext, expectEnvelope, onPostgres, type TestContext } from '../helpers/context.js';
import { holdLocks, openSide, started, waiterBehind } from '../helpers/lock-queue.js';
import { newClientKey, WalletClient } from '../helpers/wallet.js';

describe.runIf(onPostgres)('an OTP verify while another wrong code of the credential is being counted', () => {
  let ctx: TestContext;
  let client: WalletClient;
  beforeAll(async () => {
    ctx = await createTestContext();
    client = new WalletClient(ctx, ctx.platform);
    await client.enableWallets();
  });
  afterAll(() => ctx.close());

  it('waits for it on the credential row and counts both: three attempts remain, not four', async () => {
    const wallet = await client.newWallet();
    const bundle = await client.challenge(wallet.credentialId);
    const uuid = parseId('AuthMethod', wallet.credentialId)!;
    // The side does what a wrong code's verify does to the credential: one more failure, uncommitted.
    const side = await openSide(ctx.handle.db, 2);
    const held = await holdLocks(side.db, async (trx) => {
      await trx.updateTable('auth_credentials').set({ otp_failures: sql`otp_failures + 1` }).where('id', '=', uuid).execute();
    });
    try {
      const body = { type: 'EMAIL_OTP', encryptedOtpBundle: await client.encryptOtp(bundle, '123456', newClientKey()) };
      const verify = started(client.call('POST', `/auth/credentials/${wallet.credentialId}/verify`, body));
      await waiterBehind(side.db, [held.pid], { answered: verify.answered });
      await held.release();
      const wrong = expectEnvelope(await verify.request, 401, 'UNAUTHORIZED');
      expect(wrong.details).toEqual({ reason: 'OTP_INVALID', attemptsRemaining: 3 });
      const stored = await ctx.handle.db.selectFrom('auth_credentials').select('otp_failures').where('id', '=', uuid).executeTakeFirstOrThrow();
      expect(stored.otp_failures).toBe(2);
    } finally {
      await held.release();
      await side.close();
    }
  });
});
