/**
 * Every JSON answer the HTTP tests see, checked against the upstream's own schema for its
 * operation and status: what the upstream's generated SDKs deserialise when an integrator points
 * them at Corridor. The reference (../shared/reference/upstream-openapi.yaml, beside the
 * repository as in CI) is read once by global-setup.ts; a clone without it runs the suite without
 * this check, and CI (CI=true) refuses to. createTestContext records each answer here and fails
 * the test file in its close() when any answer broke the schema.
 *
 * On an operation the upstream has, a success status it does not list for it is a breach (an
 * SDK expecting 200 gets 201, say); error statuses are the spec's to list (SPEC.md §7). Operations
 * the upstream does not have are Corridor's (sandbox additions, health, metrics) and are not
 * checked. Where SPEC.md or a module README chooses otherwise than the upstream, the difference
 * is named in DIFFERENCES; the spec's `{status: PROCESSING}` answers pass where the spec allows
 * them (PROCESSING_OPERATIONS).
 */
import { readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { inject } from 'vitest';

type Json = Record<string, unknown>;
interface UpstreamDocument {
  paths: Record<string, Record<string, { responses?: Record<string, Json> }>>;
  webhooks: Record<string, { post: { requestBody: { content: Record<string, { schema: Json }> } } }>;
  components: Json;
}

/** A difference chosen on purpose; each entry says where it is decided. */
interface Difference {
  /** Puts into the parsed body what the difference leaves out, where it is an absence. */
  fill?: (body: unknown) => void;
  /** An error the difference explains, on the operation `METHOD /path` (`{}` for parameters). */
  explains?: (operation: string, error: ErrorObject) => boolean;
}

const DIFFERENCES: Difference[] = [
  // transactions/README.md: the platform's own transfers have no customer, so no customerId/platformCustomerId.
  {
    fill: (body) =>
      walk(body, (object) => {
        if (typeof object.id === 'string' && object.id.startsWith('Transaction:') && object.customerId === undefined) {
          object.customerId = 'Customer:00000000-0000-0000-0000-000000000000';
          object.platformCustomerId = '';
        }
      }),
  },
  // verifications/README.md: the hosted KYC link is provided by CORRIDOR, not SUMSUB.
  {
    explains: (operation, error) => operation === 'POST /customers/{}/kyc-link' && error.instancePath === '/provider' && error.keyword === 'enum',
  },
];

/** Puts into a parsed answer what the chosen differences leave out (DIFFERENCES), before it is checked. */
export function fillDifferences(body: unknown): void {
  for (const difference of DIFFERENCES) difference.fill?.(body);
}

function walk(value: unknown, visit: (object: Json) => void): void {
  if (Array.isArray(value)) for (const item of value) walk(item, visit);
  else if (value !== null && typeof value === 'object') {
    visit(value as Json);
    for (const item of Object.values(value)) walk(item, visit);
  }
}

/**
 * SPEC.md "WalletOperationProcessing": a 200 `{status: PROCESSING}` the upstream does not model,
 * answered only by the wallet operations the spec names (signed retries, verify, challenge,
 * export, session refresh and revoke). Anywhere else, or with another status, it is checked as
 * any other answer, so it is a breach.
 */
const PROCESSING_OPERATIONS = new Set([
  'POST /auth/credentials',
  'DELETE /auth/credentials/{}',
  'POST /auth/credentials/{}/verify',
  'POST /auth/credentials/{}/challenge',
  'POST /auth/sessions/{}/refresh',
  'DELETE /auth/sessions/{}',
  'POST /internal-accounts/{}/export',
  'PATCH /internal-accounts/{}',
  'PATCH /customers/{}',
]);
export const isProcessing = (operation: string, status: number, body: unknown) =>
  status === 200 && PROCESSING_OPERATIONS.has(operation) && JSON.stringify(body) === '{"status":"PROCESSING"}';

export interface UpstreamConformance {
  /** Checks one answer; `route` is Fastify's route pattern (`/2025-10-13/customers/:customerId`). */
  check(method: string, route: string, status: number, contentType: string, payload: string | undefined): void;
  /** Every breach so far, one line each. */
  breaches(): string[];
}

let shared:
  | {
      document: UpstreamDocument;
      ajv: Ajv2020;
      validators: Map<string, ReturnType<typeof upstreamAnswer>>;
      webhooks: Map<string, ValidateFunction>;
    }
  | undefined;

function load() {
  if (shared) return shared;
  const document = JSON.parse(readFileSync(inject('upstreamOpenapi'), 'utf8')) as UpstreamDocument;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addSchema({ $id: 'upstream', components: document.components });
  shared = { document, ajv, validators: new Map(), webhooks: webhookValidators(document, ajv) };
  return shared;
}

/** The upstream's OpenAPI document, parsed once; only where the reference is beside the repository. */
export function upstreamDocument(): Record<string, unknown> {
  return load().document as unknown as Record<string, unknown>;
}

const compile = (ajv: Ajv2020, schema: unknown) => ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"upstream#/components/')) as Json);

/** Each event type's validator: the upstream webhook whose `type` enum names it. */
function webhookValidators(document: UpstreamDocument, ajv: Ajv2020): Map<string, ValidateFunction> {
  const byType = new Map<string, ValidateFunction>();
  for (const { post } of Object.values(document.webhooks)) {
    const schema = post.requestBody.content['application/json']!.schema;
    const types = JSON.stringify(typeof schema.$ref === 'string' ? resolve(document, schema.$ref) : schema).match(/"type":\{"type":"string","enum":\[([^\]]*)\]/);
    if (!types) continue;
    const validate = compile(ajv, schema);
    for (const type of JSON.parse(`[${types[1]}]`) as string[]) byType.set(type, validate);
  }
  return byType;
}

const pathKey = (path: string) => path.replace(/\{[^}]+\}/g, '{}');

/**
 * What the upstream documents for one operation's answer of this status: nothing when the
 * operation is Corridor's own; otherwise whether it lists the status, and the body's validator
 * where it gives a JSON schema.
 */
function upstreamAnswer(operation: string, status: number): { documented: boolean; validate: ValidateFunction | null } | undefined {
  const { document, ajv, validators } = load();
  const key = `${operation} ${status}`;
  if (validators.has(key)) return validators.get(key);
  const [method, path] = operation.split(' ') as [string, string];
  const entry = Object.entries(document.paths).find(([p]) => pathKey(p) === path)?.[1][method.toLowerCase()];
  let answer: { documented: boolean; validate: ValidateFunction | null } | undefined;
  if (entry) {
    const responses = entry.responses ?? {};
    let response = responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
    if (typeof response?.$ref === 'string') response = resolve(document, response.$ref);
    const schema = (response?.content as Record<string, { schema?: Json }> | undefined)?.['application/json']?.schema;
    answer = { documented: response !== undefined, validate: schema ? compile(ajv, schema) : null };
  }
  validators.set(key, answer);
  return answer;
}

function resolve(document: UpstreamDocument, ref: string): Json {
  return ref
    .slice(2)
    .split('/')
    .reduce<Json>((node, part) => node[part] as Json, document as unknown as Json);
}

/** Why `body` breaks the upstream's schema, or undefined; `explained` drops the errors a difference explains. */
function breach(validate: ValidateFunction, body: unknown, explained: (error: ErrorObject) => boolean): string | undefined {
  fillDifferences(body);
  if (validate(body)) return undefined;
  const unexplained = (validate.errors ?? []).filter((error) => !explained(error));
  // A union's other branches report too; with every error explained, the body is the upstream's.
  if (unexplained.every((error) => error.keyword === 'oneOf' || error.keyword === 'anyOf')) return undefined;
  return unexplained
    .slice(0, 5)
    .map((e) => `${e.instancePath || '/'} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`)
    .join('; ');
}

/**
 * Why a webhook body breaks the upstream's schema for its event type, or undefined (also for
 * Corridor's own event types, and where the reference is not beside the repository).
 */
export function webhookBreach(raw: string): string | undefined {
  if (!inject('upstreamOpenapi')) return undefined;
  const body = JSON.parse(raw) as { type?: unknown };
  const validate = load().webhooks.get(String(body.type));
  const why = validate && breach(validate, body, () => false);
  return why && `webhook ${String(body.type)}: ${why} — ${raw.slice(0, 300)}`;
}

/** The check, or undefined when the reference is not beside the repository (never in CI). */
export function upstreamConformance(base: string): UpstreamConformance | undefined {
  if (!inject('upstreamOpenapi')) return undefined;
  const found: string[] = [];
  return {
    check(method, route, status, contentType, payload) {
      if (!route.startsWith(base)) return;
      const operation = `${method} ${route.slice(base.length).replace(/:[A-Za-z]+/g, '{}')}`;
      const upstream = upstreamAnswer(operation, status);
      if (!upstream) return;
      const json = payload !== undefined && contentType.startsWith('application/json');
      const body: unknown = json ? JSON.parse(payload) : undefined;
      if (isProcessing(operation, status, body)) return;
      // A success the SDK does not expect (201 where it expects 200, say) is a breach too; errors
      // are the spec's to list (SPEC.md §7), and their body is checked below where documented.
      if (!upstream.documented && status < 300) found.push(`${operation} → ${status}: a status the upstream does not list for it`);
      if (!upstream.validate || !json) return;
      const why = breach(upstream.validate, body, (error) => DIFFERENCES.some((d) => d.explains?.(operation, error)));
      if (why) found.push(`${operation} → ${status}: ${why} — ${payload!.slice(0, 300)}`);
    },
    breaches: () => found,
  };
}
