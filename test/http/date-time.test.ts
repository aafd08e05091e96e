import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDateTime } from '../../src/platform/datetime.js';
import { DateTime } from '../../src/platform/http/schemas.js';
import { compileBodySchema } from '../../src/platform/http/validation.js';
import { BASE, createTestContext, type TestContext } from '../helpers/context.js';

/**
 * Issue 12 A3: every string the date-time format accepts is stored (and read back as the same
 * instant) or refused with 400, never 500. Property-tested against the database of the run
 * (PGlite, or PostgreSQL with TEST_DATABASE_URL) and over HTTP.
 */
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestContext();
});
afterAll(() => ctx.close());

const accepts = compileBodySchema(DateTime() as object);

const digits = (n: number, max: number) => fc.integer({ min: 0, max }).map((v) => String(v).padStart(n, '0'));
/** Strings shaped like RFC 3339 date-times, every part ranging past its limits. */
const dateTimeLike = fc
  .tuple(
    fc.oneof(digits(4, 9999), fc.constantFrom('0000', '0001', '0099', '1969', '1970', '2026', '9999')),
    digits(2, 13),
    digits(2, 32),
    fc.constantFrom('T', 't', ' ', '_'),
    digits(2, 24),
    digits(2, 60),
    fc.oneof(digits(2, 61), fc.constant('60')),
    fc.oneof(fc.constant(''), fc.stringMatching(/^\.\d{1,12}$/)),
    fc.oneof(fc.constantFrom('Z', 'z', '', '+00:00', '-00:00', '+23:59', '-23:59', '+24:00', '+0530'), fc.tuple(fc.constantFrom('+', '-'), digits(2, 25), digits(2, 60)).map(([s, h, m]) => `${s}${h}:${m}`)),
  )
  .map(([y, mo, d, sep, h, mi, s, frac, zone]) => `${y}-${mo}-${d}${sep}${h}:${mi}:${s}${frac}${zone}`);
const anyDateTime = fc.oneof(
  { weight: 8, arbitrary: dateTimeLike },
  { weight: 1, arbitrary: fc.constantFrom('2026-06-30T23:59:60Z', '2026-07-01T01:59:60+02:00', '2026-06-30T22:59:60Z', '9999-12-31T23:59:60Z', '0001-01-01T00:00:00+00:01', '1969-01-01T00:00:00.0009999Z', '2026-12-31T23:59:59.9999995Z') },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
);

describe('date-time format against the database (A3)', () => {
  it('accepts exactly what parses, and the database stores each accepted instant unchanged', async () => {
    await fc.assert(
      fc.asyncProperty(anyDateTime, async (text) => {
        const parsed = parseDateTime(text);
        expect(accepts(text)).toBe(parsed !== undefined);
        if (!parsed) return;
        const stored = await sql<{ at: Date }>`select ${parsed}::timestamptz as at`.execute(ctx.handle.db);
        expect(new Date(stored.rows[0]!.at).toISOString()).toBe(parsed.toISOString());
        expect(parsed.toISOString()).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
        // Where the database reads the text itself, it reads the same instant to the millisecond:
        // it rounds to microseconds where Corridor drops digits past the millisecond, so a 7th
        // digit can carry into the next millisecond (.0009999 → .001000), never further.
        const read = await sql<{ at: Date }>`select ${text}::timestamptz as at`.execute(ctx.handle.db).catch(() => undefined);
        if (read) expect(new Date(read.rows[0]!.at).getTime() - parsed.getTime()).toBeOneOf([0, 1]);
      }),
      { numRuns: 1500 },
    );
  });

  it('reads a leap second as the first instant of the next minute, like PostgreSQL', () => {
    expect(parseDateTime('2026-06-30T23:59:60Z')?.toISOString()).toBe('2026-07-01T00:00:00.000Z');
    expect(parseDateTime('2026-07-01T01:59:60.5+02:00')?.toISOString()).toBe('2026-07-01T00:00:00.500Z');
    expect(parseDateTime('2026-06-30T22:59:60Z')).toBeUndefined();
    expect(parseDateTime('0000-12-31T23:59:59Z')).toBeUndefined();
    expect(parseDateTime('0099-03-01T00:00:00Z')?.toISOString()).toBe('0099-03-01T00:00:00.000Z');
  });
});

describe('date-time over HTTP (A3)', () => {
  const auth = () => ({ authorization: ctx.platform.auth });
  let seq = 0;

  it('stores or refuses with 400 every date-time sent as a body field or query parameter, never 500', async () => {
    // Consents must not be dated in the future, so far-future instants are a 400 too; both are fine.
    ctx.clock.set(new Date('9999-12-31T00:00:00Z'));
    await fc.assert(
      fc.asyncProperty(anyDateTime, async (text) => {
        const created = await ctx.app.inject({
          method: 'POST',
          url: `${BASE}/customers`,
          headers: auth(),
          payload: {
            customerType: 'INDIVIDUAL',
            platformCustomerId: `dt-${seq++}`,
            endUserTermsConsent: { acceptedAt: text, ipAddress: '192.0.2.1', termsVersion: 'V1', acceptanceMethod: 'CHECKBOX' },
          },
        });
        expect([201, 400]).toContain(created.statusCode);
        const parsed = parseDateTime(text);
        if (created.statusCode === 201) {
          const id = (created.json() as { id: string }).id;
          const read = (await ctx.app.inject({ method: 'GET', url: `${BASE}/customers/${id}`, headers: auth() })).json() as {
            endUserTermsConsent: { acceptedAt: string };
          };
          expect(read.endUserTermsConsent.acceptedAt).toBe(parsed!.toISOString());
        } else if (parsed) {
          expect(created.json()).toMatchObject({ details: { errors: [{ field: 'endUserTermsConsent.acceptedAt' }] } });
        }
        const listed = await ctx.app.inject({ method: 'GET', url: `${BASE}/customers?createdAfter=${encodeURIComponent(text)}`, headers: auth() });
        expect(listed.statusCode).toBe(parsed ? 200 : 400);
      }),
      { numRuns: 150 },
    );
  });
});
