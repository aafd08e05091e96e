import { createHash } from 'node:crypto';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseId } from '../../src/platform/ids.js';
import { BASE, createTestContext, onPostgres, type TestContext, type TestPlatform } from '../helpers/context.js';
import { cardPhotoJpeg } from '../helpers/document-files.js';
import { evmWallet, validSamples } from '../helpers/external-accounts.js';
import { sendDocumentForm, textParts } from '../helpers/multipart.js';
import { WalletClient } from '../helpers/wallet.js';

/**
 * Every uniqueness rule a request can run into, raced: RACERS requests at once through two
 * processes (each with its own pool) against one PostgreSQL database. Where one request may win,
 * exactly one does and every loser gets the answer the rule's pre-check gives; where all may (an
 * upsert, a shared blob, a code drawn again), all do and nothing is doubled. Never a 500.
 */
const RACERS = 8;

type Answer = Awaited<ReturnType<TestContext['app']['inject']>>;
type Json = Record<string, unknown>;

describe.runIf(onPostgres)('uniqueness rules raced on PostgreSQL', () => {
  let ctx: TestContext;
  let apps: Array<TestContext['app']>;
  beforeAll(async () => {
    ctx = await createTestContext();
    apps = [ctx.app, await ctx.secondApp()];
  });
  afterAll(() => ctx?.close());

  const send = (i: number, platform: TestPlatform, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, payload?: object, headers: Record<string, string> = {}) =>
    apps[i % apps.length]!.inject({ method, url: `${BASE}${path}`, headers: { authorization: platform.auth, ...headers }, ...(payload ? { payload } : {}) });

  /** RACERS copies of one request at once, spread over both processes. */
  const race = (request: (i: number) => Promise<Answer>) => Promise.all(Array.from({ length: RACERS }, (_, i) => request(i)));

  const statuses = (answers: Answer[]) => answers.map((a) => a.statusCode).sort((a, b) => a - b);

  /** One `winner`, every other answer `status` with `code` (its body shown when not). */
  function expectOneWinner(answers: Answer[], winner: number, status: number, code: string): Answer {
    const bodies = answers.map((a) => `${a.statusCode} ${a.body}`).join('\n');
    expect(statuses(answers), bodies).toEqual([...Array<number>(RACERS - 1).fill(status), winner].sort((a, b) => a - b));
    for (const loser of answers.filter((a) => a.statusCode === status)) expect((loser.json() as Json).code, bodies).toBe(code);
    return answers.find((a) => a.statusCode === winner)!;
  }

  const newCustomer = async (platform: TestPlatform, extra: Json = {}) => {
    const created = await send(0, platform, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Una Racer', ...extra });
    expect(created.statusCode, created.body).toBe(201);
    return created.json() as { id: string; umaAddress: string; platformCustomerId: string };
  };

  describe('customers', () => {
    it('platformCustomerId (customers_platform_customer_id_live): one create wins, the rest 409 CONFLICT, one live row', async () => {
      const platform = await ctx.newPlatform();
      const answers = await race((i) => send(i, platform, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: 'same-id', fullName: `Racer ${i}` }));
      expectOneWinner(answers, 201, 409, 'CONFLICT');
      const list = (await send(0, platform, 'GET', '/customers?platformCustomerId=same-id')).json() as { totalCount: number };
      expect(list.totalCount).toBe(1);
    });

    it('umaAddress (customers_uma_address_live, any case): one create wins, the rest 409 UMA_ADDRESS_EXISTS', async () => {
      const platform = await ctx.newPlatform();
      const answers = await race((i) =>
        send(i, platform, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `uma-${i}`, umaAddress: i % 2 ? '$Same@pay.example.com' : '$same@pay.example.com' }),
      );
      expectOneWinner(answers, 201, 409, 'UMA_ADDRESS_EXISTS');
    });

    it('umaAddress taken by PATCH: distinct customers updated to one address at once, one 200, the rest UMA_ADDRESS_EXISTS', async () => {
      const platform = await ctx.newPlatform();
      const customers = await Promise.all(Array.from({ length: RACERS }, () => newCustomer(platform)));
      const answers = await race((i) => send(i, platform, 'PATCH', `/customers/${customers[i]!.id}`, { customerType: 'INDIVIDUAL', umaAddress: '$patched@pay.example.com' }));
      expectOneWinner(answers, 200, 409, 'UMA_ADDRESS_EXISTS');
    });

    it('umaAddress: PATCHes into it racing creates with it, one of all of them wins', async () => {
      const platform = await ctx.newPlatform();
      const customers = await Promise.all(Array.from({ length: RACERS / 2 }, () => newCustomer(platform)));
      const answers = await race((i) =>
        i % 2
          ? send(i, platform, 'PATCH', `/customers/${customers[(i - 1) / 2]!.id}`, { customerType: 'INDIVIDUAL', umaAddress: '$mixed@pay.example.com' })
          : send(i, platform, 'POST', '/customers', { customerType: 'INDIVIDUAL', umaAddress: '$MIXED@pay.example.com' }),
      );
      const bodies = answers.map((a) => `${a.statusCode} ${a.body}`).join('\n');
      expect(answers.filter((a) => a.statusCode < 300), bodies).toHaveLength(1);
      for (const loser of answers.filter((a) => a.statusCode >= 300)) expect([loser.statusCode, (loser.json() as Json).code], bodies).toEqual([409, 'UMA_ADDRESS_EXISTS']);
    });

    it('a DELETE racing creates of its platformCustomerId: at most one create wins, the rest 409, never two live rows', async () => {
      const platform = await ctx.newPlatform();
      for (let round = 0; round < 3; round++) {
        const existing = await newCustomer(platform, { platformCustomerId: `reused-${round}`, umaAddress: `$reused${round}@pay.example.com` });
        const answers = await race((i) =>
          i === 0
            ? send(i, platform, 'DELETE', `/customers/${existing.id}`)
            : send(i, platform, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `reused-${round}`, umaAddress: `$reused${round}@pay.example.com` }),
        );
        const bodies = answers.map((a) => `${a.statusCode} ${a.body}`).join('\n');
        expect(answers[0]!.statusCode, bodies).toBe(200);
        const creates = answers.slice(1);
        expect(creates.filter((a) => a.statusCode === 201).length, bodies).toBeLessThanOrEqual(1);
        for (const loser of creates.filter((a) => a.statusCode !== 201)) expect([loser.statusCode, (loser.json() as Json).code], bodies).toEqual([409, 'CONFLICT']);
        const list = (await send(0, platform, 'GET', `/customers?platformCustomerId=reused-${round}`)).json() as { totalCount: number };
        expect(list.totalCount).toBe(creates.filter((a) => a.statusCode === 201).length);
      }
    });
    it('a bulk import racing single creates of the same platformCustomerIds: each id one live customer, the import reports the rest as CONFLICT', async () => {
      const platform = await ctx.newPlatform();
      const rows = Array.from({ length: RACERS }, (_, i) => `bulk-${i},INDIVIDUAL,Row ${i},1990-01-15,1 Main St,Austin,TX,78701,US`);
      const csv = ['platformCustomerId,customerType,fullName,birthDate,addressLine1,city,state,postalCode,country', ...rows].join('\r\n');
      const boundary = '----unique-races';
      const payload = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="customers.csv"\r\nContent-Type: text/csv\r\n\r\n${csv}\r\n--${boundary}--\r\n`);
      const accepted = await ctx.app.inject({
        method: 'POST',
        url: `${BASE}/customers/bulk/csv`,
        headers: { authorization: platform.auth, 'content-type': `multipart/form-data; boundary=${boundary}` },
        payload,
      });
      expect(accepted.statusCode, accepted.body).toBe(202);
      const [, ...singles] = await Promise.all([ctx.jobs.runDue(), ...Array.from({ length: RACERS }, (_, i) => send(i, platform, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `bulk-${i}` }))]);
      for (const single of singles) expect([201, 409], single.body).toContain(single.statusCode);
      const job = (await send(0, platform, 'GET', `/customers/bulk/jobs/${(accepted.json() as { jobId: string }).jobId}`)).json() as {
        status: string;
        progress: { successful: number; failed: number };
        errors: Array<{ code: string }>;
      };
      // Every row of the file failed when the single creates won all: the import is then FAILED.
      expect(job.status).toBe(job.progress.successful > 0 ? 'COMPLETED' : 'FAILED');
      expect(job.progress.failed).toBe(job.errors.length);
      expect(job.errors.every((e) => e.code === 'CONFLICT'), JSON.stringify(job.errors)).toBe(true);
      expect(job.progress.successful + singles.filter((a) => a.statusCode === 201).length).toBe(RACERS);
      expect(((await send(0, platform, 'GET', '/customers?limit=1')).json() as { totalCount: number }).totalCount).toBe(RACERS);
    });
  });

  describe('external accounts', () => {
    const wallet = (address: string, extra: Json = {}) => ({ currency: 'USDC', accountInfo: { accountType: 'BASE_WALLET', address }, ...extra });

    it("a customer's destination (external_accounts_identity_live): one 201, the rest 409 CONFLICT", async () => {
      const platform = await ctx.newPlatform();
      const customer = await newCustomer(platform);
      const { address } = evmWallet();
      const answers = await race((i) => send(i, platform, 'POST', '/customers/external-accounts', wallet(address, { customerId: customer.id })));
      expectOneWinner(answers, 201, 409, 'CONFLICT');
    });

    it("the platform's own destination (no customer to lock): one 201, the rest 409 CONFLICT", async () => {
      const platform = await ctx.newPlatform();
      const { address } = evmWallet();
      const answers = await race((i) => send(i, platform, 'POST', '/platform/external-accounts', wallet(address)));
      expectOneWinner(answers, 201, 409, 'CONFLICT');
    });

    it('defaultUmaDepositAccount (external_accounts_default_uma): every create 201, exactly one default at the end', async () => {
      const platform = await ctx.newPlatform();
      const customer = await newCustomer(platform);
      const answers = await race((i) => send(i, platform, 'POST', '/customers/external-accounts', wallet(evmWallet().address, { customerId: customer.id, defaultUmaDepositAccount: true })));
      expect(statuses(answers), answers.map((a) => a.body).join('\n')).toEqual(Array(RACERS).fill(201));
      const list = (await send(0, platform, 'GET', `/customers/external-accounts?customerId=${customer.id}&limit=100`)).json() as { data: Array<{ defaultUmaDepositAccount: boolean }> };
      expect(list.data.filter((a) => a.defaultUmaDepositAccount)).toHaveLength(1);
    });

    it('a DELETE racing creates of the same destination: at most one create wins, the rest 409', async () => {
      const platform = await ctx.newPlatform();
      for (let round = 0; round < 3; round++) {
        const { address } = evmWallet();
        const existing = await send(0, platform, 'POST', '/platform/external-accounts', wallet(address));
        expect(existing.statusCode, existing.body).toBe(201);
        const id = (existing.json() as { id: string }).id;
        const answers = await race((i) => (i === 0 ? send(i, platform, 'DELETE', `/platform/external-accounts/${id}`) : send(i, platform, 'POST', '/platform/external-accounts', wallet(address))));
        const bodies = answers.map((a) => `${a.statusCode} ${a.body}`).join('\n');
        expect(answers[0]!.statusCode, bodies).toBe(204);
        const creates = answers.slice(1);
        expect(creates.filter((a) => a.statusCode === 201).length, bodies).toBeLessThanOrEqual(1);
        for (const loser of creates.filter((a) => a.statusCode !== 201)) expect([loser.statusCode, (loser.json() as Json).code], bodies).toEqual([409, 'CONFLICT']);
      }
    });
  });

  describe('platform configuration and keys', () => {
    it('a production umaDomain (platform_configs_production_uma_domain) claimed by many platforms at once: one 200, the rest 409 CONFLICT', async () => {
      const platforms = await Promise.all(Array.from({ length: RACERS }, () => ctx.newPlatform('production')));
      const answers = await race((i) => send(i, platforms[i]!, 'PATCH', '/config', { umaDomain: 'raced.example' }));
      expectOneWinner(answers, 200, 409, 'CONFLICT');
    });

    it('currencies added by many configuration changes at once (internal_accounts_platform_unique): every change 200, one account per currency', async () => {
      const platform = await ctx.newPlatform();
      const currency = (code: string) => ({ currencyCode: code, minAmount: 1, maxAmount: 1000, requiredCounterpartyFields: [], enabledTransactionTypes: ['OUTGOING'] });
      const added = ['EUR', 'GBP', 'MXN', 'BRL'];
      const answers = await race((i) => send(i, platform, 'PATCH', '/config', { supportedCurrencies: [currency('USD'), currency(added[i % added.length]!)] }));
      expect(statuses(answers), answers.map((a) => a.body).join('\n')).toEqual(Array(RACERS).fill(200));
      await ctx.jobs.runDue();
      const accounts = (await send(0, platform, 'GET', '/platform/internal-accounts')).json() as { data: Array<{ type: string; balance: { currency: { code: string } } }> };
      const kinds = accounts.data.map((a) => `${a.type}/${a.balance.currency.code}`);
      expect(kinds.length).toBeGreaterThan(1);
      expect(new Set(kinds).size).toBe(kinds.length);
    });

    it('customer settings changed by many at once (customer_settings primary key, created by the first): every change 200', async () => {
      const platform = await ctx.newPlatform();
      const answers = await race((i) => send(i, platform, 'PATCH', '/customers/settings', { sandboxAutoApprove: i % 2 === 0 }));
      expect(statuses(answers), answers.map((a) => a.body).join('\n')).toEqual(Array(RACERS).fill(200));
    });

    it('the first signing key (webhook_signing_keys generation), asked for by many at once: one key, the same for all', async () => {
      const platform = await ctx.newPlatform();
      const answers = await race((i) => send(i, platform, 'GET', '/webhooks/signing-keys'));
      expect(statuses(answers), answers.map((a) => a.body).join('\n')).toEqual(Array(RACERS).fill(200));
      const ids = new Set(answers.map((a) => JSON.stringify((a.json() as { data: Array<{ id: string }> }).data.map((k) => k.id))));
      expect(ids.size).toBe(1);
    });

    it('signing key rotations at once: one 200, the rest 409 CONFLICT, one generation added', async () => {
      const platform = await ctx.newPlatform();
      expect((await send(0, platform, 'GET', '/webhooks/signing-keys')).statusCode).toBe(200);
      const answers = await race((i) => send(i, platform, 'POST', '/webhooks/signing-keys/rotate', { overlapSeconds: 3600 }));
      expectOneWinner(answers, 200, 409, 'CONFLICT');
      expect(((await send(0, platform, 'GET', '/webhooks/signing-keys')).json() as { data: unknown[] }).data).toHaveLength(2);
    });

    it('immediate rotations (overlapSeconds 0) at once: each 200 or 409 CONFLICT, never two keys of one generation', async () => {
      const platform = await ctx.newPlatform();
      expect((await send(0, platform, 'GET', '/webhooks/signing-keys')).statusCode).toBe(200);
      const answers = await race((i) => send(i, platform, 'POST', '/webhooks/signing-keys/rotate', { overlapSeconds: 0 }));
      const bodies = answers.map((a) => `${a.statusCode} ${a.body}`).join('\n');
      for (const answer of answers) expect([200, 409], bodies).toContain(answer.statusCode);
      expect(answers.some((a) => a.statusCode === 200), bodies).toBe(true);
    });
  });

  describe('invitations', () => {
    // Claims racing claims and cancels (the conditional UPDATE): test/pg/invitations.test.ts.
    it('invitations created at once (invitations_code, a random code drawn again on a collision): every one 201, codes distinct', async () => {
      const platform = await ctx.newPlatform();
      expect((await send(0, platform, 'PATCH', '/config', { umaDomain: 'invites.example.com' })).statusCode).toBe(200);
      await newCustomer(platform, { umaAddress: '$host@invites.example.com' });
      const answers = await race((i) => send(i, platform, 'POST', '/invitations', { inviterUma: '$host@invites.example.com' }));
      expect(statuses(answers), answers.map((a) => a.body).join('\n')).toEqual(Array(RACERS).fill(201));
      expect(new Set(answers.map((a) => (a.json() as { code: string }).code)).size).toBe(RACERS);
    });
  });

  describe('Idempotency-Key (idempotency_keys primary key)', () => {
    it('one key sent with one request many times at once: one customer; every answer is it, replayed, or 409 in progress', async () => {
      const platform = await ctx.newPlatform();
      const body = { customerType: 'INDIVIDUAL', platformCustomerId: 'keyed', fullName: 'Kay Keyed' };
      const answers = await race((i) => send(i, platform, 'POST', '/customers', body, { 'idempotency-key': 'one-key' }));
      const bodies = answers.map((a) => `${a.statusCode} ${a.body}`).join('\n');
      const created = answers.filter((a) => a.statusCode === 201);
      expect(created.length, bodies).toBeGreaterThanOrEqual(1);
      expect(new Set(created.map((a) => (a.json() as { id: string }).id)).size, bodies).toBe(1);
      expect(created.filter((a) => a.headers['idempotent-replayed'] !== 'true'), bodies).toHaveLength(1);
      for (const other of answers.filter((a) => a.statusCode !== 201)) expect([other.statusCode, (other.json() as Json).code], bodies).toEqual([409, 'CONFLICT']);
      expect(((await send(0, platform, 'GET', '/customers?platformCustomerId=keyed')).json() as { totalCount: number }).totalCount).toBe(1);
    });

    it('one key sent with different requests at once: one runs, the rest 409 CONFLICT', async () => {
      const platform = await ctx.newPlatform();
      const answers = await race((i) => send(i, platform, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `keyed-${i}` }, { 'idempotency-key': 'shared-key' }));
      expectOneWinner(answers, 201, 409, 'CONFLICT');
    });
  });

  describe('documents and their blobs', () => {
    const upload = (i: number, platform: TestPlatform, method: 'POST' | 'PUT', path: string, fields: Record<string, string>, data: Buffer) =>
      sendDocumentForm(apps[i % apps.length]!, platform, method, path, [...textParts({ documentType: 'PASSPORT', country: 'US', ...fields }), { name: 'file', filename: 'passport.jpg', contentType: 'image/jpeg', data }]);

    it('one file uploaded by many at once (blobs, blob_chunks primary keys): every upload 201, one blob with every chunk once', async () => {
      const platform = await ctx.newPlatform();
      const customers = await Promise.all(Array.from({ length: RACERS }, () => newCustomer(platform)));
      const photo = await cardPhotoJpeg();
      const answers = await race((i) => upload(i, platform, 'POST', '/documents', { documentHolder: customers[i]!.id }, photo));
      expect(statuses(answers), answers.map((a) => a.body).join('\n')).toEqual(Array(RACERS).fill(201));
      const sha256 = createHash('sha256').update(photo).digest('hex');
      const blob = await ctx.handle.db.selectFrom('blobs').select('chunk_count').where('sha256', '=', sha256).executeTakeFirstOrThrow();
      const chunks = await ctx.handle.db.selectFrom('blob_chunks').select('seq').where('sha256', '=', sha256).orderBy('seq').execute();
      expect(chunks.map((c) => c.seq)).toEqual(Array.from({ length: blob.chunk_count }, (_, seq) => seq));
    });

    it('replacements of one document at once (document_files_one_active): every one 200, one active file', async () => {
      const platform = await ctx.newPlatform();
      const customer = await newCustomer(platform);
      const created = await upload(0, platform, 'POST', '/documents', { documentHolder: customer.id }, await cardPhotoJpeg());
      expect(created.statusCode, created.body).toBe(201);
      const id = (created.json() as { id: string }).id;
      const replacement = await cardPhotoJpeg();
      const answers = await race((i) => upload(i, platform, 'PUT', `/documents/${id}`, {}, replacement));
      expect(statuses(answers), answers.map((a) => a.body).join('\n')).toEqual(Array(RACERS).fill(200));
      const files = await ctx.handle.db.selectFrom('document_files').select('active').where('document_id', '=', parseId('Document', id)!).execute();
      expect(files.filter((f) => f.active)).toHaveLength(1);
    });

    it('uploads of a file racing the deletion of the only document holding it (a blob released while taken again): every upload 201, the blob whole', async () => {
      const platform = await ctx.newPlatform();
      const customers = await Promise.all(Array.from({ length: RACERS }, () => newCustomer(platform)));
      // Bytes no other document holds, so the deletion releases their blob.
      const photo = await sharp(await cardPhotoJpeg()).jpeg({ quality: 85 }).toBuffer();
      const first = await upload(0, platform, 'POST', '/documents', { documentHolder: customers[0]!.id }, photo);
      expect(first.statusCode, first.body).toBe(201);
      const firstId = (first.json() as { id: string }).id;
      const answers = await race((i) => (i === 0 ? send(i, platform, 'DELETE', `/documents/${firstId}`) : upload(i, platform, 'POST', '/documents', { documentHolder: customers[i]!.id }, photo)));
      const bodies = answers.map((a) => `${a.statusCode} ${a.body}`).join('\n');
      expect(statuses(answers), bodies).toEqual([...Array(RACERS - 1).fill(201), 204].sort((a, b) => a - b));
      const sha256 = createHash('sha256').update(photo).digest('hex');
      const blob = await ctx.handle.db.selectFrom('blobs').select('chunk_count').where('sha256', '=', sha256).executeTakeFirstOrThrow();
      const chunks = await ctx.handle.db.selectFrom('blob_chunks').select('seq').where('sha256', '=', sha256).orderBy('seq').execute();
      expect(chunks.map((c) => c.seq)).toEqual(Array.from({ length: blob.chunk_count }, (_, seq) => seq));
    });
  });

  describe('wallet credentials', () => {
    it('one phone added as SMS_OTP by many wallets at once (the contact lock): one 201, the rest 409 CONFLICT', async () => {
      const platform = await ctx.newPlatform();
      const client = new WalletClient(ctx, platform);
      await client.enableWallets();
      const legs = [];
      for (let i = 0; i < RACERS; i++) {
        const wallet = await client.newWallet({ phoneNumber: '+14155550142' });
        const { key } = await client.login(wallet.credentialId);
        legs.push({ method: 'POST' as const, path: '/auth/credentials', body: { type: 'SMS_OTP', accountId: wallet.accountId }, key });
      }
      const [answers] = await client.raceSigned([legs]);
      expectOneWinner(answers!, 201, 409, 'CONFLICT');
    });

    it('one account adding SMS_OTP many times at once (auth_credentials_one_sms_otp): one 201, the rest 400 SMS_OTP_CREDENTIAL_ALREADY_EXISTS', async () => {
      const platform = await ctx.newPlatform();
      const client = new WalletClient(ctx, platform);
      await client.enableWallets();
      const wallet = await client.newWallet({ phoneNumber: '+14155550143' });
      const { key } = await client.login(wallet.credentialId);
      const leg = { method: 'POST' as const, path: '/auth/credentials', body: { type: 'SMS_OTP', accountId: wallet.accountId }, key };
      const [answers] = await client.raceSigned([Array(RACERS).fill(leg)]);
      expectOneWinner(answers!, 201, 400, 'SMS_OTP_CREDENTIAL_ALREADY_EXISTS');
    });
  });

  describe('verifications', () => {
    it('reviews of one customer started at once: one open verification, every answer the same one', async () => {
      const platform = await ctx.newPlatform('production');
      const customer = await newCustomer(platform, { birthDate: '1990-01-15', nationality: 'US', address: { line1: '1 Main St', postalCode: '62701', country: 'US' } });
      const passport = await sendDocumentForm(ctx.app, platform, 'POST', '/documents', [
        ...textParts({ documentType: 'PASSPORT', country: 'US', documentHolder: customer.id }),
        { name: 'file', filename: 'passport.jpg', contentType: 'image/jpeg', data: await cardPhotoJpeg() },
      ]);
      expect(passport.statusCode, passport.body).toBe(201);
      const answers = await race((i) => send(i, platform, 'POST', '/verifications', { customerId: customer.id }));
      const bodies = answers.map((a) => `${a.statusCode} ${a.body}`).join('\n');
      expect(answers.every((a) => a.statusCode < 300), bodies).toBe(true);
      expect(answers.map((a) => (a.json() as { verificationStatus: string }).verificationStatus), bodies).toEqual(Array(RACERS).fill('IN_PROGRESS'));
      expect(new Set(answers.map((a) => (a.json() as { id: string }).id)).size, bodies).toBe(1);
    });
  });

  describe('money', () => {
    /** A sender with USD 1,000.00 in its account, and a EUR bank account of the platform's to pay. */
    const payer = async (platform: TestPlatform) => {
      const customer = await newCustomer(platform, { endUserTermsConsent: { acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' } });
      const usd = ((await send(0, platform, 'GET', `/customers/internal-accounts?customerId=${customer.id}&currency=USD`)).json() as { data: Array<{ id: string }> }).data[0]!.id;
      expect((await send(0, platform, 'POST', `/sandbox/internal-accounts/${usd}/fund`, { amount: 100_000 })).statusCode).toBe(200);
      const eur = await send(0, platform, 'POST', '/platform/external-accounts', validSamples(ctx.clock.now()).EUR_ACCOUNT!);
      expect(eur.statusCode, eur.body).toBe(201);
      return {
        quote: (i: number) =>
          send(i, platform, 'POST', '/quotes', {
            source: { sourceType: 'ACCOUNT', accountId: usd },
            destination: { destinationType: 'ACCOUNT', accountId: (eur.json() as { id: string }).id },
            lockedCurrencySide: 'SENDING',
            lockedCurrencyAmount: 2_000,
          }),
      };
    };

    it('executions of one quote at once (transactions_quote): one 200, the rest 409 CONFLICT, one transaction', async () => {
      const platform = await ctx.newPlatform();
      const quote = await (await payer(platform)).quote(0);
      expect(quote.statusCode, quote.body).toBe(201);
      const quoteId = (quote.json() as { id: string }).id;
      const answers = await race((i) => send(i, platform, 'POST', `/quotes/${quoteId}/execute`));
      expectOneWinner(answers, 200, 409, 'CONFLICT');
      const transactions = await ctx.handle.db.selectFrom('transactions').select('id').where('platform_id', '=', platform.uuid).where('quote_id', '=', parseId('Quote', quoteId)!).execute();
      expect(transactions).toHaveLength(1);
    });

    it("one customer's quotes made and executed at once (exchange_rate_windows, daily_volumes primary keys): every quote 201, every execution 200", async () => {
      const platform = await ctx.newPlatform();
      const { quote } = await payer(platform);
      const quotes = await race(quote);
      expect(statuses(quotes), quotes.map((a) => a.body).join('\n')).toEqual(Array(RACERS).fill(201));
      const executions = await race((i) => send(i, platform, 'POST', `/quotes/${(quotes[i]!.json() as { id: string }).id}/execute`));
      expect(statuses(executions), executions.map((a) => a.body).join('\n')).toEqual(Array(RACERS).fill(200));
    });

    it('one sandbox depositId reported many times at once (funding_deposits primary key): one credit, every answer the same transaction', async () => {
      const platform = await ctx.newPlatform();
      const customer = await newCustomer(platform);
      const accounts = (await send(0, platform, 'GET', `/customers/internal-accounts?customerId=${customer.id}&currency=USD`)).json() as {
        data: Array<{ id: string; balance: { amount: number }; fundingPaymentInstructions: Array<{ accountOrWalletInfo: { reference: string } }> }>;
      };
      const reference = accounts.data[0]!.fundingPaymentInstructions[0]!.accountOrWalletInfo.reference;
      const answers = await race((i) => send(i, platform, 'POST', '/sandbox/deposits', { reference, amount: 500, depositId: 'one-deposit' }));
      const bodies = answers.map((a) => `${a.statusCode} ${a.body}`).join('\n');
      expect(statuses(answers), bodies).toEqual(Array(RACERS).fill(200));
      expect(new Set(answers.map((a) => (a.json() as { id: string }).id)).size, bodies).toBe(1);
      const after = (await send(0, platform, 'GET', `/customers/internal-accounts?customerId=${customer.id}&currency=USD`)).json() as typeof accounts;
      expect(after.data[0]!.balance.amount).toBe(500);
    });
  });
});
