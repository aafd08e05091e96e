import currencyCodes from 'currency-codes';
import getSymbolFromCurrency from 'currency-symbol-map';

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

/**
 * The validation format of a currency code field (`constraint.format` when it fails): a code
 * this registry knows. Not `iso4217`, since USDC, USDT and BTC are not ISO 4217 codes.
 */
export const CURRENCY_CODE_FORMAT = 'currency-code';

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
