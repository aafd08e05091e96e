import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeEndedDailyVolumes } from '../../src/modules/quotes/repo.js';
import { parseId } from '../../src/platform/ids.js';
import { PURGE_BATCH_ROWS, RETENTION_JOB, RETENTION_MARGIN_MS } from '../../src/platform/retention.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { newClientKey, WalletClient, type ClientKey, type WalletFixture } from '../helpers/wallet.js';

/**
 * The retention purge of wallet sessions and daily volumes, as the API sees it: a session goes
 * an hour (RETENTION_MARGIN_MS) after it was revoked or expired, and every answer about it is
 * the same before and after; a day's volume goes an hour after the day ended, while today's
 * still limits and an old payment cancelled after its day went gives nothing back to any day.
 */
let ctx: TestContext;
let client: WalletClient;
const MARGIN = RETENTION_MARGIN_MS;
const DAY = 24 * 3_600_000;
const SESSION_MS = DAY;

beforeAll(async () => {
  ctx = await createTestContext({
    env: {
      // Longer than the margin, so that a session revoked past the margin has not yet expired.
      CORRIDOR_WALLET_SESSION_SECONDS: String(SESSION_MS / 1000),
      CORRIDOR_DAILY_VOLUME_LIMIT: JSON.stringify({ EUR: 100_000 }),
    },
  });
  client = new WalletClient(ctx, ctx.platform);
  await client.enableWallets();
}, 120_000);
afterAll(() => ctx?.close());

/** The app's hourly purge, run now: its job (queued by the worker's first round) made due and run. */
async function runPurgeNow(): Promise<void> {
  await ctx.jobs.runDue();
  const [job] = await ctx.handle.db.updateTable('jobs').set({ run_at: ctx.clock.now() }).where('kind', '=', RETENTION_JOB).where('status', '=', 'queued').returning('id').execute();
  await ctx.jobs.runDue();
  expect(await ctx.handle.db.selectFrom('jobs').select('status').where('id', '=', job!.id).executeTakeFirstOrThrow()).toEqual({ status: 'done' });
}

describe('wallet sessions and the purge', () => {
  const storedSessions = async (wallet: WalletFixture) =>
    (await ctx.handle.db.selectFrom('auth_sessions').select('id').where('account_id', '=', parseId('InternalAccount', wallet.accountId)!).execute()).map((r) => `Session:${r.id}`).sort();

  async function revoke(login: { key: ClientKey; session: { id: string } }): Promise<void> {
    const path = `/auth/sessions/${login.session.id}`;
    expect((await client.signedRetry('DELETE', path, undefined, await client.firstLeg('DELETE', path), login.key)).statusCode).toBe(204);
  }

  /** Everything the API answers about ended sessions: the listing, their revoke and refresh, and a signature by their keys. */
  async function answersAbout(wallet: WalletFixture, ended: Array<{ key: ClientKey; session: { id: string } }>) {
    const listed = ((await client.call('GET', `/auth/sessions?accountId=${wallet.accountId}`)).json() as { data: Array<{ id: string }> }).data.map((s) => s.id);
    const answers: unknown[] = [listed];
    for (const { key, session } of ended) {
      answers.push(expectEnvelope(await client.call('DELETE', `/auth/sessions/${session.id}`), 404, 'REFERENCE_NOT_FOUND'));
      answers.push(expectEnvelope(await client.call('POST', `/auth/sessions/${session.id}/refresh`, { clientPublicKey: newClientKey().publicKey }), 404, 'REFERENCE_NOT_FOUND'));
      const path = `/internal-accounts/${wallet.accountId}`;
      const body = { privateEnabled: true };
      answers.push(expectEnvelope(await client.signedRetry('PATCH', path, body, await client.firstLeg('PATCH', path, body), key), 401, 'WALLET_SIGNATURE_INVALID'));
    }
    return answers;
  }

  it('deletes a session an hour after it expired or was revoked, keeps it until then, and the API answers the same for a deleted one as for an ended one', async () => {
    const wallet = await client.newWallet();
    const t0 = ctx.clock.now().getTime();
    const at = (ms: number) => ctx.clock.set(new Date(t0 + ms));
    // The purge runs at T = t0 + SESSION_MS + MARGIN + 1 s.
    const expired = await client.login(wallet.credentialId); // expires at T - MARGIN - 1 s
    at(MARGIN / 2 + 1000);
    const expiredLately = await client.login(wallet.credentialId); // expires at T - MARGIN / 2
    at(SESSION_MS - 1000);
    const revoked = await client.login(wallet.credentialId); // expires long after T ...
    at(SESSION_MS);
    await revoke(revoked); // ... but revoked at T - MARGIN - 1 s
    at(SESSION_MS + MARGIN / 2 + 1000);
    const revokedLately = await client.login(wallet.credentialId);
    await revoke(revokedLately); // at T - MARGIN / 2
    at(SESSION_MS + MARGIN + 1000);
    const active = await client.login(wallet.credentialId);

    const before = await answersAbout(wallet, [expired, revoked]);
    expect(before[0]).toEqual([active.session.id]);
    await runPurgeNow();
    expect(await storedSessions(wallet)).toEqual([active.session.id, expiredLately.session.id, revokedLately.session.id].sort());
    expect(await answersAbout(wallet, [expired, revoked])).toEqual(before);

    // Past the margin the later ones go as well; the active session stays and still signs.
    ctx.clock.advance(MARGIN / 2 + 1);
    const later = await answersAbout(wallet, [expiredLately, revokedLately]);
    await runPurgeNow();
    expect(await storedSessions(wallet)).toEqual([active.session.id]);
    expect(await answersAbout(wallet, [expiredLately, revokedLately])).toEqual(later);
    expect((await client.signed('PATCH', `/internal-accounts/${wallet.accountId}`, { privateEnabled: true }, active.key)).statusCode).toBe(200);
  });
});

describe('daily volumes and the purge', () => {
  type Quote = { id: string; transactionId: string };
  const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
    ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const storedDays = async (platformId: string) =>
    (await ctx.handle.db.selectFrom('daily_volumes').select([sql<string>`day::text`.as('day'), 'amount']).where('platform_id', '=', platformId).orderBy('day').execute()).map((r) => ({ day: r.day, amount: Number(r.amount) }));

  /** A sandbox platform whose customer holds EUR 10,000.00 and pays a EUR bank account; `pay(amount)` quotes and executes at once. */
  async function payer() {
    const p = await ctx.newPlatform();
    const currency = (code: string) => ({ currencyCode: code, minAmount: 1, maxAmount: 100_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] });
    expect((await call(p, 'PATCH', '/config', { supportedCurrencies: [currency('USD'), currency('EUR')] })).statusCode).toBe(200);
    const consent = { acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' };
    const created = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `v-${crypto.randomUUID()}`, fullName: 'Ann Lee', endUserTermsConsent: consent });
    expect(created.statusCode, created.body).toBe(201);
    const customerId = (created.json() as { id: string }).id;
    const accounts = ((await call(p, 'GET', `/customers/internal-accounts?customerId=${customerId}`)).json() as { data: Array<{ id: string; balance: { currency: { code: string } } }> }).data;
    const eur = accounts.find((a) => a.balance.currency.code === 'EUR')!;
    expect((await call(p, 'POST', `/sandbox/internal-accounts/${eur.id}/fund`, { amount: 1_000_000 })).statusCode).toBe(200);
    const sample = validSamples(ctx.clock.now()).EUR_ACCOUNT!;
    const payee = ((await call(p, 'POST', '/platform/external-accounts', sample)).json() as { id: string }).id;
    const pay = (amount: number) =>
      call(p, 'POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: eur.id }, destination: { destinationType: 'ACCOUNT', accountId: payee }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: amount, immediatelyExecute: true });
    return { p, pay };
  }

  it('deletes a day’s volumes an hour after the day ended (UTC), and keeps that day, today and a test clock’s later day until then', async () => {
    const midnight = Math.ceil(ctx.clock.now().getTime() / DAY) * DAY + DAY;
    ctx.clock.set(new Date(midnight + MARGIN / 2));
    const platformId = ctx.platform.uuid;
    const customerId = crypto.randomUUID();
    for (const [offset, amount] of [[-2, 1], [-1, 2], [0, 3], [3, 4]]) {
      await ctx.handle.db.insertInto('daily_volumes').values({ platform_id: platformId, customer_id: customerId, day: day(midnight + offset! * DAY), currency: 'EUR', amount: BigInt(amount!) }).execute();
    }
    await runPurgeNow();
    expect(await storedDays(platformId)).toEqual([
      { day: day(midnight - DAY), amount: 2 },
      { day: day(midnight), amount: 3 },
      { day: day(midnight + 3 * DAY), amount: 4 },
    ]);
    ctx.clock.set(new Date(midnight + MARGIN + 1));
    await runPurgeNow();
    expect(await storedDays(platformId)).toEqual([
      { day: day(midnight), amount: 3 },
      { day: day(midnight + 3 * DAY), amount: 4 },
    ]);
  });

  it('today’s volume still limits after a purge; a payment cancelled after its day went answers as one whose day is kept, and gives back to no other day', async () => {
    const { p, pay } = await payer();
    const pending = async (amount: number) => {
      const created = await pay(amount);
      expect(created.statusCode, created.body).toBe(201);
      return created.json() as Quote;
    };
    const cancel = async (q: Quote) => {
      const cancelled = await call(p, 'POST', `/transactions/${q.transactionId}/cancel`);
      expect(cancelled.statusCode, cancelled.body).toBe(200);
      const volumeDay = await ctx.handle.db.selectFrom('quotes').select(sql<string | null>`volume_day::text`.as('day')).where('id', '=', parseId('Quote', q.id)!).executeTakeFirstOrThrow();
      expect(volumeDay.day).toBeNull();
      const { status, failureReason } = cancelled.json() as { status: string; failureReason: string };
      return { status, failureReason };
    };
    const counted = day(ctx.clock.now().getTime());
    const old = await pending(60_000);
    // Two days on, with no job run (both payments below wait): today is counted afresh up to the limit.
    ctx.clock.advance(2 * DAY);
    const today = day(ctx.clock.now().getTime());
    const recent = await pending(40_000);
    await pending(60_000);
    expect(await storedDays(p.uuid)).toEqual([
      { day: counted, amount: 60_000 },
      { day: today, amount: 100_000 },
    ]);
    // The purge the app runs, called alone: the purge job's run would move the waiting payments on.
    await purgeEndedDailyVolumes(ctx.handle.db, ctx.clock.now(), PURGE_BATCH_ROWS);
    expect(await storedDays(p.uuid)).toEqual([{ day: today, amount: 100_000 }]);
    expectEnvelope(await pay(1_000), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');

    const oldCancelled = await cancel(old);
    expect(await storedDays(p.uuid)).toEqual([{ day: today, amount: 100_000 }]);
    expectEnvelope(await pay(1_000), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
    expect(await cancel(recent)).toEqual(oldCancelled);
    expect(await storedDays(p.uuid)).toEqual([{ day: today, amount: 60_000 }]);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('a sandbox test clock ahead of the shared one counts on its own later day, which the purge keeps', async () => {
    const { p, pay } = await payer();
    expect((await call(p, 'POST', '/sandbox/clock/advance', { seconds: (3 * DAY) / 1000 })).statusCode).toBe(200);
    expect((await pay(100_000)).statusCode).toBe(201);
    const ahead = day(ctx.clock.now().getTime() + 3 * DAY);
    await runPurgeNow();
    expect(await storedDays(p.uuid)).toEqual([{ day: ahead, amount: 100_000 }]);
    expectEnvelope(await pay(1_000), 429, 'DAILY_VOLUME_LIMIT_EXCEEDED');
  });
});
