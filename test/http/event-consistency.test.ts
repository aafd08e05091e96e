import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { auditEvents, type AuditReport } from '../helpers/event-audit.js';
import { evmWallet } from '../helpers/external-accounts.js';
import { commandArb, CUSTOMERS, MoneyWorld, type Command } from '../helpers/money-model-http.js';
import { drainJobs } from '../helpers/payments.js';
import { startVerification, uploadPdf } from '../helpers/verifications.js';

/**
 * An integrator that keeps its own copy of payments and balances from webhooks alone ends up with
 * what happened (test/helpers/event-audit.ts says what is checked): random money flows over HTTP
 * (the money model's commands: fundings, quotes executed at once or later, book transfers,
 * transfers, REALTIME_FUNDING paid with /sandbox/send, cancels racing the jobs, the sandbox's
 * failure triggers, settlement by the test clock), then every committed event of the platform
 * replayed per resource against GET and the ledger, mid-way and once everything has ended.
 *
 * Fixed seed; EVENT_AUDIT_SEED and EVENT_AUDIT_RUNS to look further.
 */
let ctx: TestContext;
const logLines: string[] = [];
beforeAll(async () => {
  ctx = await createTestContext({ logLines });
});
afterAll(() => ctx.close());

const seed = Number(process.env.EVENT_AUDIT_SEED ?? 20_261_130);
const numRuns = Number(process.env.EVENT_AUDIT_RUNS ?? 6);

describe('events against what happened', () => {
  it('every transaction’s events walk its status machine and end at its GET; every balance event is the ledger’s sums', async () => {
    const reports: AuditReport[] = [];
    const start = fc.array(fc.integer({ min: 0, max: 300_000 }), { minLength: CUSTOMERS, maxLength: CUSTOMERS });
    const property = fc.asyncProperty(start, fc.array(commandArb, { minLength: 6, maxLength: 14 }), async (funding, sequence) => {
      const world = await MoneyWorld.open(ctx, logLines);
      const opening = funding.flatMap((amount, account) => (amount > 0 ? [{ op: 'fund' as const, account, amount }] : []));
      for (const command of [...opening, ...sequence]) await world.apply(command);
      // Mid-way: payments held, in flight or waiting for their money.
      await auditEvents(ctx, world.p, `mid-way after ${world.log.join(' ; ')}`);
      await world.settleAll();
      reports.push(await auditEvents(ctx, world.p, `settled after ${world.log.join(' ; ')}`));
    });
    // Besides the random runs, the moments between a change and the job that follows it: a
    // REALTIME_FUNDING payment whose money arrived, not yet handed over (the arrival sends no
    // event: GET must not have moved); a payout to a `003` account handed to the rail, which
    // named its own settlement time.
    const examples: Array<[number[], Command[]]> = [
      [
        [0, 0, 0],
        [
          { op: 'advance', seconds: 7 },
          { op: 'realtime', to: '123', amount: 5_000 },
          { op: 'advance', seconds: 3 },
          { op: 'send', pick: 0, exact: true },
        ],
      ],
      [[50_000, 0, 0], [{ op: 'pay', account: 0, to: '003', amount: 9_000, trigger: null, lock: 'SENDING', mode: 'immediate' }, { op: 'drain' }]],
    ];
    await fc.assert(property, { seed, numRuns, examples, endOnFailure: true });
    // The runs audited something: payments with several events each, balances that moved.
    const sum = (f: (r: AuditReport) => number) => reports.reduce((n, r) => n + f(r), 0);
    expect(sum((r) => r.transactions)).toBeGreaterThan(numRuns);
    expect(sum((r) => r.transactionEvents)).toBeGreaterThan(sum((r) => r.transactions) * 1.5);
    expect(sum((r) => r.balanceEvents)).toBeGreaterThan(numRuns * 4);
  }, 120_000);

  it('customers, their verifications and external accounts: the last event of each is its GET', async () => {
    const p = await ctx.newPlatform();
    type Body = Record<string, any>;
    const call = async (pl: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown) =>
      ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: pl.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });
    const createdAs = new Map<string, Body>();
    // Reviewed by the sandbox's KYC: the name's last three characters (001 pending, 002 rejected, 003 unverified) or Corridor's flow.
    for (const [i, fullName] of ['Ann Lee', 'Ann Lee001', 'Ann Lee002', 'Ann Lee003'].entries()) {
      const created = await call(p, 'POST', '/customers', {
        customerType: 'INDIVIDUAL',
        platformCustomerId: `ev-${i}`,
        fullName,
        birthDate: '1990-01-15',
        nationality: 'US',
        address: { line1: '1 Main St', postalCode: '62701', country: 'US' },
      });
      expect(created.statusCode, created.body).toBe(201);
      const customer = created.json() as Body;
      createdAs.set(customer.id, customer);
      await uploadPdf(ctx.app, p, customer.id, 'PASSPORT');
      await startVerification(ctx.app, p, customer.id);
    }
    await drainJobs(ctx);
    // A self-custody wallet: a failed proof (UNVERIFIED), a new challenge (PENDING_OWNERSHIP_VERIFICATION), a good one (ACTIVE).
    const wallet = evmWallet();
    const stranger = evmWallet();
    const account = (await call(p, 'POST', '/platform/external-accounts', { currency: 'USDC', ownershipType: 'FIRST_PARTY', accountInfo: { accountType: 'BASE_WALLET', address: wallet.address } })).json() as Body;
    const path = `/platform/external-accounts/${account.id}`;
    const first = (await call(p, 'POST', `${path}/challenge`, { method: 'WALLET_SIGNATURE' })).json() as Body;
    expect((await call(p, 'POST', `${path}/verify`, { signature: await stranger.signMessage(first.messageToSign) })).statusCode).toBe(400);
    const second = (await call(p, 'POST', `${path}/challenge`, { method: 'WALLET_SIGNATURE' })).json() as Body;
    expect((await call(p, 'POST', `${path}/verify`, { signature: await wallet.signMessage(second.messageToSign) })).statusCode).toBe(200);
    const report = await auditEvents(ctx, p, 'onboarding');
    // A customer without events is as it was created (nothing changed); the others' events were checked.
    const withEvents = new Set((await ctx.handle.db.selectFrom('events').select('resource_id').where('platform_id', '=', p.uuid).where('type', 'like', 'CUSTOMER.%').execute()).map((r) => r.resource_id));
    for (const [id, answer] of createdAs) if (!withEvents.has(id)) expect((await call(p, 'GET', `/customers/${id}`)).json(), `${answer.fullName}: changed without an event`).toEqual(answer);
    expect(report.others).toEqual({ customers: withEvents.size, externalAccounts: 1, verifications: 4 });
    expect(withEvents.size).toBeGreaterThanOrEqual(3);
  });
});
