import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_ACCOUNTS_JOB } from '../../src/modules/config/service.js';
import { ACCOUNTS_SYNC_BATCH } from '../../src/modules/customers/accounts-sync.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';

/**
 * Issue 12 C19: a configuration change that calls for accounts (a currency added, embedded
 * wallets enabled) opens them for customers approved before it, through a durable job.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
type Account = Body & { id: string; type: string; customerId?: string; balance: { currency: { code: string } } };

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

const currency = (code: string) => ({ currencyCode: code, minAmount: 1, maxAmount: 1000, requiredCounterpartyFields: [], enabledTransactionTypes: ['OUTGOING'] });

let seq = 0;
async function individual(p: TestPlatform, extra: Body = {}): Promise<{ id: string; uuid: string }> {
  const response = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `cfg-${++seq}`, fullName: 'Ann Lee', ...extra });
  expect(response.statusCode, response.body).toBe(201);
  const id = (response.json() as { id: string }).id;
  return { id, uuid: id.slice('Customer:'.length) };
}

async function accountsOf(p: TestPlatform, customerId: string): Promise<string[]> {
  const list = (await call(p, 'GET', `/customers/internal-accounts?customerId=${customerId}&limit=100`)).json() as { data: Account[] };
  return list.data.map((a) => `${a.type}/${a.balance.currency.code}`).sort();
}

const accountEvents = (p: TestPlatform) =>
  ctx.handle.db
    .selectFrom('events')
    .select(['resource_id', 'data'])
    .where('platform_id', '=', p.uuid)
    .where('type', '=', 'INTERNAL_ACCOUNT.STATUS_UPDATED')
    .orderBy('id')
    .execute();

const syncJobs = (p: TestPlatform) =>
  ctx.handle.db.selectFrom('jobs').selectAll().where('platform_id', '=', p.uuid).where('kind', '=', CONFIG_ACCOUNTS_JOB).orderBy('id').execute();

describe('configuration takes effect for customers approved before it', () => {
  it('adding a currency and enabling wallets opens the accounts of every approved customer, once, with an event each', async () => {
    const p = await ctx.newPlatform();
    const withEmail = await individual(p, { email: 'ann@example.com' });
    const withoutEmail = await individual(p);
    const removed = await individual(p, { email: 'gone@example.com' });
    expect((await call(p, 'DELETE', `/customers/${removed.id}`)).statusCode).toBe(200);
    expect((await call(p, 'PATCH', '/customers/settings', { sandboxAutoApprove: false })).statusCode).toBe(200);
    const unapproved = await individual(p, { email: 'later@example.com' });
    expect(await accountsOf(p, withEmail.id)).toEqual(['INTERNAL_FIAT/USD']);
    const eventsBefore = (await accountEvents(p)).length;

    const patched = await call(p, 'PATCH', '/config', { supportedCurrencies: [currency('USD'), currency('EUR')], embeddedWalletConfig: { appName: 'Acme' } });
    expect(patched.statusCode, patched.body).toBe(200);
    // Nothing is opened by the request itself: a durable job does it, whatever the number of customers.
    expect(await accountsOf(p, withEmail.id)).toEqual(['INTERNAL_FIAT/USD']);
    expect(await syncJobs(p)).toMatchObject([{ status: 'queued' }]);
    await ctx.jobs.runDue();

    expect(await accountsOf(p, withEmail.id)).toEqual(['EMBEDDED_WALLET/USD', 'INTERNAL_FIAT/EUR', 'INTERNAL_FIAT/USD']);
    expect(await accountsOf(p, withoutEmail.id)).toEqual(['INTERNAL_FIAT/EUR', 'INTERNAL_FIAT/USD']);
    expect(await accountsOf(p, removed.id)).toEqual(['INTERNAL_FIAT/USD']);
    expect(await accountsOf(p, unapproved.id)).toEqual([]);
    const platformAccounts = (await call(p, 'GET', '/platform/internal-accounts')).json() as { data: Account[] };
    expect(platformAccounts.data.map((a) => a.balance.currency.code)).toEqual(['USD', 'EUR']);

    // The new wallet is a real one: its first credential is the customer's e-mail.
    const wallet = ((await call(p, 'GET', `/customers/internal-accounts?customerId=${withEmail.id}&type=EMBEDDED_WALLET`)).json() as { data: Account[] }).data[0]!;
    const credentials = (await call(p, 'GET', `/auth/credentials?accountId=${wallet.id}`)).json() as { data: Body[] };
    expect(credentials.data).toMatchObject([{ type: 'EMAIL_OTP', nickname: 'ann@example.com', accountId: wallet.id }]);

    // One INTERNAL_ACCOUNT.STATUS_UPDATED per account opened, carrying the account.
    const events = (await accountEvents(p)).slice(eventsBefore);
    const opened = [
      ...((await call(p, 'GET', '/customers/internal-accounts?limit=100')).json() as { data: Account[] }).data,
      ...platformAccounts.data,
    ].filter((a) => a.balance.currency.code === 'EUR' || a.type === 'EMBEDDED_WALLET');
    expect(events.map((e) => e.resource_id).sort()).toEqual(opened.map((a) => a.id).sort());
    expect(events).toHaveLength(4);
    for (const event of events) expect(event.data).toEqual(opened.find((a) => a.id === event.resource_id));
    expect(await syncJobs(p)).toMatchObject([{ status: 'done', payload: { after: expect.any(String) } }]);

    // Running the job again (here: a config change that adds nothing new, then one that re-adds EUR) opens nothing twice.
    await call(p, 'PATCH', '/config', { supportedCurrencies: [currency('USD')] });
    expect(await syncJobs(p)).toHaveLength(1);
    await call(p, 'PATCH', '/config', { supportedCurrencies: [currency('USD'), currency('EUR')] });
    await ctx.jobs.runDue();
    expect(await syncJobs(p)).toMatchObject([{ status: 'done' }, { status: 'done' }]);
    expect(await accountsOf(p, withEmail.id)).toEqual(['EMBEDDED_WALLET/USD', 'INTERNAL_FIAT/EUR', 'INTERNAL_FIAT/USD']);
    expect((await accountEvents(p)).length).toBe(eventsBefore + 4);
  });

  it('a currency added to the configuration opens the platform’s own account by the job, before anything reads it', async () => {
    const p = await ctx.newPlatform();
    const patched = await call(p, 'PATCH', '/config', { supportedCurrencies: [currency('USD'), currency('EUR')] });
    expect(patched.statusCode, patched.body).toBe(200);
    while ((await ctx.jobs.runDue()) > 0);
    // Read from the table: GET /platform/internal-accounts would open them itself.
    const own = await ctx.handle.db.selectFrom('internal_accounts').select('currency').where('platform_id', '=', p.uuid).where('customer_id', 'is', null).execute();
    expect(own.map((a) => a.currency).sort()).toEqual(['EUR', 'USD']);
  });

  it('a job that died after a checkpoint resumes after the last customer it saved', async () => {
    const p = await ctx.newPlatform();
    const customers = [];
    for (let i = 0; i < 4; i++) customers.push(await individual(p));
    customers.sort((a, b) => a.uuid.localeCompare(b.uuid));
    await call(p, 'PATCH', '/config', { supportedCurrencies: [currency('USD'), currency('GBP')] });
    const [job] = await syncJobs(p);
    // As a worker leaves it when it dies after committing the batch that ended with the second customer.
    await ctx.handle.db
      .updateTable('jobs')
      .set({ status: 'running', attempts: 1, locked_until: new Date(ctx.clock.now().getTime() - 1), payload: JSON.stringify({ after: customers[1]!.uuid }) })
      .where('id', '=', job!.id)
      .execute();
    expect(await ctx.jobs.runDue()).toBe(1);
    const after = await Promise.all(customers.map((c) => accountsOf(p, c.id)));
    expect(after).toEqual([['INTERNAL_FIAT/USD'], ['INTERNAL_FIAT/USD'], ['INTERNAL_FIAT/GBP', 'INTERNAL_FIAT/USD'], ['INTERNAL_FIAT/GBP', 'INTERNAL_FIAT/USD']]);
    expect(await syncJobs(p)).toMatchObject([{ status: 'done', attempts: 2, payload: { after: customers[3]!.uuid } }]);
  });

  it('walks any number of customers in batches, each committed with its checkpoint', async () => {
    const p = await ctx.newPlatform();
    const count = ACCOUNTS_SYNC_BATCH * 2 + 1;
    for (let i = 0; i < count; i++) await individual(p);
    await call(p, 'PATCH', '/config', { supportedCurrencies: [currency('USD'), currency('CAD')] });
    expect(await ctx.jobs.runDue()).toBe(1);
    // Each customer now has a CAD account beside its USD one.
    const all = (await call(p, 'GET', '/customers/internal-accounts?limit=1')).json() as { totalCount: number };
    expect(all.totalCount).toBe(2 * count);
    const last = await ctx.handle.db.selectFrom('customers').select('id').where('platform_id', '=', p.uuid).orderBy('id', 'desc').limit(1).executeTakeFirstOrThrow();
    expect(await syncJobs(p)).toMatchObject([{ status: 'done', attempts: 1, payload: { after: last.id } }]);
  }, 120_000);

  it('opens accounts for customers approved while the change was made, and for those approved later', async () => {
    const p = await ctx.newPlatform();
    await call(p, 'PATCH', '/config', { supportedCurrencies: [currency('USD'), currency('JPY')] });
    const later = await individual(p);
    expect(await accountsOf(p, later.id)).toEqual(['INTERNAL_FIAT/JPY', 'INTERNAL_FIAT/USD']);
    await ctx.jobs.runDue();
    expect(await accountsOf(p, later.id)).toEqual(['INTERNAL_FIAT/JPY', 'INTERNAL_FIAT/USD']);
  });
});

describe('PATCH /config with null', () => {
  it('clears webhookEndpoint, umaDomain and embeddedWalletConfig', async () => {
    const p = await ctx.newPlatform();
    const set = await call(p, 'PATCH', '/config', { webhookEndpoint: 'https://hooks.example.com/x', umaDomain: 'pay.example.com', embeddedWalletConfig: { appName: 'Acme' } });
    expect(set.json()).toMatchObject({ webhookEndpoint: 'https://hooks.example.com/x', umaDomain: 'pay.example.com', embeddedWalletConfig: { appName: 'Acme' } });
    const cleared = await call(p, 'PATCH', '/config', { webhookEndpoint: null, umaDomain: null, embeddedWalletConfig: null });
    expect(cleared.statusCode, cleared.body).toBe(200);
    for (const body of [cleared.json() as Body, (await call(p, 'GET', '/config')).json() as Body]) {
      expect(body).not.toHaveProperty('webhookEndpoint');
      expect(body).not.toHaveProperty('umaDomain');
      expect(body).not.toHaveProperty('embeddedWalletConfig');
    }
    // Wallets are off again: a customer approved now gets none.
    const customer = await individual(p, { email: 'nowallet@example.com' });
    expect(await accountsOf(p, customer.id)).toEqual(['INTERNAL_FIAT/USD']);
    // Enabling them again is a change that opens wallets for the customers approved meanwhile.
    await call(p, 'PATCH', '/config', { embeddedWalletConfig: { otpLength: 8 } });
    expect(((await call(p, 'GET', '/config')).json() as Body).embeddedWalletConfig).toEqual({ otpLength: 8 });
    await ctx.jobs.runDue();
    expect(await accountsOf(p, customer.id)).toEqual(['EMBEDDED_WALLET/USD', 'INTERNAL_FIAT/USD']);
  });

  it('refuses null where a value is required, naming the field once', async () => {
    const body = expectEnvelope(await call(ctx.platform, 'PATCH', '/config', { supportedCurrencies: null, webhookEndpoint: 5, cardTokenization2faConfig: null }), 400, 'INVALID_INPUT');
    expect(body.details!.errors).toEqual([
      { field: 'webhookEndpoint', message: 'must be a string or null' },
      { field: 'supportedCurrencies', message: 'must be an array' },
      { field: 'cardTokenization2faConfig', message: 'must be an object' },
    ]);
  });
});
