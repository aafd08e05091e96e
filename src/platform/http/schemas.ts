import Type, { type Static, type TSchema } from 'typebox';
import { CURRENCY_CODE_FORMAT, CURRENCY_CODE_PATTERN } from '../currencies.js';
import { codesWithStatus, ERROR_STATUSES, type ErrorCode } from '../errors.js';
import { idPattern } from '../ids.js';

/** A string enum as `{type: string, enum: […]}`: clean OpenAPI, and `constraint.enum` on failure. */
export function StringEnum<const T extends readonly string[]>(values: T, options: Record<string, unknown> = {}) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}

/** `<Type>:<uuid>` id field. */
export function ResourceId(type: string, options: Record<string, unknown> = {}) {
  return Type.String({
    pattern: idPattern(type),
    maxLength: type.length + 37,
    examples: [`${type}:019542f5-b3e7-1d02-0000-000000000001`],
    ...options,
  });
}

/** The schema keyword that carries a path id's not-found answer (stripped from the OpenAPI document). */
export const NOT_FOUND_KEYWORD = 'x-not-found';

export interface NotFoundAnnotation {
  code: ErrorCode;
  noun: string;
  /** The id type, for `<Type>:<uuid>` ids. */
  type?: string;
}

/** `BeneficialOwner` → `beneficial owner`. */
function nounOf(type: string): string {
  return type.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}

/**
 * A path parameter: any value its schema refuses is answered as a key that does not exist — 404
 * with `notFound` — never a 400 (platform/http/path-ids.ts). Every path parameter must be
 * declared with this or with `IdParam`.
 */
export function PathParam<T extends TSchema>(schema: T, notFound: ErrorCode, noun: string): T {
  const annotation: NotFoundAnnotation = { code: notFound, noun };
  return { ...schema, [NOT_FOUND_KEYWORD]: annotation };
}

/**
 * A `<Type>:<uuid>` path parameter. A value that is not such an id — malformed, of another type,
 * or a word of a path that does not exist, like `/customers/external-accounts` — is answered
 * like an id that does not exist: 404 with `notFound` (the resource's own code, e.g.
 * USER_NOT_FOUND), never a 400 about the id.
 */
export function IdParam(type: string, notFound: ErrorCode, noun: string = nounOf(type)) {
  const annotation: NotFoundAnnotation = { code: notFound, noun, type };
  return ResourceId(type, { description: `The ${noun}'s id, \`${type}:<uuid>\`.`, [NOT_FOUND_KEYWORD]: annotation });
}

/** One of several object shapes told apart by the value of `propertyName` (OpenAPI discriminator). */
export function TaggedUnion<const T extends TSchema[]>(propertyName: string, branches: T, options: Record<string, unknown> = {}) {
  return Type.Unsafe<Static<T[number]>>({ type: 'object', discriminator: { propertyName }, required: [propertyName], oneOf: branches, ...options });
}

/** `schema` or JSON null: a PATCH field that `null` clears. One type list, so a bad value gets one error. */
export function Nullable<T extends TSchema>(schema: T, options: Record<string, unknown> = {}) {
  const type = (schema as { type?: unknown }).type;
  return Type.Unsafe<Static<T> | null>({ ...schema, ...options, type: [...(Array.isArray(type) ? type : [type]), 'null'] });
}

export const DateTime = (options: Record<string, unknown> = {}) =>
  Type.String({ format: 'date-time', maxLength: 40, examples: ['2025-10-13T15:30:01Z'], ...options });

/**
 * A currency code from the one registry (platform/currencies.ts): active ISO 4217 money and the
 * crypto assets (USDC, USDT, BTC). A well-formed code it does not know is 400 INVALID_CURRENCY
 * naming the field (`invalidInput`), in bodies, query parameters and CSV rows alike; a value
 * that is not shaped like a code at all (`usd`) is INVALID_INPUT.
 */
export const CurrencyCode = (options: Record<string, unknown> = {}) =>
  Type.String({
    pattern: CURRENCY_CODE_PATTERN,
    format: CURRENCY_CODE_FORMAT,
    maxLength: 5,
    examples: ['USD'],
    description: 'Currency code: ISO 4217 for fiat (USD, EUR), the ticker for crypto (USDC, USDT, BTC).',
    ...options,
  });

/** Minor-unit amount: a JSON integer, never a float, inside the safe-integer range. */
export const MinorAmount = (options: Record<string, unknown> = {}) =>
  Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, format: 'int64', ...options });

export const FieldConstraintSchema = Type.Object(
  {
    format: Type.Optional(Type.String()),
    pattern: Type.Optional(Type.String()),
    enum: Type.Optional(Type.Array(Type.String())),
    minLength: Type.Optional(Type.Integer()),
    maxLength: Type.Optional(Type.Integer()),
  },
  { description: 'The validation facet that failed.' },
);

export const FieldErrorSchema = Type.Object({
  field: Type.String({ description: 'Dot path of the invalid field, e.g. `address.postalCode`.' }),
  constraint: Type.Optional(FieldConstraintSchema),
  message: Type.Optional(Type.String()),
});

/** Error envelope of one HTTP status, with that status's codes as the `code` enum. */
function errorSchema(status: number) {
  return Type.Object(
    {
      status: Type.Integer({ enum: [status], description: 'Equal to the HTTP status.' }),
      code: StringEnum(codesWithStatus(status)),
      message: Type.String(),
      details: Type.Optional(
        Type.Object(
          status === 400 ? { errors: Type.Optional(Type.Array(FieldErrorSchema)) } : {},
          { additionalProperties: true, description: 'Extra information; its shape depends on the code.' },
        ),
      ),
      ...(status === 422
        ? { precheckErrors: Type.Array(Type.String(), { description: 'Problems the screening provider found, verbatim.' }) }
        : {}),
    },
    {
      $id: `Error${status}`,
      title: `Error${status}`,
      description: `Error envelope for HTTP ${status}.`,
      examples: [
        status === 400
          ? {
              status,
              code: 'INVALID_INPUT',
              message: 'The request has invalid fields.',
              details: { errors: [{ field: 'name', constraint: { maxLength: 255 }, message: 'must be at most 255 characters' }] },
            }
          : status === 422
            ? { status, code: 'DOCUMENT_REJECTED', message: 'The document did not pass screening.', precheckErrors: ['grayscale'] }
            : { status, code: codesWithStatus(status)[0], message: 'Explanation of the error.' },
      ],
    },
  );
}

export const ERROR_SCHEMAS: TSchema[] = ERROR_STATUSES.map(errorSchema);

/** `$ref`s to the shared error envelopes, keyed by status, for route response maps. */
export function errorResponses(...statuses: number[]): Record<number, TSchema> {
  return Object.fromEntries(statuses.map((s) => [s, Type.Unsafe({ $ref: `Error${s}#` })]));
}

export const PaginationQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Page size, 1–100.' })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Opaque cursor from a previous page.' })),
};

/** Inclusive creation and update bounds, shared by every list that filters by time. */
export const TimeRangeQuery = {
  createdAfter: Type.Optional(DateTime({ description: 'Created at or after this time.' })),
  createdBefore: Type.Optional(DateTime({ description: 'Created at or before this time.' })),
  updatedAfter: Type.Optional(DateTime({ description: 'Updated at or after this time.' })),
  updatedBefore: Type.Optional(DateTime({ description: 'Updated at or before this time.' })),
};

export function ListResponse<T extends TSchema>(item: T, title: string) {
  return Type.Object(
    {
      data: Type.Array(item),
      hasMore: Type.Boolean({ description: 'Whether another page follows.' }),
      nextCursor: Type.Optional(Type.String({ description: 'Pass as `cursor` for the next page; present only when hasMore.' })),
      totalCount: Type.Optional(Type.Integer({ description: 'Number of items matching the filters, over all pages.' })),
    },
    { title },
  );
}
