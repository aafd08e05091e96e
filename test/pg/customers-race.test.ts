import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db, DbHandle } from '../../src/platform/db/database.js';
import { parseId } from '../../src/platform/ids.js';
import { setReviewStatus } from '../../src/modules/customers/index.js';
import { lockOtpContact, moveCredentialContact } from '../../src/modules/wallet-auth/repo.js';
import { BASE, createTestContext, expectEnvelope, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';
import { holdLocks, openSide, started, waitingFor, type Started } from '../helpers/lock-queue.js';
import { uploadPdf, type Verification } from '../helpers/verifications.js';
import { WalletClient } from '../helpers/wallet.js';

/**
 * Customers' writes racing others on PostgreSQL, the order forced by a transaction the test holds
 * open on its own connection (test/helpers/lock-queue.ts): each request must queue behind the
 * lock its rule names, then see what the holder committed.
 */
describe.runIf(onPostgres)('customers and their platform configuration racing on PostgreSQL', () => {
  let ctx: TestContext;
  let side: DbHandle;
  let wallets: WalletClient;
  beforeAll(async () => {
    ctx = await createTestContext();
    side = await openSide(ctx.handle.db, 3);
    wallets = new WalletClient(ctx, ctx.platform);
    await wallets.enableWallets();
  });
  afterAll(async () => {
    await side?.close();
    await ctx?.close();
  });

  type Answer = Awaited<ReturnType<WalletClient['call']>>;
  const hold = (lock: (trx: Db) => Promise<unknown>) => holdLocks(side.db, lock);
  const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: object) =>
    ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload }) });

  it('an e-mail change’s signed retry queues on the new address’s contact lock: a credential tied to it meanwhile makes it 409, nothing changed', async () => {
    const wallet = await wallets.newWallet();
    const other = await wallets.newWallet();
    const { key } = await wallets.login(wallet.credentialId);
    const path = `/customers/${wallet.customerId}`;
    const contested = 'contested-lock@example.com';
    const body = { customerType: 'INDIVIDUAL', email: contested };
    const challenge = await wallets.firstLeg('PATCH', path, body);
    // As an OTP add or contact change of the other customer does: the contact's lock, then its credential carries the address.
    const held = await hold(async (trx) => {
      await lockOtpContact(trx as never, ctx.platform.uuid, 'EMAIL_OTP', contested);
      expect(await moveCredentialContact(trx, parseId('AuthMethod', other.credentialId)!, other.email, contested, ctx.clock.now())).toBe(true);
    });
    let retry: Started<Answer>;
    try {
      retry = started(wallets.signedRetry('PATCH', path, body, challenge, key));
      await waitingFor(side.db, [held.pid], retry);
    } finally {
      await held.release();
    }
    expectEnvelope(await retry.request, 409, 'EMAIL_OTP_EMAIL_ALREADY_EXISTS');
    expect(((await wallets.call('GET', path)).json() as { email: string }).email).toBe(wallet.email);
    const credentials = (await wallets.call('GET', `/auth/credentials?accountId=${wallet.accountId}`)).json() as { data: Array<{ nickname: string }> };
    expect(credentials.data.map((c) => c.nickname)).toEqual([wallet.email]);
  });

  it('a verification reads its customer under the row lock: a profile change committed while it queued is what it judges', async () => {
    const p = await ctx.newPlatform();
    expect((await call(p, 'PATCH', '/customers/settings', { sandboxAutoApprove: false })).statusCode).toBe(200);
    const created = await call(p, 'POST', '/customers', {
      customerType: 'INDIVIDUAL',
      platformCustomerId: 'race-review',
      fullName: 'Jane Doe',
      nationality: 'US',
      address: { line1: '1 Main St', postalCode: '62701', country: 'US' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const customerId = (created.json() as { id: string }).id;
    await uploadPdf(ctx.app, p, customerId, 'PASSPORT');
    // A profile write in flight (as a PATCH holds the row): it fills in the birth date the review asks for.
    const held = await hold((trx) =>
      trx
        .updateTable('customers')
        .set({ profile: sql`profile || '{"birthDate": "1990-01-15"}'::jsonb` })
        .where('id', '=', parseId('Customer', customerId)!)
        .execute(),
    );
    let review: Started<Answer>;
    try {
      review = started(call(p, 'POST', '/verifications', { customerId }));
      await waitingFor(side.db, [held.pid], review);
    } finally {
      await held.release();
    }
    const answer = await review.request;
    expect(answer.statusCode, answer.body).toBe(200);
    expect(answer.json() as Verification).toMatchObject({ verificationStatus: 'IN_PROGRESS', errors: [] });
  });

  it('an approval holds the configuration it opened accounts from: a PATCH /config adding a currency queues behind it, and its job opens the new account', async () => {
    const p = await ctx.newPlatform();
    expect((await call(p, 'PATCH', '/customers/settings', { sandboxAutoApprove: false })).statusCode).toBe(200);
    const created = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'race-pending', fullName: 'Bo Lee' });
    expect(created.statusCode, created.body).toBe(201);
    const uuid = parseId('Customer', (created.json() as { id: string }).id)!;
    // A review's approval, held open after it opened the customer's accounts from the configuration.
    const approval = await hold((trx) => setReviewStatus(trx as never, ctx.clock, p.uuid, uuid, 'APPROVED'));
    let configured: Started<Answer>;
    try {
      configured = started(
        call(p, 'PATCH', '/config', {
          supportedCurrencies: [
            { currencyCode: 'USD', minAmount: 1, maxAmount: 1_000_000 },
            { currencyCode: 'EUR', minAmount: 1, maxAmount: 1_000_000 },
          ],
        }),
      );
      await waitingFor(side.db, [approval.pid], configured);
    } finally {
      await approval.release();
    }
    expect((await configured.request).statusCode).toBe(200);
    while ((await ctx.jobs.runDue()) > 0);
    const accounts = await ctx.handle.db.selectFrom('internal_accounts').select(['type', 'currency']).where('customer_id', '=', uuid).orderBy('currency').execute();
    expect(accounts).toEqual([
      { type: 'INTERNAL_FIAT', currency: 'EUR' },
      { type: 'INTERNAL_FIAT', currency: 'USD' },
    ]);
  });

  it('PATCH /config merges onto the configuration under its row lock: a change committed while it queued is kept', async () => {
    const p = await ctx.newPlatform();
    // Another PATCH in flight: it holds the row and sets the wallet configuration.
    const held = await hold((trx) =>
      trx
        .updateTable('platform_configs')
        .set({ embedded_wallet_config: JSON.stringify({ appName: 'Side' }) as never })
        .where('platform_id', '=', p.uuid)
        .execute(),
    );
    let merged: Started<Answer>;
    try {
      merged = started(call(p, 'PATCH', '/config', { embeddedWalletConfig: { otpLength: 8 } }));
      await waitingFor(side.db, [held.pid], merged);
    } finally {
      await held.release();
    }
    const answer = await merged.request;
    expect(answer.statusCode, answer.body).toBe(200);
    expect((answer.json() as { embeddedWalletConfig: unknown }).embeddedWalletConfig).toEqual({ appName: 'Side', otpLength: 8 });
    expect(((await call(p, 'GET', '/config')).json() as { embeddedWalletConfig: unknown }).embeddedWalletConfig).toEqual({ appName: 'Side', otpLength: 8 });
  });
});

