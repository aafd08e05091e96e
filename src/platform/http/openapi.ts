import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { API_VERSION, BASE_PATH, type Config } from '../../config.js';
import { IDEMPOTENCY_KEY_HEADER } from '../idempotency.js';
import { NOT_FOUND_KEYWORD } from './schemas.js';
import { FORMAT_PATTERNS } from './validation.js';

const TAGS = [
  { name: 'API Tokens', description: 'Create, list and delete the credentials a platform backend authenticates with.' },
  { name: 'Platform Configuration', description: 'Platform-wide settings: currencies, fees, webhooks, embedded wallets.' },
  { name: 'Customers', description: 'Create, update and delete individual and business customers; end-user terms; bulk CSV import.' },
  { name: 'KYC/KYB Verifications', description: 'Beneficial owners of businesses and reviews of customers against the KYC/KYB requirements.' },
  { name: 'Documents', description: 'Verification documents of customers and beneficial owners: upload (screened at once), replace, list, delete.' },
  { name: 'Internal Accounts', description: 'Accounts Corridor holds for customers (opened on KYC/KYB approval) and for the platform.' },
  { name: 'Sandbox', description: 'Simulations for sandbox platforms (fund accounts, drive payments) and the webhook test, which any platform may send.' },
  { name: 'External Accounts', description: 'Bank accounts and wallets money is paid to: validated by their real rules, holder names confirmed, wallet ownership proven.' },
  {
    name: 'Webhooks',
    description:
      'Signed notifications Corridor sends to the platform (listed under `webhooks`), the public keys that verify them, and the delivery log.',
  },
];

/** The OpenAPI 3.1 document is generated from the route schemas and the webhook catalogue; nothing is written by hand. */
export function openApiOptions(config: Pick<Config, 'publicUrl'>, webhooks: Record<string, unknown> = {}): FastifyDynamicSwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Corridor API',
        version: API_VERSION,
        description:
          'Corridor is an open, self-hostable cross-border payments service. A platform backend calls it to onboard ' +
          'customers, hold money in internal accounts and embedded wallets, authenticate wallet end users, quote and ' +
          'execute transfers, and receive webhooks. Every error uses one envelope: `{status, code, message, details?}`.',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      servers: [{ url: `${config.publicUrl}${BASE_PATH}`, description: 'This Corridor instance' }],
      tags: TAGS,
      // The catalogue's documents are valid path items; the swagger types cannot see that.
      webhooks: webhooks as never,
      components: {
        securitySchemes: {
          BasicAuth: {
            type: 'http',
            scheme: 'basic',
            description: 'User name: the API token `clientId` (or its `Token:<uuid>` id). Password: the token secret.',
          },
          WebhookSignature: {
            type: 'apiKey',
            in: 'header',
            name: 'X-Service-Signature',
            description:
              'On webhooks Corridor sends: base64 of the ECDSA P-256 signature (DER) over SHA-256 of the exact request body, made with the ' +
              'platform’s signing key (`GET /webhooks/signing-keys`). Verify it before trusting the body.',
          },
        },
      },
      security: [{ BasicAuth: [] }],
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  };
}

type TransformInput = Parameters<NonNullable<FastifyDynamicSwaggerOptions['transform']>>[0];

/** A copy of a route schema as the document shows it: validation-only keywords removed. */
function documented(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(documented);
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(Object.entries(node).filter(([key]) => key !== NOT_FOUND_KEYWORD).map(([key, value]) => [key, documented(value)]));
}

/**
 * The whole document (paths, components, webhooks) with each of Corridor's own formats given its
 * `pattern`: clients and validators that do not know the format still check the shape (the list
 * check — a country that exists — stays the service's).
 */
export const withFormatPatterns: NonNullable<FastifyDynamicSwaggerOptions['transformObject']> = (document) =>
  optionalBodies(addFormatPatterns('openapiObject' in document ? document.openapiObject : document.swaggerObject)) as ReturnType<
    NonNullable<FastifyDynamicSwaggerOptions['transformObject']>
  >;

type OperationObject = { requestBody?: { required?: boolean; content?: Record<string, { schema?: { $ref?: string; required?: string[]; minProperties?: number } }> } };

/**
 * A JSON body that requires nothing may be left out (the service reads a missing body as `{}`,
 * app.ts): declared so, a generated client need not send one, as upstream's need not.
 */
function optionalBodies(document: unknown): unknown {
  const paths = (document as { paths?: Record<string, Record<string, OperationObject | undefined>> }).paths ?? {};
  for (const item of Object.values(paths)) {
    for (const operation of Object.values(item)) {
      const schema = operation?.requestBody?.content?.['application/json']?.schema;
      if (schema && !schema.$ref && !schema.required?.length && !schema.minProperties) operation!.requestBody!.required = false;
    }
  }
  return document;
}

function addFormatPatterns(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(addFormatPatterns);
  if (node === null || typeof node !== 'object') return node;
  const shown = Object.fromEntries(Object.entries(node).map(([key, value]) => [key, addFormatPatterns(value)]));
  const format = shown.format;
  if (typeof format === 'string' && FORMAT_PATTERNS[format] !== undefined && shown.pattern === undefined) shown.pattern = FORMAT_PATTERNS[format];
  const multipart = shown['multipart/form-data'] as { schema?: { properties?: Record<string, Record<string, unknown>> } } | undefined;
  if (multipart?.schema?.properties) shown['multipart/form-data'] = { ...multipart, encoding: partEncodings(multipart.schema.properties) };
  return shown;
}

/**
 * A multipart body's `encoding`: the Content-Type each file part may have, from the part's
 * `contentMediaType` or, when several are allowed, its `x-part-content-types` list (a
 * documentation-only keyword: multipart bodies are read by the handler, not by the validator).
 */
function partEncodings(properties: Record<string, Record<string, unknown>>): Record<string, { contentType: string }> {
  const encodings: Record<string, { contentType: string }> = {};
  for (const [name, part] of Object.entries(properties)) {
    const listed = part['x-part-content-types'];
    delete part['x-part-content-types'];
    const contentType = Array.isArray(listed) ? listed.join(', ') : part.contentMediaType;
    if (part.format === 'binary' && typeof contentType === 'string') encodings[name] = { contentType };
  }
  return encodings;
}

/** Paths are documented relative to the versioned server URL, as upstream clients expect. */
export function transformForOpenApi({ schema, url }: TransformInput) {
  const relative = url.startsWith(BASE_PATH) ? url.slice(BASE_PATH.length) || '/' : url;
  if (!schema) return { schema, url: relative };
  const { multipartBody, idempotencyKey, ...rest } = schema;
  const shown = (multipartBody ? { ...rest, body: multipartBody } : rest) as typeof schema;
  if (idempotencyKey) {
    const headers = (rest.headers ?? { type: 'object', properties: {} }) as { properties?: Record<string, unknown> };
    shown.headers = { ...headers, type: 'object', properties: { ...headers.properties, ...IDEMPOTENCY_KEY_HEADER } };
  }
  return { schema: documented(shown) as typeof schema, url: relative };
}
