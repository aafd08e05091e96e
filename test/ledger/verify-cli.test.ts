import { cp } from 'node:fs/promises';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger, openInternalLedgerAccount, systemAccountId, type LedgerAccountRef } from '../../src/modules/ledger/index.js';
import { createPlatform } from '../../src/modules/platforms/index.js';
import { systemClock } from '../../src/platform/clock.js';
import { openDatabase, type DbHandle } from '../../src/platform/db/database.js';
import { migrate } from '../../src/platform/db/migrate.js';
import { withTx } from '../../src/platform/db/tx.js';
import { formatId, uuidv7 } from '../../src/platform/ids.js';
import { processDatabase, runCli, type ProcessDatabase } from '../helpers/process.js';

/**
 * `database` migrated to this version: already, on PGlite (processDatabase starts from the run's
 * migrated directory); on PostgreSQL, its new schema migrated in this process, not by a `corridor
 * migrate` started for it (seconds of start-up no test here is about).
 */
async function migrated(database: ProcessDatabase): Promise<ProcessDatabase> {
  const url = database.env.DATABASE_URL;
  if (!url) return database;
  const handle = await openDatabase({ databaseUrl: url, poolSize: 1 });
  try {
    await migrate(handle.db);
  } finally {
    await handle.close();
  }
  return database;
}

/**
 * `corridor ledger verify` as an operator runs it: against a database another process wrote,
 * exit 0 when the books are sound, exit 1 with one readable line per breach when rows were
 * changed behind the ledger's back, the same as JSON with --json, and --platform to look at one
 * platform's books only.
 */
describe('corridor ledger verify', () => {
  let database: ProcessDatabase;
  const ledger = new Ledger({ clock: systemClock, hotAccountShards: 4, onInternalBalancesChanged: async () => {} });
  const FUNDING: LedgerAccountRef = { kind: 'SANDBOX_FUNDING', currency: 'USD' };
  const FEES: LedgerAccountRef = { kind: 'PLATFORM_FEES', currency: 'USD' };

  beforeAll(async () => {
    database = await migrated(await processDatabase('ledgerverify'));
  }, 180_000);
  afterAll(() => database.cleanup());

  async function withDatabase<T>(work: (handle: DbHandle) => Promise<T>): Promise<T> {
    const url = database.env.DATABASE_URL;
    const handle = await openDatabase(url ? { databaseUrl: url, poolSize: 1 } : { dataDir: database.env.CORRIDOR_DATA_DIR!, poolSize: 1 });
    try {
      return await work(handle);
    } finally {
      await handle.close();
    }
  }

  /** A platform (which opens an internal account of its own) whose account A was funded 10 000 and paid B 1 000 with a fee of 25. */
  async function books(handle: DbHandle) {
    const db = handle.db;
    const platformId = await withTx(db, async (trx) => (await createPlatform(trx, systemClock, { name: 'verify cli', environment: 'sandbox' })).platformUuid);
    const [a, b] = [uuidv7(), uuidv7()];
    for (const id of [a, b]) await withTx(db, (trx) => openInternalLedgerAccount(trx, { id, platformId, currency: 'USD', now: new Date() }));
    const A: LedgerAccountRef = { kind: 'INTERNAL_ACCOUNT', id: a };
    const funding = await withTx(db, (trx) => ledger.transfer(trx, { platformId, reference: 'fund', postings: [{ from: FUNDING, to: A, amount: 10_000n, currency: 'USD' }] }));
    await withTx(db, (trx) =>
      ledger.transfer(trx, {
        platformId,
        reference: 'pay',
        postings: [
          { from: A, to: { kind: 'INTERNAL_ACCOUNT', id: b }, amount: 1_000n, currency: 'USD' },
          { from: A, to: FEES, amount: 25n, currency: 'USD' },
        ],
      }),
    );
    return { platformId, a, b, funding: funding.id };
  }

  it('exit 0 on sound books; exit 1 naming each breach, in text and in JSON; --platform looks at one platform', async () => {
    const { sound, broken } = await withDatabase(async (handle) => ({ sound: await books(handle), broken: await books(handle) }));
    const clean = await runCli(database.env, 'ledger', 'verify');
    expect(clean.code, clean.output).toBe(0);
    expect(clean.stdout).toMatch(/^checked 4 transactions and 22 balance rows; holds: 0 open, 0 posted, 0 voided\nledger verify: OK, no breach\n$/);

    const fees = systemAccountId(broken.platformId, FEES);
    await withDatabase(async ({ db }) => {
      // The funding lost its credit; B's stored balance gained 1; a fee shard row nothing used vanished; A went below zero.
      await sql`delete from ledger_entries where transaction_id = ${broken.funding} and side = 'C'`.execute(db);
      await sql`update ledger_balances set credits_posted = credits_posted + 1 where account_id = ${broken.b}`.execute(db);
      await sql`delete from ledger_balances where account_id = ${fees} and shard = (select max(shard) from ledger_balances where account_id = ${fees} and credits_posted = 0)`.execute(db);
      await sql`alter table ledger_balances drop constraint ledger_balances_valid`.execute(db);
      await sql`update ledger_balances set debits_posted = debits_posted + 20000 where account_id = ${broken.a}`.execute(db);
    });
    const text = await runCli(database.env, 'ledger', 'verify', '--batch-size', '2');
    expect(text.code, text.output).toBe(1);
    const lines = text.stdout.trim().split('\n');
    expect(lines[0]).toBe('checked 4 transactions and 21 balance rows; holds: 0 open, 0 posted, 0 voided');
    expect(lines).toContain(`BREACH TRANSACTION_UNBALANCED ${broken.funding}: USD: debits 10000, credits 0`);
    expect(lines).toContain(`BREACH BALANCE_MISMATCH ${broken.b}#0: debits/credits posted, debits/credits pending: stored 0/1001/0/0, entries 0/1000/0/0`);
    expect(lines).toContain(`BREACH NEGATIVE_BALANCE ${broken.a}#0: available -11025`);
    expect(lines.find((l) => l.startsWith(`BREACH SHARDS_MISSING ${fees}: `))).toMatch(/: PLATFORM_FEES USD has 3 of its 4 shard rows \(missing: \d\)$/);
    expect(lines.at(-1)).toBe('ledger verify: 5 breach(es)');

    const json = await runCli(database.env, 'ledger', 'verify', '--json');
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout) as { ok: boolean; breachCount: number; breaches: Array<{ check: string }> };
    expect(report.ok).toBe(false);
    expect(report.breachCount).toBe(5);
    expect(report.breaches.map((b) => b.check).sort()).toEqual(['BALANCE_MISMATCH', 'BALANCE_MISMATCH', 'NEGATIVE_BALANCE', 'SHARDS_MISSING', 'TRANSACTION_UNBALANCED']);

    const one = await runCli(database.env, 'ledger', 'verify', '--platform', formatId('Platform', sound.platformId));
    expect(one.code, one.output).toBe(0);
    expect(one.stdout).toContain('checked 2 transactions and 11 balance rows');
    expect((await runCli(database.env, 'ledger', 'verify', '--platform', formatId('Platform', broken.platformId))).code).toBe(1);

    // A database a newer release migrated: judged by this release's rules, and said so on stderr (stdout stays the report).
    await withDatabase(({ db }) => sql`insert into schema_migrations (version, name) values (9999, 'from_a_later_release')`.execute(db));
    try {
      const newer = await runCli(database.env, 'ledger', 'verify', '--json', '--platform', formatId('Platform', sound.platformId));
      expect(newer.code, newer.output).toBe(0);
      expect(JSON.parse(newer.stdout)).toMatchObject({ ok: true, transactions: 2 });
      expect(newer.output).toContain("corridor: the database holds migrations of a newer release (9999_from_a_later_release); this release's rules are checked");
    } finally {
      await withDatabase(({ db }) => sql`delete from schema_migrations where version = 9999`.execute(db));
    }
  }, 400_000);

  it('exit 3, judging nothing, when the check cannot finish (no database to read)', async () => {
    const closed = { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/corridor', CORRIDOR_MASTER_KEY: '00'.repeat(32) };
    const unreachable = await runCli(closed, 'ledger', 'verify');
    expect(unreachable.code, unreachable.output).toBe(3);
    expect(unreachable.output).toContain('ledger verify could not finish, nothing was judged');
    expect(unreachable.stdout).not.toContain('ledger verify: OK');
  }, 60_000);
});

/**
 * Pointed at the wrong database — an empty one, another application's (with a schema_migrations
 * of its own, as Rails keeps), or Corridor's behind this version's migrations — verify refuses
 * in one line with exit 2, the status of a wrong setting, and leaves the database as it was.
 * Before, the first two were exit 3 ("could not finish"), which a monitor reads as a broken check.
 */
describe('corridor ledger verify on a database it cannot judge', () => {
  const databases: ProcessDatabase[] = [];
  afterAll(() => Promise.all(databases.map((d) => d.cleanup())));

  /**
   * A private database that exists but holds nothing (on PGlite, an initialised data directory:
   * a copy of one initialised once for the file, as initialising each is seconds of CPU).
   */
  async function emptyDatabase(prefix: string): Promise<ProcessDatabase> {
    const database = await processDatabase(prefix, { empty: true });
    databases.push(database);
    if (!database.env.DATABASE_URL) await cp(await (initialised ??= initialise()), database.env.CORRIDOR_DATA_DIR!, { recursive: true });
    return database;
  }
  let initialised: Promise<string> | undefined;
  async function initialise(): Promise<string> {
    const database = await processDatabase('verifyinitialised', { empty: true });
    databases.push(database);
    await (await open(database)).close();
    return database.env.CORRIDOR_DATA_DIR!;
  }

  function open(database: ProcessDatabase): Promise<DbHandle> {
    const url = database.env.DATABASE_URL;
    return openDatabase(url ? { databaseUrl: url, poolSize: 1 } : { dataDir: database.env.CORRIDOR_DATA_DIR!, poolSize: 1 });
  }

  async function tables(database: ProcessDatabase): Promise<string[]> {
    const handle = await open(database);
    try {
      const { rows } = await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema() order by 1`.execute(handle.db);
      return rows.map((r) => r.name);
    } finally {
      await handle.close();
    }
  }

  /** Answers the database's tables after the refusal (the same as before it). */
  async function expectRefused(database: ProcessDatabase, message: string): Promise<string[]> {
    const before = await tables(database);
    const result = await runCli(database.env, 'ledger', 'verify');
    expect(result.code, result.output).toBe(2);
    expect(result.output.trim().split('\n')).toEqual([expect.stringContaining(`corridor: `)]);
    expect(result.output).toContain(message);
    const after = await tables(database);
    expect(after).toEqual(before);
    return after;
  }

  it('an empty database: exit 2, one line, nothing created', async () => {
    const empty = await emptyDatabase('verifyempty');
    expect(await expectRefused(empty, 'is not a Corridor database: it has no Corridor tables (check DATABASE_URL or CORRIDOR_DATA_DIR)')).toEqual([]);
  }, 120_000);

  it("another application's database, with a schema_migrations of its own: exit 2, one line, untouched", async () => {
    const other = await emptyDatabase('verifyother');
    const handle = await open(other);
    await sql`create table schema_migrations (version varchar primary key)`.execute(handle.db);
    await sql`create table orders (id integer primary key)`.execute(handle.db);
    await handle.close();
    expect(await expectRefused(other, 'is not a Corridor database')).toEqual(['orders', 'schema_migrations']);
  }, 120_000);

  it('a Corridor database behind the migrations: exit 2, one line, not migrated', async () => {
    const behind = await migrated(await processDatabase('verifybehind'));
    databases.push(behind);
    const handle = await open(behind);
    await sql`delete from schema_migrations where version = (select max(version) from schema_migrations)`.execute(handle.db);
    await handle.close();
    await expectRefused(behind, 'corridor: the database is not migrated to this version of Corridor (run corridor migrate)');
  }, 180_000);
});
