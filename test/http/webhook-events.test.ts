import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventCatalogue } from '../../src/app.js';
import { newId } from '../../src/platform/ids.js';
import { BASE, createTestContext, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validPdf } from '../helpers/document-files.js';
import { evmWallet } from '../helpers/external-accounts.js';
import { sendDocumentForm, textParts } from '../helpers/multipart.js';
import { WebhookReceiver, type ReceivedWebhook } from '../helpers/webhook-receiver.js';

/**
 * Every event type of the catalogue, delivered by the operation that emits it and checked
 * against the payload schema the catalogue (and the OpenAPI `webhooks`) publishes. Payment
 * events come from the payment flows, whose tests check them against the catalogue
 * (sandbox-payments.test.ts, transactions.test.ts); here, like the types no Corridor operation
 * emits yet, they are checked on the upstream API's own example payloads.
 */
const EMITTED_BY_PAYMENT_FLOWS = [
  'OUTGOING_PAYMENT.PENDING',
  'OUTGOING_PAYMENT.PROCESSING',
  'OUTGOING_PAYMENT.COMPLETED',
  'OUTGOING_PAYMENT.FAILED',
  'OUTGOING_PAYMENT.EXPIRED',
  'OUTGOING_PAYMENT.REFUND_PENDING',
  'OUTGOING_PAYMENT.REFUND_COMPLETED',
  'OUTGOING_PAYMENT.REFUND_FAILED',
  // Checked against the catalogue where the flows run: incoming-payments.test.ts, platform-funding.test.ts.
  'INCOMING_PAYMENT.COMPLETED',
  'INCOMING_PAYMENT.FAILED',
  'INCOMING_PAYMENT.REFUND_PENDING',
  'INCOMING_PAYMENT.REFUND_COMPLETED',
  'INCOMING_PAYMENT.REFUND_FAILED',
];
/**
 * Not emitted by this file's flows: funding instructions change only when a Lightning invoice is
 * renewed a year on (test/http/internal-accounts.test.ts), and SCA is not built.
 */
const NOT_EMITTED_YET = ['INTERNAL_ACCOUNT.FUNDING_INSTRUCTIONS_UPDATED', 'OUTGOING_PAYMENT.PENDING_AUTHORIZATION'];
const NOT_EMITTED_HERE = [...EMITTED_BY_PAYMENT_FLOWS, ...NOT_EMITTED_YET];

const catalogue = eventCatalogue();
let ctx: TestContext;
let receiver: WebhookReceiver;
/** One endpoint serves both test platforms: it trusts both platforms' keys. */
const trusted: string[] = [];

beforeAll(async () => {
  ctx = await createTestContext();
  receiver = await WebhookReceiver.start();
});
afterAll(async () => {
  await receiver.close();
  await ctx.close();
});

type Body = Record<string, unknown>;
const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown) =>
  ctx.app.inject({ method, url: `${BASE}${url}`, headers: { authorization: p.auth }, ...(payload === undefined ? {} : { payload: payload as object }) });

async function ok(p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown): Promise<Body> {
  const response = await call(p, method, url, payload);
  expect(response.statusCode, `${method} ${url}: ${response.body}`).toBeLessThan(300);
  return response.json() as Body;
}

async function drain(): Promise<void> {
  while ((await ctx.jobs.runDue(100)) > 0);
}

async function platform(options: { autoApprove: boolean }): Promise<TestPlatform> {
  const p = await ctx.newPlatform();
  await ok(p, 'PATCH', '/config', { webhookEndpoint: receiver.url });
  await ok(p, 'PATCH', '/customers/settings', { sandboxAutoApprove: options.autoApprove });
  const keys = (await ok(p, 'GET', '/webhooks/signing-keys')) as { data: Array<{ publicKey: string }> };
  trusted.push(...keys.data.map((k) => k.publicKey));
  receiver.trust(trusted);
  return p;
}

let seq = 0;
async function individual(p: TestPlatform, platformCustomerId = `ind-${++seq}`): Promise<string> {
  const body = await ok(p, 'POST', '/customers', {
    customerType: 'INDIVIDUAL',
    platformCustomerId,
    fullName: 'Jane Doe',
    email: 'jane@example.com',
    birthDate: '1990-01-15',
    nationality: 'US',
    address: { line1: '1 Main St', postalCode: '62701', country: 'US' },
  });
  return String(body.id);
}

async function document(p: TestPlatform, holder: string, documentType: string, extra: Record<string, string> = {}): Promise<void> {
  const response = await sendDocumentForm(ctx.app, p, 'POST', '/documents', [
    ...textParts({ documentHolder: holder, documentType, country: 'US', ...extra }),
    { name: 'file', filename: `${documentType}.pdf`, contentType: 'application/pdf', data: await validPdf() },
  ]);
  expect(response.statusCode, response.body).toBe(201);
}

async function completeBusiness(p: TestPlatform, platformCustomerId: string): Promise<string> {
  const b = await ok(p, 'POST', '/customers', {
    customerType: 'BUSINESS',
    platformCustomerId,
    businessInfo: { legalName: 'Acme LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789', registrationNumber: 'DE-1234567' },
    address: { line1: '400 Commerce Way', postalCode: '78701', country: 'US' },
  });
  const bo = await ok(p, 'POST', '/beneficial-owners', {
    customerId: b.id,
    roles: ['UBO', 'CONTROL_PERSON'],
    ownershipPercentage: 80,
    personalInfo: {
      firstName: 'Ann',
      lastName: 'Lee',
      birthDate: '1975-07-07',
      nationality: 'US',
      address: { line1: '2 Elm St', postalCode: '78702', country: 'US' },
      idType: 'SSN',
      identifier: '123-45-6789',
    },
  });
  await document(p, String(b.id), 'CERTIFICATE_OF_INCORPORATION', { documentNumber: 'DE 1234567' });
  await document(p, String(b.id), 'DIRECTOR_REGISTRY');
  await document(p, String(b.id), 'SHAREHOLDER_REGISTER');
  await document(p, String(b.id), 'BANK_STATEMENT');
  await document(p, String(bo.id), 'NATIONAL_ID', { side: 'FRONT' });
  await document(p, String(bo.id), 'NATIONAL_ID', { side: 'BACK' });
  return String(b.id);
}

function bulkCsv(p: TestPlatform, csv: string) {
  const boundary = '----corridor-events-test';
  const payload = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="c.csv"\r\nContent-Type: text/csv\r\n\r\n${csv}\r\n--${boundary}--\r\n`,
  );
  return ctx.app.inject({
    method: 'POST',
    url: `${BASE}/customers/bulk/csv`,
    headers: { authorization: p.auth, 'content-type': `multipart/form-data; boundary=${boundary}` },
    payload,
  });
}

const currency = { code: 'USD', name: 'United States Dollar', symbol: '$', decimals: 2 };

/** Upstream's own example payloads for the transaction events (upstream-openapi.yaml, `webhooks`). */
function upstreamOutgoing(): Body {
  return {
    id: 'Transaction:019542f5-b3e7-1d02-0000-000000000005',
    status: 'FAILED',
    type: 'OUTGOING',
    direction: 'DEBIT',
    source: { sourceType: 'ACCOUNT', accountId: 'InternalAccount:a12dcbd6-dced-4ec4-b756-3c3a9ea3d123' },
    destination: { destinationType: 'ACCOUNT', accountId: 'ExternalAccount:a12dcbd6-dced-4ec4-b756-3c3a9ea3d123' },
    customerId: 'Customer:019542f5-b3e7-1d02-0000-000000000001',
    platformCustomerId: '18d3e5f7b4a9c2',
    senderUmaAddress: '$sender@uma.domain',
    receiverUmaAddress: '$recipient@external.domain',
    sentAmount: { amount: 10550, currency },
    createdAt: '2025-08-15T14:25:18Z',
    quoteId: 'Quote:019542f5-b3e7-1d02-0000-000000000006',
    failureReason: 'QUOTE_EXECUTION_FAILED',
  };
}

function upstreamIncomingRefunded(): Body {
  return {
    id: 'Transaction:019542f5-b3e7-1d02-0000-000000000005',
    status: 'FAILED',
    type: 'INCOMING',
    direction: 'CREDIT',
    destination: { destinationType: 'UMA_ADDRESS', umaAddress: '$recipient@uma.domain' },
    customerId: 'Customer:019542f5-b3e7-1d02-0000-000000000001',
    platformCustomerId: '18d3e5f7b4a9c2',
    senderUmaAddress: '$sender@external.domain',
    receiverUmaAddress: '$recipient@uma.domain',
    receivedAmount: { amount: 50000, currency },
    createdAt: '2025-08-15T14:25:18Z',
    description: 'Payment for services',
    reconciliationInstructions: { reference: 'REF-123456789' },
    failureReason: 'OFFRAMP_FAILED',
    refund: { reference: 'REF-123456789-REFUND', initiatedAt: '2025-08-15T14:35:00Z', settledAt: '2025-08-15T14:40:00Z', status: 'COMPLETED', reason: 'TRANSACTION_FAILED' },
  };
}

function expectValid(type: string, data: unknown, where: string): void {
  const result = catalogue.validate(type, data);
  expect(result.valid, `${type} (${where}): ${JSON.stringify(result.errors)}`).toBe(true);
}

describe('the event catalogue', () => {
  it('lists every upstream event type of what Corridor does, each once', () => {
    const types = catalogue.types();
    expect(new Set(types).size).toBe(types.length);
    for (const prefix of ['CUSTOMER.', 'VERIFICATION.', 'INTERNAL_ACCOUNT.', 'EXTERNAL_ACCOUNT.', 'OUTGOING_PAYMENT.', 'INCOMING_PAYMENT.', 'BULK_UPLOAD.', 'INVITATION.']) {
      expect(types.some((t) => t.startsWith(prefix)), prefix).toBe(true);
    }
    expect(types).toHaveLength(1 + 6 + 5 + 3 + 1 + 9 + 6 + 2 + 1);
  });

  it('rejects a payload that does not match its type', () => {
    expect(catalogue.validate('CUSTOMER.KYC_APPROVED', { id: 'nope' }).valid).toBe(false);
    expect(catalogue.validate('TEST', { anything: true }).valid).toBe(false);
    expect(catalogue.validate('NOT.A_TYPE', {}).valid).toBe(false);
  });

  it('every type, emitted by its operation over HTTP and delivered once per change, matches its schema', async () => {
    const auto = await platform({ autoApprove: true });
    const reviewed = await platform({ autoApprove: false });

    // Customers approved at creation (sandbox), their accounts opening, a balance moving.
    const approvedAtOnce = await individual(auto);
    const accounts = (await ok(auto, 'GET', `/customers/internal-accounts?customerId=${approvedAtOnce}`)) as { data: Body[] };
    await ok(auto, 'POST', `/sandbox/internal-accounts/${String(accounts.data[0]!.id)}/fund`, { amount: 12_345 });

    // Reviews: approved, rejected, manual review, resolve errors; a business approved and one rejected.
    const good = await individual(reviewed);
    await document(reviewed, good, 'PASSPORT', { documentNumber: 'P1234567' });
    const rejected = await individual(reviewed, `ind-${++seq}-SANDBOX_REJECT`);
    await document(reviewed, rejected, 'PASSPORT');
    const manual = await individual(reviewed, `ind-${++seq}-SANDBOX_MANUAL_REVIEW`);
    await document(reviewed, manual, 'PASSPORT');
    const incomplete = await individual(reviewed);
    const business = await completeBusiness(reviewed, `biz-${++seq}`);
    const rejectedBusiness = await completeBusiness(reviewed, `biz-${++seq}-SANDBOX_REJECT`);
    for (const customerId of [good, rejected, manual, incomplete, business, rejectedBusiness]) await ok(reviewed, 'POST', '/verifications', { customerId });

    // Bulk imports: one completes, one fails.
    expect((await bulkCsv(auto, 'customerType,fullName\nINDIVIDUAL,Bulk Ben')).statusCode).toBe(202);
    expect((await bulkCsv(auto, 'customerType,fullName\nMARTIAN,Nobody')).statusCode).toBe(202);

    // An external wallet proving its ownership.
    const wallet = evmWallet();
    const external = await ok(auto, 'POST', '/platform/external-accounts', {
      currency: 'USDC',
      ownershipType: 'FIRST_PARTY',
      accountInfo: { accountType: 'ETHEREUM_WALLET', address: wallet.address },
    });
    const challenge = await ok(auto, 'POST', `/platform/external-accounts/${String(external.id)}/challenge`, { method: 'WALLET_SIGNATURE' });
    await ok(auto, 'POST', `/platform/external-accounts/${String(external.id)}/verify`, { signature: await wallet.signMessage(String(challenge.messageToSign)) });

    // An invitation of one of its customers, claimed.
    await ok(auto, 'PATCH', '/config', { umaDomain: 'auto.example.com' });
    const inviter = await ok(auto, 'GET', `/customers/${approvedAtOnce}`);
    const invitation = await ok(auto, 'POST', '/invitations', { inviterUma: inviter.umaAddress });
    await ok(auto, 'POST', `/invitations/${String(invitation.code)}/claim`, { inviteeUma: '$guest@other.example.com' });

    // An incoming payment asking for the platform's approval.
    ctx.app.webhooks.approvals.registerConsumer('events-test', async () => {});
    const transactionId = newId('Transaction');
    await ctx.app.webhooks.approvals.request({
      platformId: auto.uuid,
      transactionId,
      consumer: 'events-test',
      type: 'INCOMING_PAYMENT.PENDING',
      data: {
        id: transactionId,
        status: 'PENDING',
        type: 'INCOMING',
        direction: 'CREDIT',
        destination: { destinationType: 'UMA_ADDRESS', umaAddress: '$jane@uma.example.com' },
        customerId: approvedAtOnce,
        platformCustomerId: 'ind-1',
        receivedAmount: { amount: 50_000, currency },
        requestedReceiverCustomerInfoFields: [{ name: 'NATIONALITY', mandatory: true }],
      },
    });

    await drain();
    const delivered = receiver.received;
    expect(delivered.every((w) => w.verified)).toBe(true);
    const byType = new Map<string, ReceivedWebhook[]>();
    for (const w of delivered) byType.set(w.body.type, [...(byType.get(w.body.type) ?? []), w]);
    for (const [type, webhooks] of byType) for (const w of webhooks) expectValid(type, w.body.data, `delivered ${w.body.id}`);

    // Once per change: one webhook per (type, object) here, and one id per webhook.
    const perChange = delivered.map((w) => `${w.body.type} ${String((w.body.data as Body | undefined)?.id ?? w.body.id)}`);
    const balanceChanges = perChange.filter((k) => k.startsWith('INTERNAL_ACCOUNT.BALANCE_UPDATED'));
    expect(balanceChanges).toHaveLength(1);
    expect(new Set(perChange).size).toBe(perChange.length);
    expect(new Set(delivered.map((w) => w.body.id)).size).toBe(delivered.length);
    // Order is not promised: compare sorted.
    const forCustomer = (id: string) =>
      delivered
        .filter((w) => (w.body.data as Body | undefined)?.id === id)
        .map((w) => w.body.type)
        .sort();
    expect(forCustomer(good)).toEqual(['CUSTOMER.KYC_APPROVED', 'CUSTOMER.KYC_PENDING']);
    expect(forCustomer(rejected)).toEqual(['CUSTOMER.KYC_PENDING', 'CUSTOMER.KYC_REJECTED']);
    expect(forCustomer(manual)).toEqual(['CUSTOMER.KYC_PENDING']);
    expect(forCustomer(incomplete)).toEqual([]);
    expect(forCustomer(business)).toEqual(['CUSTOMER.KYB_APPROVED', 'CUSTOMER.KYB_PENDING']);
    expect(forCustomer(rejectedBusiness)).toEqual(['CUSTOMER.KYB_PENDING', 'CUSTOMER.KYB_REJECTED']);
    expect(forCustomer(approvedAtOnce)).toEqual(['CUSTOMER.KYC_APPROVED']);
    expect(byType.get('EXTERNAL_ACCOUNT.STATUS_UPDATED')!.map((w) => (w.body.data as Body).status)).toEqual(['ACTIVE']);
    expect(byType.get('INVITATION.CLAIMED')!.map((w) => (w.body.data as Body).inviteeUma)).toEqual(['$guest@other.example.com']);

    // The rest, on the payloads they will carry.
    const account = ((await ok(auto, 'GET', `/customers/internal-accounts?customerId=${approvedAtOnce}`)) as { data: Body[] }).data[0];
    const samples: Record<string, unknown> = { 'INTERNAL_ACCOUNT.FUNDING_INSTRUCTIONS_UPDATED': account };
    for (const type of NOT_EMITTED_HERE.filter((t) => t.startsWith('OUTGOING_PAYMENT.'))) samples[type] = upstreamOutgoing();
    for (const type of NOT_EMITTED_HERE.filter((t) => t.startsWith('INCOMING_PAYMENT.'))) samples[type] = upstreamIncomingRefunded();
    for (const [type, data] of Object.entries(samples)) expectValid(type, data, 'sample');

    expect([...byType.keys()].sort()).toEqual(catalogue.types().filter((t) => !NOT_EMITTED_HERE.includes(t)).sort());
  }, 120_000);
});
