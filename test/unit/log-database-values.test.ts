import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { openTestDatabase } from '../helpers/context.js';

/**
 * A statement the database refuses for a value it cannot take (SQLSTATE class 22) names that
 * value in its message, which errorForLog keeps: the value a caller sent (an e-mail address where
 * an id was expected, an impossible birth date) must not reach the log through it.
 */
let database: Awaited<ReturnType<typeof openTestDatabase>>;
beforeAll(async () => {
  database = await openTestDatabase();
});
afterAll(() => database.drop());

async function refusal(statement: ReturnType<typeof sql>): Promise<unknown> {
  try {
    await statement.execute(database.handle.db);
  } catch (error) {
    return error;
  }
  throw new Error('the statement was not refused');
}

describe('a data exception in the log', () => {
  it('keeps its code and what failed, without the value the database quotes', async () => {
    const cases = [
      { value: 'alice@example.com', statement: sql`select ${'alice@example.com'}::uuid`, code: '22P02', words: 'invalid input syntax for type uuid' },
      { value: '1990-02-30', statement: sql`select ${'1990-02-30'}::date`, code: '22008', words: 'out of range' },
      { value: '123456789012345678901234', statement: sql`select ${'123456789012345678901234'}::bigint`, code: '22003', words: 'is out of range for type bigint' },
      // A value with quotes of its own is censored whole.
      { value: 'Jane', statement: sql`select ${'{"name": "Jane \\"JD\\" Doe"}'}::int`, code: '22P02', words: 'invalid input syntax for type integer' },
    ];
    for (const { value, statement, code, words } of cases) {
      const lines: string[] = [];
      createLogger('info', (line) => lines.push(line)).error({ err: await refusal(statement) }, 'unhandled error');
      expect(lines).toHaveLength(1);
      expect(lines[0]).not.toContain(value);
      const err = (JSON.parse(lines[0]!) as { err: { code: string; message: string; stack: string } }).err;
      expect(err.code).toBe(code);
      expect(err.message).toContain(words);
      expect(err.message).toContain('[redacted]');
      expect(err.stack).toContain(err.message);
    }
  });

  it('keeps other errors’ messages as they are: a constraint’s name is not a value', async () => {
    const lines: string[] = [];
    const error = await refusal(sql`select 1 from no_such_table`);
    createLogger('info', (line) => lines.push(line)).error({ err: error }, 'unhandled error');
    expect((JSON.parse(lines[0]!) as { err: { message: string } }).err.message).toBe('relation "no_such_table" does not exist');
  });
});
