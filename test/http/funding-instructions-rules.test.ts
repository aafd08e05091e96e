import { bech32 } from '@scure/base';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import bolt11 from 'bolt11';
import { describe, expect, it } from 'vitest';
import {
  fundedByLightning,
  fundingInstructions,
  fundingReferenceOfInvoice,
  invoiceExpiresAt,
  LIGHTNING_INVOICE_SECONDS,
  LIGHTNING_RENEW_BEFORE_SECONDS,
  lightningInvoiceOf,
  newFundingReference,
  renewedInstructions,
  type FundingInstruction,
} from '../../src/modules/internal-accounts/funding-instructions.js';
import { PaymentInstructions } from '../../src/modules/internal-accounts/schemas.js';

/**
 * The rules of funding instructions (modules/internal-accounts README) the HTTP tests reach only
 * a year at a time: when a stored Lightning invoice is renewed (under 30 days left, or one that
 * cannot be read), what a renewal changes (the invoice alone), how an invoice's expiry is read,
 * and which invoices name an account's reference.
 */
const MAINNET = { bech32: 'bc', pubKeyHash: 0x00, scriptHash: 0x05, validWitnessVersions: [0, 1] };
const DAY = 86_400_000;

/** A BTC account's instructions (Bitcoin, Spark, Lightning), drawn at `now`. */
const btc = (now: Date, reference = newFundingReference()) => ({
  reference,
  instructions: fundingInstructions({ type: 'INTERNAL_CRYPTO', currency: 'BTC', reference, isPlatformAccount: false, now }),
});

/** A signed invoice with exactly the given tags besides its payment hash (no expire_time unless given: no defaults added). */
const signed = (now: Date, tags: Array<{ tagName: string; data: unknown }>) =>
  bolt11.sign(
    bolt11.encode(
      {
        network: MAINNET,
        timestamp: Math.floor(now.getTime() / 1000),
        tags: [{ tagName: 'payment_hash', data: '11'.repeat(32) }, ...tags] as never,
      },
      false,
    ),
    '33'.repeat(32),
  ).paymentRequest!;

describe('renewedInstructions: a Lightning invoice is renewed with under 30 days left', () => {
  const drawn = new Date('2026-03-01T12:00:00.000Z');

  it('not while it has more than 30 days left; from the millisecond it has less, long before it expires', () => {
    const { reference, instructions } = btc(drawn);
    const expiresAt = invoiceExpiresAt(lightningInvoiceOf(instructions)!)!;
    expect(expiresAt).toBe(drawn.getTime() + LIGHTNING_INVOICE_SECONDS * 1000);
    const due = expiresAt - LIGHTNING_RENEW_BEFORE_SECONDS * 1000;
    expect(renewedInstructions(instructions, reference, drawn)).toBeUndefined();
    expect(renewedInstructions(instructions, reference, new Date(due - 1))).toBeUndefined();
    // 30 days less a millisecond left: the invoice still has a month to run, and is replaced.
    const at = new Date(due + 1);
    expect(expiresAt - at.getTime()).toBe(30 * DAY - 1);
    const renewed = renewedInstructions(instructions, reference, at);
    expect(renewed).toBeDefined();
    expect(invoiceExpiresAt(lightningInvoiceOf(renewed!)!)).toBe(Math.floor(at.getTime() / 1000) * 1000 + LIGHTNING_INVOICE_SECONDS * 1000);
  });

  it('replaces the Lightning invoice only: the addresses, notes and reference stay as they are', () => {
    const { reference, instructions } = btc(drawn);
    const renewed = renewedInstructions(instructions, reference, new Date(drawn.getTime() + 350 * DAY))!;
    expect(renewed.map((i) => i.accountOrWalletInfo.accountType)).toEqual(['BITCOIN_L1', 'SPARK_WALLET', 'LIGHTNING']);
    expect(renewed.slice(0, 2)).toEqual(instructions.slice(0, 2));
    expect(renewed[2]).toEqual({ ...instructions[2]!, accountOrWalletInfo: { accountType: 'LIGHTNING', invoice: expect.any(String) } });
    expect(lightningInvoiceOf(renewed)).not.toBe(lightningInvoiceOf(instructions));
    expect(fundingReferenceOfInvoice(lightningInvoiceOf(renewed)!)).toBe(reference);
  });

  it('renews a stored invoice it cannot read (no expiry to trust), whatever the time', () => {
    const { reference, instructions } = btc(drawn);
    // Not bech32; bech32 too short to hold a timestamp and a signature; nothing.
    const short = bech32.encode('lnbc', bech32.toWords(Uint8Array.from([1, 2, 3, 4])), false);
    for (const invoice of ['lnbc1notaninvoice', short, '']) {
      const stored: FundingInstruction[] = instructions.map((i) =>
        i.accountOrWalletInfo.accountType === 'LIGHTNING' ? { ...i, accountOrWalletInfo: { accountType: 'LIGHTNING', invoice } } : i,
      );
      expect(invoiceExpiresAt(invoice), invoice).toBeUndefined();
      const renewed = renewedInstructions(stored, reference, drawn);
      expect(renewed, invoice).toBeDefined();
      expect(invoiceExpiresAt(lightningInvoiceOf(renewed!)!)).toBe(drawn.getTime() + LIGHTNING_INVOICE_SECONDS * 1000);
    }
  });

  it('nothing is due for instructions without a Lightning invoice', () => {
    const reference = newFundingReference();
    const usdc = fundingInstructions({ type: 'INTERNAL_CRYPTO', currency: 'USDC', reference, isPlatformAccount: false, now: drawn });
    expect(renewedInstructions(usdc, reference, new Date(drawn.getTime() + 10 * 365 * DAY))).toBeUndefined();
  });
});

describe('invoiceExpiresAt reads the timestamp and expire_time as BOLT11 defines them', () => {
  const at = new Date('2026-05-05T05:05:05.000Z');

  it('an invoice without expire_time expires an hour after its timestamp', () => {
    const invoice = signed(at, [{ tagName: 'description', data: 'no expiry' }]);
    expect(bolt11.decode(invoice).tags.map((t) => t.tagName)).not.toContain('expire_time');
    expect(invoiceExpiresAt(invoice)).toBe(at.getTime() + 3600_000);
  });

  it('expire_time wherever it is among the tags, the last one included', () => {
    const last = signed(at, [{ tagName: 'description', data: 'expires last' }, { tagName: 'expire_time', data: 7200 }]);
    const first = signed(at, [{ tagName: 'expire_time', data: 7200 }, { tagName: 'description', data: 'expires first' }]);
    for (const invoice of [last, first]) {
      expect(bolt11.decode(invoice).timeExpireDate).toBe(at.getTime() / 1000 + 7200);
      expect(invoiceExpiresAt(invoice)).toBe(at.getTime() + 7200_000);
    }
  });
});

describe('fundingInstructions', () => {
  it('every currency’s instructions are what the API documents (PaymentInstructions: a UK account number of 8 digits, an 18-digit CLABE, …)', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    const valid = ajv.compile(JSON.parse(JSON.stringify(PaymentInstructions)) as object);
    const now = new Date('2026-06-01T00:00:00.000Z');
    for (const currency of ['USD', 'EUR', 'GBP', 'MXN', 'BRL', 'CHF', 'JPY', 'BTC', 'USDC', 'USDT']) {
      const type = ['BTC', 'USDC', 'USDT'].includes(currency) ? ('INTERNAL_CRYPTO' as const) : ('INTERNAL_FIAT' as const);
      // Drawn several times: the account numbers are random digits.
      for (let draw = 0; draw < 5; draw++) {
        for (const instruction of fundingInstructions({ type, currency, reference: newFundingReference(), isPlatformAccount: false, now })) {
          expect(valid(instruction), `${currency} ${JSON.stringify(instruction.accountOrWalletInfo)}: ${ajv.errorsText(valid.errors)}`).toBe(true);
        }
      }
    }
  });

  it("marks every instruction of a platform's own account as the platform's, bank account and crypto addresses alike", () => {
    const now = new Date('2026-06-01T00:00:00.000Z');
    for (const currency of ['USD', 'EUR', 'CHF', 'BTC', 'USDC', 'USDT']) {
      for (const isPlatformAccount of [true, false]) {
        const type = ['BTC', 'USDC', 'USDT'].includes(currency) ? ('INTERNAL_CRYPTO' as const) : ('INTERNAL_FIAT' as const);
        const instructions = fundingInstructions({ type, currency, reference: newFundingReference(), isPlatformAccount, now });
        expect(instructions.length, currency).toBeGreaterThan(0);
        for (const i of instructions) expect(i.isPlatformAccount, `${currency} ${i.accountOrWalletInfo.accountType}`).toBe(isPlatformAccount);
      }
    }
  });
});

describe('crypto deposit networks', () => {
  it('one address per network that carries the asset (the PaymentInstructions variants), each for that asset', () => {
    const now = new Date('2026-06-01T00:00:00.000Z');
    const networks = (currency: string) =>
      fundingInstructions({ type: 'INTERNAL_CRYPTO', currency, reference: newFundingReference(), isPlatformAccount: false, now }).map((i) => i.accountOrWalletInfo);
    expect(networks('USDC').map((i) => [i.accountType, i.assetType])).toEqual(['SOLANA_WALLET', 'ETHEREUM_WALLET', 'BASE_WALLET', 'POLYGON_WALLET'].map((t) => [t, 'USDC']));
    expect(networks('USDT').map((i) => [i.accountType, i.assetType])).toEqual(['ETHEREUM_WALLET', 'SOLANA_WALLET', 'TRON_WALLET', 'PLASMA_WALLET'].map((t) => [t, 'USDT']));
    expect(networks('BTC').map((i) => i.accountType)).toEqual(['BITCOIN_L1', 'SPARK_WALLET', 'LIGHTNING']);
  });
});

describe('which invoices and currencies fund an account by Lightning', () => {
  it('only BTC accounts are funded by Lightning', () => {
    expect(fundedByLightning('BTC')).toBe(true);
    for (const currency of ['USDC', 'USDT', 'USD', 'EUR']) expect(fundedByLightning(currency), currency).toBe(false);
  });

  it("an invoice names a reference only by the whole description Corridor writes", () => {
    const reference = newFundingReference();
    const now = new Date('2026-06-01T00:00:00.000Z');
    expect(fundingReferenceOfInvoice(signed(now, [{ tagName: 'description', data: `Deposit to Corridor account ${reference}` }]))).toBe(reference);
    for (const data of [`Deposit to Corridor account ${reference} and more`, `Refund: Deposit to Corridor account ${reference}`, `Deposit to Corridor account ${reference.slice(0, -1)}`]) {
      expect(fundingReferenceOfInvoice(signed(now, [{ tagName: 'description', data }])), data).toBeUndefined();
    }
  });
});
