import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compiledOnce } from '../../src/platform/db/compiled-once.js';
import type { DbHandle } from '../../src/platform/db/database.js';
import { NamedStatementPool } from '../../src/platform/db/named-statements.js';
import { PipelinedReads } from '../../src/platform/db/pipelined-reads.js';
import { deferInsert, withTx } from '../../src/platform/db/tx.js';
import { onPostgres, openTestDatabase } from '../helpers/context.js';

/**
 * Named statements describe their rows once per connection (platform/db/described-once.ts):
 * later executions read rows with the kept description, and must read exactly what a described
 * execution reads, through a pool of one connection so every execution reuses it.
 */
describe.runIf(onPostgres)('named statements described once per connection', () => {
  let handle: DbHandle;
  let drop: () => Promise<void>;
  const describes: string[] = [];
  const describe0 = (pg as unknown as { Connection: { prototype: { describe(msg: { name: string }): void } } }).Connection.prototype.describe;

  beforeAll(async () => {
    ({ handle, drop } = await openTestDatabase());
    await sql`create table described (id int primary key, amount bigint, at timestamptz, doc jsonb, tags text[], note text)`.execute(handle.db);
    await sql`insert into described values (1, 9007199254740993, '2025-01-02T03:04:05.678Z', '{"a":[1]}', '{x,y}', null), (2, -5, null, null, null, 'two')`.execute(handle.db);
    (pg as unknown as { Connection: { prototype: { describe(msg: { name: string }): void } } }).Connection.prototype.describe = function (msg) {
      describes.push(msg.name);
      return describe0.call(this, msg);
    };
  });
  afterAll(async () => {
    (pg as unknown as { Connection: { prototype: { describe(msg: { name: string }): void } } }).Connection.prototype.describe = describe0;
    await drop();
  });

  const byId = (id: number) => sql<{ id: number; amount: bigint; at: Date | null; doc: unknown; tags: string[] | null; note: string | null }>`
    select id, amount, at, doc, tags, note from described where id = ${id}`.execute(handle.db);

  it('reads the same rows, typed the same, when the description is kept', async () => {
    describes.length = 0;
    const first = await byId(1);
    const runs = [];
    for (let i = 0; i < 5; i++) runs.push(await byId(1));
    for (const again of runs) expect(again.rows).toEqual(first.rows);
    expect(first.rows[0]).toEqual({ id: 1, amount: 9007199254740993n, at: new Date('2025-01-02T03:04:05.678Z'), doc: { a: [1] }, tags: ['x', 'y'], note: null });
    expect((await byId(2)).rows[0]).toEqual({ id: 2, amount: -5n, at: null, doc: null, tags: null, note: 'two' });
    expect((await byId(3)).rows).toEqual([]);
    // Ten pooled connections: each describes the statement at most once, not on every execution.
    expect(describes.length).toBeLessThanOrEqual(10);
    expect(describes.length).toBeGreaterThanOrEqual(1);
    expect(describes.length).toBeLessThan(8);
  });

  it('builds rows with the same keys, in the same order, as a described execution, whatever the column names', async () => {
    const odd = (id: number) => sql<Record<string, unknown>>`
      select note as "b", id as "a", id as "1", amount as "b", 'x' as "quo""te\\back", at from described where id = ${id}`.execute(handle.db);
    const proto = () => sql<Record<string, unknown>>`select doc as "__proto__", id from described where id = ${1}`.execute(handle.db);
    const [first, firstProto] = [(await odd(1)).rows[0]!, (await proto()).rows[0]!];
    expect(Object.keys(first)).toEqual(['1', 'b', 'a', 'quo"te\\back', 'at']);
    expect(first).toEqual({ 1: 1, b: 9007199254740993n, a: 1, 'quo"te\\back': 'x', at: new Date('2025-01-02T03:04:05.678Z') });
    for (let i = 0; i < 12; i++) {
      const again = (await odd(1)).rows[0]!;
      expect(Object.keys(again)).toEqual(Object.keys(first));
      expect(again).toEqual(first);
      expect((await odd(2)).rows[0]).toEqual({ 1: 2, b: -5n, a: 2, 'quo"te\\back': 'x', at: null });
      const againProto = (await proto()).rows[0]!;
      expect(Object.getOwnPropertyDescriptor(againProto, '__proto__')).toEqual(Object.getOwnPropertyDescriptor(firstProto, '__proto__'));
      expect(Object.getPrototypeOf(againProto)).toBe(Object.getPrototypeOf(firstProto));
    }
  });

  it('statements without rows and failing executions leave the connection usable', async () => {
    for (let i = 0; i < 3; i++) {
      const update = await sql`update described set note = ${`n${i}`} where id = ${2}`.execute(handle.db);
      expect(update.numAffectedRows).toBe(1n);
    }
    await expect(sql`select id from described where id = ${'not a number'}`.execute(handle.db)).rejects.toThrow(/invalid input syntax/);
    await expect(sql`select id from described where id = ${'not a number'}`.execute(handle.db)).rejects.toThrow(/invalid input syntax/);
    expect((await byId(2)).rows[0]!.note).toBe('n2');
  });

  it('a statement whose table changed shape is prepared afresh and read with its new description', async () => {
    const all = () => sql<Record<string, unknown>>`select * from described where id = ${1}`.execute(handle.db);
    for (let i = 0; i < 12; i++) expect(Object.keys((await all()).rows[0]!)).not.toContain('extra');
    await sql`alter table described add column extra int default 7`.execute(handle.db);
    for (let i = 0; i < 12; i++) expect((await all()).rows[0]!.extra).toBe(7);
  });

  it('a transaction whose statement went stale runs again and commits once (a migration while money moves)', async () => {
    await sql`create table stale_tx (id int primary key, n int not null)`.execute(handle.db);
    await sql`insert into stale_tx values (1, 0)`.execute(handle.db);
    const bump = (trx: Parameters<Parameters<typeof withTx>[1]>[0]) => sql<Record<string, unknown>>`update stale_tx set n = n + 1 where id = ${1} returning *`.execute(trx);
    // Every pooled connection prepares the statement, so the one the next transaction takes has it cached.
    await Promise.all(Array.from({ length: 12 }, () => withTx(handle.db, bump)));
    await sql`alter table stale_tx add column note text default 'added'`.execute(handle.db);
    let attempts = 0;
    const rows = await withTx(handle.db, async (trx) => {
      attempts++;
      return (await bump(trx)).rows;
    });
    expect(attempts).toBe(2);
    expect(rows).toEqual([{ id: 1, n: 13, note: 'added' }]);
    expect((await sql<{ n: number }>`select n from stale_tx where id = ${1}`.execute(handle.db)).rows[0]!.n).toBe(13);
  });
});

/** The shared pipelined connections for reads outside a transaction (platform/db/pipelined-reads.ts). */
describe.runIf(onPostgres)('pipelined reads', () => {
  let handle: DbHandle;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    ({ handle, drop } = await openTestDatabase());
    await sql`create table piped (id int primary key, label text, at timestamptz)`.execute(handle.db);
    await sql`insert into piped select i, 'row ' || i, '2025-01-01T00:00:00Z'::timestamptz + i * interval '1 second' from generate_series(1, 300) as i`.execute(handle.db);
  });
  afterAll(() => drop());

  const byId = compiledOnce((db, id: number) => (db as unknown as Kysely<{ piped: { id: number; label: string; at: Date } }>).selectFrom('piped').selectAll().where('id', '=', id));

  it('answers each of many concurrent reads with its own rows, in one turn and over several', async () => {
    const ids = Array.from({ length: 300 }, (_, i) => i + 1);
    const rows = await Promise.all(ids.map((id) => byId(handle.db, id)));
    rows.forEach((r, i) => expect(r).toEqual([{ id: i + 1, label: `row ${i + 1}`, at: new Date(Date.UTC(2025, 0, 1, 0, 0, i + 1)) }]));
    const spread = await Promise.all(ids.map(async (id) => { await new Promise((r) => setTimeout(r, id % 7)); return byId(handle.db, id); }));
    spread.forEach((r, i) => expect(r[0]!.id).toBe(i + 1));
    expect(await byId(handle.db, 301)).toEqual([]);
  });

  it('a read that fails fails alone; reads inside a transaction use its connection', async () => {
    const bad = compiledOnce((db, id: string) => (db as unknown as Kysely<{ piped: { id: number } }>).selectFrom('piped').select('id').where('id', '=', sql<number>`${id}::int`));
    const [ok1, failed, ok2] = await Promise.allSettled([byId(handle.db, 1), bad(handle.db, 'x'), byId(handle.db, 2)]);
    expect(ok1).toMatchObject({ status: 'fulfilled', value: [{ id: 1 }] });
    expect(failed).toMatchObject({ status: 'rejected', reason: { message: expect.stringMatching(/invalid input syntax/) } });
    expect(ok2).toMatchObject({ status: 'fulfilled', value: [{ id: 2 }] });
    await withTx(handle.db, async (tx) => {
      await sql`update piped set label = 'changed' where id = 3`.execute(tx);
      expect((await byId(tx, 3))[0]!.label).toBe('changed');
      expect((await byId(handle.db, 3))[0]!.label).toBe('row 3');
    });
    expect((await byId(handle.db, 3))[0]!.label).toBe('changed');
  });

  it('a read whose table changed shape is prepared afresh', async () => {
    const all = compiledOnce((db, id: number) => (db as unknown as Kysely<{ piped: { id: number } }>).selectFrom('piped').selectAll().where('id', '=', id));
    for (let i = 0; i < 6; i++) expect(Object.keys((await all(handle.db, 4))[0]!)).not.toContain('extra');
    await sql`alter table piped add column extra int default 7`.execute(handle.db);
    const after = await Promise.all(Array.from({ length: 6 }, () => all(handle.db, 4)));
    for (const rows of after) expect((rows[0] as Record<string, unknown>).extra).toBe(7);
  });
});

describe.runIf(onPostgres)('a pipelined read connection that dies', () => {
  // A read changes nothing, so reads lost with their connection are sent again once on a new one
  // (pipelined-reads.ts); one that ends every connection it is sent on still fails.
  it('sends the reads in flight on it again on a new connection; a read that kills each connection fails', async () => {
    const config = { connectionString: process.env.TEST_DATABASE_URL };
    const pool = new pg.Pool(config);
    const reads = new PipelinedReads(config, new NamedStatementPool(pool), 1);
    try {
      const [{ pid }] = (await reads.query('select pg_backend_pid() as pid', [])) as [{ pid: number }];
      const inFlight = Promise.all([reads.query('select pg_sleep(0.5), $1::int as x', [1]), reads.query('select $1::int as x', [6])]);
      await new Promise((r) => setTimeout(r, 100));
      await pool.query('select pg_terminate_backend($1)', [pid]);
      expect((await inFlight).map((rows) => (rows as Array<{ x: number }>)[0]!.x)).toEqual([1, 6]);
      const [{ pid: replaced }] = (await reads.query('select pg_backend_pid() as pid', [])) as [{ pid: number }];
      expect(replaced).not.toBe(pid);
      await expect(reads.query('select pg_terminate_backend(pg_backend_pid()) as k, $1::int as x', [1])).rejects.toThrow();
      await new Promise((r) => setTimeout(r, 50));
      expect(await reads.query('select $1::int as x', [7])).toEqual([{ x: 7 }]);
    } finally {
      await reads.close();
      await pool.end();
    }
  });
});

/**
 * BEGIN goes in the same write as a transaction's first statement, and COMMIT with its last
 * deferred write (named-statements.ts): the outcome must be what separate round trips give.
 */
describe.runIf(onPostgres)('BEGIN and COMMIT riding with statements', () => {
  let handle: DbHandle;
  let drop: () => Promise<void>;
  type Connection = { prototype: { sync(): void; query(text: string): void } };
  const connection = (pg as unknown as { Connection: Connection }).Connection.prototype;
  const { sync: sync0, query: query0 } = connection;
  const sent = { syncs: 0, simple: [] as string[] };

  beforeAll(async () => {
    ({ handle, drop } = await openTestDatabase());
    await sql`create table riders (id int primary key, note text)`.execute(handle.db);
    await sql`insert into riders values (1, 'one')`.execute(handle.db);
    connection.sync = function () {
      sent.syncs++;
      return sync0.call(this);
    };
    connection.query = function (text: string) {
      sent.simple.push(text);
      return query0.call(this, text);
    };
  });
  afterAll(async () => {
    connection.sync = sync0;
    connection.query = query0;
    await drop();
  });

  const note = async (id: number) => (await sql<{ note: string }>`select note from riders where id = ${id}`.execute(handle.db)).rows[0]?.note;
  const writeTwo = (id: number, text: string) =>
    withTx(handle.db, async (trx) => {
      await sql`update riders set note = ${text} where id = ${1}`.execute(trx);
      deferInsert(trx, 'riders', [{ id, note: text }]);
    });

  it('a transaction of a statement and a deferred insert is two round trips, and commits both', async () => {
    // Every pooled connection parses both statements first (BEGIN rides only with a parsed one).
    for (let i = 0; i < 12; i++) await writeTwo(100 + i, `warm ${i}`);
    sent.syncs = 0;
    sent.simple.length = 0;
    await writeTwo(2, 'two');
    expect({ syncs: sent.syncs, simple: sent.simple }).toEqual({ syncs: 2, simple: [] });
    expect([await note(1), await note(2)]).toEqual(['two', 'two']);
  });

  it('a failing first statement or last insert commits nothing, and the connection goes on', async () => {
    for (let i = 0; i < 3; i++) {
      await expect(
        withTx(handle.db, async (trx) => {
          await sql`update riders set note = ${'lost'} where id = ${'not a number'}`.execute(trx);
        }),
      ).rejects.toThrow(/invalid input syntax/);
      // The insert collides with row 2 (with COMMIT after it): the update before it is undone too.
      await expect(writeTwo(2, 'lost')).rejects.toMatchObject({ code: '23505' });
    }
    expect([await note(1), await note(2)]).toEqual(['two', 'two']);
    // A transaction that sends nothing sends neither BEGIN nor COMMIT.
    sent.simple.length = 0;
    expect(await withTx(handle.db, async () => 'nothing')).toBe('nothing');
    expect(sent.simple).toEqual([]);
    await writeTwo(3, 'three');
    expect([await note(1), await note(3)]).toEqual(['three', 'three']);
  });
});
