import abaValidator from 'abavalidator';
import { validate as validateBitcoinAddress, Network } from 'bitcoin-address-validation';
import bolt11 from 'bolt11';
import { clabe } from 'clabe-validator';
import { isValidBIC, isValidIBAN } from 'ibantools';
import { hasError, parsePix } from 'pix-utils';
import { isAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_POSTING_AMOUNT } from '../../src/modules/ledger/index.js';
import { withTx } from '../../src/platform/db/tx.js';
import { checkSolanaAddress, checkSparkAddress, checkTronAddress } from '../../src/modules/external-accounts/formats.js';
import { BASE, createTestContext, expectEnvelope, type TestContext, type TestPlatform } from '../helpers/context.js';
import { expectLedgerConsistent } from '../helpers/ledger.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

type Body = Record<string, unknown>;
type Info = Record<string, string | string[]> & { accountType: string };
type Account = { id: string; type: string; balance: { amount: number; currency: { code: string } }; totalBalance: { amount: number }; updatedAt: string; fundingPaymentInstructions: Array<{ instructionsNotes: string; isPlatformAccount: boolean; accountOrWalletInfo: Info }> };

const call = (p: TestPlatform, method: 'GET' | 'POST' | 'PATCH', path: string, payload?: unknown, headers: Record<string, string> = {}) =>
  ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: p.auth, ...headers }, ...(payload === undefined ? {} : { payload: payload as object }) });

let seq = 0;
async function customerAccounts(p: TestPlatform): Promise<Account[]> {
  const created = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', platformCustomerId: `fund-${++seq}`, fullName: 'Ann Lee' });
  expect(created.statusCode, created.body).toBe(201);
  return ((await call(p, 'GET', `/customers/internal-accounts?customerId=${(created.json() as Body).id as string}`)).json() as { data: Account[] }).data;
}
const fund = (p: TestPlatform, accountId: string, amount: unknown, headers: Record<string, string> = {}) =>
  call(p, 'POST', `/sandbox/internal-accounts/${accountId}/fund`, { amount }, headers);

const currencyConfig = (code: string) => ({ currencyCode: code, minAmount: 1, maxAmount: 1_000_000, requiredCounterpartyFields: [], enabledTransactionTypes: ['INCOMING', 'OUTGOING'] });

describe('POST /sandbox/internal-accounts/{id}/fund', () => {
  it('credits the account from the sandbox world, answers the new balances and records BALANCE_UPDATED', async () => {
    const p = await ctx.newPlatform();
    const [account] = await customerAccounts(p);
    ctx.clock.advance(60_000);
    const funded = await fund(p, account!.id, 12_345);
    expect(funded.statusCode, funded.body).toBe(200);
    const body = funded.json() as Account;
    expect(body).toMatchObject({ id: account!.id, balance: { amount: 12_345, currency: { code: 'USD', decimals: 2 } }, totalBalance: { amount: 12_345 } });
    expect(body.updatedAt).toBe(ctx.clock.now().toISOString());
    const again = (await fund(p, account!.id, 655)).json() as Account;
    expect(again.balance.amount).toBe(13_000);
    const listed = ((await call(p, 'GET', '/customers/internal-accounts')).json() as { data: Account[] }).data[0]!;
    expect(listed).toEqual(again);

    const events = await ctx.handle.db.selectFrom('events').select(['type', 'resource_id', 'data']).where('platform_id', '=', p.uuid).where('type', '=', 'INTERNAL_ACCOUNT.BALANCE_UPDATED').orderBy('id').execute();
    expect(events.map((e) => e.data)).toEqual([body, again]);
    expect(events.every((e) => e.resource_id === account!.id)).toBe(true);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('refuses a deposit that would take a balance past what JSON carries exactly (AMOUNT_OUT_OF_RANGE)', async () => {
    const p = await ctx.newPlatform();
    const [account] = await customerAccounts(p);
    const uuid = account!.id.slice('InternalAccount:'.length);
    await withTx(ctx.handle.db, (trx) =>
      ctx.ledger.transfer(trx, {
        platformId: p.uuid,
        reference: 'to-the-brim',
        postings: [{ from: { kind: 'SANDBOX_FUNDING', currency: 'USD' }, to: { kind: 'INTERNAL_ACCOUNT', id: uuid }, amount: MAX_POSTING_AMOUNT, currency: 'USD' }],
      }),
    );
    expectEnvelope(await fund(p, account!.id, 1), 400, 'AMOUNT_OUT_OF_RANGE');
    const listed = ((await call(p, 'GET', '/customers/internal-accounts')).json() as { data: Account[] }).data[0]!;
    expect(listed.balance.amount).toBe(Number.MAX_SAFE_INTEGER);
    await expectLedgerConsistent(ctx.handle.db);
  });

  it('funds the platform’s own accounts too', async () => {
    const p = await ctx.newPlatform();
    const [own] = ((await call(p, 'GET', '/platform/internal-accounts')).json() as { data: Account[] }).data;
    const funded = await fund(p, own!.id, 1);
    expect(funded.statusCode).toBe(200);
    expect((funded.json() as Account).balance.amount).toBe(1);
  });

  it('honours Idempotency-Key: a replay returns the same account and moves nothing', async () => {
    const p = await ctx.newPlatform();
    const [account] = await customerAccounts(p);
    const first = await fund(p, account!.id, 500, { 'idempotency-key': 'fund-once' });
    const replay = await fund(p, account!.id, 500, { 'idempotency-key': 'fund-once' });
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(first.json());
    expectEnvelope(await fund(p, account!.id, 501, { 'idempotency-key': 'fund-once' }), 409, 'CONFLICT');
    const listed = ((await call(p, 'GET', '/customers/internal-accounts')).json() as { data: Account[] }).data[0]!;
    expect(listed.balance.amount).toBe(500);
  });

  it('validates the amount: an integer above 0 and at most 1e11', async () => {
    const p = await ctx.newPlatform();
    const [account] = await customerAccounts(p);
    for (const amount of [0, -1, 1.5, 100_000_000_001, '100', null]) {
      const body = expectEnvelope(await fund(p, account!.id, amount), 400, 'INVALID_INPUT');
      expect((body.details!.errors as Array<{ field: string }>).map((e) => e.field)).toEqual(['amount']);
    }
    expectEnvelope(await call(p, 'POST', `/sandbox/internal-accounts/${account!.id}/fund`, { amount: 1, extra: true }), 400, 'INVALID_INPUT');
    expectEnvelope(await call(p, 'POST', `/sandbox/internal-accounts/${account!.id}/fund`), 400, 'INVALID_INPUT');
    expect((await fund(p, account!.id, 100_000_000_000)).statusCode).toBe(200);
    const listed = ((await call(p, 'GET', '/customers/internal-accounts')).json() as { data: Account[] }).data[0]!;
    expect(listed.balance.amount).toBe(100_000_000_000);
  });

  it('refuses production platforms (403), other platforms’ and unknown accounts (404), ids of another type (404), tokens without TRANSACT (403)', async () => {
    const p = await ctx.newPlatform();
    const [account] = await customerAccounts(p);
    const production = await ctx.newPlatform('production');
    const [prodOwn] = ((await call(production, 'GET', '/platform/internal-accounts')).json() as { data: Account[] }).data;
    expectEnvelope(await fund(production, prodOwn!.id, 100), 403, 'FORBIDDEN');
    const other = await ctx.newPlatform();
    expectEnvelope(await fund(other, account!.id, 100), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await fund(p, 'InternalAccount:01900000-0000-7000-8000-000000000000', 100), 404, 'REFERENCE_NOT_FOUND');
    expectEnvelope(await fund(p, 'Customer:01900000-0000-7000-8000-000000000000', 100), 404, 'REFERENCE_NOT_FOUND');
    const viewer = await ctx.newToken(p, ['VIEW']);
    expectEnvelope(await fund(viewer, account!.id, 100), 403, 'FORBIDDEN');
    const unauthenticated = await ctx.app.inject({ method: 'POST', url: `${BASE}/sandbox/internal-accounts/${account!.id}/fund`, payload: { amount: 1 } });
    expect(unauthenticated.statusCode).toBe(401);
    const listed = ((await call(p, 'GET', '/customers/internal-accounts')).json() as { data: Account[] }).data[0]!;
    expect(listed.balance.amount).toBe(0);
    await expectLedgerConsistent(ctx.handle.db);
  });
});

describe('currencies', () => {
  it('accept every code of the registry (crypto included) and answer an unknown one with INVALID_CURRENCY', async () => {
    const p = await ctx.newPlatform();
    const bad = expectEnvelope(await call(p, 'PATCH', '/config', { supportedCurrencies: [currencyConfig('USD'), currencyConfig('XYZ'), currencyConfig('QQQQ')] }), 400, 'INVALID_CURRENCY');
    expect(bad.details!.errors).toEqual([
      { field: 'supportedCurrencies.1.currencyCode', constraint: { format: 'currency-code' }, message: 'XYZ is not a currency Corridor knows' },
      { field: 'supportedCurrencies.2.currencyCode', constraint: { format: 'currency-code' }, message: 'QQQQ is not a currency Corridor knows' },
    ]);
    expectEnvelope(await call(p, 'PATCH', '/config', { supportedCurrencies: [currencyConfig('usd')] }), 400, 'INVALID_INPUT');
    expectEnvelope(await call(p, 'GET', '/customers/internal-accounts?currency=XYZ'), 400, 'INVALID_CURRENCY');
    expectEnvelope(await call(p, 'GET', '/platform/internal-accounts?currency=XYZ'), 400, 'INVALID_CURRENCY');
    const ok = await call(p, 'PATCH', '/config', { supportedCurrencies: [currencyConfig('USDC'), currencyConfig('BTC')] });
    expect(ok.statusCode, ok.body).toBe(200);
    const own = ((await call(p, 'GET', '/platform/internal-accounts?currency=BTC')).json() as { data: Account[] }).data;
    expect(own.map((a) => a.balance.currency)).toEqual([{ code: 'BTC', name: 'Bitcoin', symbol: '₿', decimals: 8 }]);

    const customer = await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Cy Coin', currencies: ['USDC', 'BTC', 'EUR'] });
    expect(customer.statusCode, customer.body).toBe(201);
    const refused = expectEnvelope(await call(p, 'POST', '/customers', { customerType: 'INDIVIDUAL', fullName: 'Cy Coin', currencies: ['USD', 'XYZ'] }), 400, 'INVALID_CURRENCY');
    expect(refused.details!.errors).toEqual([{ field: 'currencies.1', constraint: { format: 'currency-code' }, message: 'XYZ is not a currency Corridor knows' }]);
    const id = (customer.json() as Body).id as string;
    expectEnvelope(await call(p, 'PATCH', `/customers/${id}`, { customerType: 'INDIVIDUAL', currencies: ['ABC'] }), 400, 'INVALID_CURRENCY');
    expectEnvelope(await call(p, 'GET', '/customers?currency=XYZ'), 400, 'INVALID_CURRENCY');
    expect(((await call(p, 'GET', '/customers?currency=USDC')).json() as { data: Body[] }).data.map((c) => c.id)).toEqual([id]);
  });
});

describe('funding instructions', () => {
  it('give every currency a bank account or deposit addresses valid for its rail or network, with a unique reference', async () => {
    const p = await ctx.newPlatform();
    const codes = ['USD', 'EUR', 'GBP', 'MXN', 'BRL', 'JPY', 'USDC', 'USDT', 'BTC'];
    const configured = await call(p, 'PATCH', '/config', { supportedCurrencies: codes.map(currencyConfig) });
    expect(configured.statusCode, configured.body).toBe(200);
    const accounts = [...(await customerAccounts(p)), ...(await customerAccounts(p))];
    expect(accounts).toHaveLength(2 * codes.length);
    const seen = new Set<string>();
    const unique = (value: string) => {
      expect(seen.has(value), `${value} repeats`).toBe(false);
      seen.add(value);
    };
    for (const account of accounts) {
      const currency = account.balance.currency.code;
      const infos = account.fundingPaymentInstructions.map((i) => i.accountOrWalletInfo);
      expect(account.fundingPaymentInstructions.every((i) => i.isPlatformAccount === false && i.instructionsNotes.length > 0)).toBe(true);
      const types = infos.map((i) => i.accountType);
      const expected: Record<string, string[]> = {
        USD: ['USD_ACCOUNT'], EUR: ['EUR_ACCOUNT'], GBP: ['GBP_ACCOUNT'], MXN: ['MXN_ACCOUNT'], BRL: ['BRL_ACCOUNT'], JPY: ['SWIFT_ACCOUNT'],
        USDC: ['SOLANA_WALLET', 'ETHEREUM_WALLET', 'BASE_WALLET', 'POLYGON_WALLET'],
        USDT: ['ETHEREUM_WALLET', 'SOLANA_WALLET', 'TRON_WALLET', 'PLASMA_WALLET'],
        BTC: ['BITCOIN_L1', 'SPARK_WALLET', 'LIGHTNING'],
      };
      expect(types).toEqual(expected[currency]);
      for (const info of infos) {
        if (typeof info.reference === 'string') {
          expect(info.reference).toMatch(/^CDR[0-9A-Z]{13}$/);
          unique(info.reference);
        }
        switch (info.accountType) {
          case 'USD_ACCOUNT':
            expect(abaValidator.validate(info.routingNumber as string)).toBe(true);
            expect(info.accountNumber).toMatch(/^\d{12}$/);
            break;
          case 'EUR_ACCOUNT':
            expect(isValidIBAN(info.iban as string)).toBe(true);
            expect(isValidBIC(info.swiftCode as string)).toBe(true);
            unique(info.iban as string);
            break;
          case 'GBP_ACCOUNT':
            expect(info.sortCode).toMatch(/^\d{6}$/);
            expect(info.accountNumber).toMatch(/^\d{8}$/);
            break;
          case 'MXN_ACCOUNT':
            expect(clabe.validate(info.clabeNumber as string)).toMatchObject({ ok: true, tag: 'STP' });
            unique(info.clabeNumber as string);
            break;
          case 'BRL_ACCOUNT': {
            const pix = parsePix(info.qrCode as string);
            expect(hasError(pix), JSON.stringify(pix)).toBe(false);
            expect(pix).toMatchObject({ type: 'STATIC', pixKey: info.pixKey, txid: info.reference });
            unique(info.pixKey as string);
            break;
          }
          case 'SWIFT_ACCOUNT':
            expect(isValidIBAN(info.iban as string)).toBe(true);
            expect(isValidBIC(info.swiftCode as string)).toBe(true);
            expect(info.accountHolderName).toBeTruthy();
            break;
          case 'ETHEREUM_WALLET':
          case 'BASE_WALLET':
          case 'POLYGON_WALLET':
          case 'PLASMA_WALLET':
            expect(isAddress(info.address as string, { strict: true })).toBe(true);
            expect(info.address).not.toBe((info.address as string).toLowerCase());
            expect(info.assetType).toBe(currency);
            unique(info.address as string);
            break;
          case 'SOLANA_WALLET':
            expect(checkSolanaAddress(info.address as string)).toBeUndefined();
            unique(info.address as string);
            break;
          case 'TRON_WALLET':
            expect(checkTronAddress(info.address as string)).toBeUndefined();
            expect(info.address).toMatch(/^T/);
            break;
          case 'BITCOIN_L1':
            expect(validateBitcoinAddress(info.address as string, Network.mainnet)).toBe(true);
            expect(info.address).toMatch(/^bc1q/);
            break;
          case 'SPARK_WALLET':
            expect(checkSparkAddress(info.address as string, 'mainnet')).toBeUndefined();
            break;
          case 'LIGHTNING': {
            const invoice = bolt11.decode(info.invoice as string);
            expect(invoice.complete).toBe(true);
            expect(invoice.satoshis ?? null).toBeNull();
            expect(invoice.timeExpireDate! * 1000).toBeGreaterThan(ctx.clock.now().getTime() + 300 * 24 * 3600 * 1000);
            break;
          }
          default:
            throw new Error(`unexpected ${info.accountType}`);
        }
      }
    }
  });
});
