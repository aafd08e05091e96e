import { describe, expect, it } from 'vitest';
import { formatId, idPattern, newId, parseId, uuidv7 } from '../../src/platform/ids.js';
import { currency, isCurrency, minorUnits } from '../../src/platform/currencies.js';
import { amountFromWire, amountToWire, AmountOutOfRangeError, applyBasisPoints, formatAmount } from '../../src/platform/money.js';
import { decodeCursor, encodeCursor, toPage } from '../../src/platform/pagination.js';
import { CUSTOM_FORMATS } from '../../src/platform/http/validation.js';
import { AppError } from '../../src/platform/errors.js';

describe('ids', () => {
  it('makes RFC 9562 version-7 UUIDs that sort by creation, even within one millisecond', () => {
    const ids = Array.from({ length: 5000 }, () => uuidv7(1_700_000_000_000));
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    const later = uuidv7(Date.now() + 60_000);
    expect(later > ids[ids.length - 1]!).toBe(true);
  });

  it('encodes the millisecond timestamp in the first 48 bits', () => {
    const ms = Date.UTC(2030, 0, 1);
    const id = uuidv7(ms);
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBeGreaterThanOrEqual(ms);
  });

  it('parses only ids of the expected type', () => {
    const id = newId('Token');
    expect(id).toMatch(new RegExp(idPattern('Token')));
    expect(formatId('Token', parseId('Token', id)!)).toBe(id);
    expect(parseId('Customer', id)).toBeUndefined();
    expect(parseId('Token', 'Token:1234')).toBeUndefined();
    expect(parseId('Token', `Token:${'g'.repeat(8)}-0000-7000-8000-000000000000`)).toBeUndefined();
  });
});

describe('money', () => {
  it('keeps amounts as integers and refuses unsafe ones', () => {
    expect(amountFromWire(12345)).toBe(12345n);
    expect(() => amountFromWire(1.5)).toThrow(AmountOutOfRangeError);
    expect(() => amountFromWire(2 ** 53)).toThrow(AmountOutOfRangeError);
    expect(amountToWire(9_007_199_254_740_991n)).toBe(Number.MAX_SAFE_INTEGER);
    expect(() => amountToWire(9_007_199_254_740_992n)).toThrow(AmountOutOfRangeError);
  });

  it('formats by the currency’s minor units', () => {
    expect(minorUnits('USD')).toBe(2);
    expect(minorUnits('JPY')).toBe(0);
    expect(minorUnits('KWD')).toBe(3);
    expect(minorUnits('BTC')).toBe(8);
    expect(minorUnits('USDC')).toBe(6);
    expect(currency('EUR')).toEqual({ code: 'EUR', name: 'Euro', symbol: '€', decimals: 2 });
    expect(isCurrency('XAU')).toBe(false);
    expect(isCurrency('ABC')).toBe(false);
    expect(formatAmount(12345n, 'USD')).toBe('123.45');
    expect(formatAmount(5n, 'USD')).toBe('0.05');
    expect(formatAmount(-5n, 'KWD')).toBe('-0.005');
    expect(formatAmount(500n, 'JPY')).toBe('500');
  });

  it('applies basis points in integer arithmetic, rounding half away from zero', () => {
    expect(applyBasisPoints(10_000n, 50n)).toBe(50n);
    expect(applyBasisPoints(101n, 50n)).toBe(1n); // 0.505 → 1
    expect(applyBasisPoints(99n, 50n)).toBe(0n); // 0.495 → 0
    expect(applyBasisPoints(-101n, 50n)).toBe(-1n);
    expect(applyBasisPoints(9_007_199_254_740_991n, 10_000n)).toBe(9_007_199_254_740_991n);
  });
});

describe('cursors', () => {
  it('round-trips and rejects anything it did not make', () => {
    const uuid = uuidv7();
    expect(decodeCursor(encodeCursor(uuid))).toBe(uuid);
    const wrapped = (k: unknown) => Buffer.from(JSON.stringify({ k })).toString('base64url');
    // A uuid with more around it, or one in an array (whose text is the uuid), is no cursor of a uuid list.
    for (const bad of ['', 'abc', Buffer.from('{"k":1}').toString('base64url'), Buffer.from('{"k":"x"}').toString('base64url'), wrapped(`${uuid}0`), wrapped(`x${uuid}`), wrapped([uuid])]) {
      expect(() => decodeCursor(bad)).toThrow(AppError);
    }
  });
});

describe('pages', () => {
  it('say hasMore, with the cursor of their last row, only when a row beyond the limit was fetched', () => {
    const rows = Array.from({ length: 4 }, () => ({ id: uuidv7() }));
    expect(toPage(rows.slice(0, 3), { limit: 3 }, (r) => r.id)).toEqual({ data: rows.slice(0, 3).map((r) => r.id), hasMore: false });
    expect(toPage(rows, { limit: 3 }, (r) => r.id)).toEqual({ data: rows.slice(0, 3).map((r) => r.id), hasMore: true, nextCursor: encodeCursor(rows[2]!.id) });
  });
});

describe('spec §2.3 formats', () => {
  it.each([
    ['iso3166-1-alpha-2', ['US', 'DE', 'BR'], ['XX', 'us', 'USA', 'UK']],
    ['e.164', ['+14155550100', '+442071838750'], ['14155550100', '+0123', '+1 415 555', '+1234567890123456']],
    ['us-ssn', ['123-45-6789'], ['000-12-3456', '666-12-3456', '900-12-3456', '123-00-4567', '123-45-0000', '123456789']],
    ['us-itin', ['912-70-1234', '999-94-1234'], ['912-93-1234', '812-70-1234', '912701234']],
  ])('%s', (format, good, bad) => {
    const check = CUSTOM_FORMATS[format]!;
    for (const v of good) expect(check(v), v).toBe(true);
    for (const v of bad) expect(check(v), v).toBe(false);
  });
});
