import Type from 'typebox';
import { describe, expect, it } from 'vitest';
import { compileBodySchema, CUSTOM_FORMATS, FORMAT_PATTERNS, toFieldErrors, validatorCompiler } from '../../src/platform/http/validation.js';

const Address = Type.Object({ line1: Type.String({ maxLength: 5 }), postalCode: Type.String({ pattern: '^\\d{5}$' }) }, { additionalProperties: false });
const Schema = Type.Object(
  {
    email: Type.String({ format: 'email' }),
    birthDate: Type.String({ format: 'date' }),
    country: Type.String({ format: 'iso3166-1-alpha-2' }),
    address: Address,
    owners: Type.Array(Type.Object({ birthDate: Type.String({ format: 'date' }) })),
    amount: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);

function errorsOf(value: unknown) {
  const validate = compileBodySchema(Schema);
  expect(validate(value)).toBe(false);
  return toFieldErrors(validate.errors!);
}

describe('ajv errors → FieldErrors', () => {
  it('reports every invalid field once, with dot paths and the failed facet', () => {
    const errors = errorsOf({
      email: 'nope',
      birthDate: '2023-02-30',
      country: 'XX',
      address: { line1: 'far too long', postalCode: 'abc', extra: 1 },
      owners: [{ birthDate: '2020-01-01' }, { birthDate: '2021-13-01' }],
      amount: 1.5,
    });
    expect(errors).toEqual([
      { field: 'email', constraint: { format: 'email' }, message: 'must be a valid email' },
      { field: 'birthDate', constraint: { format: 'date' }, message: 'must be a valid date' },
      { field: 'country', constraint: { format: 'iso3166-1-alpha-2' }, message: 'must be a valid iso3166-1-alpha-2' },
      { field: 'address.extra', message: 'is not a known field' },
      { field: 'address.line1', constraint: { maxLength: 5 }, message: 'must be at most 5 characters' },
      { field: 'address.postalCode', constraint: { pattern: '^\\d{5}$' }, message: 'must match ^\\d{5}$' },
      { field: 'owners.1.birthDate', constraint: { format: 'date' }, message: 'must be a valid date' },
      { field: 'amount', message: 'must be a whole number' },
    ]);
  });

  it('names missing required fields', () => {
    expect(errorsOf({}).map((e) => e.field)).toEqual(['email', 'birthDate', 'country', 'address', 'owners', 'amount']);
  });

  it('does not coerce JSON types in bodies', () => {
    const errors = errorsOf({ email: 'a@b.co', birthDate: '2000-01-01', country: 'US', address: { line1: 'a', postalCode: '12345' }, owners: [], amount: '5' });
    expect(errors).toEqual([{ field: 'amount', message: 'must be a whole number' }]);
  });
});

describe('discriminated unions', () => {
  const Pet = Type.Object(
    {},
    {
      type: 'object',
      discriminator: { propertyName: 'kind' },
      required: ['kind'],
      oneOf: [
        Type.Object({ kind: Type.Unsafe({ type: 'string', enum: ['CAT'] }), lives: Type.Integer() }),
        Type.Object({ kind: Type.Unsafe({ type: 'string', enum: ['DOG'] }), barks: Type.Boolean() }),
      ],
    },
  );

  it.each([[{}], [{ kind: 'FISH' }], [{ kind: 3 }]])('names the tag with every branch’s value for %j', (value) => {
    const validate = compileBodySchema(Pet);
    expect(validate(value)).toBe(false);
    expect(toFieldErrors(validate.errors!)).toEqual([{ field: 'kind', constraint: { enum: ['CAT', 'DOG'] }, message: 'must be one of CAT, DOG' }]);
  });

  it('validates the chosen branch only', () => {
    const validate = compileBodySchema(Pet);
    expect(validate({ kind: 'DOG', barks: 'loud' })).toBe(false);
    expect(toFieldErrors(validate.errors!)).toEqual([{ field: 'barks', message: 'must be true or false' }]);
  });
});

describe('custom formats', () => {
  it('reports a failed uri as the spec names it: url', () => {
    const validate = compileBodySchema(Type.Object({ webhook: Type.String({ format: 'uri' }) }));
    expect(validate({ webhook: 'not a url' })).toBe(false);
    expect(toFieldErrors(validate.errors!)).toEqual([{ field: 'webhook', constraint: { format: 'url' }, message: 'must be a valid url' }]);
  });

  it('gives every custom format a pattern that each accepted value matches', () => {
    expect(Object.keys(FORMAT_PATTERNS).sort()).toEqual(Object.keys(CUSTOM_FORMATS).sort());
    const samples: Record<string, string[]> = {
      'iso3166-1-alpha-2': ['US', 'DE', 'XX', 'us'],
      'e.164': ['+14155550123', '+0123', '14155550123'],
      'us-ssn': ['123-45-6789', '000-12-3456', '123456789'],
      'us-itin': ['912-70-1234', '912-69-1234'],
      'currency-code': ['USD', 'USDC', 'BTC', 'XYZ', 'usd', 'XAU'],
    };
    for (const [format, values] of Object.entries(samples)) {
      for (const value of values) {
        if (CUSTOM_FORMATS[format]!(value)) expect(value).toMatch(new RegExp(FORMAT_PATTERNS[format]!));
      }
    }
    expect(['XX', 'XYZ', 'XAU'].filter((v) => CUSTOM_FORMATS[v.length === 2 ? 'iso3166-1-alpha-2' : 'currency-code']!(v))).toEqual([]);
  });
});

describe('query lists of codes', () => {
  const Query = Type.Object(
    {
      currency: Type.Optional(Type.Array(Type.String({ pattern: '^[A-Z]{3}$' }))),
      rail: Type.Optional(Type.Array(Type.String({ enum: ['ACH', 'SEPA'] }))),
      note: Type.Optional(Type.Array(Type.String())),
    },
    { additionalProperties: false },
  );
  const compile = (httpPart: string) => validatorCompiler({ schema: Query, httpPart, method: 'GET', url: '/x' }) as (data: unknown) => boolean;

  it('reads a comma-separated value as the repeated parameter, for lists of codes only', () => {
    const query: Record<string, unknown> = { currency: 'EUR,MXN', rail: ['ACH,SEPA'], note: 'a,b' };
    expect(compile('querystring')(query)).toBe(true);
    expect(query).toEqual({ currency: ['EUR', 'MXN'], rail: ['ACH', 'SEPA'], note: ['a,b'] });
    const repeated: Record<string, unknown> = { currency: ['EUR', 'MXN'] };
    expect(compile('querystring')(repeated)).toBe(true);
    expect(repeated).toEqual({ currency: ['EUR', 'MXN'] });
  });

  it('still refuses a code that is not one, and splits nothing outside the query string', () => {
    const validate = compile('querystring') as ((data: unknown) => boolean) & { errors?: unknown[] | null };
    expect(validate({ currency: 'EUR,mxn' })).toBe(false);
    expect(validate.errors).not.toBeNull();
    const params: Record<string, unknown> = { currency: 'EUR,MXN' };
    compile('params')(params);
    expect(params.currency).toEqual(['EUR,MXN']);
  });
});
