// Hand-written statements on the hottest paths go straight to the driver, on the same connection
// pool Prisma's adapter uses: no query interpretation, no per-value conversion, no JSON round trip.
// Rows come back as `pg` parses them (int4 and float8 as numbers, int8 as text, arrays as arrays), so
// these statements select epoch milliseconds rather than timestamps. The hot ones are named
// statements (`namedStatement`): where the connection allows it, each is parsed and planned once per
// connection rather than at every execution (docs/guide/performance.md).
import { createHash } from 'node:crypto';
import pg from 'pg';

/**
 * A hot-path statement of constant text, prepared once per connection when the database allows it.
 * Only module-level constants and the families' few texts are named, so the set of names a connection
 * prepares stays bounded.
 */
export interface NamedStatement {
  readonly name: string;
  readonly text: string;
}

/** A constant statement to send named; its name is `label` plus a short hash of its text (one text per name). */
export function namedStatement(label: string, text: string): NamedStatement {
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 10);
  return Object.freeze({ name: `${label}.${hash}`, text });
}

/** Most distinct texts one family names; a family whose text varied per request would stop there. */
export const FAMILY_TEXT_LIMIT = 64;

/**
 * The named statements of a family whose text a call site builds from a few fixed choices (a keyset
 * page's direction and bounds, a role's filter: never a value, which travels as a parameter). Each
 * distinct text is named once, as `namedStatement` names it; past FAMILY_TEXT_LIMIT texts, further
 * ones go unnamed, so a family cannot grow the set of statements prepared on a connection without bound.
 */
export function namedStatementFamily(label: string): (text: string) => NamedStatement | string {
  const named = new Map<string, NamedStatement>();
  return (text) => {
    let statement = named.get(text);
    if (!statement) {
      if (named.size >= FAMILY_TEXT_LIMIT) return text;
      statement = namedStatement(label, text);
      named.set(text, statement);
    }
    return statement;
  };
}

export interface Sql {
  /** The rows of one parameterized statement ($1, $2, ... bound to `values`). */
  rows<Row>(statement: string | NamedStatement, values: readonly unknown[]): Promise<Row[]>;
  /**
   * `work` in one transaction on one pooled connection: committed when it resolves, rolled back when
   * it throws. `opening`: statements without parameters (a lock, the transaction's mode) sent with
   * BEGIN, in its round trip.
   */
  transaction<T>(work: (tx: Sql) => Promise<T>, opening?: string): Promise<T>;
}

type Queryable = pg.Pool | pg.PoolClient;

const INT4_ARRAY = 1007;
const FLOAT8_ARRAY = 1022;

/** Digits of an integer that a float8 holds exactly whatever they are (2^53 has 16). */
const EXACT_DIGITS = 15;

/**
 * The elements of a one-dimensional array of integers (`{1,-2,30}`) read digit by digit into
 * numbers, without a string per element; undefined for anything else (fractions, exponents, NULL,
 * NaN, nested arrays, longer numbers), which the caller parses otherwise.
 */
function integerElements(text: string): number[] | undefined {
  const elements: number[] = [];
  const end = text.length - 1;
  let value = 0;
  let digits = 0;
  let negative = false;
  for (let i = 1; i < end; i++) {
    const code = text.charCodeAt(i);
    if (code >= 48 && code <= 57) {
      value = value * 10 + (code - 48);
      if (++digits > EXACT_DIGITS) return undefined;
    } else if (code === 44 && digits > 0) {
      elements.push(negative ? -value : value);
      value = digits = 0;
      negative = false;
    } else if (code === 45 && digits === 0 && !negative) {
      negative = true;
    } else {
      return undefined;
    }
  }
  if (digits > 0) elements.push(negative ? -value : value);
  else if (end > 1) return undefined;
  return elements;
}

/**
 * int4[] and float8[] of whole numbers without NULLs (what these statements aggregate) read digit
 * by digit, not by the driver's character-by-character array parser, which was a tenth of the CPU
 * of a 500-file attachments list (and split and Number, which made a string per element: a twentieth
 * of a GraphQL list's profile). Anything else, NULL elements included, goes to the driver's parsers.
 */
const numberArrayParser = (oid: number) => {
  const driverParser = pg.types.getTypeParser(oid, 'text');
  return (text: string): unknown => integerElements(text) ?? driverParser(text);
};
const numberArrayParsers = new Map([INT4_ARRAY, FLOAT8_ARRAY].map((oid) => [oid, numberArrayParser(oid)]));

/** The pool's type parsers (Prisma's adapter passes its own with each of its queries). */
export const SQL_TYPE_PARSERS = {
  getTypeParser: (oid: number, format?: 'text' | 'binary') =>
    (format !== 'binary' && numberArrayParsers.get(oid)) || pg.types.getTypeParser(oid, format),
};

/**
 * The rows of a statement built with Prisma's `Prisma.sql` tag (nested fragments and array parameters
 * included); dates travel as UTC text, as Prisma sends them, whatever the process's time zone.
 */
export function statementRows<Row>(
  sql: Sql,
  statement: { text: string; values: unknown[] },
  family?: (text: string) => NamedStatement | string,
): Promise<Row[]> {
  const values = statement.values.map((value) => (value instanceof Date ? value.toISOString() : value));
  return sql.rows<Row>(family ? family(statement.text) : statement.text, values);
}

/** A statement's values, each added where its placeholder ($1, $2, ...) is written. */
export class Parameters {
  constructor(readonly values: unknown[] = []) {}
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
  copy(): Parameters {
    return new Parameters([...this.values]);
  }
}

type QueryCallback = (error: Error | undefined, result: pg.QueryResult) => void;

/**
 * A named statement sent as the driver's own Query, made from its text and then named: handed a
 * config object instead, the driver copies it through its property descriptors at every call (5 us
 * a statement, against 0.05 for a text).
 */
export function namedQuery(db: Queryable, statement: NamedStatement, values: readonly unknown[]): Promise<pg.QueryResult> {
  const query = new pg.Query(statement.text, values as unknown[]) as pg.Query & { name: string };
  query.name = statement.name;
  const submitted = new Promise<pg.QueryResult>((resolve, reject) =>
    (db as unknown as { query(query: pg.Query, callback: QueryCallback): void }).query(query, (error, result) =>
      error ? reject(error) : resolve(result),
    ),
  );
  // As the driver does for its own promises: a stack that leads back to the caller, not to the socket's read.
  return submitted.catch((error: Error) => {
    Error.captureStackTrace(error);
    throw error;
  });
}

/** Named statements go to the driver with their name (it prepares each once per connection) when `prepare`. */
function rowsOver(db: Queryable, prepare: boolean) {
  return async <Row>(statement: string | NamedStatement, values: readonly unknown[]) => {
    if (typeof statement === 'string') return (await db.query(statement, values as unknown[])).rows as Row[];
    if (!prepare) return (await db.query(statement.text, values as unknown[])).rows as Row[];
    return (await namedQuery(db, statement, values)).rows as Row[];
  };
}

/**
 * `begin` opens each transaction (db/lock-wait.ts: through a pooler it also sets the lock wait limit);
 * `prepare`: named statements are prepared on each connection (db/prepared-statements.ts decides).
 */
export function sqlOver(pool: pg.Pool, begin = 'BEGIN', prepare = false): Sql {
  return {
    rows: rowsOver(pool, prepare),
    async transaction<T>(work: (tx: Sql) => Promise<T>, opening?: string) {
      // A connection dropped between two statements fails the next one: the pool's clients always
      // hear their 'error' (src/db/database.ts), so it cannot end the process.
      const client = await pool.connect();
      const tx: Sql = { rows: rowsOver(client, prepare), transaction: () => Promise.reject(new Error('already in a transaction')) };
      try {
        await client.query(opening ? `${begin}; ${opening}` : begin);
        const result = await work(tx);
        await client.query('COMMIT');
        client.release();
        return result;
      } catch (error) {
        // A connection that cannot even roll back is dropped, not handed out again.
        const rolledBack = await client.query('ROLLBACK').then(
          () => true,
          () => false,
        );
        client.release(!rolledBack);
        throw error;
      }
    },
  };
}
