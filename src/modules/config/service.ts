import { refusedLiteral } from '../../platform/address-guard.js';
import { violatedUniqueIndex } from '../../platform/db/unique-violation.js';
import { NotifiedCache, notifyChanged } from '../../platform/cache.js';
import type { Clock } from '../../platform/clock.js';
import type { DbHandle, DbOrTx, Tx } from '../../platform/db/database.js';
import { AppError, invalidInput, type FieldError } from '../../platform/errors.js';
import { formatId, uuidv7 } from '../../platform/ids.js';
import { enqueueJob } from '../../platform/jobs/index.js';
import { knownOidcIssuer } from '../../platform/oidc-issuers.js';
import { recordEvent } from '../../platform/outbox.js';
import { isUmaAddress } from '../../platform/uma-address.js';
import { findConfig, insertConfig, PRODUCTION_UMA_DOMAIN_INDEX, productionUmaDomainHeld, updateConfig, type ConfigRow } from './repo.js';
import type { FeeConfig, PlatformConfig, PlatformConfigUpdate, PlatformCurrencyConfig } from './schemas.js';

export const DEFAULT_CURRENCY: PlatformCurrencyConfig = {
  currencyCode: 'USD',
  minAmount: 1,
  maxAmount: 100_000_000,
  requiredCounterpartyFields: [],
  enabledTransactionTypes: ['INCOMING', 'OUTGOING'],
};

/** Fee configs are only defined for USD sources today, as upstream. */
const FEE_SOURCE_CURRENCIES = new Set(['USD']);
const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * A new platform's configuration. `regulated` (isRegulatedFinancialInstitution) is the operator's
 * to say, at creation only (as upstream: set by the service's operator, never by the platform):
 * only such a production platform may run its own KYC/KYB (customers' `platformKyc`).
 */
export async function createDefaultConfig(trx: Tx, clock: Clock, platformId: string, environment: Environment, regulated = false): Promise<void> {
  const now = clock.now();
  await insertConfig(trx, {
    id: uuidv7(now.getTime()),
    platform_id: platformId,
    environment,
    uma_domain: null,
    uma_domain_claimed_at: null,
    proxy_uma_subdomain: null,
    webhook_endpoint: null,
    is_regulated_financial_institution: regulated,
    supported_currencies: [DEFAULT_CURRENCY],
    embedded_wallet_config: null,
    card_tokenization_2fa_config: null,
    fee_configs: [],
    created_at: now,
    updated_at: now,
  });
}

export function toPlatformConfig(row: ConfigRow): PlatformConfig {
  return {
    id: formatId('PlatformConfig', row.id),
    ...(row.uma_domain ? { umaDomain: row.uma_domain } : {}),
    ...(row.proxy_uma_subdomain ? { proxyUmaSubdomain: row.proxy_uma_subdomain } : {}),
    ...(row.webhook_endpoint ? { webhookEndpoint: row.webhook_endpoint } : {}),
    supportedCurrencies: row.supported_currencies.map((c) => ({
      ...c,
      providerRequiredCustomerFields: [],
      providerRequiredCounterpartyCustomerFields: [],
    })),
    isRegulatedFinancialInstitution: row.is_regulated_financial_institution,
    ...(row.embedded_wallet_config ? { embeddedWalletConfig: row.embedded_wallet_config } : {}),
    ...(row.card_tokenization_2fa_config ? { cardTokenization2faConfig: row.card_tokenization_2fa_config } : {}),
    feeConfigs: row.fee_configs,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/**
 * The platform's configuration row. `lock: 'share'` holds it against PATCH /config until the
 * caller's transaction ends: what is opened from it cannot miss a change made meanwhile.
 */
export async function getConfigRow(db: DbOrTx, platformId: string, options: { lock?: 'share' } = {}): Promise<ConfigRow> {
  const row = await findConfig(db, platformId, options.lock ? { forShare: true } : {});
  if (!row) throw new AppError('INTERNAL_ERROR', 'The platform has no configuration.');
  return row;
}

export async function getPlatformConfig(db: DbOrTx, platformId: string): Promise<PlatformConfig> {
  return toPlatformConfig(await getConfigRow(db, platformId));
}

const CONFIG_CHANGED_CHANNEL = 'corridor_platform_config_changed';

/**
 * Configuration is read on every request that needs it and changes rarely, so each process
 * keeps the serialised form; every change notifies all processes on commit (NotifiedCache).
 */
export class PlatformConfigCache {
  private readonly cache: NotifiedCache<PlatformConfig>;

  constructor(
    private readonly handle: DbHandle,
    ttlMs: number,
  ) {
    this.cache = new NotifiedCache(handle, CONFIG_CHANGED_CHANNEL, ttlMs);
  }

  start(): Promise<void> {
    return this.cache.start();
  }

  async get(platformId: string): Promise<PlatformConfig> {
    return (await this.cache.getOrLoad(platformId, () => getPlatformConfig(this.handle.db, platformId)))!;
  }

  evict(platformId: string): void {
    this.cache.evict(platformId);
  }
}

/**
 * A known issuer (Google, Apple) needs the platform's client ids, since its tokens are issued to
 * every app, and takes no `jwksUri`: its keys always come from its own published JWKS, so a
 * platform cannot swap in keys of its own and sign logins for its end users' Google or Apple
 * identities. Any other issuer (the platform's own) needs its JWKS location: https for a
 * production platform (fetched through the address guard), http also for localhost in sandbox
 * (which checks no signature).
 */
function checkOidcIssuer(
  entry: { issuer: string; jwksUri?: string | undefined; audiences?: string[] | undefined },
  field: string,
  environment: Environment,
  errors: FieldError[],
): void {
  const known = knownOidcIssuer(entry.issuer);
  if (known) {
    if (entry.jwksUri !== undefined) {
      errors.push({
        field: `${field}.jwksUri`,
        message: `must not be set for ${known.issuer}: Corridor checks its tokens against the issuer's own published keys; name only your client ids (audiences)`,
      });
    }
    if (!entry.audiences) errors.push({ field: `${field}.audiences`, message: `is required for ${entry.issuer}: list your client ids there` });
  } else if (entry.jwksUri === undefined) {
    errors.push({ field: `${field}.jwksUri`, message: 'is required for an issuer Corridor does not know (only Google and Apple are built in)' });
  } else if (environment === 'production') {
    checkCalledUrl(entry.jwksUri, `${field}.jwksUri`, false, "a production platform's JWKS is fetched only from public addresses", errors);
  } else {
    checkServiceUrl(entry.jwksUri, `${field}.jwksUri`, errors);
  }
}

/**
 * `value` as a URL Corridor can connect to, or undefined. The URL parser also accepts what names
 * no host anyone can reach, and a webhook or JWKS URL set so would fail every call, silently:
 * an empty authority it fills from the path (`https:///h` → host `h`), empty labels
 * (`https://a..b/`, `https://.../`) and port 0.
 */
function reachableUrl(value: string): URL | undefined {
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/\\?#]/i.test(value)) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.port === '0') return undefined;
  const host = url.hostname;
  if (!host.startsWith('[') && host.replace(/\.$/, '').split('.').some((label) => label === '')) return undefined;
  return url;
}

/**
 * A URL Corridor calls: https (also http where `allowHttp`), without credentials or fragment.
 * Where the calls pass the address guard (`guardedBecause` says why, in the refusal), a host that
 * is itself a refused address is refused here; a host name is judged at every call, when it is
 * resolved (DNS answers change).
 */
function checkCalledUrl(value: string, field: string, allowHttp: boolean, guardedBecause: string | undefined, errors: FieldError[]): void {
  const url = reachableUrl(value);
  const schemes = allowHttp ? ['https:', 'http:'] : ['https:'];
  if (!url || !schemes.includes(url.protocol) || url.username || url.password || url.hash) {
    errors.push({
      field,
      constraint: { format: 'url', pattern: allowHttp ? '^https?://' : '^https://' },
      message: allowHttp ? 'must be an http or https URL without credentials or fragment' : 'must be an https URL without credentials or fragment',
    });
    return;
  }
  const refused = guardedBecause === undefined ? undefined : literalRefusedRange(url);
  if (refused) errors.push({ field, message: `must not be a ${refused.range} address (${refused.host}): ${guardedBecause}` });
}

/**
 * The refused range (platform/address-guard.ts) of a URL whose host is itself an address — an IP
 * literal in any spelling the URL parser accepts (it lower-cases http(s) hosts), or localhost —
 * which no DNS answer can change: every connection to it would be refused, so it is refused when
 * it is set. Host names are judged when they are resolved, at each connection.
 */
function literalRefusedRange(url: URL): { host: string; range: string } | undefined {
  const hostname = url.hostname.replace(/\.$/, '');
  if (hostname === 'localhost' || hostname.endsWith('.localhost')) return { host: hostname, range: 'loopback' };
  const refused = refusedLiteral(hostname);
  return refused && { host: refused.address, range: refused.range };
}

/** An https URL without credentials (http only for local hosts); `origin`: nothing after the port either. */
function checkServiceUrl(value: string, field: string, errors: FieldError[], origin = false): void {
  const url = reachableUrl(value);
  const ok = url && (url.protocol === 'https:' || (url.protocol === 'http:' && LOCAL_HOSTS.has(url.hostname)));
  if (!ok || url?.username || url?.password || (origin && url?.origin !== value)) {
    errors.push({
      field,
      constraint: { format: 'url', pattern: '^https://' },
      message: origin
        ? 'must be an origin: https://host[:port] (http is allowed only for localhost and 127.0.0.1), nothing after it'
        : 'must be an https URL without credentials (http is allowed only for localhost and 127.0.0.1)',
    });
  }
}

/** The umaDomain is what follows the `@` of its customers' addresses, so it follows the one address rule (platform/uma-address.ts): a port is 1–65535. */
function checkUmaDomain(value: string, errors: FieldError[]): void {
  if (!isUmaAddress(`$user@${value}`)) {
    errors.push({ field: 'umaDomain', message: 'must be a host name with an optional port from 1 to 65535, as it ends every customer\'s UMA address' });
  }
}

/**
 * A production platform's umaDomain is where VASPs on the public internet reach its customers,
 * over https, and the sender identity of its payments, which production receivers refuse from a
 * local VASP (uma's `isLocalDomain`). A loopback, private or other refused address, `localhost`
 * and the local-only `.local` / `.internal` names reach none of them, and a production domain is
 * its holder's alone: claiming one would also take it from every sandbox platform testing on it.
 */
function checkProductionUmaDomain(value: string, errors: FieldError[]): void {
  const url = reachableUrl(`https://${value}`);
  if (!url) return;
  const refused = literalRefusedRange(url);
  const tld = url.hostname.replace(/\.$/, '').split('.').pop();
  if (refused || tld === 'local' || tld === 'internal') {
    errors.push({
      field: 'umaDomain',
      message: `must be a public host name for a production platform${refused ? `, not a ${refused.range} address (${refused.host})` : `, not a .${tld} name`}: other VASPs reach its customers, and accept its payments, only there`,
    });
  }
}

/** A logo shown to end users: the schema takes any `https://…` the URI format accepts, `https://` alone included. */
function checkLogoUrl(value: string | undefined, field: string, errors: FieldError[]): void {
  if (value !== undefined && !reachableUrl(value)) errors.push({ field, constraint: { format: 'url', pattern: '^https://' }, message: 'must be an https URL naming a host' });
}

/**
 * The list as stored: what the request leaves out of a currency is what that currency had, or
 * for one new to the list no required counterparty fields and both directions. The read-only
 * fields a client sent back are not the platform's to set.
 */
function currenciesToStore(current: PlatformCurrencyConfig[], sent: NonNullable<PlatformConfigUpdate['supportedCurrencies']>): PlatformCurrencyConfig[] {
  const before = new Map(current.map((c) => [c.currencyCode, c]));
  return sent.map((c) => ({
    currencyCode: c.currencyCode,
    minAmount: c.minAmount,
    maxAmount: c.maxAmount,
    requiredCounterpartyFields: c.requiredCounterpartyFields ?? before.get(c.currencyCode)?.requiredCounterpartyFields ?? [],
    enabledTransactionTypes: c.enabledTransactionTypes ?? before.get(c.currencyCode)?.enabledTransactionTypes ?? DEFAULT_CURRENCY.enabledTransactionTypes,
  }));
}

function checkCurrencies(currencies: PlatformCurrencyConfig[], errors: FieldError[]): void {
  const seen = new Set<string>();
  currencies.forEach((c, i) => {
    if (seen.has(c.currencyCode)) errors.push({ field: `supportedCurrencies.${i}.currencyCode`, message: `${c.currencyCode} is listed twice` });
    seen.add(c.currencyCode);
    if (c.minAmount > c.maxAmount) errors.push({ field: `supportedCurrencies.${i}.minAmount`, message: 'must not exceed maxAmount' });
    const names = c.requiredCounterpartyFields.map((f) => f.name);
    if (new Set(names).size !== names.length) {
      errors.push({ field: `supportedCurrencies.${i}.requiredCounterpartyFields`, message: 'must not repeat a field name' });
    }
  });
}

/**
 * Merge-by-key on (feeType, sourceCurrency); a config whose rate and fixed amount are both 0 is
 * removed. A fixed fee sent may not exceed the source currency's maxAmount in `currencies` (the
 * list as this change leaves it): no transfer from that currency could pay it, and prices and
 * listings must carry fee and amount within the API's 2^53 − 1.
 */
function mergeFeeConfigs(
  current: FeeConfig[],
  updates: NonNullable<PlatformConfigUpdate['feeConfigs']>,
  currencies: PlatformCurrencyConfig[],
  errors: FieldError[],
): FeeConfig[] {
  const merged = new Map(current.map((f) => [`${f.feeType}/${f.sourceCurrency}`, f]));
  const seen = new Set<string>();
  updates.forEach((update, i) => {
    const key = `${update.feeType}/${update.sourceCurrency}`;
    if (seen.has(key)) errors.push({ field: `feeConfigs.${i}`, message: `repeats ${update.feeType} for ${update.sourceCurrency}` });
    seen.add(key);
    if (update.variableFeeBps === undefined && update.fixedFee === undefined) {
      errors.push({ field: `feeConfigs.${i}`, message: 'needs variableFeeBps, fixedFee, or both' });
      return;
    }
    if (update.fixedFee && update.fixedFee.currency !== update.sourceCurrency) {
      errors.push({ field: `feeConfigs.${i}.fixedFee.currency`, constraint: { enum: [update.sourceCurrency] }, message: 'must equal sourceCurrency' });
      return;
    }
    const limit = currencies.find((c) => c.currencyCode === update.sourceCurrency)?.maxAmount;
    if (update.fixedFee && limit !== undefined && update.fixedFee.amount > limit) {
      errors.push({
        field: `feeConfigs.${i}.fixedFee.amount`,
        message: `must not exceed ${update.sourceCurrency}'s maxAmount in supportedCurrencies (${limit}): no transfer could pay it`,
      });
      return;
    }
    const previous = merged.get(key);
    const next: FeeConfig = {
      feeType: update.feeType,
      sourceCurrency: update.sourceCurrency,
      variableFeeBps: update.variableFeeBps ?? previous?.variableFeeBps ?? 0,
      fixedFee: update.fixedFee ?? previous?.fixedFee ?? { amount: 0, currency: update.sourceCurrency },
    };
    if (next.variableFeeBps === 0 && next.fixedFee.amount === 0) merged.delete(key);
    else merged.set(key, next);
  });
  return [...merged.values()];
}

export type Environment = 'sandbox' | 'production';

/**
 * Job that opens, for customers approved before a config change, the accounts the change calls
 * for (a new supported currency, embedded wallets enabled). Its handler belongs to the module
 * that knows customers; this module only says when it is needed.
 */
export const CONFIG_ACCOUNTS_JOB = 'config.open-accounts';

export interface ConfigAccountsJobPayload {
  /** The last customer (uuid) whose accounts are done; absent at the start. */
  after?: string;
}

/** Whether the change adds a currency or enables embedded wallets, so existing customers need accounts. */
function opensAccounts(before: ConfigRow, after: ConfigRow): boolean {
  const had = new Set(before.supported_currencies.map((c) => c.currencyCode));
  return after.supported_currencies.some((c) => !had.has(c.currencyCode)) || (!before.embedded_wallet_config && after.embedded_wallet_config !== null);
}

/** The event that tells a new webhook endpoint it is connected (upstream sends TEST on every endpoint change). */
const WEBHOOK_TEST_EVENT = 'TEST';

function umaDomainTaken(umaDomain: string): AppError {
  return new AppError('CONFLICT', `The umaDomain ${umaDomain} is a production platform's: a production umaDomain belongs to that platform alone.`, {
    details: { field: 'umaDomain', umaDomain },
  });
}

/**
 * `guardSandboxWebhooks`: CORRIDOR_WEBHOOK_GUARD_SANDBOX, under which sandbox deliveries pass
 * the address guard as production ones do, so their endpoints are judged alike.
 */
export async function updatePlatformConfig(
  trx: Tx,
  clock: Clock,
  caller: { platformId: string; environment: Environment },
  update: PlatformConfigUpdate,
  options: { guardSandboxWebhooks: boolean },
): Promise<PlatformConfig> {
  const { platformId } = caller;
  const unsupported = (update.feeConfigs ?? []).findIndex((f) => !FEE_SOURCE_CURRENCIES.has(f.sourceCurrency));
  if (unsupported >= 0) {
    throw new AppError('NOT_IMPLEMENTED', `Fee configs are supported only for USD source currency.`, {
      details: { field: `feeConfigs.${unsupported}.sourceCurrency`, supported: [...FEE_SOURCE_CURRENCIES] },
    });
  }
  const current = await findConfig(trx, platformId, { forUpdate: true });
  if (!current) throw new AppError('INTERNAL_ERROR', 'The platform has no configuration.');
  const errors: FieldError[] = [];
  if (typeof update.umaDomain === 'string') {
    const before = errors.length;
    checkUmaDomain(update.umaDomain, errors);
    if (errors.length === before && caller.environment === 'production') checkProductionUmaDomain(update.umaDomain, errors);
  }
  // Where webhooks go: https for production platforms; a sandbox may also use http, so a
  // developer's machine or a tunnel can receive them. Where deliveries pass the address guard
  // (production, and sandbox under CORRIDOR_WEBHOOK_GUARD_SANDBOX) the endpoint is judged by it.
  if (typeof update.webhookEndpoint === 'string') {
    const guarded = caller.environment === 'production' || options.guardSandboxWebhooks;
    const guardedBecause = guarded ? 'webhooks are delivered only to public addresses' : undefined;
    checkCalledUrl(update.webhookEndpoint, 'webhookEndpoint', caller.environment !== 'production', guardedBecause, errors);
  }
  update.embeddedWalletConfig?.oidcIssuers?.forEach((issuer, i) => checkOidcIssuer(issuer, `embeddedWalletConfig.oidcIssuers.${i}`, caller.environment, errors));
  checkLogoUrl(update.embeddedWalletConfig?.logoUrl, 'embeddedWalletConfig.logoUrl', errors);
  checkLogoUrl(update.cardTokenization2faConfig?.logoUrl, 'cardTokenization2faConfig.logoUrl', errors);
  update.embeddedWalletConfig?.passkeyOrigins?.forEach((o, i) => checkServiceUrl(o, `embeddedWalletConfig.passkeyOrigins.${i}`, errors, true));
  const currencies = update.supportedCurrencies && currenciesToStore(current.supported_currencies, update.supportedCurrencies);
  if (currencies) checkCurrencies(currencies, errors);
  const feeConfigs = update.feeConfigs ? mergeFeeConfigs(current.fee_configs, update.feeConfigs, currencies ?? current.supported_currencies, errors) : undefined;
  if (errors.length) throw invalidInput(errors);
  // A umaDomain other than the one held (case aside) is a new claim. A production platform's
  // domain is no one else's: its customers' addresses, and the sender identity of its UMA
  // requests (signed with the deployment's keys, which any domain here serves). Sandbox platforms
  // share what no production platform holds; a new one queues behind those sharing it.
  const claimsUmaDomain = update.umaDomain !== undefined && update.umaDomain?.toLowerCase() !== current.uma_domain?.toLowerCase();
  if (claimsUmaDomain && update.umaDomain && (await productionUmaDomainHeld(trx, platformId, update.umaDomain))) {
    throw umaDomainTaken(update.umaDomain);
  }

  const card = update.cardTokenization2faConfig;
  const currentCard = current.card_tokenization_2fa_config ?? {};
  const changes: Partial<ConfigRow> = {
    ...(update.umaDomain !== undefined ? { uma_domain: update.umaDomain } : {}),
    ...(claimsUmaDomain ? { uma_domain_claimed_at: update.umaDomain === null ? null : clock.now() } : {}),
    ...(update.webhookEndpoint !== undefined ? { webhook_endpoint: update.webhookEndpoint } : {}),
    ...(currencies ? { supported_currencies: currencies } : {}),
    ...(update.embeddedWalletConfig !== undefined
      ? { embedded_wallet_config: update.embeddedWalletConfig && { ...(current.embedded_wallet_config ?? {}), ...update.embeddedWalletConfig } }
      : {}),
    ...(card
      ? {
          card_tokenization_2fa_config: {
            ...currentCard,
            ...card,
            ...(card.email ? { email: { ...currentCard.email, ...card.email } } : {}),
            ...(card.sms ? { sms: { ...currentCard.sms, ...card.sms } } : {}),
          },
        }
      : {}),
    ...(feeConfigs ? { fee_configs: feeConfigs } : {}),
    updated_at: clock.now(),
  };
  const row = await updateConfig(trx, platformId, changes).catch((error: unknown) => {
    // Another production platform took the domain since the check above, and committed first.
    if (update.umaDomain && violatedUniqueIndex(error, [PRODUCTION_UMA_DOMAIN_INDEX])) throw umaDomainTaken(update.umaDomain);
    throw error;
  });
  await notifyChanged(trx, CONFIG_CHANGED_CHANNEL, platformId);
  if (opensAccounts(current, row)) {
    const payload: ConfigAccountsJobPayload = {};
    await enqueueJob(trx, clock, { kind: CONFIG_ACCOUNTS_JOB, platformId, payload });
  }
  const config = toPlatformConfig(row);
  await recordEvent(trx, clock, { platformId, type: 'PLATFORM_CONFIG.UPDATED', resourceId: config.id, data: config });
  if (row.webhook_endpoint && row.webhook_endpoint !== current.webhook_endpoint) {
    await recordEvent(trx, clock, { platformId, type: WEBHOOK_TEST_EVENT, resourceId: config.id, data: null });
  }
  return config;
}
