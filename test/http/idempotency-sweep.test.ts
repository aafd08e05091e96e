import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountBalance } from '../../src/modules/ledger/index.js';
import { BASE, createTestContext, expectEnvelope, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { multipartBody } from '../helpers/multipart.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

/**
 * Every operation the OpenAPI document declares `Idempotency-Key` on, held to docs/conventions.md
 * § Idempotency: a repeat with the key answers the first response (status, bytes, headers) and
 * changes nothing more; the same key with another request is 409 CONFLICT; keys are per platform;
 * a malformed key is 400 INVALID_INPUT; a request that failed stored nothing, so its key may be
 * used again; concurrent repeats make one change (on PostgreSQL, where requests really overlap).
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
/** The webhook endpoints of platforms that approve incoming payments. */
const receivers: WebhookReceiver[] = [];
afterAll(async () => {
  for (const receiver of receivers) await receiver.close();
  await ctx.close();
});

type Json = Record<string, any>;
type Response = Awaited<ReturnType<TestContext['app']['inject']>>;
type Counts = Record<string, number>;
type Variant = 'valid' | 'different' | 'invalid';

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown, headers: Record<string, string> = {}) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth, ...headers }, ...(payload === undefined ? {} : { payload: payload as object }) });
const keyed = (key: string | undefined): Record<string, string> => (key === undefined ? {} : { 'idempotency-key': key });
const ok = async (response: Promise<Response>, status: number) => {
  const answered = await response;
  expect(answered.statusCode, answered.body).toBe(status);
  return answered.json() as Json;
};

/** One operation on one platform, set up so that it can succeed once. */
interface Subject {
  /** The valid request, another valid request (for the key's 409), or one refused (the refusal's status and code). */
  send(variant: Variant, key?: string): Promise<Response>;
  refusal: [number, string];
  /** What the operation changes, as counts read through the API (or the database where the API shows nothing). */
  effect(): Promise<Counts>;
}
interface Operation {
  operationId: string;
  status: number;
  /** What one execution adds to `effect()`. */
  once: Counts;
  /** The write calls another system before its transaction (`sendWrite`'s `prepare`): a concurrent repeat is 409, retryable. */
  callsOut?: boolean;
  setup(p: TestPlatform): Promise<Subject>;
}

const consent = () => ({ acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' });
let seq = 0;
async function customer(p: TestPlatform): Promise<{ id: string; usd: string }> {
  const id = (await ok(call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `sweep-${++seq}`, fullName: 'Ann Lee', endUserTermsConsent: consent() }), 201)).id as string;
  const usd = (await ok(call(p, 'GET', `/customers/internal-accounts?customerId=${id}&currency=USD`), 200)).data[0] as Json;
  return { id, usd: usd.id as string };
}
const fund = (p: TestPlatform, accountId: string, amount: number) => ok(call(p, 'POST', `/sandbox/internal-accounts/${accountId}/fund`, { amount }), 200);
async function payee(p: TestPlatform, type: string, extra: Json = {}, info: Json = {}): Promise<string> {
  const sample = validSamples(ctx.clock.now())[type]!;
  return (await ok(call(p, 'POST', '/platform/external-accounts', { ...sample, ...extra, accountInfo: { ...sample.accountInfo, ...info } }), 201)).id as string;
}
async function usdAccount(p: TestPlatform, customerId: string): Promise<Counts> {
  const account = (await ok(call(p, 'GET', `/customers/internal-accounts?customerId=${customerId}&currency=USD`), 200)).data[0] as Json;
  return { available: account.balance.amount as number, total: account.totalBalance.amount as number };
}
const listed = async (p: TestPlatform, path: string) => ((await ok(call(p, 'GET', path), 200)).data as Json[]).length;
const payments = (p: TestPlatform, customerId: string) => listed(p, `/transactions?customerId=${customerId}&limit=100`);
/** A payment's effect: the sender's available balance and its transactions. */
const paid = async (p: TestPlatform, customerId: string): Promise<Counts> => ({ available: (await usdAccount(p, customerId)).available, transactions: await payments(p, customerId) });
const customerCount = async (p: TestPlatform) => (await ok(call(p, 'GET', '/customers?limit=1'), 200)).totalCount as number;
const drainJobs = async () => {
  for (let i = 0; i < 20; i++) if ((await ctx.jobs.runDue(50)) === 0) return;
};
const ABSENT = '019542f5-b3e7-1d02-0000-000000000001';

/** Points the platform's webhooks at an endpoint that approves every incoming payment (200). */
async function approvingEndpoint(p: TestPlatform): Promise<void> {
  const receiver = await WebhookReceiver.start();
  receivers.push(receiver);
  await ok(call(p, 'PATCH', '/config', { webhookEndpoint: receiver.url }), 200);
  receiver.trust(((await ok(call(p, 'GET', '/webhooks/signing-keys'), 200)).data as Array<{ publicKey: string }>).map((k) => k.publicKey));
}

const operations: Operation[] = [
  {
    operationId: 'createCustomer',
    status: 201,
    once: { customers: 1 },
    async setup(p) {
      const body = (fullName: string, platformCustomerId = 'sweep-customer') => ({ customerType: 'INDIVIDUAL', platformCustomerId, fullName });
      // A platformCustomerId already taken: refused inside the write's transaction, after the key was claimed.
      await ok(call(p, 'POST', '/customers', body('Taken', 'sweep-taken')), 201);
      return {
        send: (variant, key) => call(p, 'POST', '/customers', { valid: body('Ann Lee'), different: body('Bob Ray'), invalid: body('Ann Lee', 'sweep-taken') }[variant], keyed(key)),
        refusal: [409, 'CONFLICT'],
        effect: async () => ({ customers: await customerCount(p) }),
      };
    },
  },
  {
    operationId: 'uploadCustomersCsv',
    status: 202,
    // Rows without a platformCustomerId: only the key keeps a retried upload from creating them twice.
    once: { customers: 2 },
    async setup(p) {
      const header = 'customerType,fullName,birthDate,addressLine1,city,state,postalCode,country';
      const files = {
        valid: `${header}\nINDIVIDUAL,Ann Key,1990-01-01,1 Main St,Austin,TX,78701,US\nINDIVIDUAL,Bob Key,1991-02-02,2 Main St,Austin,TX,78701,US`,
        different: `${header}\nINDIVIDUAL,Cy Key,1992-03-03,3 Main St,Austin,TX,78701,US`,
        invalid: 'fullName\nNo Type',
      };
      return {
        send: (variant, key) => {
          const { payload, headers } = multipartBody([{ name: 'file', filename: 'customers.csv', contentType: 'text/csv', data: Buffer.from(files[variant]) }]);
          return ctx.app.inject({ method: 'POST', url: `${BASE}/customers/bulk/csv`, headers: { authorization: p.auth, ...headers, ...keyed(key) }, payload });
        },
        refusal: [400, 'INVALID_INPUT'],
        effect: async () => {
          await drainJobs();
          return { customers: await customerCount(p) };
        },
      };
    },
  },
  {
    operationId: 'createInvitation',
    status: 201,
    // Without a key, each call makes another invitation code.
    once: { invitations: 1 },
    async setup(p) {
      const domain = `sweep-${++seq}.example.com`;
      await ok(call(p, 'PATCH', '/config', { umaDomain: domain }), 200);
      await ok(call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `sweep-${++seq}`, fullName: 'Ann Lee', umaAddress: `$ann@${domain}` }), 201);
      // The last names no customer of the platform: refused inside the write's transaction, after the key was claimed.
      const inviterUma = { valid: `$ann@${domain}`, different: `$ann@${domain}`, invalid: `$nobody@${domain}` };
      return {
        send: (variant, key) => call(p, 'POST', '/invitations', { inviterUma: inviterUma[variant], ...(variant === 'different' ? { amountToSend: 100 } : {}) }, keyed(key)),
        refusal: [400, 'INVALID_INPUT'],
        effect: async () => ({
          invitations: Number((await ctx.handle.db.selectFrom('invitations').select((eb) => eb.fn.countAll<string | number>().as('n')).where('platform_id', '=', p.uuid).executeTakeFirstOrThrow()).n),
        }),
      };
    },
  },
  {
    operationId: 'fundSandboxInternalAccount',
    status: 200,
    once: { available: 500, total: 500 },
    async setup(p) {
      const { id, usd } = await customer(p);
      return {
        send: (variant, key) =>
          call(p, 'POST', `/sandbox/internal-accounts/${variant === 'invalid' ? `InternalAccount:${ABSENT}` : usd}/fund`, { amount: variant === 'different' ? 501 : 500 }, keyed(key)),
        refusal: [404, 'REFERENCE_NOT_FOUND'],
        effect: () => usdAccount(p, id),
      };
    },
  },
  {
    operationId: 'createCustomerKycLink',
    status: 201,
    once: { links: 1 },
    async setup(p) {
      const { id } = await customer(p);
      const redirectUri = { valid: 'https://app.example.com/done', different: 'https://app.example.com/other', invalid: 'not a uri' };
      return {
        send: (variant, key) => call(p, 'POST', `/customers/${id}/kyc-link`, { redirectUri: redirectUri[variant] }, keyed(key)),
        refusal: [400, 'INVALID_INPUT'],
        effect: async () => ({ links: (await ctx.handle.db.selectFrom('kyc_links').select('id').where('platform_id', '=', p.uuid).execute()).length }),
      };
    },
  },
  {
    operationId: 'createQuote',
    status: 201,
    once: { available: -20_000, transactions: 1 },
    async setup(p) {
      const { id, usd } = await customer(p);
      await fund(p, usd, 50_000);
      const eur = await payee(p, 'EUR_ACCOUNT');
      const amount = { valid: 20_000, different: 20_001, invalid: 60_000 };
      return {
        // Executed at once, so that the quote moves money: a duplicate would hold the amount twice.
        send: (variant, key) =>
          call(p, 'POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: usd }, destination: { destinationType: 'ACCOUNT', accountId: eur }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: amount[variant], immediatelyExecute: true }, keyed(key)),
        refusal: [400, 'AMOUNT_OUT_OF_RANGE'],
        effect: () => paid(p, id),
      };
    },
  },
  {
    operationId: 'executeQuote',
    status: 200,
    once: { available: -20_000, transactions: 1 },
    async setup(p) {
      const { id, usd } = await customer(p);
      await fund(p, usd, 50_000);
      const eur = await payee(p, 'EUR_ACCOUNT');
      const quote = await ok(call(p, 'POST', '/quotes', { source: { sourceType: 'ACCOUNT', accountId: usd }, destination: { destinationType: 'ACCOUNT', accountId: eur }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 20_000 }), 201);
      return {
        send: (variant, key) =>
          call(p, 'POST', `/quotes/${variant === 'invalid' ? `Quote:${ABSENT}` : quote.id}/execute`, variant === 'different' ? { scaFactor: 'SMS_OTP' } : undefined, keyed(key)),
        refusal: [404, 'QUOTE_NOT_FOUND'],
        effect: () => paid(p, id),
      };
    },
  },
  {
    operationId: 'createTransferIn',
    status: 201,
    once: { transactions: 1 },
    async setup(p) {
      const { id, usd } = await customer(p);
      const pullable = await payee(p, 'USD_ACCOUNT', { ownershipType: 'FIRST_PARTY' }, { accountNumber: '98765432101' });
      const thirdParty = await payee(p, 'USD_ACCOUNT', {}, { accountNumber: '98765432102' });
      return {
        send: (variant, key) =>
          call(p, 'POST', '/transfer-in', { source: { accountId: variant === 'invalid' ? thirdParty : pullable }, destination: { accountId: usd }, amount: variant === 'different' ? 7_501 : 7_500 }, keyed(key)),
        refusal: [400, 'INVALID_INPUT'],
        effect: async () => ({ transactions: await payments(p, id) }),
      };
    },
  },
  {
    operationId: 'createTransferOut',
    status: 201,
    once: { available: -12_550, transactions: 1 },
    async setup(p) {
      const { id, usd } = await customer(p);
      await fund(p, usd, 50_000);
      const out = await payee(p, 'USD_ACCOUNT');
      const amount = { valid: 12_550, different: 12_551, invalid: 60_000 };
      return {
        send: (variant, key) => call(p, 'POST', '/transfer-out', { source: { accountId: usd }, destination: { accountId: out, paymentRail: 'ACH' }, amount: amount[variant] }, keyed(key)),
        refusal: [400, 'AMOUNT_OUT_OF_RANGE'],
        effect: () => paid(p, id),
      };
    },
  },
  {
    operationId: 'createCustomerExternalAccount',
    status: 201,
    once: { accounts: 1 },
    callsOut: true,
    async setup(p) {
      const { id } = await customer(p);
      const sample = validSamples(ctx.clock.now()).USD_ACCOUNT!;
      // The last is refused by the account's checks, which run after the key is claimed (`prepare`).
      const accountNumber = { valid: '55512345001', different: '55512345002', invalid: '12' };
      return {
        send: (variant, key) => call(p, 'POST', '/customers/external-accounts', { ...sample, customerId: id, accountInfo: { ...sample.accountInfo, accountNumber: accountNumber[variant] } }, keyed(key)),
        refusal: [400, 'INVALID_INPUT'],
        effect: async () => ({ accounts: await listed(p, `/customers/external-accounts?customerId=${id}&limit=100`) }),
      };
    },
  },
  {
    operationId: 'createPlatformExternalAccount',
    status: 201,
    once: { accounts: 1 },
    callsOut: true,
    async setup(p) {
      const sample = validSamples(ctx.clock.now()).USD_ACCOUNT!;
      const accountNumber = { valid: '55512345001', different: '55512345002', invalid: '12' };
      return {
        send: (variant, key) => call(p, 'POST', '/platform/external-accounts', { ...sample, accountInfo: { ...sample.accountInfo, accountNumber: accountNumber[variant] } }, keyed(key)),
        refusal: [400, 'INVALID_INPUT'],
        effect: async () => ({ accounts: await listed(p, '/platform/external-accounts?limit=100') }),
      };
    },
  },
  {
    operationId: 'cancelTransaction',
    status: 200,
    once: { available: 12_550, failed: 1 },
    async setup(p) {
      const { id, usd } = await customer(p);
      await fund(p, usd, 50_000);
      const out = await payee(p, 'USD_ACCOUNT');
      const payment = await ok(call(p, 'POST', '/transfer-out', { source: { accountId: usd }, destination: { accountId: out, paymentRail: 'ACH' }, amount: 12_550 }), 201);
      return {
        send: (variant, key) =>
          call(p, 'POST', `/transactions/${variant === 'invalid' ? `Transaction:${ABSENT}` : payment.id}/cancel`, { reason: variant === 'different' ? 'OTHER' : 'REQUESTED' }, keyed(key)),
        refusal: [404, 'TRANSACTION_NOT_FOUND'],
        effect: async () => {
          const transaction = await ok(call(p, 'GET', `/transactions/${payment.id}`), 200);
          return { available: (await usdAccount(p, id)).available, failed: transaction.status === 'FAILED' ? 1 : 0 };
        },
      };
    },
  },
  {
    operationId: 'sandboxSend',
    status: 200,
    once: { sandboxFunding: -30_000 },
    async setup(p) {
      const eur = await payee(p, 'EUR_ACCOUNT');
      const quote = await ok(call(p, 'POST', '/quotes', { source: { sourceType: 'REALTIME_FUNDING', currency: 'USD' }, destination: { destinationType: 'ACCOUNT', accountId: eur }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 30_000 }), 201);
      return {
        send: (variant, key) =>
          call(p, 'POST', '/sandbox/send', { quoteId: variant === 'invalid' ? `Quote:${ABSENT}` : quote.id, currencyCode: 'USD', ...(variant === 'different' ? { currencyAmount: 30_000 } : {}) }, keyed(key)),
        refusal: [404, 'QUOTE_NOT_FOUND'],
        effect: async () => ({ sandboxFunding: Number((await accountBalance(ctx.handle.db, p.uuid, { kind: 'SANDBOX_FUNDING', currency: 'USD' })).total) }),
      };
    },
  },
  {
    // Credits a customer as a deposit does: a write that moves money takes the key (docs/conventions.md § Idempotency).
    operationId: 'sandboxReceive',
    status: 200,
    once: { available: 500, total: 500 },
    callsOut: true,
    async setup(p) {
      await approvingEndpoint(p);
      const { id } = await customer(p);
      return {
        send: (variant, key) =>
          call(
            p,
            'POST',
            '/sandbox/uma/receive',
            { senderUmaAddress: '$alice@sender-vasp.example', customerId: variant === 'invalid' ? `Customer:${ABSENT}` : id, receivingCurrencyCode: 'USD', receivingCurrencyAmount: variant === 'different' ? 501 : 500 },
            keyed(key),
          ),
        refusal: [404, 'USER_NOT_FOUND'],
        effect: () => usdAccount(p, id),
      };
    },
  },
  {
    operationId: 'sandboxDeposit',
    status: 200,
    once: { available: 2_500, total: 2_500 },
    async setup(p) {
      const { id } = await customer(p);
      const account = (await ok(call(p, 'GET', `/customers/internal-accounts?customerId=${id}&currency=USD`), 200)).data[0] as Json;
      const reference = (account.fundingPaymentInstructions as Json[])[0]!.accountOrWalletInfo.reference as string;
      // No depositId: only the key keeps a retried deposit from crediting twice.
      return {
        send: (variant, key) =>
          call(p, 'POST', '/sandbox/deposits', { reference: variant === 'invalid' ? 'NO-SUCH-REFERENCE' : reference, amount: variant === 'different' ? 2_501 : 2_500 }, keyed(key)),
        refusal: [404, 'REFERENCE_NOT_FOUND'],
        effect: () => usdAccount(p, id),
      };
    },
  },
];

/** What a request's effects look like from outside: the operation's own counts and the platform's outbox. */
async function snapshot(p: TestPlatform, subject: Subject): Promise<Counts> {
  const own = await subject.effect();
  const events = (await ctx.handle.db.selectFrom('events').select('id').where('platform_id', '=', p.uuid).execute()).length;
  return { ...own, events };
}
const delta = (before: Counts, after: Counts): Counts => Object.fromEntries(Object.keys(after).map((k) => [k, after[k]! - before[k]!]));
const nothing = (counts: Counts): Counts => Object.fromEntries(Object.keys(counts).map((k) => [k, 0]));

/** Headers that must be the same on a replay: all but those of the exchange itself (its date, its request id) and the replay marker. */
const replayedHeaders = (response: Response) => {
  const { date: _date, 'x-request-id': _requestId, 'idempotent-replayed': _replayed, ...rest } = response.headers;
  return rest;
};

function expectSameAnswer(replay: Response, first: Response) {
  expect(replay.statusCode).toBe(first.statusCode);
  expect(replay.body).toBe(first.body);
  expect(replayedHeaders(replay)).toEqual(replayedHeaders(first));
}

function expectKeyRefused(response: Response) {
  const body = expectEnvelope(response, 400, 'INVALID_INPUT');
  expect((body.details!.errors as Array<{ field: string }>).map((e) => e.field)).toEqual(['Idempotency-Key']);
}

type Operations = Record<string, { operationId: string; parameters?: Array<{ in: string; name: string }> }>;
/** The operations of the served OpenAPI document, and whether each declares the header. */
async function documentedOperations(): Promise<Array<{ operationId: string; method: string; path: string; takesKey: boolean }>> {
  const document = (await ctx.app.inject({ method: 'GET', url: `${BASE}/openapi.json` })).json() as { paths: Record<string, Operations> };
  return Object.entries(document.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({
      operationId: op.operationId,
      method,
      path,
      takesKey: op.parameters?.some((h) => h.in === 'header' && h.name.toLowerCase() === 'idempotency-key') ?? false,
    })),
  );
}

describe('Idempotency-Key on every operation that declares it', () => {
  it('covers exactly the operations the OpenAPI document declares the header on', async () => {
    const declared = (await documentedOperations()).filter((o) => o.takesKey).map((o) => o.operationId);
    expect(operations.map((o) => o.operationId).sort()).toEqual(declared.sort());
  });

  describe.each(operations)('$operationId', (operation) => {
    it('replays the first answer, refuses another request and malformed keys, keeps keys per platform, and a refused request does not use its key', async () => {
      const [mine, theirs] = [await ctx.newPlatform(), await ctx.newPlatform()];
      const subject = await operation.setup(mine);
      // The longest key the docs allow.
      const key = `sweep-${operation.operationId}-`.padEnd(255, 'k');
      const start = await snapshot(mine, subject);

      // A malformed key: refused before anything runs.
      for (const malformed of ['', 'k'.repeat(256), 'has space']) expectKeyRefused(await subject.send('valid', malformed));
      expect(await snapshot(mine, subject)).toEqual(start);

      // A refused request stores nothing: the corrected request with its key runs.
      expectEnvelope(await subject.send('invalid', key), ...subject.refusal);
      expect(await snapshot(mine, subject)).toEqual(start);
      const first = await subject.send('valid', key);
      expect(first.statusCode, first.body).toBe(operation.status);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      const done = await snapshot(mine, subject);
      const once = delta(start, done);
      expect(once).toMatchObject(operation.once);

      // The same request again: the first answer, and nothing more happens.
      const replay = await subject.send('valid', key);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expectSameAnswer(replay, first);
      expect(delta(done, await snapshot(mine, subject))).toEqual(nothing(once));

      // Another request under the key: 409, not retryable, nothing happens.
      const other = expectEnvelope(await subject.send('different', key), 409, 'CONFLICT');
      expect(other.details).toEqual({ idempotencyKey: key });
      expect(delta(done, await snapshot(mine, subject))).toEqual(nothing(once));

      // The key on another platform is another key.
      const theirSubject = await operation.setup(theirs);
      const theirStart = await snapshot(theirs, theirSubject);
      const theirFirst = await theirSubject.send('valid', key);
      expect(theirFirst.statusCode, theirFirst.body).toBe(operation.status);
      expect(theirFirst.headers['idempotent-replayed']).toBeUndefined();
      expect(theirFirst.body).not.toBe(first.body);
      expect(delta(theirStart, await snapshot(theirs, theirSubject))).toEqual(once);
      expectSameAnswer(await subject.send('valid', key), first);
      expect(delta(done, await snapshot(mine, subject))).toEqual(nothing(once));
    });

    it.runIf(onPostgres)('makes one change for 5 concurrent requests with one key; each answers the first response or 409 retryable', async () => {
      const p = await ctx.newPlatform();
      const subject = await operation.setup(p);
      const start = await snapshot(p, subject);
      const answers = await Promise.all(Array.from({ length: 5 }, () => subject.send('valid', 'sweep-concurrent')));
      const created = answers.filter((a) => a.statusCode === operation.status);
      expect(created.length, answers.map((a) => `${a.statusCode} ${a.body}`).join('\n')).toBeGreaterThanOrEqual(1);
      for (const answer of created) expectSameAnswer(answer, created[0]!);
      expect(created.filter((a) => a.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
      const refused = answers.filter((a) => a.statusCode !== operation.status);
      // Only a write that calls out before its transaction refuses a repeat in progress; every other one waits and replays.
      expect(refused.length === 0 || operation.callsOut).toBe(true);
      for (const answer of refused) {
        expectEnvelope(answer, 409, 'CONFLICT');
        expect(answer.headers['x-should-retry']).toBe('true');
      }
      const once = delta(start, await snapshot(p, subject));
      expect(once).toMatchObject(operation.once);
      // After the fact every repeat replays.
      expectSameAnswer(await subject.send('valid', 'sweep-concurrent'), created[0]!);
      expect(delta(start, await snapshot(p, subject))).toEqual(once);
    });
  });
});

/**
 * Every write the document does not declare the key on, and why a retry of it needs none: the key
 * is promised on writes that create customers or move money (docs/conventions.md § Idempotency).
 * The others do not read the header, so sending one changes nothing.
 */
const NOT_REQUIRED = 'answers 409 CONFLICT (not required) and writes nothing';
const WITHOUT_KEY: Record<string, string> = {
  createToken: 'creates a credential, not a customer or money',
  deleteToken: 'a repeat finds it gone',
  updatePlatformConfig: 'sets values: a repeat sets the same',
  updateCustomerSettings: 'sets values',
  updateCustomer: 'sets values',
  deleteCustomer: 'a repeat finds it gone',
  updateInternalAccount: 'sets values',
  exportEmbeddedWallet: 'reads a wallet out',
  createAuthCredential: 'creates a wallet credential',
  challengeAuthCredential: 'issues a challenge',
  verifyAuthCredential: 'a challenge is used once',
  revokeAuthCredential: 'a repeat finds it gone',
  revokeAuthSession: 'a repeat finds it gone',
  refreshAuthSession: 'a session is refreshed by a signed request, used once',
  createBeneficialOwner: 'creates an owner record, not a customer or money',
  updateBeneficialOwner: 'sets values',
  createVerification: 'starts a review of a customer',
  decideSandboxManualReview: 'a decided review is not decided again',
  rotateWebhookSigningKey: 'rotates a key',
  resendWebhook: 'delivers an event again, which receivers dedupe by its id',
  sendTestWebhook: 'sends a test event',
  sendTestWebhookAtEarlierPath: 'sends a test event',
  uploadDocument: 'stores a document',
  replaceDocument: 'sets the document',
  deleteDocument: 'a repeat finds it gone',
  deleteCustomerExternalAccount: 'a repeat finds it gone',
  createCustomerExternalAccountOwnershipChallenge: 'issues a challenge',
  verifyCustomerExternalAccountOwnership: 'a challenge is used once',
  deletePlatformExternalAccount: 'a repeat finds it gone',
  createPlatformExternalAccountOwnershipChallenge: 'issues a challenge',
  verifyPlatformExternalAccountOwnership: 'a challenge is used once',
  claimInvitation: 'the same claim repeated answers the invitation as claimed; another claim is refused',
  cancelInvitation: 'a cancelled code stays cancelled',
  estimateCryptoWithdrawalFee: 'reads an estimate',
  confirmReceiptDelivery: 'records a time: a repeat records its own',
  approvePendingIncomingPayment: 'moves money once by state: a decided payment is not decided again',
  rejectPendingIncomingPayment: 'moves money once by state: a decided payment is not decided again',
  sandboxRefundIncomingPayment: 'moves money once by state: a refunded payment is not refunded again',
  advanceSandboxClock: 'moves the test clock, not money',
  // modules/sca: contact verification and SCA are not required by Corridor's providers; each answers 409 and writes nothing.
  sendCustomerEmailVerification: NOT_REQUIRED,
  confirmCustomerEmailVerification: NOT_REQUIRED,
  sendCustomerPhoneVerification: NOT_REQUIRED,
  confirmCustomerPhoneVerification: NOT_REQUIRED,
  startScaFactorEnrollment: NOT_REQUIRED,
  confirmScaFactorEnrollment: NOT_REQUIRED,
  deleteScaFactor: NOT_REQUIRED,
  startScaLogin: NOT_REQUIRED,
  completeScaLogin: NOT_REQUIRED,
  recordSecurityEvent: NOT_REQUIRED,
  startTwoFactorReset: NOT_REQUIRED,
  completeTwoFactorReset: NOT_REQUIRED,
  startBeneficiaryTrust: NOT_REQUIRED,
  confirmBeneficiaryTrust: NOT_REQUIRED,
  startBeneficiaryUntrust: NOT_REQUIRED,
  confirmBeneficiaryUntrust: NOT_REQUIRED,
  authorizeQuote: NOT_REQUIRED,
  resendQuoteScaCode: NOT_REQUIRED,
};

describe('Idempotency-Key on the other writes', () => {
  it('each write without it is one the docs promise no key for', async () => {
    const covered = new Set(operations.map((o) => o.operationId));
    const others = (await documentedOperations()).filter((o) => !o.takesKey && ['post', 'put', 'patch', 'delete'].includes(o.method) && !covered.has(o.operationId));
    expect(others.map((o) => o.operationId).sort()).toEqual(Object.keys(WITHOUT_KEY).sort());
  });

  it('is not read there: a malformed key changes nothing', async () => {
    const p = await ctx.newPlatform();
    const { id } = await customer(p);
    const updated = await call(p, 'PATCH', `/customers/${id}`, { customerType: 'INDIVIDUAL', fullName: 'Ann Key' }, { 'idempotency-key': '' });
    expect(updated.statusCode, updated.body).toBe(200);
    expect(updated.headers['idempotent-replayed']).toBeUndefined();
    expect((await ok(call(p, 'GET', `/customers/${id}`), 200)).fullName).toBe('Ann Key');
  });

  it('a write that moves money without it does so once: a repeated refund with a key is 409 and returns nothing more', async () => {
    const p = await ctx.newPlatform();
    const { id } = await customer(p);
    const account = (await ok(call(p, 'GET', `/customers/internal-accounts?customerId=${id}&currency=USD`), 200)).data[0] as Json;
    const reference = (account.fundingPaymentInstructions as Json[])[0]!.accountOrWalletInfo.reference as string;
    const deposit = await ok(call(p, 'POST', '/sandbox/deposits', { reference, amount: 2_500 }), 200);
    await ok(call(p, 'POST', `/sandbox/transactions/${deposit.id}/refund`, undefined, { 'idempotency-key': 'refund-once' }), 200);
    expectEnvelope(await call(p, 'POST', `/sandbox/transactions/${deposit.id}/refund`, undefined, { 'idempotency-key': 'refund-once' }), 409, 'CONFLICT');
    await drainJobs();
    expect(await usdAccount(p, id)).toEqual({ available: 0, total: 0 });
    expect(await ok(call(p, 'GET', `/transactions/${deposit.id}`), 200)).toMatchObject({ status: 'REFUNDED' });
  });
});
