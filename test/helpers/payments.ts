import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { eventCatalogue } from '../../src/app.js';
import type { OutgoingPaymentInput, TransactionView } from '../../src/modules/transactions/index.js';
import { withTx } from '../../src/platform/db/tx.js';
import { uuidv7 } from '../../src/platform/ids.js';
import { BASE, type TestContext, type TestPlatform } from './context.js';
import { validSamples } from './external-accounts.js';

export type Json = Record<string, any>;

export const call = (ctx: TestContext, p: TestPlatform, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: unknown, headers: Record<string, string> = {}) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth, ...headers }, ...(payload === undefined ? {} : { payload: payload as object }) });

let seq = 0;

/** A customer with its USD internal account, funded with `amount` minor units from the sandbox world. */
export async function fundedCustomer(ctx: TestContext, p: TestPlatform, amount: number): Promise<{ customerId: string; platformCustomerId: string; accountId: string }> {
  const platformCustomerId = `pay-${++seq}-${randomUUID().slice(0, 8)}`;
  const created = await call(ctx, p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId, fullName: 'Ann Lee' });
  expect(created.statusCode, created.body).toBe(201);
  const customerId = (created.json() as Json).id as string;
  const accounts = (await call(ctx, p, 'GET', `/customers/internal-accounts?customerId=${customerId}&currency=USD`)).json() as { data: Json[] };
  // Production customers get accounts only once approved: their payments use another source.
  const accountId = (accounts.data[0]?.id as string | undefined) ?? '';
  if (amount > 0) {
    const funded = await call(ctx, p, 'POST', `/sandbox/internal-accounts/${accountId}/fund`, { amount });
    expect(funded.statusCode, funded.body).toBe(200);
  }
  return { customerId, platformCustomerId, accountId };
}

/** A new customer with an empty USD internal account, and the reference that ties a deposit to it (its first funding instruction's). */
export async function depositableCustomer(ctx: TestContext, p: TestPlatform): Promise<{ customerId: string; platformCustomerId: string; accountId: string; reference: string }> {
  const customer = await fundedCustomer(ctx, p, 0);
  const account = ((await call(ctx, p, 'GET', `/customers/internal-accounts?customerId=${customer.customerId}&currency=USD`)).json() as { data: Json[] }).data[0]!;
  const instructions = account.fundingPaymentInstructions as Array<{ accountOrWalletInfo: Json }>;
  return { ...customer, reference: instructions[0]!.accountOrWalletInfo.reference as string };
}

/** A funded customer that may send: its end-user terms consent is on file (quotes refuse a sender without it). */
export async function readySender(ctx: TestContext, p: TestPlatform, amount: number): Promise<{ customerId: string; platformCustomerId: string; accountId: string }> {
  const customer = await fundedCustomer(ctx, p, amount);
  const consent = { acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' };
  const patched = await call(ctx, p, 'PATCH', `/customers/${customer.customerId}`, { customerType: 'INDIVIDUAL', endUserTermsConsent: consent });
  expect(patched.statusCode, patched.body).toBe(200);
  return customer;
}

/** A USD bank account of the customer's; its number's last digits choose the sandbox outcome (docs/payments.md). */
export async function customerUsdAccount(ctx: TestContext, p: TestPlatform, customerId: string, accountNumber: string, extra: Json = {}): Promise<string> {
  const sample = validSamples(ctx.clock.now()).USD_ACCOUNT!;
  const created = await call(ctx, p, 'POST', '/customers/external-accounts', { customerId, ...sample, ...extra, accountInfo: { ...sample.accountInfo, accountNumber } });
  expect(created.statusCode, created.body).toBe(201);
  return (created.json() as Json).id as string;
}

export async function balances(ctx: TestContext, p: TestPlatform, customerId: string): Promise<{ available: number; total: number }> {
  const accounts = (await call(ctx, p, 'GET', `/customers/internal-accounts?customerId=${customerId}&currency=USD`)).json() as { data: Json[] };
  return { available: accounts.data[0]!.balance.amount as number, total: accounts.data[0]!.totalBalance.amount as number };
}

/**
 * A production customer has no accounts before KYC, and ownership of the source is the quote's
 * rule: payments handed straight to payments (startPayment) come from the platform's own USD
 * account, funded here through the ledger from the WIRE settlement account.
 */
export async function platformFundedSender(ctx: TestContext, p: TestPlatform, amount: number): Promise<{ customerId: string; platformCustomerId: string; accountId: string }> {
  const customer = await fundedCustomer(ctx, p, 0);
  const own = ((await call(ctx, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!;
  const accountId = own.id as string;
  await withTx(ctx.handle.db, (trx) =>
    ctx.ledger.transfer(trx, {
      platformId: p.uuid,
      reference: `deposit:${accountId}`,
      postings: [{ from: { kind: 'SETTLEMENT', rail: 'WIRE', currency: 'USD' }, to: { kind: 'INTERNAL_ACCOUNT', id: accountId.slice('InternalAccount:'.length) }, amount: BigInt(amount), currency: 'USD' }],
    }),
  );
  return { ...customer, accountId };
}

/** The platform's own USD account's balances. */
export async function platformUsdBalances(ctx: TestContext, p: TestPlatform): Promise<{ available: number; total: number }> {
  const own = ((await call(ctx, p, 'GET', '/platform/internal-accounts?currency=USD')).json() as { data: Json[] }).data[0]!;
  return { available: own.balance.amount as number, total: own.totalBalance.amount as number };
}

/** What a quote's execution hands to payments: a USD payment, same currency unless `receivingCurrency` says otherwise. */
export function paymentInput(p: TestPlatform, customer: { customerId: string; accountId: string }, overrides: Partial<OutgoingPaymentInput> = {}): OutgoingPaymentInput {
  const sentAmount = overrides.sentAmount ?? 10_000n;
  const fees = overrides.fees ?? 50n;
  const platformFees = overrides.platformFees ?? 25n;
  return {
    transactionId: `Transaction:${uuidv7()}`,
    platformId: p.uuid,
    customerId: customer.customerId,
    quoteId: `Quote:${uuidv7()}`,
    source: { sourceType: 'ACCOUNT', accountId: customer.accountId },
    destination: { destinationType: 'ACCOUNT', accountId: `ExternalAccount:${uuidv7()}`, paymentRail: 'RTP' },
    sendingCurrency: 'USD',
    receivingCurrency: 'USD',
    sentAmount,
    totalSendingAmount: sentAmount + fees + platformFees,
    receivedAmount: sentAmount,
    fees,
    platformFees,
    exchangeRate: '1',
    description: 'Invoice 42',
    ...overrides,
  };
}

/** Starts a payment as a quote's execution does (in its own database transaction). */
export function startPayment(ctx: TestContext, input: OutgoingPaymentInput): Promise<TransactionView> {
  return withTx(ctx.handle.db, (trx) => ctx.app.payments.startOutgoingPayment(trx, input));
}

/** Runs due jobs until none is left. */
export async function drainJobs(ctx: TestContext): Promise<void> {
  for (let i = 0; i < 50; i++) if ((await ctx.jobs.runDue(50)) === 0) return;
  throw new Error('jobs kept coming');
}

/**
 * Every payment event recorded so far matches its catalogue schema (the payload integrators
 * generate receivers from); answers the types seen, so a test can show which it covered.
 */
export async function expectPaymentEventsMatchCatalogue(ctx: TestContext): Promise<Set<string>> {
  const catalogue = eventCatalogue();
  const rows = await ctx.handle.db.selectFrom('events').select(['type', 'data']).where((eb) => eb.or([eb('type', 'like', 'OUTGOING_PAYMENT.%'), eb('type', 'like', 'INCOMING_PAYMENT.%')])).execute();
  const invalid = rows.map((row) => ({ type: row.type, result: catalogue.validate(row.type, row.data) })).filter((r) => !r.result.valid);
  expect(invalid).toEqual([]);
  return new Set(rows.map((row) => row.type));
}

export async function eventTypes(ctx: TestContext, transactionId: string): Promise<string[]> {
  const rows = await ctx.handle.db.selectFrom('events').select('type').where('resource_id', '=', transactionId).orderBy('id').execute();
  return rows.map((r) => r.type);
}
