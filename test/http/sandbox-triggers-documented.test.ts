import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';
import { sendDocumentForm } from '../helpers/multipart.js';
import { balances, call, customerUsdAccount, drainJobs, eventTypes, readySender, type Json } from '../helpers/payments.js';

/**
 * Sandbox triggers exactly as README.md and docs/payments.md, docs/document-screening.md and
 * docs/wallet-auth.md write them, for the ones no other test pins as documented: the amount
 * table (each ending's reason and when it comes), that the trigger reads the sent amount after
 * fees, that pulls ignore it, the document file-name tokens' order, and the refused signature
 * shortcut of the hosted sandbox.
 */

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const RTP_SETTLEMENT_SECONDS = 5;

async function advance(p: TestPlatform, seconds: number): Promise<void> {
  expect((await call(ctx, p, 'POST', '/sandbox/clock/advance', { seconds })).statusCode).toBe(200);
  await drainJobs(ctx);
}

const transaction = async (p: TestPlatform, id: string) => (await call(ctx, p, 'GET', `/transactions/${id}`)).json() as Json;

describe('docs/payments.md, Sandbox outcomes: the last three digits of the sent amount', () => {
  it('903–906 fail as soon as the rail gets it, 901/902 at the settlement time, anything else completes then; every failed debit comes back', async () => {
    const p = await ctx.newPlatform();
    const sender = await readySender(ctx, p, 1_000_000);
    const payee = await customerUsdAccount(ctx, p, sender.customerId, '12345678000');
    // RECEIVING lock in one currency: the sent amount is exactly the locked amount.
    const pay = async (amount: number) => {
      const created = await call(ctx, p, 'POST', '/quotes', {
        source: { sourceType: 'ACCOUNT', accountId: sender.accountId },
        destination: { destinationType: 'ACCOUNT', accountId: payee, paymentRail: 'RTP' },
        lockedCurrencySide: 'RECEIVING',
        lockedCurrencyAmount: amount,
        immediatelyExecute: true,
      });
      expect(created.statusCode, created.body).toBe(201);
      return created.json() as Json;
    };
    const quotes = {
      '901': await pay(10_901),
      '902': await pay(10_902),
      '903': await pay(10_903),
      '904': await pay(10_904),
      '905': await pay(10_905),
      '906': await pay(10_906),
      other: await pay(10_907),
    };
    await drainJobs(ctx);

    const atOnce = { '903': 'LIMIT_EXCEEDED', '904': 'ACCOUNT_CANNOT_RECEIVE', '905': 'ACCOUNT_INVALID', '906': 'COMPLIANCE_REJECTED' } as const;
    for (const [ending, failureReason] of Object.entries(atOnce)) {
      const id = quotes[ending as keyof typeof atOnce].transactionId as string;
      expect(await transaction(p, id), ending).toMatchObject({ status: 'FAILED', failureReason, sentAmount: { amount: Number(`10${ending}`) }, refund: { status: 'COMPLETED' } });
      expect(await eventTypes(ctx, id), ending).toEqual(expect.arrayContaining(['OUTGOING_PAYMENT.FAILED', 'OUTGOING_PAYMENT.REFUND_COMPLETED']));
    }
    for (const ending of ['901', '902', 'other'] as const) expect((await transaction(p, quotes[ending].transactionId)).status, ending).toBe('PROCESSING');

    await advance(p, RTP_SETTLEMENT_SECONDS);
    expect(await transaction(p, quotes['901'].transactionId)).toMatchObject({ status: 'FAILED', failureReason: 'QUOTE_EXECUTION_FAILED', refund: { status: 'COMPLETED' } });
    expect(await transaction(p, quotes['902'].transactionId)).toMatchObject({ status: 'FAILED', failureReason: 'PAYOUT_RETURNED', refund: { status: 'COMPLETED' } });
    expect((await transaction(p, quotes.other.transactionId)).status).toBe('COMPLETED');
    // Only the payment that completed cost the sender anything.
    expect(await balances(ctx, p, sender.customerId)).toEqual({ available: 1_000_000 - quotes.other.totalSendingAmount, total: 1_000_000 - quotes.other.totalSendingAmount });
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('reads the amount sent after fees, not totalSendingAmount; a pull from an external account ignores it', async () => {
    const p = await ctx.newPlatform();
    const sender = await readySender(ctx, p, 1_000_000);
    const payee = await customerUsdAccount(ctx, p, sender.customerId, '12345678000');
    const sending = async (amount: number) => {
      const created = await call(ctx, p, 'POST', '/quotes', {
        source: { sourceType: 'ACCOUNT', accountId: sender.accountId },
        destination: { destinationType: 'ACCOUNT', accountId: payee, paymentRail: 'RTP' },
        lockedCurrencySide: 'SENDING',
        lockedCurrencyAmount: amount,
        immediatelyExecute: true,
      });
      expect(created.statusCode, created.body).toBe(201);
      await drainJobs(ctx);
      return created.json() as Json;
    };
    // totalSendingAmount ends in 906, but fees come out of it: what is sent does not.
    const untriggered = await sending(10_906);
    expect(untriggered.feesIncluded).toBeGreaterThan(0);
    expect((await transaction(p, untriggered.transactionId)).status).toBe('PROCESSING');
    const triggered = await sending(10_906 + (untriggered.feesIncluded as number));
    expect(await transaction(p, triggered.transactionId)).toMatchObject({ status: 'FAILED', failureReason: 'COMPLIANCE_REJECTED', sentAmount: { amount: 10_906 } });

    const source = await customerUsdAccount(ctx, p, sender.customerId, '87654321000', { ownershipType: 'FIRST_PARTY' });
    const pulled = await call(ctx, p, 'POST', '/transfer-in', { source: { accountId: source }, destination: { accountId: sender.accountId }, amount: 10_904 });
    expect(pulled.statusCode, pulled.body).toBe(201);
    await drainJobs(ctx);
    expect(await transaction(p, (pulled.json() as Json).id)).toMatchObject({ type: 'INCOMING', status: 'COMPLETED' });
  });
});

describe('docs/document-screening.md, Sandbox triggers', () => {
  it('file-name tokens answer their errors in the table’s order without reading the bytes; an unknown token is ignored', async () => {
    const p = await ctx.newPlatform();
    const holder = (await call(ctx, p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'doc-triggers', fullName: 'Ann Lee' })).json() as Json;
    const upload = (filename: string, contentType: string) =>
      sendDocumentForm(ctx.app, p, 'POST', '/documents', [
        { name: 'documentHolder', value: holder.id },
        { name: 'documentType', value: 'PASSPORT' },
        { name: 'country', value: 'GB' },
        { name: 'file', filename, contentType, data: Buffer.from('not an image at all') },
      ]);
    const forced = expectEnvelope(await upload('scan.precheck-retouched.precheck-glare.precheck-cornersNotVisible.pdf', 'application/pdf'), 422, 'DOCUMENT_REJECTED') as Json;
    expect(forced.precheckErrors).toEqual(['glare', 'cornersNotVisible', 'retouched']);
    const screened = expectEnvelope(await upload('passport.precheck-sunburn.jpg', 'image/jpeg'), 422, 'DOCUMENT_REJECTED') as Json;
    expect(screened.precheckErrors).toEqual(['dataNotReadable']);
  });
});

describe('docs/wallet-auth.md: sandbox signatures are checked as in production', () => {
  it('the hosted sandbox’s Grid-Wallet-Signature: sandbox-valid-signature is 401 WALLET_SIGNATURE_MALFORMED; Sandbox-Settle-Delay stops at 3600', async () => {
    const p = await ctx.newPlatform();
    expect((await call(ctx, p, 'PATCH', '/config', { embeddedWalletConfig: { appName: 'Docs' } })).statusCode).toBe(200);
    const customer = (await call(ctx, p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'wallet-docs', fullName: 'Ann Lee', email: 'ann.docs@example.com' })).json() as Json;
    const wallets = (await call(ctx, p, 'GET', `/customers/internal-accounts?customerId=${customer.id}&type=EMBEDDED_WALLET`)).json() as { data: Json[] };
    const path = `/internal-accounts/${wallets.data[0]!.id}`;
    const challenge = await call(ctx, p, 'PATCH', path, { privateEnabled: true });
    expect(challenge.statusCode, challenge.body).toBe(202);
    const { requestId } = challenge.json() as Json;
    expectEnvelope(await call(ctx, p, 'PATCH', path, { privateEnabled: true }, { 'grid-wallet-signature': 'sandbox-valid-signature', 'request-id': requestId }), 401, 'WALLET_SIGNATURE_MALFORMED');
    expectEnvelope(await call(ctx, p, 'PATCH', path, { privateEnabled: true }, { 'sandbox-settle-delay': '3601' }), 400, 'INVALID_INPUT');
  });
});
