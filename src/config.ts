import type { X509Certificate } from 'node:crypto';
import { accessSync, constants, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { parse as parseConnectionString } from 'pg-connection-string';
import { certificatesFromPem, PEM_BEGIN, PEM_END } from './platform/crypto/pem.js';
import { DEFAULT_DB_CONNECT_TIMEOUT_MS, DEFAULT_DB_SILENCE_MS } from './platform/db/silent-connections.js';
import { DEFAULT_OVERLOAD_WAIT_MS } from './platform/http/overload.js';
import { DEFAULT_LEASE_MS } from './platform/jobs/index.js';

export const API_VERSION = '2025-10-13';
export const BASE_PATH = `/${API_VERSION}`;

export interface Config {
  port: number;
  host: string;
  /** Set: PostgreSQL. Unset: embedded PGlite under `dataDir`. */
  databaseUrl?: string;
  dataDir: string;
  logLevel: string;
  /** Address printed in examples and used as the OpenAPI server. */
  publicUrl: string;
  /** How long a process may cache verified API tokens and platform configs (changes evict at once, everywhere). */
  cacheTtlMs: number;
  /** PostgreSQL connections of the process's pool (requests and jobs share it). */
  dbPoolSize: number;
  /**
   * PostgreSQL gone silent without a reset (failover, partition, dropped packets): how long a new
   * connection may take to be ready, and how long a connection with a statement under way may hear
   * nothing before the database is asked, on a new connection, whether its backend still exists
   * (platform/db/silent-connections.ts). A long statement whose backend exists is never cut.
   */
  dbConnectTimeoutMs: number;
  dbSilenceMs: number;
  /**
   * How long a request may wait for a database connection or a pipelined read, or for the event loop, before new
   * requests are refused with 503 OVERLOADED (platform/http/overload.ts): a wait that long is more
   * work than the process does, and clients would time out and retry into it.
   */
  overloadWaitMs: number;
  /**
   * Background work: whether this process runs it, how often an idle worker polls, how many jobs
   * it runs at once, how long a claim reserves a job (how soon a dead process's jobs go to
   * another), and how long a finished job is kept before the retention purge deletes it.
   */
  jobs: { enabled: boolean; pollMs: number; concurrency: number; leaseMs: number; retentionHours: number };
  webhooks: {
    /** Deadline for one delivery request: connect, send, answer. */
    timeoutMs: number;
    /** Deliveries to one platform's endpoint a process makes at once. */
    perEndpointConcurrency: number;
    /**
     * Whether sandbox platforms' deliveries pass the address guard too (production's always do):
     * for a shared deployment whose sandbox users must not reach its private network. Off by
     * default, so a sandbox can deliver to http://localhost.
     */
    guardSandbox: boolean;
  };
  bodyLimitBytes: number;
  /**
   * Request-body bytes a process may hold in memory at once (platform/http/body-budget.ts): each
   * JSON body, and each CSV import, reserves its length before it is read; past this, 503.
   */
  bodyBytesInFlight: number;
  /**
   * Longest a request may take to arrive (Node's own default; Fastify turns it off), and longest a
   * connection may stay silent: stalled headers are answered 408, a stalled body disconnected.
   * Above the longest any handler waits on another system (a webhook round trip: 35 s at most).
   */
  requestTimeoutMs: number;
  /** Grace period on SIGTERM for in-flight requests and running jobs; unfinished jobs are then handed back to the queue. */
  shutdownGraceMs: number;
  /** The end-user terms customers accept now; consents must name this version. */
  endUserTerms: { version: string; url: string };
  /** External document-screening provider for production platforms; unset: the built-in screener. */
  screening: HttpProviderConfig;
  /** Where uploads are spooled while a request screens them (a private directory is made inside). */
  uploadDir: string;
  /**
   * 32-byte key that seals secrets at rest (wallet secrets, enclave keys, customers' tax
   * identifiers). Unset: generated into `dataDir/master.key` on the embedded database; required
   * with DATABASE_URL.
   */
  masterKey?: Buffer;
  wallet: {
    /** Lifetime of a wallet session. */
    sessionSeconds: number;
    /** How long a signed retry waits for the wallet provider to settle before answering PROCESSING. */
    settleWaitMs: number;
    /**
     * JWKS locations that replace those of the known OIDC issuers (Google, Apple), keyed by
     * canonical issuer: a mirror for deployments without internet access, or a local issuer in
     * tests. `CORRIDOR_OIDC_JWKS_OVERRIDES`, a JSON object; empty by default.
     */
    oidcJwksOverrides: Record<string, string>;
  };
  /** Where OTP e-mails and SMS go for production platforms; unset: not delivered (logged as undeliverable). */
  messages: HttpProviderConfig;
  /** Name-check provider for production platforms' new bank accounts; unset: their names are not checked (UNSUPPORTED). */
  beneficiaryVerification: HttpProviderConfig;
  /** Payment-rail provider that sends production platforms' payouts (docs/payments.md); unset: production payments are refused. */
  rails: HttpProviderConfig;
  /** Exchange-rate provider for production platforms (modules/rates); unset: production quotes answer 503. */
  rates: HttpProviderConfig;
  /** Quote limits (modules/quotes README): the single-transaction maximum per corridor and the daily volume per customer. */
  quoteLimits: { maxTransaction: LimitTable; dailyVolume: LimitTable };
  uma: UmaConfig;
}

/** Corridor as a UMA VASP (modules/uma). */
export interface UmaConfig {
  /**
   * The deployment's signing and encryption keys with their X.509 chains (PEM, leaf first).
   * Unset: a self-signed chain made on first use and kept in the database, keys sealed.
   */
  signing?: { certChainPem: string; privateKeyHex: string };
  encryption?: { certChainPem: string; privateKeyHex: string };
  /** Roots a counterparty's chain must end at (parsed at start); unset: any chain that holds together. */
  trustedRoots?: X509Certificate[];
  /** How far a signed message's timestamp may be from now, either way. */
  timestampWindowSeconds: number;
  /** How long a receiver lookup can be quoted. */
  lookupTtlSeconds: number;
  /** Deadline for one request to another VASP. */
  timeoutMs: number;
}

/**
 * A limit: `defaultUsdMinor` (US cents, converted to the currency concerned at the mid-market
 * rate of the moment) unless an override names the case, in that currency's minor units.
 * Override keys: `SRC` or `SRC:DST` (transaction size), a currency code (daily volume).
 */
export interface LimitTable {
  defaultUsdMinor: bigint;
  overrides: Record<string, bigint>;
}

export interface HttpProviderConfig {
  url?: string;
  token?: string;
  timeoutMs: number;
}

export class ConfigError extends Error {}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function bool(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

/** An external provider reached over HTTP: `<PREFIX>_URL`, `_TOKEN` (Bearer) and `_TIMEOUT_MS`. */
function httpProvider(env: NodeJS.ProcessEnv, prefix: string, timeoutMs: { fallback: number; max: number }): HttpProviderConfig {
  const url = env[`${prefix}_URL`] || undefined;
  if (url !== undefined && !isHttpUrl(url)) throw new ConfigError(`${prefix}_URL must be an http(s) URL, got "${withoutCredentials(url)}"`);
  const token = env[`${prefix}_TOKEN`];
  return {
    ...(url ? { url } : {}),
    ...(token ? { token } : {}),
    timeoutMs: integer(env, `${prefix}_TIMEOUT_MS`, timeoutMs.fallback, 100, timeoutMs.max),
  };
}

function masterKey(env: NodeJS.ProcessEnv): Buffer | undefined {
  const raw = env.CORRIDOR_MASTER_KEY;
  if (raw === undefined || raw === '') return undefined;
  if (/^[0-9a-fA-F]{64}$/.test(raw)) return Buffer.from(raw, 'hex');
  const decoded = /^[A-Za-z0-9+/_-]{43}=?$/.test(raw) ? Buffer.from(raw, 'base64') : Buffer.alloc(0);
  if (decoded.length === 32) return decoded;
  throw new ConfigError('CORRIDOR_MASTER_KEY must be 32 bytes as 64 hex characters or base64');
}

function termsConfig(env: NodeJS.ProcessEnv): Config['endUserTerms'] {
  const version = env.CORRIDOR_TERMS_VERSION || 'V1';
  if (!/^[A-Za-z0-9._-]{1,32}$/.test(version)) throw new ConfigError(`CORRIDOR_TERMS_VERSION must be 1–32 letters, digits, '.', '_' or '-'; got "${version}"`);
  const url = env.CORRIDOR_TERMS_URL || 'https://corridor.dev/legal/end-user-terms';
  if (!isHttpUrl(url)) throw new ConfigError(`CORRIDOR_TERMS_URL must be an http(s) URL, got "${url}"`);
  return { version, url };
}

function limitTable(env: NodeJS.ProcessEnv, name: string, defaultUsdMinor: bigint, keyPattern: RegExp): LimitTable {
  const raw = env[name];
  if (!raw) return { defaultUsdMinor, overrides: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError(`${name} must be a JSON object such as {"default": 100000000, "USD:MXN": 5000000}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ConfigError(`${name} must be a JSON object`);
  const table: LimitTable = { defaultUsdMinor, overrides: {} };
  for (const [key, value] of Object.entries(parsed)) {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new ConfigError(`${name}: "${key}" must be a whole number of minor units`);
    if (key === 'default') table.defaultUsdMinor = BigInt(value);
    else if (keyPattern.test(key)) table.overrides[key] = BigInt(value);
    else throw new ConfigError(`${name}: "${key}" is not "default" or a key of the form ${keyPattern.source}`);
  }
  return table;
}

function isHttpUrl(text: string): boolean {
  return /^https?:\/\/\S+$/.test(text) && URL.canParse(text);
}

/** A URL as an error message may quote it: a provider's URL can carry a user and password before its host. */
function withoutCredentials(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, '$1[credentials]@');
}

/**
 * A directory setting, checked before anything is opened or written: a path that is a file, or
 * runs through one, would otherwise end start-up with a stack trace from the first use, perhaps
 * after the migrations ran. `made`: a missing directory is created on first use.
 */
function directory(env: NodeJS.ProcessEnv, name: string, fallback: string, made: boolean): string {
  const path = resolve(env[name] || fallback);
  let isDirectory: boolean;
  try {
    isDirectory = statSync(path).isDirectory();
  } catch (error) {
    const { code } = error as NodeJS.ErrnoException;
    if (code === 'ENOENT' && made) return path;
    throw new ConfigError(`${name} ${path} ${code === 'ENOENT' ? 'does not exist' : code === 'ENOTDIR' ? 'is not a directory: a file is on its path' : `cannot be read (${code})`}`);
  }
  if (!isDirectory) throw new ConfigError(`${name} ${path} is not a directory`);
  if (!made) {
    try {
      accessSync(path, constants.W_OK);
    } catch {
      throw new ConfigError(`${name} ${path} is not writable by this user`);
    }
  }
  return path;
}

/**
 * DATABASE_URL, checked as pg will read it, so a malformed one stops start-up here rather than as
 * a stack trace from the first connection. Never quoted back: it holds the database password.
 */
function postgresUrl(env: NodeJS.ProcessEnv): string | undefined {
  const url = env.DATABASE_URL || undefined;
  if (url === undefined) return undefined;
  if (!/^postgres(ql)?:\/\//.test(url)) throw new ConfigError('DATABASE_URL must be a postgres:// or postgresql:// URL');
  try {
    parseConnectionString(url);
  } catch (error) {
    // pg reads the TLS files the URL names while parsing it: a missing one is not a malformed URL.
    const { code, path } = error as { code?: unknown; path?: unknown };
    if (typeof code === 'string' && typeof path === 'string') {
      const parameter = ['sslrootcert', 'sslcert', 'sslkey'].find((name) => new URLSearchParams(url.split('?')[1] ?? '').get(name) === path);
      throw new ConfigError(`DATABASE_URL names ${parameter ? `${parameter}=${path}` : `the TLS file ${path}`}, which cannot be read (${code})`);
    }
    throw new ConfigError('DATABASE_URL is not a valid URL (a port that is not a number, an unescaped character in the user name or password?); percent-encode reserved characters such as @ : / in the password');
  }
  // pg takes a mode it does not know as TLS with full verification: a typo would be reported as a
  // server that does not speak TLS, far from its cause.
  const sslmode = new URLSearchParams(url.split('?')[1] ?? '').get('sslmode');
  if (sslmode !== null && !PG_SSL_MODES.includes(sslmode)) {
    throw new ConfigError(`DATABASE_URL sslmode must be one of ${PG_SSL_MODES.join(', ')}, got "${sslmode.slice(0, 40)}"`);
  }
  return url;
}

/** The sslmode values pg (pg-connection-string) reads; libpq's `allow` is not one of them. */
const PG_SSL_MODES = ['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify'];

function jwksOverrides(env: NodeJS.ProcessEnv): Record<string, string> {
  const raw = env.CORRIDOR_OIDC_JWKS_OVERRIDES;
  if (!raw) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError('CORRIDOR_OIDC_JWKS_OVERRIDES must be a JSON object {"<issuer>": "<JWKS URL>"}');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ConfigError('CORRIDOR_OIDC_JWKS_OVERRIDES must be a JSON object');
  const overrides: Record<string, string> = {};
  for (const [issuer, url] of Object.entries(parsed)) {
    if (typeof url !== 'string' || !isHttpUrl(url)) throw new ConfigError(`CORRIDOR_OIDC_JWKS_OVERRIDES: the JWKS URL of ${issuer} is not an http(s) URL`);
    overrides[issuer] = url;
  }
  return overrides;
}

/** Reads the environment once at boot; any bad value stops start-up with a message naming it. */
/** The public URL when CORRIDOR_PUBLIC_URL is unset: this host on the port served. */
export function defaultPublicUrl(port: number): string {
  return `http://localhost:${port}`;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST || '0.0.0.0';
  const databaseUrl = postgresUrl(env);
  const logLevel = env.LOG_LEVEL || 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent; got "${logLevel}"`);
  }
  const key = masterKey(env);
  const leaseMs = integer(env, 'CORRIDOR_JOBS_LEASE_MS', DEFAULT_LEASE_MS, 2_000, 3_600_000);
  // At most half a job's lease: an attempt must end well before another process may take its
  // job over and send the same webhook a second time.
  const webhookTimeoutMs = integer(env, 'CORRIDOR_WEBHOOK_TIMEOUT_MS', Math.min(10_000, leaseMs / 2), 100, 30_000);
  if (webhookTimeoutMs > leaseMs / 2) {
    throw new ConfigError(`CORRIDOR_WEBHOOK_TIMEOUT_MS (${webhookTimeoutMs}) must be at most half of CORRIDOR_JOBS_LEASE_MS (${leaseMs})`);
  }
  const bodyLimitBytes = integer(env, 'CORRIDOR_BODY_LIMIT_BYTES', 1_048_576, 1024, 100 * 1_048_576);
  // 64 MiB of bodies costs a few times that in heap (64 bodies of 1 MiB at once peaked at 262–371
  // MB), and admits 64 JSON bodies of the default limit, or six CSV imports of 10 MB, at once. A
  // budget below the body limit would turn every body between the two away.
  const bodyBytesInFlight = integer(env, 'CORRIDOR_BODY_BYTES_IN_FLIGHT', Math.max(64 * 1_048_576, bodyLimitBytes), 1024, 4096 * 1_048_576);
  if (bodyBytesInFlight < bodyLimitBytes) {
    throw new ConfigError(`CORRIDOR_BODY_BYTES_IN_FLIGHT (${bodyBytesInFlight}) must be at least CORRIDOR_BODY_LIMIT_BYTES (${bodyLimitBytes})`);
  }
  const publicUrl = (env.CORRIDOR_PUBLIC_URL || defaultPublicUrl(port)).replace(/\/+$/, '');
  if (!isHttpUrl(publicUrl)) throw new ConfigError(`CORRIDOR_PUBLIC_URL must be an http(s) URL such as https://payments.example.com, got "${publicUrl}"`);
  return {
    port,
    host,
    databaseUrl,
    // Only the embedded database lives there.
    dataDir: databaseUrl ? resolve(env.CORRIDOR_DATA_DIR || './data') : directory(env, 'CORRIDOR_DATA_DIR', './data', true),
    logLevel,
    publicUrl,
    cacheTtlMs: integer(env, 'CORRIDOR_CACHE_TTL_MS', 60_000, 0, 3_600_000),
    dbPoolSize: integer(env, 'CORRIDOR_DB_POOL_SIZE', 10, 1, 1000),
    dbConnectTimeoutMs: integer(env, 'CORRIDOR_DB_CONNECT_TIMEOUT_MS', DEFAULT_DB_CONNECT_TIMEOUT_MS, 100, 600_000),
    dbSilenceMs: integer(env, 'CORRIDOR_DB_SILENCE_MS', DEFAULT_DB_SILENCE_MS, 1_000, 600_000),
    overloadWaitMs: integer(env, 'CORRIDOR_OVERLOAD_WAIT_MS', DEFAULT_OVERLOAD_WAIT_MS, 1, 600_000),
    jobs: {
      enabled: bool(env, 'CORRIDOR_JOBS', true),
      pollMs: integer(env, 'CORRIDOR_JOBS_POLL_MS', 500, 10, 60_000),
      // A webhook delivery holds a slot for its whole round trip to the endpoint but a pooled
      // connection only for its two statements, so slots are cheap; see perEndpointConcurrency.
      concurrency: integer(env, 'CORRIDOR_JOBS_CONCURRENCY', 64, 1, 1000),
      leaseMs,
      // A week of finished jobs to look back on; dead ones are kept for ever (platform/retention.ts).
      retentionHours: integer(env, 'CORRIDOR_JOBS_RETENTION_HOURS', 168, 1, 87_600),
    },
    webhooks: {
      timeoutMs: webhookTimeoutMs,
      // A platform's webhooks per second per process are at most this many over the endpoint's
      // round trip (16 at 50 ms: 320/s); a quarter of the job slots, so a dead endpoint (each attempt
      // held until the timeout) leaves three quarters to everyone else.
      perEndpointConcurrency: integer(env, 'CORRIDOR_WEBHOOK_CONCURRENCY_PER_ENDPOINT', 16, 1, 256),
      guardSandbox: bool(env, 'CORRIDOR_WEBHOOK_GUARD_SANDBOX', false),
    },
    bodyLimitBytes,
    bodyBytesInFlight,
    requestTimeoutMs: integer(env, 'CORRIDOR_REQUEST_TIMEOUT_MS', 300_000, 1_000, 3_600_000),
    shutdownGraceMs: integer(env, 'CORRIDOR_SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    endUserTerms: termsConfig(env),
    screening: httpProvider(env, 'CORRIDOR_SCREENING', { fallback: 30_000, max: 300_000 }),
    rails: httpProvider(env, 'CORRIDOR_RAILS', { fallback: 10_000, max: 60_000 }),
    uploadDir: directory(env, 'CORRIDOR_UPLOAD_DIR', tmpdir(), false),
    ...(key ? { masterKey: key } : {}),
    wallet: {
      sessionSeconds: integer(env, 'CORRIDOR_WALLET_SESSION_SECONDS', 900, 60, 86_400),
      settleWaitMs: integer(env, 'CORRIDOR_WALLET_SETTLE_WAIT_MS', 2_000, 0, 30_000),
      oidcJwksOverrides: jwksOverrides(env),
    },
    messages: httpProvider(env, 'CORRIDOR_MESSAGES', { fallback: 10_000, max: 120_000 }),
    beneficiaryVerification: httpProvider(env, 'CORRIDOR_BENEFICIARY', { fallback: 10_000, max: 60_000 }),
    rates: httpProvider(env, 'CORRIDOR_RATES', { fallback: 5_000, max: 60_000 }),
    quoteLimits: {
      // USD 1,000,000.00 per transaction and USD 5,000,000.00 per customer and day unless configured.
      maxTransaction: limitTable(env, 'CORRIDOR_MAX_TRANSACTION', 100_000_000n, /^[A-Z]{3,5}(:[A-Z]{3,5})?$/),
      dailyVolume: limitTable(env, 'CORRIDOR_DAILY_VOLUME_LIMIT', 500_000_000n, /^[A-Z]{3,5}$/),
    },
    uma: umaConfig(env),
  };
}

/** A PEM value from the environment: the text itself (`\n` escapes allowed, for one-line env files). */
/** A PEM setting as its text and its certificates, parsed now: a bundle that does not parse stops the start, not every UMA exchange later. */
function pem(env: NodeJS.ProcessEnv, name: string): { text: string; certificates: X509Certificate[] } | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const text = raw.replace(/\\n/g, '\n');
  let certificates: X509Certificate[];
  try {
    certificates = certificatesFromPem(text);
  } catch (error) {
    throw new ConfigError(`${name} holds a certificate that does not parse: ${(error as Error).message}`);
  }
  if (certificates.length === 0) throw new ConfigError(`${name} must hold PEM certificates (${PEM_BEGIN} … ${PEM_END})`);
  return { text, certificates };
}

function umaKeyPair(env: NodeJS.ProcessEnv, use: 'SIGNING' | 'ENCRYPTION'): { certChainPem: string; privateKeyHex: string } | undefined {
  const chain = pem(env, `CORRIDOR_UMA_${use}_CERT_CHAIN`);
  const key = env[`CORRIDOR_UMA_${use}_PRIVATE_KEY`] || undefined;
  if (!chain && !key) return undefined;
  if (!chain || !key) throw new ConfigError(`CORRIDOR_UMA_${use}_CERT_CHAIN and CORRIDOR_UMA_${use}_PRIVATE_KEY are set together`);
  if (!/^[0-9a-fA-F]{64}$/.test(key)) throw new ConfigError(`CORRIDOR_UMA_${use}_PRIVATE_KEY must be a secp256k1 private key as 64 hex characters`);
  return { certChainPem: chain.text, privateKeyHex: key.toLowerCase() };
}

function umaConfig(env: NodeJS.ProcessEnv): UmaConfig {
  const signing = umaKeyPair(env, 'SIGNING');
  const encryption = umaKeyPair(env, 'ENCRYPTION');
  if (Boolean(signing) !== Boolean(encryption)) throw new ConfigError('the UMA signing and encryption keys are configured together (CORRIDOR_UMA_SIGNING_* and CORRIDOR_UMA_ENCRYPTION_*)');
  const trustedRoots = pem(env, 'CORRIDOR_UMA_TRUSTED_ROOTS')?.certificates;
  return {
    ...(signing ? { signing } : {}),
    ...(encryption ? { encryption } : {}),
    ...(trustedRoots ? { trustedRoots } : {}),
    timestampWindowSeconds: integer(env, 'CORRIDOR_UMA_TIMESTAMP_WINDOW_SECONDS', 300, 10, 3600),
    lookupTtlSeconds: integer(env, 'CORRIDOR_UMA_LOOKUP_TTL_SECONDS', 900, 60, 86_400),
    timeoutMs: integer(env, 'CORRIDOR_UMA_TIMEOUT_MS', 10_000, 100, 60_000),
  };
}
