/**
 * Hostile inputs against every operation of the app's own OpenAPI document (the rule: nothing a
 * caller sends is a 500; bad input is a 4xx in the spec's error envelope, §2.3 and §7).
 *
 * For each operation, with a valid platform token: hostile path parameters (wrong prefix, empty,
 * 10 kB, emoji, %00, ../, quotes, bad percent-encoding), hostile query parameters (wrong types,
 * huge and negative numbers, repeated keys, arrays, invalid dates and cursors, unknown enum
 * values), hostile headers the operation declares, and hostile JSON bodies (no body, null,
 * arrays, scalars, each declared property — top level and one level down — replaced by a wrong
 * type, over-long and odd strings, huge numbers, unknown enum values; depth-2000 nesting,
 * duplicated keys, unknown extra properties, non-JSON and non-UTF-8 bytes, wrong content types).
 *
 * No operation is skipped. Routes behind a wallet signature (Service-Wallet-Signature with a
 * Request-Id, §4.3) get every case without a valid signature — no session exists here to sign
 * with — so the well-formed cases stop at 401 WALLET_SIGNATURE_* / REQUEST_ID_MISSING or a 404,
 * while the malformed ones reach path, query, header and body validation, which runs first.
 * Multipart uploads get every case but the field-by-field mutations (see casesFor).
 *
 * The operations that change the fixtures' state (the customer's KYC, the platform's config) go last
 * (DISTURBS_FIXTURES), and the money operations' baselines must answer 2xx (MUST_REACH_SERVICE):
 * otherwise their body mutations would stop where a refused baseline stops and never reach the service.
 *
 * Deterministic: the cases are enumerated, and the random parts come from fast-check with a fixed
 * seed; each operation gets a seeded pick of them (some 5,500 requests, well under a minute).
 * FUZZ_FULL=1 sends all of them (some 15,000), FUZZ_SEED and FUZZ_SCALE vary and widen a local
 * run, FUZZ_DEBUG=1 (or =all) prints each operation's baseline (or every) response.
 * Every response is checked: status < 500, and a 4xx answers the envelope with a registered
 * code whose status is the response's.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/platform/errors.js';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';
import { validSamples } from '../helpers/external-accounts.js';
import { exampleOf } from '../helpers/openapi-example.js';
import { customerUsdAccount, fundedCustomer } from '../helpers/payments.js';
import { newClientKey } from '../helpers/wallet.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20251013);
const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
/** FUZZ_FULL=1 sends every value to every parameter and property (about 15,000 requests) instead of a seeded pick. */
const FULL = process.env.FUZZ_FULL === '1';

type Schema = Record<string, any>;
interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema?: Schema;
  example?: unknown;
  examples?: Record<string, { value: unknown }>;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema?: Schema; example?: unknown; examples?: Record<string, { value: unknown }> }> };
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

let ctx: TestContext;
/** Real resources of the platform, by id prefix: ids that pass the 404 so bodies reach the service. */
const fixtures: Record<string, string> = {};
/** Hand-made valid bodies where the document has no example and one made from the schema alone is refused by the service's own rules. */
let baselines: Record<string, unknown> = {};
const UMA = '$fuzzer@pay.example.com';

beforeAll(async () => {
  ctx = await createTestContext({
    // No request may leave the machine: every host name is unknown (an UMA lookup fails fast).
    webhookResolver: async (hostname) => {
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    },
  });
  // What invitations, UMA lookups and webhook tests need, set before PATCH /config's own cases (sent last) change it.
  const configured = await ctx.app.inject({ method: 'PATCH', url: `${BASE}/config`, headers: { authorization: ctx.platform.auth }, payload: { umaDomain: 'pay.example.com', webhookEndpoint: 'https://example.com/webhooks' } });
  expect(configured.statusCode, configured.body).toBe(200);
  const customer = await fundedCustomer(ctx, ctx.platform, 100_000);
  fixtures.Customer = customer.customerId;
  fixtures.InternalAccount = customer.accountId;
  const call = async (method: 'POST' | 'PATCH', path: string, payload: object) => {
    const response = await ctx.app.inject({ method, url: `${BASE}${path}`, headers: { authorization: ctx.platform.auth }, payload });
    expect(response.statusCode, `${method} ${path}: ${response.body}`).toBeLessThan(300);
    return response.json() as { id: string };
  };
  await call('PATCH', `/customers/${customer.customerId}`, {
    customerType: 'INDIVIDUAL',
    umaAddress: UMA,
    endUserTermsConsent: { acceptedAt: ctx.clock.now().toISOString(), ipAddress: '203.0.113.7', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' },
  });
  const usdAccount = validSamples(ctx.clock.now()).USD_ACCOUNT!;
  fixtures.ExternalAccount = (await call('POST', '/platform/external-accounts', usdAccount)).id;
  const business = await call('POST', '/customers', { customerType: 'BUSINESS', platformCustomerId: 'fuzz-business', businessInfo: { legalName: 'Fuzz LLC', country: 'US', incorporatedOn: '2015-03-01', taxId: '12-3456789' } });
  const personalInfo = {
    firstName: 'Maria', lastName: 'Garcia', birthDate: '1980-05-20', nationality: 'MX', email: 'maria@example.com', phoneNumber: '+525512345678',
    address: { line1: 'Av. Reforma 1', city: 'CDMX', postalCode: '06600', country: 'MX' }, idType: 'NON_US_TAX_ID', identifier: 'GAMM800520XX1',
  };
  const owner = { customerId: business.id, roles: ['UBO'], ownershipPercentage: 1, personalInfo };
  fixtures.BeneficialOwner = (await call('POST', '/beneficial-owners', owner)).id;
  // The customer's own bank account, which a transfer-in pulls from (a number of its own: the sample's is POST /customers/external-accounts' baseline).
  const pullable = await customerUsdAccount(ctx, ctx.platform, customer.customerId, '98765432101', { ownershipType: 'FIRST_PARTY' });
  const accounts = (await ctx.app.inject({ method: 'GET', url: `${BASE}/customers/internal-accounts?customerId=${customer.customerId}&currency=USD`, headers: { authorization: ctx.platform.auth } })).json() as {
    data: Array<{ fundingPaymentInstructions: Array<{ accountOrWalletInfo: { reference?: string } }> }>;
  };
  const fundingReference = accounts.data[0]!.fundingPaymentInstructions[0]!.accountOrWalletInfo.reference!;
  const transfer = { source: { accountId: customer.accountId }, destination: { accountId: fixtures.ExternalAccount, paymentRail: 'ACH' }, amount: 1_000 };
  const transaction = await call('POST', '/transfer-out', transfer) as { id: string; quoteId: string };
  fixtures.Transaction = transaction.id;
  fixtures.Quote = transaction.quoteId;
  baselines = {
    'POST /beneficial-owners': owner,
    'POST /transfer-out': transfer,
    'POST /transfer-in': { source: { accountId: pullable }, destination: { accountId: customer.accountId }, amount: 1_000 },
    'POST /sandbox/deposits': { reference: fundingReference, amount: 1_000 },
    // Valid keys, so the key's own checks are not all a mutation meets (the signature or the account stops them after).
    'POST /internal-accounts/{id}/export': { clientPublicKey: newClientKey().publicKeyUncompressed },
    'POST /auth/sessions/{id}/refresh': { clientPublicKey: newClientKey().publicKey },
    'POST /quotes': {
      source: { sourceType: 'ACCOUNT', accountId: customer.accountId },
      destination: { destinationType: 'ACCOUNT', accountId: fixtures.ExternalAccount, paymentRail: 'ACH' },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 1_000,
    },
    'POST /platform/external-accounts': usdAccount,
    'POST /customers/external-accounts': { customerId: customer.customerId, ownershipType: 'FIRST_PARTY', ...usdAccount },
    'POST /invitations': { inviterUma: UMA },
    'POST /sandbox/uma/receive': { senderUmaAddress: '$alice@sender-vasp.example', receiverUmaAddress: UMA, receivingCurrencyCode: 'USD', receivingCurrencyAmount: 1_000 },
  };
  // A token of its own, so DELETE /tokens/{tokenId} has a real one to act on without logging the fuzzer out.
  fixtures.Token = (await ctx.newToken(ctx.platform, ['VIEW'])).tokenId;
});
afterAll(() => ctx?.close());

/** Seeded picks, drawn from fast-check: each draw samples with the next seed of the run's sequence. */
class Rng {
  constructor(private seed: number) {}
  /** The first `core` values, and `count` more picked from the rest without repeats (all of them in a full run), in their order. */
  pick<T>(values: T[], count: number, core = 0): T[] {
    if (FULL || core + count >= values.length) return values;
    const rest = values.map((_, i) => i).slice(core);
    const [chosen] = fc.sample(fc.shuffledSubarray(rest, { minLength: count, maxLength: count }), { seed: this.seed++, numRuns: 1 });
    return [...values.slice(0, core), ...chosen!.sort((a, b) => a - b).map((i) => values[i]!)];
  }
  nextInt(min = 0, max = 0x7fffffff): number {
    return fc.sample(fc.integer({ min, max }), { seed: this.seed++, numRuns: 1 })[0]!;
  }
}

// ---- values ---------------------------------------------------------------------------------

/** A JSON text put into a body in place of a string placeholder: numbers JSON can write but JavaScript cannot hold. */
const raw = (text: string) => `\u0000RAW:${text}\u0000`;
const toJsonText = (value: unknown) => JSON.stringify(value).replace(/"\\u0000RAW:(.*?)\\u0000"/g, (_m, text: string) => text);

const LONG = 'A'.repeat(10_240);
const HUGE_NUMBERS = [raw('1e400'), raw('-1e400'), raw('9223372036854775808'), raw('18446744073709551616'), raw('1e-400'), 9007199254740993, -1, 0, 1.5, -0.0001];
const ODD_STRINGS = [LONG, '😀💸'.repeat(200), "' OR '1'='1'; --", 'a\u0000b', '../../etc/passwd', '', ' ', '\u202e\ufeff', 'NOT_A_KNOWN_VALUE', '2025-02-30T25:61:00Z', '1e400'];
const WRONG_TYPES = [1, 'x', {}, [], null, true, [1, 'x'], { nested: { deeper: [] } }];

const UUID = '019542f5-b3e7-1d02-0000-000000000001';
/** Path values, already encoded as they go on the request line. */
function hostilePathValues(prefix: string | undefined, rng: Rng): string[] {
  const other = prefix === 'Customer' ? 'Token' : 'Customer';
  const values = [
    // PATH_CORE: sent to every path parameter.
    `${other}:${UUID}`,
    '',
    'A'.repeat(10_240),
    encodeURIComponent('😀💸'),
    '%00',
    '..%2F..%2Fetc%2Fpasswd',
    encodeURIComponent("' OR '1'='1"),
    // The rest: a seeded pick per parameter.
    `Wrong:${UUID}`,
    UUID,
    `${prefix ?? 'X'}:${UUID.toUpperCase()}`,
    `${prefix ?? 'X'}:${UUID.slice(0, -1)}G`,
    `${prefix ?? 'X'}:00000000-0000-0000-0000-000000000000`,
    `${prefix ?? 'X'}:${'a'.repeat(5_000)}`,
    `${prefix ?? 'X'}%00:${UUID}`,
    '..',
    encodeURIComponent(`${prefix ?? 'X'}:${UUID}'--`),
    '%',
    '%E0%A4%A',
    '%C0%AE%C0%AE',
    '%FF%FE',
    encodeURIComponent('$a@b'),
    encodeURIComponent('$' + 'a'.repeat(300) + '@' + 'b'.repeat(300) + '.com'),
  ];
  for (const s of fc.sample(fc.string({ unit: 'binary', maxLength: 60 }), { seed: rng.nextInt(), numRuns: 2 * SCALE })) values.push(encodeURIComponent(s));
  return values;
}

/** Query values, already encoded; `&` joins extra pairs (repeated keys, arrays). */
function hostileQueryValues(name: string, schema: Schema | undefined, rng: Rng): string[] {
  const k = encodeURIComponent(name);
  const values = [
    // QUERY_CORE: sent to every query parameter.
    encodeURIComponent("' OR 1=1 --"),
    '1e400',
    '-1',
    '9223372036854775808',
    `a&${k}=b`,
    `x&${k}[]=1`,
    '2025-13-45T99:99:99Z',
    'NOT_A_KNOWN_VALUE',
    // The rest: a seeded pick per parameter.
    'abc',
    '0',
    '-9223372036854775809',
    '1.5',
    'NaN',
    'Infinity',
    'true',
    'null',
    '',
    '%00',
    encodeURIComponent(LONG.slice(0, 4_000)),
    encodeURIComponent('😀💸'),
    '0000-00-00',
    encodeURIComponent('2025-10-13T00:00:00+99:00'),
    encodeURIComponent('Zm9vYmFy'),
    encodeURIComponent('eyJpZCI6IigpIn0'),
    `1&${k}=2&${k}=3`,
    `x&${k}[a]=1`,
    '%',
    '%FF',
    encodeURIComponent(`Customer:${UUID}`),
  ];
  if (schema?.enum?.[0] !== undefined) values.push(encodeURIComponent(String(schema.enum[0]).toLowerCase()), `${encodeURIComponent(String(schema.enum[0]))}&${k}=${encodeURIComponent(String(schema.enum[0]))}`);
  for (const s of fc.sample(fc.string({ unit: 'binary', maxLength: 40 }), { seed: rng.nextInt(), numRuns: 2 * SCALE })) values.push(encodeURIComponent(s));
  return values;
}

const PATH_CORE = 7;
const QUERY_CORE = 8;
const HOSTILE_HEADERS = ['', ' ', 'x'.repeat(10_000), 'garbage', 'Zm9v', '-1', '1e400', '99999999999999999999', `Request:${UUID}`, '{"a":1}', 'a,b'];

// ---- schemas --------------------------------------------------------------------------------

function resolve(document: Document, schema: Schema | undefined): Schema {
  let s = schema ?? {};
  for (let i = 0; i < 10 && typeof s.$ref === 'string'; i++) s = document.components.schemas[s.$ref.split('/').pop()!] ?? {};
  return s;
}

const firstType = (s: Schema): string | undefined => (Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type);

/** A value the schema accepts, as far as can be made from it: the mutations start from it, so each one is the only thing wrong. */
function valid(document: Document, schema: Schema | undefined, name: string, rng: Rng, depth = 0): unknown {
  const s = resolve(document, schema);
  if (depth > 8) return undefined;
  if (s.const !== undefined) return s.const;
  if (s.examples?.[0] !== undefined) return s.examples[0];
  if (s.example !== undefined) return s.example;
  if (s.default !== undefined) return s.default;
  if (Array.isArray(s.enum)) return s.enum.find((v: unknown) => v !== null);
  const branches = s.oneOf ?? s.anyOf;
  if (Array.isArray(branches)) {
    const nonNull = branches.filter((b: Schema) => resolve(document, b).type !== 'null');
    const merged: Schema = { ...s, oneOf: undefined, anyOf: undefined };
    const branch = resolve(document, nonNull[0]);
    return valid(document, { ...merged, ...branch, properties: { ...merged.properties, ...branch.properties }, required: [...(merged.required ?? []), ...(branch.required ?? [])] }, name, rng, depth + 1);
  }
  if (Array.isArray(s.allOf)) {
    const merged: Schema = { type: 'object', properties: {}, required: [] };
    for (const part of s.allOf.map((p: Schema) => resolve(document, p))) {
      Object.assign(merged.properties, part.properties);
      merged.required.push(...(part.required ?? []));
    }
    return valid(document, merged, name, rng, depth + 1);
  }
  switch (firstType(s) ?? (s.properties ? 'object' : undefined)) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const key of s.required ?? []) out[key] = valid(document, s.properties?.[key], key, rng, depth + 1);
      return out;
    }
    case 'array':
      return s.minItems ? Array.from({ length: s.minItems }, () => valid(document, s.items, name, rng, depth + 1)) : [];
    case 'integer':
    case 'number':
      return s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 1);
    case 'boolean':
      return true;
    case 'string': {
      if (typeof s.pattern === 'string') {
        const prefix = /^\^([A-Za-z]+):/.exec(s.pattern)?.[1];
        if (prefix && fixtures[prefix]) return fixtures[prefix];
      }
      switch (s.format) {
        case 'date-time':
          return ctx.clock.now().toISOString();
        case 'date':
          return '1990-01-01';
        case 'email':
          return 'fuzz@example.com';
        case 'uri':
          return 'https://example.com/fuzz';
        case 'currency-code':
          return 'USD';
        case 'iso3166-1-alpha-2':
          return 'US';
        case 'e.164':
          return '+14155550123';
      }
      if (typeof s.pattern === 'string') {
        try {
          const [sample] = fc.sample(fc.stringMatching(new RegExp(s.pattern)), { seed: rng.nextInt(), numRuns: 1 });
          if (sample !== undefined && (s.maxLength === undefined || sample.length <= s.maxLength)) return sample;
        } catch {
          // a pattern fast-check cannot generate from: fall through
        }
      }
      return 'f'.repeat(Math.max(1, s.minLength ?? 1));
    }
    default:
      return name.toLowerCase().includes('amount') ? 100 : 'fuzz';
  }
}

/** Every declared property of an object schema (with its branches and parts), top level. */
function propertiesOf(document: Document, schema: Schema | undefined): Record<string, Schema> {
  const s = resolve(document, schema);
  const out: Record<string, Schema> = { ...(s.properties ?? {}) };
  for (const part of [...(s.oneOf ?? []), ...(s.anyOf ?? []), ...(s.allOf ?? [])]) Object.assign(out, propertiesOf(document, part));
  return out;
}

/** The wrong values tried for one property: first those every property gets (`core` of them), then those a seeded pick chooses from. */
function replacementsFor(document: Document, name: string, schema: Schema): { values: unknown[]; core: number } {
  const s = resolve(document, schema);
  const type = firstType(s);
  const amount = /amount/i.test(name);
  // Every property: number↔string, object, array, null, true; an amount field also its huge numbers.
  const core = [...WRONG_TYPES.slice(0, 6), ...(amount ? [raw('1e400'), raw('9223372036854775808'), -1] : [])];
  const out: unknown[] = [...core, ...WRONG_TYPES.slice(6)];
  if (type === 'string' || s.enum || s.format || s.pattern) out.push(...ODD_STRINGS);
  if (type === 'integer' || type === 'number' || /amount|seconds|percentage|limit/i.test(name)) out.push(...HUGE_NUMBERS, '100', raw('1e400'));
  if (type === 'array') out.push(Array.from({ length: 1_000 }, () => 'x'), [LONG], [null], [[[]]]);
  if (type === 'object' || s.properties) out.push(Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`k${i}`, i])), { __proto__: null, constructor: { prototype: { admin: true } } });
  return { values: out, core: core.length };
}

function setPath(body: unknown, path: string[], value: unknown): unknown {
  const copy = structuredClone(body) as Record<string, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) {
    if (node[key] === null || typeof node[key] !== 'object' || Array.isArray(node[key])) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
  return copy;
}

// ---- requests -------------------------------------------------------------------------------

interface Case {
  label: string;
  method: string;
  url: string;
  headers?: Record<string, string>;
  payload?: string | Buffer;
}

/** The value with every example id of a kind the fixtures hold replaced by the real one. */
function withFixtures(value: unknown): unknown {
  if (typeof value === 'string') {
    const prefix = /^([A-Za-z]+):[0-9a-f-]{36}$/.exec(value)?.[1];
    return (prefix && fixtures[prefix]) ?? value;
  }
  if (Array.isArray(value)) return value.map(withFixtures);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withFixtures(v)]));
}

function casesFor(document: Document, path: string, method: string, operation: Operation, rng: Rng): Case[] {
  const cases: Case[] = [];
  const parameters = operation.parameters ?? [];
  const pathParams = parameters.filter((p) => p.in === 'path');
  const queryParams = parameters.filter((p) => p.in === 'query');
  const headerParams = parameters.filter((p) => p.in === 'header');
  const prefixOf = (p: Parameter) => (typeof p.schema?.pattern === 'string' ? /^\^([A-Za-z]+):/.exec(p.schema.pattern)?.[1] : undefined);
  const goodPath: Record<string, string> = {};
  for (const p of pathParams) {
    // A DELETE gets the document's example id, not the fixture: the operations after it still need the customer.
    const prefix = method === 'DELETE' && prefixOf(p) !== 'Token' ? undefined : prefixOf(p);
    goodPath[p.name] = encodeURIComponent(String((prefix && fixtures[prefix]) ?? exampleOf(p) ?? valid(document, p.schema, p.name, rng)));
  }
  const urlWith = (params: Record<string, string>, query = '') => {
    let url = path;
    for (const [name, value] of Object.entries(params)) url = url.replace(`{${name}}`, value);
    return `${BASE}${url}${query ? `?${query}` : ''}`;
  };
  const goodQueryPairs = queryParams
    .filter((p) => p.required || (prefixOf(p) && fixtures[prefixOf(p)!]))
    .map((p) => [p.name, String(prefixOf(p) && fixtures[prefixOf(p)!] ? fixtures[prefixOf(p)!] : (exampleOf(p) ?? valid(document, p.schema, p.name, rng)))] as const);
  const queryWith = (name?: string, value?: string) =>
    [...goodQueryPairs.filter(([n]) => n !== name).map(([n, v]) => `${encodeURIComponent(n)}=${encodeURIComponent(v)}`), ...(name ? [`${encodeURIComponent(name)}=${value}`] : [])].join('&');

  const json = operation.requestBody?.content['application/json'];
  const multipart = operation.requestBody?.content['multipart/form-data'];
  const goodBody = json ? (baselines[`${method} ${path}`] ?? withFixtures(json.example ?? Object.values(json.examples ?? {})[0]?.value ?? valid(document, json.schema, '', rng))) : undefined;
  const jsonHeaders = { 'content-type': 'application/json' };
  const goodPayload = goodBody === undefined ? {} : { headers: jsonHeaders, payload: toJsonText(goodBody) };

  // The baseline: the best-formed request the document allows us to build (any status < 500).
  cases.push({ label: 'baseline', method, url: urlWith(goodPath, queryWith()), ...goodPayload });

  for (const p of pathParams) {
    for (const value of rng.pick(hostilePathValues(prefixOf(p), rng), 5 * SCALE, PATH_CORE)) {
      cases.push({ label: `path ${p.name}=${value.slice(0, 40)}`, method, url: urlWith({ ...goodPath, [p.name]: value }, queryWith()), ...goodPayload });
    }
  }
  for (const p of queryParams) {
    // A seeded pick per parameter (all of them with FUZZ_FULL): each kind of value still reaches many parameters.
    for (const value of rng.pick(hostileQueryValues(p.name, p.schema, rng), 3 * SCALE, QUERY_CORE)) {
      cases.push({ label: `query ${p.name}=${value.slice(0, 40)}`, method, url: urlWith(goodPath, queryWith(p.name, value)), ...goodPayload });
    }
  }
  // An unknown query parameter, and one named like a prototype key.
  cases.push({ label: 'query unknown', method, url: urlWith(goodPath, [queryWith(), 'unknownParam=1', '__proto__=x', 'constructor[prototype]=1'].filter(Boolean).join('&')), ...goodPayload });
  for (const p of headerParams) {
    for (const value of rng.pick(HOSTILE_HEADERS, 3 * SCALE)) {
      cases.push({ label: `header ${p.name}=${value.slice(0, 20)}`, method, url: urlWith(goodPath, queryWith()), headers: { ...(goodPayload.headers ?? {}), [p.name]: value }, ...(goodPayload.payload === undefined ? {} : { payload: goodPayload.payload }) });
    }
  }

  const url = urlWith(goodPath, queryWith());
  const body = (label: string, payload: string | Buffer, contentType = 'application/json') => cases.push({ label: `body ${label}`, method, url, headers: { 'content-type': contentType }, payload });
  const malformed: Array<() => void> = [];
  const malformedBody = (...args: Parameters<typeof body>) => malformed.push(() => body(...args));

  // Malformed bodies go to every operation, those that take no body too (a body where none is expected).
  {
    // Sent to every operation: no body, null, an array, not JSON, depth 2000, a wrong content type.
    malformedBody('empty', '');
    malformedBody('null', 'null');
    malformedBody('array', '[]');
    malformedBody('not json', 'hello world');
    malformedBody('deep arrays', `${'['.repeat(2_000)}${']'.repeat(2_000)}`);
    malformedBody('deep objects', `${'{"a":'.repeat(2_000)}1${'}'.repeat(2_000)}`);
    malformedBody('text/plain', toJsonText(goodBody ?? {}), 'text/plain');
    // The rest: a seeded pick per operation.
    malformedBody('array of object', toJsonText([goodBody ?? {}]));
    malformedBody('string', '"x"');
    malformedBody('number', '1e400');
    malformedBody('true', 'true');
    malformedBody('truncated', '{"a": ');
    malformedBody('trailing garbage', `${toJsonText(goodBody ?? {})}xyz`);
    malformedBody('nul bytes', '\u0000\u0001\u0002');
    malformedBody('not utf-8', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]));
    malformedBody('BOM', `\ufeff${toJsonText(goodBody ?? {})}`);
    malformedBody('deep in a string', JSON.stringify({ a: '['.repeat(2_000) }));
    malformedBody('proto', '{"__proto__":{"admin":true}}');
    malformedBody('constructor', '{"constructor":{"prototype":{"admin":true}}}');
    malformedBody('form', 'a=1&b=2', 'application/x-www-form-urlencoded');
    malformedBody('multipart without boundary', '--x\r\n\r\n', 'multipart/form-data');
    malformedBody('multipart garbage', '--x\r\ncontent-disposition: form-data; name="file"; filename="a.csv"\r\n\r\nabc', 'multipart/form-data; boundary=x');
    malformedBody('json charset', toJsonText(goodBody ?? {}), 'application/json; charset=utf-16');
    malformedBody('odd json type', toJsonText(goodBody ?? {}), 'application/vnd.api+json');
    malformedBody('over the limit', JSON.stringify({ a: 'x'.repeat(1_100_000) }));
    for (const add of rng.pick(malformed, 6 * SCALE, 7)) add();
  }

  // Multipart uploads (bulk CSV, documents) are not mutated field by field: their parts are files,
  // which test/http/document-bombs.test.ts and bulk-customers.test.ts cover; the malformed bodies
  // above (JSON where a form is expected, broken forms, wrong types) still reach their parsing.
  if (multipart || !json) return cases;

  const top = resolve(document, json.schema);
  const plain = (goodBody ?? {}) as Record<string, unknown>;
  if (goodBody !== null && typeof goodBody === 'object' && !Array.isArray(goodBody)) {
    const text = toJsonText(goodBody);
    const firstKey = Object.keys(plain)[0];
    if (firstKey) body('duplicated key', `${text.slice(0, -1)},${JSON.stringify(firstKey)}:{"dup":[1,2]}}`);
    body('duplicated key twice', `{"z":1,"z":"two","z":null${text.length > 2 ? `,${text.slice(1)}` : '}'}`);
    body('unknown property', toJsonText({ ...plain, unknownProperty: 1, anotherOne: { x: [] } }));
    body('deep but allowed', toJsonText({ ...plain, unknownProperty: JSON.parse(`${'{"a":'.repeat(60)}1${'}'.repeat(60)}`) }));
    body('many properties', toJsonText({ ...plain, ...Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`p${i}`, i])) }));
  }
  const props = propertiesOf(document, top);
  for (const [name, schema] of Object.entries(props)) {
    const replacements = replacementsFor(document, name, schema);
    for (const value of rng.pick(replacements.values, 2 * SCALE, replacements.core)) body(`${name}=${toJsonText(value).slice(0, 30)}`, toJsonText(setPath(goodBody ?? {}, [name], value)));
    // One level down: every property of an object-valued property, each value a seeded pick from the wrong ones.
    const inner = propertiesOf(document, schema);
    for (const [innerName, innerSchema] of Object.entries(inner)) {
      const choices = replacementsFor(document, innerName, innerSchema).values;
      for (const value of rng.pick(choices, SCALE)) {
        body(`${name}.${innerName}=${toJsonText(value).slice(0, 30)}`, toJsonText(setPath(goodBody ?? {}, [name, innerName], value)));
      }
    }
  }
  return cases;
}

function envelopeProblem(response: { statusCode: number; body: string; headers: Record<string, unknown> }): string | undefined {
  if (response.statusCode >= 500) return 'status >= 500';
  if (response.statusCode < 400) return undefined;
  let body: { status?: unknown; code?: unknown; message?: unknown; details?: unknown };
  try {
    body = JSON.parse(response.body);
  } catch {
    return 'a 4xx body that is not JSON';
  }
  if (body === null || typeof body !== 'object') return 'a 4xx body that is not an object';
  if (body.status !== response.statusCode) return 'envelope status differs from the response';
  if (typeof body.code !== 'string' || (ERROR_CODES as Record<string, number>)[body.code] !== response.statusCode) return `code ${String(body.code)} is not a registered code of this status`;
  if (typeof body.message !== 'string' || body.message === '') return 'no message';
  if (body.details !== undefined && (body.details === null || typeof body.details !== 'object' || Array.isArray(body.details))) return 'details is not an object';
  if (!String(response.headers['content-type'] ?? '').startsWith('application/json')) return 'a 4xx that is not application/json';
  return undefined;
}

/**
 * Operations that change what the other baselines rely on, sent after all the rest (in the document's
 * order): a verification, or a mutated customer, takes the fixture customer's KYC out of APPROVED
 * (quotes and transfers then answer 403 USER_NOT_READY); a mutated PATCH /config drops the umaDomain
 * invitations and UMA lookups need; a cancel ends the fixture transaction; the clock's advance expires quotes.
 */
const DISTURBS_FIXTURES = [/^\w+ (\/sandbox)?\/verifications\b/, /^PATCH \/customers\/\{customerId\}$/, /^PATCH \/config$/, /^POST \/transactions\/\{transactionId\}\/cancel$/, /^POST \/sandbox\/clock\/advance$/];

/**
 * The money operations whose baseline must succeed: a baseline that answers a 4xx leaves every body
 * mutation of the operation stopped where the baseline stops, so the service's own checks go unfuzzed.
 */
const MUST_REACH_SERVICE = ['POST /quotes', 'POST /transfer-out', 'POST /transfer-in', 'POST /sandbox/deposits', 'POST /sandbox/internal-accounts/{accountId}/fund', 'POST /sandbox/uma/receive'];

describe('hostile inputs to every operation of the OpenAPI document', () => {
  it('never answer a 500, and every 4xx is the error envelope', async () => {
    const served = await ctx.app.inject({ method: 'GET', url: `${BASE}/openapi.json` });
    expect(served.statusCode).toBe(200);
    const document = served.json() as Document;
    const rng = new Rng(SEED);
    const failures: string[] = [];
    let operations = 0;
    let requests = 0;
    const baselineAnswers: Record<string, string> = {};
    const started = Date.now();
    const all = Object.entries(document.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ path, method: method.toUpperCase(), operation })));
    const disturbs = ({ path, method }: { path: string; method: string }) => DISTURBS_FIXTURES.some((pattern) => pattern.test(`${method} ${path}`));
    for (const { path, method, operation } of [...all.filter((o) => !disturbs(o)), ...all.filter(disturbs)]) {
      operations++;
      for (const c of casesFor(document, path, method, operation, rng)) {
        requests++;
        const response = await ctx.app.inject({
          method: c.method as 'GET',
          url: c.url,
          headers: { authorization: ctx.platform.auth, ...c.headers },
          ...(c.payload === undefined ? {} : { payload: c.payload }),
        });
        if (c.label === 'baseline') baselineAnswers[`${method} ${path}`] = `${response.statusCode} ${response.body.slice(0, 200)}`;
        const problem = envelopeProblem(response);
        if (process.env.FUZZ_DEBUG) {
          const code = response.statusCode >= 400 ? (JSON.parse(response.body) as { code: string }).code : '';
          if (c.label === 'baseline' || process.env.FUZZ_DEBUG === 'all') console.info(`${response.statusCode} ${code} ${c.method} ${path} [${c.label}] ${response.statusCode >= 400 ? response.body.slice(0, 160) : ''}`);
        }
        if (problem) failures.push(`${c.method} ${path} [${c.label}] → ${response.statusCode} ${problem}: ${response.body.slice(0, 200)}`);
      }
    }
    console.info(`fuzz: ${operations} operations, ${requests} requests, ${Date.now() - started} ms, seed ${SEED}`);
    expect(operations).toBeGreaterThanOrEqual(80);
    expect(failures.slice(0, 60), `${failures.length} failures`).toEqual([]);
    const unreached = MUST_REACH_SERVICE.filter((key) => !/^2\d\d /.test(baselineAnswers[key] ?? '')).map((key) => `${key} → ${baselineAnswers[key] ?? 'not in the document'}`);
    expect(unreached, 'baselines of money operations that do not reach the service').toEqual([]);
  }, 300_000);
});
