/**
 * Everything an upstream SDK sends, Corridor takes; everything Corridor may answer, the SDK reads.
 * An integrator points the upstream's generated SDK at Corridor with only the base URL changed:
 * the SDK sends exactly the upstream's parameter names, field names and enum values, every
 * optional field it has, and no body where the upstream's body is optional; it parses answers
 * by the upstream's schemas. helpers/upstream-conformance.ts checks each answer the tests see;
 * this file checks the shapes themselves, for the operations of config, tokens, internal and
 * external accounts, withdrawal fees, exchange rates, sandbox, directories, quotes,
 * transactions, invitations, receiver lookups, contact verification and SCA, from both OpenAPI documents (Corridor's as the running service serves it):
 *
 * - requests: every request the upstream's schema allows (every union branch and enum value,
 *   with all or only the required fields) against the schema Corridor validates it with;
 * - answers: every answer Corridor's response schema allows against the upstream's schema for
 *   that operation and status, so no answer a test does not happen to provoke can break an SDK.
 *
 * A field, parameter, enum value or union branch one side has and the other refuses is a breach.
 * Values are each side's to check (a pattern, a length, a range): generated values cannot satisfy
 * every pattern, and those refusals are not about the shape.
 */
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';
import { call, fundedCustomer, paymentInput, startPayment } from '../helpers/payments.js';
import { fillDifferences, isProcessing, upstreamDocument } from '../helpers/upstream-conformance.js';

type Json = Record<string, any>;
interface Operation {
  parameters?: Json[];
  requestBody?: Json;
  responses?: Record<string, Json>;
}
interface Document {
  paths: Record<string, Record<string, Operation> & { parameters?: Json[] }>;
  components: Json;
}

/** The upstream paths of the modules this file checks. */
const CHECKED_PATHS =
  /^\/(config|tokens|internal-accounts|customers\/internal-accounts|platform\/internal-accounts|customers\/external-accounts|platform\/external-accounts|crypto|exchange-rates|sandbox|vasps|uma-providers|discoveries|quotes|transactions|invitations|receiver\/external-account|sca|customers\/\{customerId\}\/verify-(email|phone))(\/|$)/;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** A refusal of a value, each side's to make: the shape is the same. */
const VALUE_KEYWORDS = new Set([
  'pattern', 'format', 'minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum',
  'minItems', 'maxItems', 'minProperties', 'maxProperties', 'uniqueItems', 'multipleOf',
]);

/** A union's own keywords only restate its branches' errors. */
const UNION_KEYWORDS = new Set(['oneOf', 'anyOf', 'if']);

/** An error a choice made on purpose explains; each says where it is decided. */
type Explained = (operation: string, error: ErrorObject, value: unknown) => boolean;

/** Upstream request values Corridor refuses on purpose. */
const REFUSED_ON_PURPOSE: Explained[] = [
  // UPSTREAM-FACTS §5.3: TOTP "is not valid for per-transaction challenges" (the upstream's own rule).
  (operation, error, value) => /^POST \/quotes(\/\{\}\/execute)?$/.test(operation) && error.instancePath === '/scaFactor' && valueAt(value, error.instancePath) === 'TOTP',
];

/** Answer shapes Corridor declares otherwise on purpose. */
const ANSWERED_OTHERWISE: Explained[] = [
  // quotes/schemas.ts, transactions/schemas.ts declare paymentInstructions open: they are
  // internal-accounts' funding instructions (or an embedded wallet's payloadToSign), stored with the
  // quote and passed through as they are; each answer carrying them is checked by upstream-conformance.
  (_operation, error) => /^(\/data\/\d+)?\/paymentInstructions\//.test(error.instancePath),
  // SPEC.md §7 (UPSTREAM-FACTS §7.1 N2): the 500 code is SERVICE_SWITCH_ERROR, the upstream's GRID_SWITCH_ERROR.
  (_operation, error, value) => error.instancePath === '/code' && valueAt(value, '/code') === 'SERVICE_SWITCH_ERROR',
];

const pathKey = (path: string) => path.replace(/\{[^}]+\}/g, '{}');

/**
 * The upstream's discriminated unions as `if`/`then` per tag value: ajv then reports only the
 * errors of the branch the tag names (its `discriminator` keyword cannot read the upstream's
 * tags, which sit inside `allOf`).
 */
function byTag(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(byTag);
  if (!isObject(node)) return node;
  const out: Json = Object.fromEntries(Object.entries(node).map(([key, value]) => [key, byTag(value)]));
  const mapping = (out.discriminator as Json | undefined)?.mapping as Record<string, string> | undefined;
  if (out.oneOf && mapping) {
    const tag = (out.discriminator as Json).propertyName as string;
    const branches = Object.entries(mapping).map(([value, ref]) => ({ if: { properties: { [tag]: { const: value } }, required: [tag] }, then: { $ref: ref } }));
    delete out.oneOf;
    delete out.discriminator;
    out.allOf = [...((out.allOf as unknown[] | undefined) ?? []), ...branches, { properties: { [tag]: { enum: Object.keys(mapping) } } }];
  }
  return out;
}

function resolver(document: Document) {
  return (node: unknown): Json => {
    let current = node as Json;
    for (let hops = 0; typeof current?.$ref === 'string' && hops < 20; hops++) {
      current = (current.$ref as string)
        .slice(2)
        .split('/')
        .reduce<Json>((n, part) => n[part] as Json, document as unknown as Json);
    }
    return current;
  };
}

/**
 * The number of variants that shows every branch of every union and every value of every enum
 * at least once: variant `k` takes branch and value `k` modulo their count.
 */
function variantCount(schema: unknown, resolve: (node: unknown) => Json, seen = new Set<unknown>()): number {
  const node = resolve(schema);
  if (!node || typeof node !== 'object' || seen.has(node)) return 1;
  seen.add(node);
  let count = Math.max(1, (node.enum as unknown[] | undefined)?.length ?? 0, (node.oneOf ?? node.anyOf ?? []).length);
  for (const child of [...(node.allOf ?? []), ...(node.oneOf ?? []), ...(node.anyOf ?? []), ...Object.values((node.properties ?? {}) as Json), node.items]) {
    if (child) count = Math.max(count, variantCount(child, resolve, seen));
  }
  seen.delete(node);
  return count;
}

const STRING_BY_FORMAT: Record<string, string> = {
  'date-time': '2025-08-15T14:30:00Z',
  date: '1990-01-15',
  email: 'someone@example.com',
  uri: 'https://example.com/path',
  url: 'https://example.com/path',
};

interface Shape {
  resolve: (node: unknown) => Json;
  /** A request leaves out read-only properties: they are the server's, and an SDK does not send them. */
  request: boolean;
}

/**
 * One value the schema allows: variant `k` (see variantCount); `full` has every optional property
 * (as when an integrator sets them all), otherwise only the required ones.
 */
function instance(schema: unknown, shape: Shape, k: number, full: boolean, depth = 0): unknown {
  const { resolve } = shape;
  const node = resolve(schema);
  if (depth > 12 || !node) return {};
  if (node.const !== undefined) return node.const;
  if (Array.isArray(node.enum)) return node.enum[k % node.enum.length];
  const union = (node.oneOf ?? node.anyOf) as unknown[] | undefined;
  if (union) {
    const branches = union.filter((branch) => resolve(branch).type !== 'null');
    // A branch that only names which of the object's own properties are required (the proof of
    // ScaLoginCompleteRequest: `anyOf: [{required: [code]}, {required: [passkeyAssertion, origin]}]`) sends those.
    const named = resolve(branches[k % branches.length]);
    if (node.properties && !named.properties && Array.isArray(named.required)) {
      return instance({ ...node, oneOf: undefined, anyOf: undefined, required: [...((node.required as string[] | undefined) ?? []), ...(named.required as string[])] }, shape, k, full, depth + 1);
    }
    const chosen = instance(branches[k % branches.length], shape, k, full, depth + 1);
    const base = node.properties ? instance({ ...node, oneOf: undefined, anyOf: undefined }, shape, k, full, depth + 1) : undefined;
    return isObject(base) && isObject(chosen) ? { ...base, ...chosen } : chosen;
  }
  if (node.allOf) {
    const parts = (node.allOf as unknown[]).map((part) => instance(part, shape, k, full, depth + 1)).filter((part) => part !== undefined);
    const own = node.properties ? instance({ ...node, allOf: undefined }, shape, k, full, depth + 1) : undefined;
    // `allOf: [{$ref: PaymentRail}, {}]` narrows a string: the value is the first part's.
    if (!parts.some(isObject)) return parts[0];
    return Object.assign({}, ...parts.filter(isObject), isObject(own) ? own : {});
  }
  const example = node.example ?? (Array.isArray(node.examples) ? node.examples[0] : undefined);
  const type = [node.type].flat().find((t) => t !== 'null') ?? (node.properties ? 'object' : undefined);
  switch (type) {
    case 'string':
      return typeof example === 'string' ? example : (STRING_BY_FORMAT[node.format as string] ?? 'x');
    case 'integer':
    case 'number':
      return typeof example === 'number' ? example : Math.max(1, Number(node.minimum ?? 1));
    case 'boolean':
      return k % 2 === 0;
    case 'array':
      return [instance(node.items, shape, k, full, depth + 1)];
    case 'object': {
      const required = new Set((node.required ?? []) as string[]);
      const object: Json = {};
      for (const [name, property] of Object.entries((node.properties ?? {}) as Json)) {
        if (shape.request && resolve(property).readOnly) continue;
        if (full || required.has(name)) object[name] = instance(property, shape, k, full, depth + 1);
      }
      if (!node.properties && node.additionalProperties) object.someKey = 'someValue';
      return object;
    }
    default:
      // A schema that constrains nothing (`{}` in an allOf) adds nothing.
      return example;
  }
}

const isObject = (value: unknown): value is Json => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * Why `value` breaks the shape `validate` takes, one line per error, or []: errors of value checks
 * (VALUE_KEYWORDS) are not about the shape, nor are a union's own (UNION_KEYWORDS), nor those
 * `explained` lists.
 */
function shapeBreaches(validate: ReturnType<Ajv2020['compile']>, value: unknown, operation: string, label: string, explained: Explained[]): string[] {
  if (validate(value)) return [];
  return (validate.errors ?? [])
    .filter((error: ErrorObject) => !VALUE_KEYWORDS.has(error.keyword) && !UNION_KEYWORDS.has(error.keyword))
    .filter((error) => !explained.some((explains) => explains(operation, error, value)))
    .map((error) => `${label} ${error.instancePath || '/'} ${error.message ?? error.keyword} ${JSON.stringify(error.params)}`);
}

function valueAt(value: unknown, pointer: string): unknown {
  return pointer
    .split('/')
    .slice(1)
    .reduce<unknown>((node, part) => (node as Json | undefined)?.[part], value);
}

/** Every operation of the checked paths both documents have: [`METHOD /path`, upstream's, Corridor's]. */
function sharedOperations(upstream: Document, corridor: Document): [string, Operation & { pathParameters: Json[] }, Operation][] {
  const shared: [string, Operation & { pathParameters: Json[] }, Operation][] = [];
  for (const [path, operations] of Object.entries(upstream.paths)) {
    if (!CHECKED_PATHS.test(path)) continue;
    const ours = Object.entries(corridor.paths).find(([p]) => pathKey(p) === pathKey(path))?.[1];
    for (const method of METHODS) {
      const theirs = operations[method];
      if (!theirs || !ours?.[method]) continue;
      shared.push([`${method.toUpperCase()} ${pathKey(path)}`, { ...theirs, pathParameters: operations.parameters ?? [] }, ours[method]]);
    }
  }
  return shared;
}

let ctx: TestContext;
let upstream: Document;
let corridor: Document;
let ajv: Ajv2020;

const compileCorridor = (schema: unknown) => ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"corridor#/components/')) as Json);
const compileUpstream = (schema: unknown) => ajv.compile(JSON.parse(JSON.stringify(byTag(schema)).replaceAll('"#/components/', '"upstream#/components/')) as Json);

// Like helpers/upstream-conformance.ts: a clone without the reference beside it runs without this check (CI never does).
describe.runIf(Boolean(inject('upstreamOpenapi')))('the upstream SDK against Corridor', () => {
  beforeAll(async () => {
    ctx = await createTestContext();
    upstream = upstreamDocument() as unknown as Document;
    const served = await ctx.app.inject({ method: 'GET', url: `${BASE}/openapi.json` });
    expect(served.statusCode, served.body).toBe(200);
    corridor = served.json() as Document;
    ajv = new Ajv2020({ strict: false, allErrors: true, discriminator: true, validateFormats: false });
    ajv.addSchema({ $id: 'corridor', components: corridor.components });
    ajv.addSchema({ $id: 'upstream', components: byTag(upstream.components) as Json });
  });
  afterAll(() => ctx.close());

  it('the checked modules serve the upstream operations by the same method and path, answering only success statuses the upstream lists', () => {
    const shared = sharedOperations(upstream, corridor);
    // The operations integrators use most; each must be found by method and path, parameter names aside.
    for (const operation of ['GET /config', 'PATCH /config', 'POST /tokens', 'GET /tokens/{}', 'DELETE /tokens/{}', 'GET /exchange-rates', 'POST /quotes', 'POST /quotes/{}/execute', 'GET /transactions', 'POST /transactions/{}/cancel', 'POST /customers/external-accounts', 'GET /platform/internal-accounts', 'POST /customers/{}/verify-email/confirm', 'POST /sca/login/complete', 'POST /quotes/{}/authorize']) {
      expect(shared.map(([name]) => name)).toContain(operation);
    }
    // An SDK expecting 200 that gets 201 (say) fails: error statuses are the spec's to list (SPEC.md §7).
    const unlisted = shared.flatMap(([operation, theirs, ours]) =>
      Object.keys(ours.responses ?? {})
        .filter((status) => Number(status) < 300 && !theirs.responses?.[status])
        .map((status) => `${operation} → ${status}`),
    );
    expect(unlisted).toEqual([]);
  });

  it('every upstream path, query and header parameter is one Corridor declares, and takes every upstream enum value', () => {
    const resolveUp = resolver(upstream);
    const resolveOurs = resolver(corridor);
    const breaches: string[] = [];
    for (const [operation, theirs, ours] of sharedOperations(upstream, corridor)) {
      const declared = (ours.parameters ?? []).map(resolveOurs);
      for (const parameter of [...theirs.pathParameters, ...(theirs.parameters ?? [])].map(resolveUp)) {
        // Header names are case-insensitive; Corridor declares them in lower case.
        const same = (p: Json) => p.in === parameter.in && (p.in === 'header' ? String(p.name).toLowerCase() === String(parameter.name).toLowerCase() : p.name === parameter.name);
        const match = declared.find(same);
        if (!match) {
          breaches.push(`${operation}: ${parameter.in} parameter ${parameter.name as string} is not declared`);
          continue;
        }
        const validate = compileCorridor(match.schema);
        const values = (resolveUp(parameter.schema).enum as unknown[] | undefined) ?? [instance(parameter.schema, { resolve: resolveUp, request: true }, 0, true)];
        for (const value of values) breaches.push(...shapeBreaches(validate, value, operation, `${operation} ${parameter.in} ${parameter.name as string}=${JSON.stringify(value)}`, REFUSED_ON_PURPOSE));
      }
    }
    expect(breaches).toEqual([]);
  });

  it('every request body the upstream schema allows, every branch and enum value, with all or only its required fields, has a shape Corridor takes', () => {
    const resolveUp = resolver(upstream);
    const breaches: string[] = [];
    let checked = 0;
    for (const [operation, theirs, ours] of sharedOperations(upstream, corridor)) {
      const body = resolveUp(theirs.requestBody);
      const schema = body?.content?.['application/json']?.schema as unknown;
      if (!schema) continue;
      const oursBody = resolver(corridor)(ours.requestBody);
      const oursSchema = oursBody?.content?.['application/json']?.schema as unknown;
      if (!oursSchema) {
        breaches.push(`${operation}: takes no JSON body`);
        continue;
      }
      const validate = compileCorridor(oursSchema);
      const variants = variantCount(schema, resolveUp);
      for (let k = 0; k < variants; k++) {
        for (const full of [true, false]) {
          const request = instance(schema, { resolve: resolveUp, request: true }, k, full);
          breaches.push(...shapeBreaches(validate, request, operation, `${operation} (variant ${k}, ${full ? 'every field' : 'required fields'})`, REFUSED_ON_PURPOSE));
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect([...new Set(breaches)]).toEqual([]);
  });

  it('every answer Corridor declares, errors too, every branch and enum value, with all or only its required fields, is one the upstream SDK reads', () => {
    const resolveOurs = resolver(corridor);
    const resolveUp = resolver(upstream);
    const breaches: string[] = [];
    let checked = 0;
    for (const [operation, theirs, ours] of sharedOperations(upstream, corridor)) {
      for (const [status, response] of Object.entries(ours.responses ?? {})) {
        const schema = resolveOurs(response).content?.['application/json']?.schema as unknown;
        const upstreamSchema = resolveUp(theirs.responses?.[status])?.content?.['application/json']?.schema as unknown;
        // A success the upstream does not list is upstream-conformance's breach, on the answer;
        // error statuses are the spec's to list (SPEC.md §7), their envelope checked where both have it.
        if (!schema || !upstreamSchema) continue;
        const validate = compileUpstream(upstreamSchema);
        const variants = variantCount(schema, resolveOurs);
        for (let k = 0; k < variants; k++) {
          for (const full of [true, false]) {
            const answer = instance(schema, { resolve: resolveOurs, request: false }, k, full);
            if (isProcessing(operation, Number(status), answer)) continue;
            fillDifferences(answer);
            breaches.push(...shapeBreaches(validate, answer, operation, `${operation} → ${status} (variant ${k}, ${full ? 'every field' : 'required fields'})`, ANSWERED_OTHERWISE));
            checked++;
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect([...new Set(breaches)]).toEqual([]);
  });

  it('the bodies the upstream marks optional may be left out, or sent empty with a JSON content type', async () => {
    const p = await ctx.newPlatform();
    const customer = await fundedCustomer(ctx, p, 100_000);
    const forms: [string, Record<string, string>, string | undefined][] = [
      ['no body', {}, undefined],
      ['an empty body declared JSON', { 'content-type': 'application/json' }, ''],
    ];
    for (const [form, headers, payload] of forms) {
      const input = paymentInput(p, customer);
      await startPayment(ctx, input);
      for (const action of ['confirm', 'cancel']) {
        const response = await ctx.app.inject({
          method: 'POST',
          url: `${BASE}/transactions/${input.transactionId}/${action}`,
          headers: { authorization: p.auth, ...headers },
          ...(payload === undefined ? {} : { payload }),
        });
        expect(response.statusCode, `${action} with ${form}: ${response.body}`).toBe(200);
      }
      const cancelled = await call(ctx, p, 'GET', `/transactions/${input.transactionId}`);
      expect(cancelled.json()).toMatchObject({ status: 'FAILED', receiptDeliveryConfirmedAt: expect.any(String) });
    }
  });
});
