import currencyCodes from 'currency-codes';
import getSymbolFromCurrency from 'currency-symbol-map';
import { AppError, type FieldError } from './errors.js';

/**
 * The one registry of currencies Corridor knows: every active ISO 4217 currency (data from the
 * `currency-codes` package, symbols from `currency-symbol-map`) plus the crypto assets the API
 * names. `decimals` is the exponent of the minor unit every amount is counted in (BTC in
 * satoshis, USDC and USDT in millionths).
 */
export interface Currency {
  code: string;
  name: string;
  symbol: string;
  decimals: number;
}

/** ISO 4217 codes that are not money a customer holds: precious metals, funds, test codes. */
const NOT_MONEY = new Set([
  'XAG', 'XAU', 'XPD', 'XPT', 'XBA', 'XBB', 'XBC', 'XBD', 'XDR', 'XSU', 'XUA', 'XTS', 'XXX',
  'BOV', 'CHE', 'CHW', 'CLF', 'COU', 'MXV', 'USN', 'UYI', 'UYW',
]);

const CRYPTO: Currency[] = [
  { code: 'BTC', name: 'Bitcoin', symbol: '₿', decimals: 8 },
  { code: 'USDC', name: 'USD Coin', symbol: 'USDC', decimals: 6 },
  { code: 'USDT', name: 'Tether USD', symbol: 'USDT', decimals: 6 },
];

function buildRegistry(): Map<string, Currency> {
  const registry = new Map<string, Currency>();
  for (const code of currencyCodes.codes()) {
    if (NOT_MONEY.has(code)) continue;
    const entry = currencyCodes.code(code);
    if (!entry) continue;
    registry.set(code, { code, name: entry.currency, symbol: getSymbolFromCurrency(code) ?? code, decimals: entry.digits });
  }
  for (const currency of CRYPTO) registry.set(currency.code, currency);
  return registry;
}

const REGISTRY = buildRegistry();

/** Every known code, sorted; for enums and docs. */
export const CURRENCY_CODES: readonly string[] = [...REGISTRY.keys()].sort();

/** Crypto assets among them: they move on networks, not bank rails. */
export const CRYPTO_CURRENCY_CODES: ReadonlySet<string> = new Set(CRYPTO.map((c) => c.code));

/** The shape a currency code must have before it is looked up (3–5 capital letters). */
export const CURRENCY_CODE_PATTERN = '^[A-Z]{3,5}$';

export function isCurrency(code: string): boolean {
  return REGISTRY.has(code);
}

/** The currency of a known code; callers validate first (`isCurrency`), so unknown is a bug. */
export function currency(code: string): Currency {
  const found = REGISTRY.get(code);
  if (!found) throw new Error(`unknown currency ${code}`);
  return found;
}

export function minorUnits(code: string): number {
  return currency(code).decimals;
}

/**
 * 400 INVALID_CURRENCY naming every field whose code Corridor does not know (their shape was
 * checked by the schema), or undefined when all are known.
 */
export function unknownCurrencies(fields: ReadonlyArray<{ field: string; code: string }>): AppError | undefined {
  const unknown = fields.filter((f) => !isCurrency(f.code));
  if (unknown.length === 0) return undefined;
  const errors: FieldError[] = unknown.map((f) => ({ field: f.field, message: `${f.code} is not a currency Corridor knows` }));
  return new AppError('INVALID_CURRENCY', `Unknown currency ${[...new Set(unknown.map((f) => f.code))].join(', ')}.`, { details: { errors } });
}
