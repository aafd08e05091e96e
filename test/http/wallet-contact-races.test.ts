import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext } from '../helpers/context.js';
import { deadlocksDetected } from '../helpers/deadlocks.js';
import { uniquePhoneNumber, WalletClient, type WalletFixture } from '../helpers/wallet.js';

/**
 * An OTP credential may not carry a contact an active OTP credential of another customer's wallet
 * carries (wallet-auth README), and no unique index can say so: the OTP adds and contact changes
 * that tie one contact to two customers' wallets at the same instant take the contact's lock
 * (README, Lock order) so exactly one of them wins, and none waits out a deadlock. On PostgreSQL
 * the signed retries of every round reach the database together; on PGlite (one connection) they
 * run one after another and the outcomes hold the same.
 */
let ctx: TestContext;
let client: WalletClient;

beforeAll(async () => {
  ctx = await createTestContext();
  client = new WalletClient(ctx, ctx.platform);
  await client.enableWallets();
});
afterAll(() => ctx.close());

/** Rounds of each race, all sent at once. */
const ROUNDS = 5;

type Body = Record<string, unknown>;

const otpCredentials = async (w: WalletFixture, type: string) =>
  ((await client.call('GET', `/auth/credentials?accountId=${w.accountId}`)).json() as { data: Array<Body & { type: string; nickname: string }> }).data.filter((c) => c.type === type);

const patch = (w: WalletFixture, change: Body) => ({ method: 'PATCH' as const, path: `/customers/${w.customerId}`, body: { customerType: 'INDIVIDUAL', ...change } });
const addSmsOtp = (w: WalletFixture) => ({ method: 'POST' as const, path: '/auth/credentials', body: { type: 'SMS_OTP', accountId: w.accountId } });

/** A wallet (customer with `extra`) logged in with its EMAIL_OTP credential. */
async function loggedInWallet(extra: Body = {}) {
  const wallet = await client.newWallet(extra);
  return { wallet, key: (await client.login(wallet.credentialId)).key };
}

/** A wallet with an SMS_OTP credential on a phone of its own, its EMAIL_OTP logged in. */
async function walletWithSmsOtp() {
  const { wallet, key } = await loggedInWallet({ phoneNumber: uniquePhoneNumber() });
  const added = await client.signed('POST', '/auth/credentials', { type: 'SMS_OTP', accountId: wallet.accountId }, key);
  expect(added.statusCode, added.body).toBe(201);
  return { wallet, key };
}

describe('one contact tied to two customers’ wallets at the same instant: exactly one wins, no deadlock', () => {
  it('two customers with one phone add SMS_OTP: one 201, the other 409 CONFLICT (phoneNumber)', async () => {
    const pairs = [];
    for (let i = 0; i < ROUNDS; i++) {
      const phoneNumber = uniquePhoneNumber();
      pairs.push([await loggedInWallet({ phoneNumber }), await loggedInWallet({ phoneNumber })] as const);
    }
    const before = await deadlocksDetected(ctx.handle.db);
    const rounds = await client.raceSigned(pairs.map((pair) => pair.map(({ wallet, key }) => ({ ...addSmsOtp(wallet), key }))));
    expect((await deadlocksDetected(ctx.handle.db)) - before).toBe(0);
    for (const [i, results] of rounds.entries()) {
      expect(results.map((r) => r.statusCode).sort(), results.map((r) => r.body).join('\n')).toEqual([201, 409]);
      const lost = results.find((r) => r.statusCode === 409)!;
      expectEnvelope(lost, 409, 'CONFLICT');
      expect((lost.json() as { details: Body }).details).toMatchObject({ field: 'phoneNumber' });
      const held = await Promise.all(pairs[i]!.map(({ wallet }) => otpCredentials(wallet, 'SMS_OTP')));
      expect(held.map((list) => list.length)).toEqual(results.map((r) => (r.statusCode === 201 ? 1 : 0)));
    }
  });

  it('two customers change their e-mail to one address, spelt in two cases: one 200, the other 409 EMAIL_OTP_EMAIL_ALREADY_EXISTS', async () => {
    const pairs = [];
    for (let i = 0; i < ROUNDS; i++) pairs.push([await loggedInWallet(), await loggedInWallet()] as const);
    const before = await deadlocksDetected(ctx.handle.db);
    const shared = (i: number) => `shared-${i}@example.com`;
    const rounds = await client.raceSigned(
      pairs.map(([first, second], i) => [
        { ...patch(first.wallet, { email: shared(i) }), key: first.key },
        { ...patch(second.wallet, { email: shared(i).toUpperCase() }), key: second.key },
      ]),
    );
    expect((await deadlocksDetected(ctx.handle.db)) - before).toBe(0);
    for (const [i, results] of rounds.entries()) {
      expect(results.map((r) => r.statusCode).sort(), results.map((r) => r.body).join('\n')).toEqual([200, 409]);
      expectEnvelope(results.find((r) => r.statusCode === 409)!, 409, 'EMAIL_OTP_EMAIL_ALREADY_EXISTS');
      // The winner's customer and credential moved; the loser's stayed on its own address.
      const [first, second] = pairs[i]!;
      const expected = results[0]!.statusCode === 200 ? [shared(i), second.wallet.email] : [first.wallet.email, shared(i).toUpperCase()];
      for (const [j, { wallet }] of [first, second].entries()) {
        expect((await otpCredentials(wallet, 'EMAIL_OTP')).map((c) => c.nickname)).toEqual([expected[j]]);
        expect(((await client.call('GET', `/customers/${wallet.customerId}`)).json() as { email: string }).email).toBe(expected[j]);
      }
    }
  });

  it('an SMS_OTP add of a phone beside another customer’s phone change to it: one wins, the other 409 CONFLICT', async () => {
    const pairs = [];
    for (let i = 0; i < ROUNDS; i++) {
      const phoneNumber = uniquePhoneNumber();
      pairs.push({ phoneNumber, adding: await loggedInWallet({ phoneNumber }), moving: await walletWithSmsOtp() });
    }
    const before = await deadlocksDetected(ctx.handle.db);
    const rounds = await client.raceSigned(
      pairs.map(({ phoneNumber, adding, moving }) => [
        { ...addSmsOtp(adding.wallet), key: adding.key },
        { ...patch(moving.wallet, { phoneNumber }), key: moving.key },
      ]),
    );
    expect((await deadlocksDetected(ctx.handle.db)) - before).toBe(0);
    for (const [i, [add, change]] of rounds.entries()) {
      const statuses = [add!.statusCode, change!.statusCode];
      expect(statuses, [add!.body, change!.body].join('\n')).toEqual(statuses[0] === 201 ? [201, 409] : [409, 200]);
      expectEnvelope(statuses[0] === 201 ? change! : add!, 409, 'CONFLICT');
      const { phoneNumber, adding, moving } = pairs[i]!;
      const phones = [...(await otpCredentials(adding.wallet, 'SMS_OTP')), ...(await otpCredentials(moving.wallet, 'SMS_OTP'))].map((c) => c.nickname);
      expect(phones.filter((p) => p === phoneNumber)).toHaveLength(1);
    }
  });
});
