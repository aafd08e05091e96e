import pg from 'pg';
// pg's own conversion of parameter values (its package exports lib/*): the same Bind as pg sends.
import pgUtils from 'pg/lib/utils.js';

/**
 * A named prepared statement that asks PostgreSQL to describe its rows once per connection.
 * pg's Query sends Parse (first time), Bind, Describe, Execute, Sync; the Describe makes
 * PostgreSQL send the row description (for a customer answer, 17 columns: some 530 bytes) with
 * every execution, and pg parses it and looks up each column's type parser again each time —
 * about a tenth of a point read's CPU in the driver (bench/README.md). A prepared statement's
 * rows cannot change shape while it exists on a connection (PostgreSQL answers "cached plan must
 * not change result type" instead, and named-statements.ts then prepares it under a new name),
 * so the first execution's description is kept per connection and statement name, and later
 * executions send Bind, Execute, Sync and read the rows with the kept fields and parsers.
 *
 * Those executions also build each row with a function compiled once per description: one object
 * literal of the statement's columns (`{"id": …, "email": …}`), where pg copies an empty row and
 * then stores each column under a name read from an array — a keyed store per column that V8
 * cannot specialise, paid 18 times per row of a 21-row page (bench/README.md).
 */

type Parse = (text: string) => unknown;
type RowBuilder = (values: ReadonlyArray<string | null>) => Record<string, unknown>;

interface Description {
  fields: unknown[];
  parsers: unknown[] | undefined;
  empty: Record<string, null> | null;
  /** Undefined where the compiled literal could differ from pg's row (see rowBuilder). */
  build: RowBuilder | undefined;
}

/**
 * The row pg's Result.parseRow would make, as one object literal: the same columns in the same
 * order, null for NULL, each other value through its type parser; a repeated name keeps its first
 * place and its last value, as pg's stores do. Only for text columns (pg copies a binary value
 * into a Buffer first) and names a literal treats as data (`__proto__` would set the prototype).
 */
function rowBuilder(fields: ReadonlyArray<{ name: string; format?: string }>, parsers: Parse[] | undefined): RowBuilder | undefined {
  if (!parsers || fields.some((field) => field.format === 'binary' || field.name === '__proto__')) return undefined;
  const columns = fields.map((field, i) => `${JSON.stringify(field.name)}: v[${i}] === null ? null : p[${i}](v[${i}])`);
  // Column names enter the source only as JSON string literals.
  return new Function('p', `return function parseRow(v) { return { ${columns.join(', ')} }; };`)(parsers) as RowBuilder;
}

/** What this class reaches of pg's Query and Result (pg 8: lib/query.js, lib/result.js). */
interface QueryInternals {
  name?: string;
  portal: string;
  values?: unknown[];
  binary?: boolean;
  rows?: number;
  callback?: unknown;
  _accumulateRows: boolean;
  _result: {
    fields: unknown[];
    _parsers: unknown[] | undefined;
    _prebuiltEmptyResultObject: Record<string, null> | null;
    parseRow(values: ReadonlyArray<string | null>): Record<string, unknown>;
  };
  _getRows(connection: PgConnection, rows?: number): void;
  listeners(event: string): unknown[];
}

interface PgConnection {
  parsedStatements: Record<string, string>;
  parse(query: { text: string; name: string; types: unknown[] }): void;
  bind(config: { portal: string; statement?: string; values?: unknown[]; binary?: boolean; valueMapper: (value: unknown) => unknown }): void;
  execute(config: { portal: string; rows?: number }): void;
  sync(): void;
}

/**
 * Statements without parameters or rows (BEGIN, COMMIT) sent in the same write as a prepared
 * statement, before or after it and before its Sync (the extended protocol's pipelining): they
 * run in order, and an error skips the rest up to the Sync, as if each had been sent on its own.
 */
export interface Riders {
  before?: string;
  after?: string;
}

/** Parse, Bind and Execute of a parameterless statement as the unnamed statement and portal. */
function sendUnnamed(connection: PgConnection, text: string): void {
  connection.parse({ text, name: '', types: [] });
  connection.bind({ portal: '', statement: '', values: [], valueMapper: pgUtils.prepareValue });
  connection.execute({ portal: '' });
}

const NO_ROWS: Description = { fields: [], parsers: undefined, empty: null, build: undefined };
/** Per connection (pg's Connection object, gone with it), per statement name. */
const descriptions = new WeakMap<object, Map<string, Description>>();

type QueryMethods = {
  submit(connection: PgConnection): Error | null;
  _getRows(connection: PgConnection, rows?: number): void;
  prepare(connection: PgConnection): void;
  handleRowDescription(msg: unknown): void;
  handleCommandComplete(msg: unknown, connection: PgConnection): void;
};
const Base = pg.Query as unknown as new (text: string, values: unknown[], callback: (error: Error | undefined, result: pg.QueryResult) => void) => QueryMethods;

export class DescribedOnceQuery extends Base {
  private known: Map<string, Description> | undefined;
  private description: Description | undefined;
  private described = false;
  /** CommandCompletes still to come from the riders before and after the statement's own. */
  private beforeLeft: number;
  private ownDone = false;

  constructor(
    name: string,
    text: string,
    values: unknown[],
    callback: (error: Error | undefined, result: pg.QueryResult) => void,
    private readonly riders: Riders = {},
  ) {
    // Text, values and callback rather than a config object, which pg copies property by property.
    super(text, values, callback);
    (this as unknown as QueryInternals).name = name;
    this.beforeLeft = riders.before === undefined ? 0 : 1;
  }

  override submit(connection: PgConnection): Error | null {
    let known = descriptions.get(connection);
    if (!known) descriptions.set(connection, (known = new Map()));
    this.known = known;
    const self = this as unknown as QueryInternals;
    // Only a statement this connection has parsed (pg's own bookkeeping) runs without Describe.
    this.description = connection.parsedStatements[self.name!] !== undefined ? known.get(self.name!) : undefined;
    return super.submit(connection);
  }

  override prepare(connection: PgConnection): void {
    // pg takes a ParseComplete for the active query's statement: a rider goes before only a statement parsed already (NamedStatementClient).
    if (this.riders.before !== undefined) sendUnnamed(connection, this.riders.before);
    const description = this.description;
    if (!description) return super.prepare(connection);
    const self = this as unknown as QueryInternals;
    try {
      connection.bind({ portal: self.portal, statement: self.name, values: self.values, binary: self.binary, valueMapper: pgUtils.prepareValue });
    } catch (error) {
      // pg's Query does the same for a value it cannot convert (nothing was sent yet but Bind).
      (connection as unknown as { sync(): void }).sync();
      (this as unknown as { handleError(e: unknown, c: unknown): void }).handleError(error, connection);
      return;
    }
    const result = self._result;
    result.fields = description.fields;
    result._parsers = description.parsers;
    result._prebuiltEmptyResultObject = description.empty;
    if (description.build) result.parseRow = description.build;
    self._accumulateRows = Boolean(self.callback) || self.listeners('row').length === 0;
    self._getRows(connection, self.rows);
  }

  /** pg's Query sends Execute and Sync here (both paths of prepare): a rider after goes between them. */
  override _getRows(connection: PgConnection, rows?: number): void {
    const self = this as unknown as QueryInternals;
    if (this.riders.after === undefined || rows) return super._getRows(connection, rows);
    connection.execute({ portal: self.portal, rows });
    sendUnnamed(connection, this.riders.after);
    connection.sync();
  }

  override handleRowDescription(msg: unknown): void {
    super.handleRowDescription(msg);
    this.described = true;
  }

  override handleCommandComplete(msg: unknown, connection: PgConnection): void {
    // A rider's completion is not the statement's result.
    if (this.beforeLeft > 0) {
      this.beforeLeft--;
      return;
    }
    if (this.ownDone) return;
    this.ownDone = true;
    if (!this.description && this.known) {
      const self = this as unknown as QueryInternals;
      const { fields, _parsers, _prebuiltEmptyResultObject } = self._result;
      this.known.set(
        self.name!,
        this.described
          ? { fields, parsers: _parsers, empty: _prebuiltEmptyResultObject, build: rowBuilder(fields as Array<{ name: string; format?: string }>, _parsers as Parse[] | undefined) }
          : NO_ROWS,
      );
    }
    super.handleCommandComplete(msg, connection);
  }
}
