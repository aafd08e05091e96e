import { describe, expect, it } from 'vitest';
import { compiledOnce, compiledPerShape, compiledWrite } from '../../src/platform/db/compiled-once.js';
import { recordingDb } from '../helpers/recording-db.js';

/** A recording database whose every statement answers one row echoing its parameters. */
const recorder = () => recordingDb((query) => [{ parameters: query.parameters }]);

describe('compiledOnce', () => {
  it('runs the statement built once with each call’s values, in the places the builder used them', async () => {
    const { db, sent } = recorder();
    let builds = 0;
    // Arguments used in the opposite order to their declaration, so a positional mix-up shows.
    const byIdAndPlatform = compiledOnce((q, platformId: string, id: string) => {
      builds++;
      return q.selectFrom('customers').select('id').where('id', '=', id).where('platform_id', '=', platformId);
    });
    await byIdAndPlatform(db, 'platform-a', 'customer-1');
    await byIdAndPlatform(db, 'platform-b', 'customer-2');
    expect(builds).toBe(1);
    expect(sent.map((q) => q.sql)).toEqual([
      'select "id" from "customers" where "id" = $1 and "platform_id" = $2',
      'select "id" from "customers" where "id" = $1 and "platform_id" = $2',
    ]);
    expect(sent.map((q) => q.parameters)).toEqual([
      ['customer-1', 'platform-a'],
      ['customer-2', 'platform-b'],
    ]);
  });

  it('refuses a query with a parameter that is not one of its arguments', async () => {
    const { db } = recorder();
    const withConstant = compiledOnce((q, id: string) => q.selectFrom('customers').select('id').where('id', '=', id).where('customer_type', '=', 'BUSINESS'));
    await expect(withConstant(db, 'customer-1')).rejects.toThrow(/each parameter must be one of the 1 arguments/);
  });
});

describe('compiledWrite and compiledPerShape', () => {
  it('runs a write built once with each call’s values and answers its whole result', async () => {
    const { db, sent } = recorder();
    let builds = 0;
    const rename = compiledWrite((q, name: string, id: string) => {
      builds++;
      return q.updateTable('customers').set({ full_name: name } as never).where('id', '=', id).returning('id');
    });
    const first = await rename(db, 'Ada', 'customer-1');
    await rename(db, 'Grace', 'customer-2');
    expect(builds).toBe(1);
    expect(first.rows).toEqual([{ parameters: ['Ada', 'customer-1'] }]);
    expect(sent.map((q) => q.parameters)).toEqual([
      ['Ada', 'customer-1'],
      ['Grace', 'customer-2'],
    ]);
  });

  it('builds once per shape, and each shape takes its values in the places its builder used them', async () => {
    const { db, sent } = recorder();
    const statement = compiledPerShape();
    let builds = 0;
    const insert = (row: Record<string, unknown>) => {
      const columns = Object.keys(row);
      return statement(db, columns.join(), Object.values(row), (v) => {
        builds++;
        return db.insertInto('customers').values(Object.fromEntries(columns.map((column, i) => [column, v[i]])) as never);
      });
    };
    await insert({ id: 'a', full_name: 'Ada' });
    await insert({ id: 'b', full_name: 'Grace' });
    await insert({ full_name: 'Hedy', id: 'c' });
    expect(builds).toBe(2);
    expect(sent.map((q) => [q.sql, q.parameters])).toEqual([
      ['insert into "customers" ("id", "full_name") values ($1, $2)', ['a', 'Ada']],
      ['insert into "customers" ("id", "full_name") values ($1, $2)', ['b', 'Grace']],
      ['insert into "customers" ("full_name", "id") values ($1, $2)', ['Hedy', 'c']],
    ]);
  });
});
