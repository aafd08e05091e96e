import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyRequest, FastifySchemaCompiler } from 'fastify';
import { COUNTRY_CODES } from '../countries.js';
import { CURRENCY_CODE_FORMAT, CURRENCY_CODE_PATTERN, isCurrency } from '../currencies.js';
import { parseDateTime } from '../datetime.js';
import type { FieldConstraint, FieldError } from '../errors.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

interface CustomFormat {
  /** What a value must look like; the OpenAPI document shows it beside the format. */
  pattern: string;
  /** A check beyond the pattern, when the pattern alone admits values that do not exist. */
  exists?: (value: string) => boolean;
}

/**
 * Formats named as spec §2.3 names them, so a failed check reports `constraint.format` with the
 * slug a platform can build its form from (`iso3166-1-alpha-2`, `e.164`, `us-ssn`, …). Each
 * has its pattern, so a client can check the shape without knowing the format.
 */
const FORMATS: Record<string, CustomFormat> = {
  'iso3166-1-alpha-2': { pattern: '^[A-Z]{2}$', exists: (v) => COUNTRY_CODES.has(v) },
  'e.164': { pattern: '^\\+[1-9]\\d{1,14}$' },
  // SSA never issues area 000, 666 or 9xx, group 00 or serial 0000.
  'us-ssn': { pattern: '^(?!000|666|9\\d\\d)\\d{3}-(?!00)\\d{2}-(?!0000)\\d{4}$' },
  // ITINs start with 9 and carry a group of 50–65, 70–88, 90–92 or 94–99.
  'us-itin': { pattern: '^9\\d{2}-(5[0-9]|6[0-5]|7[0-9]|8[0-8]|9[0-2]|9[4-9])-\\d{4}$' },
  [CURRENCY_CODE_FORMAT]: { pattern: CURRENCY_CODE_PATTERN, exists: isCurrency },
};

/** Each custom format's check: its pattern, and that the value exists where a list says so. */
export const CUSTOM_FORMATS: Record<string, (value: string) => boolean> = Object.fromEntries(
  Object.entries(FORMATS).map(([name, { pattern, exists }]) => {
    const shape = new RegExp(pattern);
    return [name, (v: string) => shape.test(v) && (exists?.(v) ?? true)];
  }),
);

/** Each custom format's pattern, for the OpenAPI document. */
export const FORMAT_PATTERNS: Record<string, string> = Object.fromEntries(Object.entries(FORMATS).map(([name, { pattern }]) => [name, pattern]));

/**
 * The names failed formats are reported under: spec §2.3 uses HTML input types where one exists
 * (`url`, not JSON Schema's `uri`).
 */
const REPORTED_FORMAT: Record<string, string> = { uri: 'url' };

function buildAjv(coerceTypes: Options['coerceTypes']): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    removeAdditional: false,
    useDefaults: true,
    coerceTypes,
    discriminator: true,
    // Errors carry their schema, so a bad discriminator can name the values its branches allow.
    verbose: true,
    strict: false,
  });
  addFormats(ajv);
  for (const [name, check] of Object.entries(CUSTOM_FORMATS)) ajv.addFormat(name, { type: 'string', validate: check });
  // Replaces ajv-formats' date-time: what passes is exactly what the services can read and store.
  ajv.addFormat('date-time', { type: 'string', validate: (v) => parseDateTime(v) !== undefined });
  return ajv;
}

// Bodies are JSON and must carry the right types; query strings, paths and headers are text.
const bodyAjv = buildAjv(false);
const textAjv = buildAjv('array');

/** A validator that behaves as ajv's, carrying the last call's `errors`. */
export interface Validator {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
}

/**
 * Compiles `schema` with `ajv` on the first call, not now: compiling every route's schemas was
 * most of start-up's CPU, and most processes use a fraction of the routes. The first request of
 * a route pays its compile once (a few milliseconds).
 */
function compileOnFirstUse(ajv: Ajv, schema: object): Validator {
  let compiled: ValidateFunction | undefined;
  const validate: Validator = (data) => {
    compiled ??= ajv.compile(schema);
    const valid = compiled(data);
    validate.errors = compiled.errors;
    return valid;
  };
  validate.errors = null;
  return validate;
}

/**
 * Query parameters that are lists of codes (an array whose items have an enum or a pattern, so a
 * value holds no comma): their values may also come comma-separated (`?currency=EUR,MXN`), as
 * generated SDKs send arrays, and mean the same as the repeated parameter the document names.
 */
function commaListParameters(schema: object): string[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown; items?: { enum?: unknown; pattern?: unknown } }> }).properties ?? {};
  return Object.entries(properties)
    .filter(([, property]) => property.type === 'array' && (property.items?.enum !== undefined || property.items?.pattern !== undefined))
    .map(([name]) => name);
}

function splittingCommaLists(validate: Validator, lists: string[]): Validator {
  const split: Validator = (data) => {
    const query = data as Record<string, unknown>;
    for (const name of lists) {
      const given = query[name];
      if (typeof given === 'string' || Array.isArray(given)) query[name] = [given].flat().flatMap((value) => (typeof value === 'string' ? value.split(',') : [value]));
    }
    const valid = validate(data);
    split.errors = validate.errors;
    return valid;
  };
  split.errors = null;
  return split;
}

interface NumeralRule {
  /** The numeral's shape: decimal digits, a `-` only where the schema admits negatives, a fraction only for `number`. */
  pattern: RegExp;
  message: string;
}

type NumericSchema = { type?: unknown; minimum?: unknown; exclusiveMinimum?: unknown; items?: NumericSchema };

function numeralRule(property: NumericSchema): NumeralRule | undefined {
  const types = [property.type].flat();
  // A property that is also a string takes any text; one that is neither number nor integer is no numeral.
  if (types.includes('string')) return undefined;
  const integer = types.includes('integer');
  if (!integer && !types.includes('number')) return undefined;
  const lowest = [property.minimum, property.exclusiveMinimum].find((bound): bound is number => typeof bound === 'number');
  const negative = lowest === undefined || lowest < 0;
  const sign = negative ? '-?' : '';
  const fraction = integer ? '' : '(\\.[0-9]+)?';
  const kind = integer ? 'a whole number' : 'a number';
  return {
    pattern: new RegExp(`^${sign}[0-9]+${fraction}$`),
    message: `must be ${kind} written in plain decimal digits${negative ? '' : ', not negative'}`,
  };
}

/** The numeric parameters of a text part (query string, path, headers) and the numeral each accepts. */
function numeralParameters(schema: object): Map<string, NumeralRule> {
  const properties = (schema as { properties?: Record<string, NumericSchema> }).properties ?? {};
  const rules = new Map<string, NumeralRule>();
  for (const [name, property] of Object.entries(properties)) {
    const types = [property.type].flat();
    const rule = numeralRule(types.includes('array') && property.items ? property.items : property);
    if (rule) rules.set(name, rule);
  }
  return rules;
}

/**
 * Text parts arrive as strings and ajv coerces them to the schema's types, but its coercion is
 * JavaScript's `+value`: `0x10`, `+5`, `1e3`, ` 5` and `5.0` all pass as integers. Each numeric
 * parameter must be a plain decimal numeral before ajv coerces it; another spelling is refused
 * under the parameter's name, together with whatever else ajv finds wrong in the part.
 */
function strictNumerals(validate: Validator, rules: Map<string, NumeralRule>): Validator {
  const strict: Validator = (data) => {
    const values = data as Record<string, unknown>;
    const refused: ErrorObject[] = [];
    for (const [name, rule] of rules) {
      const given = values[name];
      if (given === undefined) continue;
      const numerals = [given].flat();
      if (numerals.every((numeral) => typeof numeral !== 'string' || rule.pattern.test(numeral))) continue;
      refused.push({
        keyword: 'numeral',
        instancePath: `/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`,
        schemaPath: `#/properties/${name}`,
        params: { pattern: rule.pattern.source },
        message: rule.message,
        data: given,
      });
    }
    const valid = validate(data);
    if (refused.length === 0) {
      strict.errors = validate.errors;
      return valid;
    }
    const refusedPaths = new Set(refused.map((error) => error.instancePath));
    const others = (validate.errors ?? []).filter((error) => !refusedPaths.has(error.instancePath) && !refusedPaths.has(error.instancePath.replace(/\/[0-9]+$/, '')));
    strict.errors = [...refused, ...others];
    return false;
  };
  strict.errors = null;
  return strict;
}

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  if (httpPart === 'body') return compileOnFirstUse(bodyAjv, schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
  let validate = compileOnFirstUse(textAjv, schema as object);
  const lists = httpPart === 'querystring' ? commaListParameters(schema as object) : [];
  if (lists.length) validate = splittingCommaLists(validate, lists);
  const numerals = numeralParameters(schema as object);
  if (numerals.size) validate = strictNumerals(validate, numerals);
  return validate as ReturnType<FastifySchemaCompiler<unknown>>;
};

/** Compiles a schema for checks outside Fastify's request validation (multipart fields, CSV rows), on first use. */
export function compileBodySchema(schema: object): Validator {
  return compileOnFirstUse(bodyAjv, schema);
}

function pointerToPath(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

const TYPE_WORDS: Record<string, string> = {
  string: 'a string', integer: 'a whole number', number: 'a number', boolean: 'true or false',
  object: 'an object', array: 'an array', null: 'null',
};

function describe(error: ErrorObject): { leaf?: string; constraint?: FieldConstraint; message: string } {
  const p = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return { leaf: String(p.missingProperty), message: 'is required' };
    case 'additionalProperties':
      return { leaf: String(p.additionalProperty), message: 'is not a known field' };
    case 'format': {
      const format = REPORTED_FORMAT[String(p.format)] ?? String(p.format);
      const message = format === CURRENCY_CODE_FORMAT ? `${String(error.data)} is not a currency Corridor knows` : `must be a valid ${format}`;
      return { constraint: { format }, message };
    }
    case 'pattern':
      return { constraint: { pattern: String(p.pattern) }, message: `must match ${String(p.pattern)}` };
    case 'numeral':
      return { constraint: { pattern: String(p.pattern) }, message: error.message ?? 'must be a decimal numeral' };
    case 'enum':
      return { constraint: { enum: (p.allowedValues as unknown[]).map(String) }, message: `must be one of ${(p.allowedValues as unknown[]).join(', ')}` };
    case 'const':
      return { constraint: { enum: [String(p.allowedValue)] }, message: `must be ${String(p.allowedValue)}` };
    case 'minLength':
      return { constraint: { minLength: Number(p.limit) }, message: `must be at least ${String(p.limit)} characters` };
    case 'maxLength':
      return { constraint: { maxLength: Number(p.limit) }, message: `must be at most ${String(p.limit)} characters` };
    case 'type': {
      const types = String(p.type).split(',').map((t) => TYPE_WORDS[t] ?? t);
      return { message: `must be ${types.join(' or ')}` };
    }
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return { message: `must be ${String(p.comparison)} ${String(p.limit)}` };
    case 'minItems':
      return { message: `must have at least ${String(p.limit)} items` };
    case 'maxItems':
      return { message: `must have at most ${String(p.limit)} items` };
    case 'uniqueItems':
      return { message: 'must not repeat items' };
    case 'minProperties':
      return { message: `must have at least ${String(p.limit)} fields` };
    case 'discriminator': {
      const allowed = discriminatorValues(error.parentSchema, String(p.tag));
      return allowed.length
        ? { leaf: String(p.tag), constraint: { enum: allowed }, message: `must be one of ${allowed.join(', ')}` }
        : { leaf: String(p.tag), message: error.message ?? 'has an unknown value' };
    }
    default:
      return { message: error.message ?? 'is invalid' };
  }
}

/** The tag values of a `oneOf` + `discriminator` schema's branches, in branch order. */
function discriminatorValues(schema: unknown, tag: string): string[] {
  const branches = (schema as { oneOf?: Array<{ properties?: Record<string, { enum?: unknown[]; const?: unknown }> }> } | undefined)?.oneOf ?? [];
  return branches.flatMap((branch) => {
    const property = branch.properties?.[tag];
    return (property?.enum ?? (property?.const !== undefined ? [property.const] : [])).map(String);
  });
}

/** Keywords that only summarise the failures of their branches; the branch errors say more. */
const SUMMARY_KEYWORDS = new Set(['anyOf', 'oneOf', 'if', 'not']);

/**
 * Turns ajv errors into spec §2.3 FieldErrors: one entry per field, dot-path names, the failed
 * facet in `constraint`, every invalid field of the request in one list.
 */
export function toFieldErrors(errors: ErrorObject[], rootName?: string): FieldError[] {
  const byField = new Map<string, FieldError>();
  const relevant = errors.some((e) => !SUMMARY_KEYWORDS.has(e.keyword)) ? errors.filter((e) => !SUMMARY_KEYWORDS.has(e.keyword)) : errors;
  // A missing discriminator tag fails `required` too; the discriminator error says more (its values).
  const tags = new Set(relevant.filter((e) => e.keyword === 'discriminator').map((e) => `${e.instancePath}/${String((e.params as { tag: string }).tag)}`));
  const useful = relevant.filter((e) => !(e.keyword === 'required' && tags.has(`${e.instancePath}/${String((e.params as { missingProperty: string }).missingProperty)}`)));
  for (const error of useful) {
    const { leaf, constraint, message } = describe(error);
    const segments = [...pointerToPath(error.instancePath), ...(leaf ? [leaf] : [])];
    if (rootName && segments.length === 0) segments.push(rootName);
    const field = segments.length ? segments.join('.') : '(body)';
    const existing = byField.get(field);
    if (!existing) {
      byField.set(field, { field, ...(constraint ? { constraint } : {}), message });
    } else {
      if (constraint) existing.constraint = { ...existing.constraint, ...constraint };
      if (existing.message && !existing.message.includes(message)) existing.message = `${existing.message}; ${message}`;
    }
  }
  return [...byField.values()];
}

/**
 * The body's schema errors of a route declared with `attachValidation: true`: such routes
 * collect them instead of failing at once, add the errors of rules a schema cannot express,
 * and answer every invalid field in one response.
 */
export function attachedFieldErrors(request: FastifyRequest): FieldError[] {
  const validation = request.validationError as (Error & { validation?: ErrorObject[] }) | undefined;
  return validation?.validation ? toFieldErrors(validation.validation) : [];
}
