import type { HttpProviderConfig } from '../../config.js';
import { parseDateTime } from '../../platform/datetime.js';
import { AppError } from '../../platform/errors.js';
import { postToProvider, readProviderAnswer } from '../../platform/provider-http.js';
import { BUILT_IN_RATES_AS_OF, BUILT_IN_RATES_PER_USD } from './table.js';

/** Mid-market rates: units of each currency per one US dollar, as decimal strings. */
export interface RateTable {
  asOf: Date;
  perUsd: Record<string, string>;
}

/** Where mid-market rates come from. `name` keys the shared cache, so two providers never mix. */
export interface RateProvider {
  readonly name: string;
  fetch(currencies: readonly string[]): Promise<RateTable>;
}

/** The documented, dated table of table.ts. */
export const builtInRates: RateProvider = {
  name: 'built-in',
  fetch: async () => ({ asOf: new Date(BUILT_IN_RATES_AS_OF), perUsd: { ...BUILT_IN_RATES_PER_USD } }),
};

const DECIMAL = /^\d{1,15}(\.\d{1,18})?$/;
const MAX_RESPONSE_BYTES = 256 * 1024;

const unavailable = (reason: string) =>
  new AppError('SERVICE_UNAVAILABLE', `Exchange rates are unavailable right now (${reason}); try again shortly.`, { retryable: true });

/**
 * A rate service over HTTP (README, "HTTP rate provider"): `POST <url>` with
 * `{"base": "USD", "currencies": [...]}`, Bearer token, a deadline; answers
 * `{"asOf": "<date-time>", "rates": {"EUR": "0.866", ...}}` (units per USD, decimal strings).
 * Anything else — unreachable, slow, non-2xx, malformed, over 256 KiB — is 503.
 */
export class HttpRateProvider implements RateProvider {
  readonly name = 'http';

  constructor(private readonly config: HttpProviderConfig & { url: string }) {}

  async fetch(currencies: readonly string[]): Promise<RateTable> {
    const response = await postToProvider(this.config, JSON.stringify({ base: 'USD', currencies }), unavailable);
    const text = await readProviderAnswer(response, MAX_RESPONSE_BYTES, unavailable);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw unavailable('the provider answered something that is not JSON');
    }
    const { asOf, rates } = (body ?? {}) as { asOf?: unknown; rates?: unknown };
    // RFC 3339 within years 0001–9999, as every stored time: anything else is not the contract's asOf.
    const at = typeof asOf === 'string' ? parseDateTime(asOf) : undefined;
    if (!at || typeof rates !== 'object' || rates === null || Array.isArray(rates)) {
      throw unavailable('the provider answered without an RFC 3339 asOf and rates');
    }
    const perUsd: Record<string, string> = { USD: '1' };
    for (const [code, value] of Object.entries(rates)) {
      if (!/^[A-Z]{3,5}$/.test(code) || typeof value !== 'string' || !DECIMAL.test(value) || /^0+(\.0+)?$/.test(value)) {
        throw unavailable(`the provider's rate for ${code.slice(0, 8)} is not a positive decimal string`);
      }
      // The base is USD: any other USD rate would skew every cross rate.
      if (code === 'USD' && !/^0*1(\.0+)?$/.test(value)) throw unavailable(`the provider rated USD, its base, at ${value}`);
      perUsd[code] = value;
    }
    return { asOf: at, perUsd };
  }
}

