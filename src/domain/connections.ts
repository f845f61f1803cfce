// Keyset pagination and the cursor connections built on it (the Relay specification). A list is
// read from a key on (its sort columns' values), one indexed statement per page whatever its length,
// never with OFFSET; a cursor is a row's key, not a position, so it stays valid when its row is
// deleted or others arrive. A cursor carries no rights: every list reads only the caller's rows,
// whatever cursor it is given.
import type { Parameters } from '../db/sql.js';
import { badRequest } from './errors.js';
import { isRowId } from './ids.js';
import { pagedList, type Paged } from './paging.js';

/** The most rows a connection's page holds. */
export const MAX_PAGE_SIZE = 100;

/** A row's place in its list: its values of the list's sort columns, as numbers. */
export type Key = readonly number[];

export interface KeyColumn {
  /** The column as the list's statement names it. */
  column: string;
  /** A key element as an SQL value: its placeholder, cast to the column's type. */
  value(element: number, parameters: Parameters): string;
  /** Whether a cursor's element can be a value of the column (anything else would fail in the database). */
  accepts(element: number): boolean;
}

export const idColumn = (column = 'id'): KeyColumn => ({
  column,
  value: (id, parameters) => `${parameters.add(id)}::int`,
  accepts: isRowId,
});

/** Years 1 to 9999: what both JavaScript dates and PostgreSQL timestamps hold. */
const TIMESTAMP_MS_RANGE = [Date.parse('0001-01-01T00:00:00.000Z'), Date.parse('9999-12-31T23:59:59.999Z')] as const;

/** A timestamp(3) column, keyed by milliseconds since the epoch. */
export const millisecondsColumn = (column: string): KeyColumn => ({
  column,
  value: (ms, parameters) => `${parameters.add(new Date(ms).toISOString())}::timestamp(3)`,
  accepts: (ms) => Number.isSafeInteger(ms) && ms >= TIMESTAMP_MS_RANGE[0] && ms <= TIMESTAMP_MS_RANGE[1],
});

/** A list's order: sort columns all ascending or all descending, the last one unique. */
export interface KeysetOrder {
  /** Names the list in its cursors, so that no list takes another's. */
  name: string;
  columns: KeyColumn[];
  descending: boolean;
}

/** One end of a range of a list: the rows past this key, and the key's own row when inclusive. */
export interface Bound {
  key: Key;
  inclusive: boolean;
}

/** What to read: the rows between the bounds (in the list's order), from the `after` end or, backward, from the `before` end. */
export interface Seek {
  after?: Bound;
  before?: Bound;
  backward: boolean;
  limit: number;
  /**
   * The limit is the code's own chunk size (a whole list read a chunk at a time), not a page size a
   * client chose: it is written into the statement's text, one text per chunk size. A generic plan
   * then knows how many rows the chunk may hold; a LIMIT parameter is planned as a tenth of the
   * rows, which made the list with messages reach each link by an index lookup (14.6 ms against
   * 9.6 for 500 files with 1,500 links).
   */
  fixedLimit?: boolean;
}

/** A list that reads by keyset: rows in the seek's direction. */
export interface KeysetList<Row> {
  order: KeysetOrder;
  keyOf(row: Row): Key;
  read(seek: Seek): Promise<Row[]>;
  /** Every row of the list. */
  count(): Promise<number>;
}

/** A seek's conditions (each starting with AND), order and limit, their values added to `parameters`. */
export function seekSql(order: KeysetOrder, seek: Seek, parameters: Parameters) {
  const conditions: string[] = [];
  if (seek.after) conditions.push(compare(order, seek.after, order.descending ? '<' : '>', parameters));
  if (seek.before) conditions.push(compare(order, seek.before, order.descending ? '>' : '<', parameters));
  const descending = order.descending !== seek.backward;
  return {
    where: conditions.map((condition) => `AND ${condition}`).join(' '),
    /** The order by the key's columns, after `leading` ones (columns the list's filter fixes) in the same direction. */
    orderBy: (qualifier = '', leading: string[] = []) =>
      [...leading, ...order.columns.map(({ column }) => `${qualifier}${column}`)]
        .map((column) => `${column} ${descending ? 'DESC' : 'ASC'}`)
        .join(', '),
    limit: seek.fixedLimit ? fixedLimit(seek.limit) : parameters.add(seek.limit),
  };
}

function fixedLimit(limit: number): string {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new Error(`not a chunk size: ${limit}`);
  return String(limit);
}

function compare(order: KeysetOrder, bound: Bound, operator: '<' | '>', parameters: Parameters) {
  const op = bound.inclusive ? `${operator}=` : operator;
  const columns = order.columns.map(({ column }) => column);
  const values = order.columns.map((column, i) => column.value(bound.key[i]!, parameters));
  return columns.length === 1 ? `${columns[0]} ${op} ${values[0]}` : `(${columns.join(', ')}) ${op} (${values.join(', ')})`;
}

/** A whole list's chunk of `size` rows (the code's own size, written into the text), after the row with key `after`. */
export const chunkSeek = (size: number, after?: Key): Seek => ({
  after: after && { key: after, inclusive: false },
  backward: false,
  limit: size,
  fixedLimit: true,
});

/** The whole list, `pageSize` rows per statement (src/domain/paging.ts); its first page given when already read. */
export async function keysetPages<Row>(list: KeysetList<Row>, pageSize: number, firstPage?: Row[]): Promise<Paged<Row>> {
  const readAfter = (last?: Row) => list.read(chunkSeek(pageSize, last && list.keyOf(last)));
  return pagedList(firstPage ?? (await readAfter()), pageSize, readAfter, () => list.count());
}

export interface PageArguments {
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
}

export interface PageInfo {
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  startCursor: string | null;
  endCursor: string | null;
}

export interface Connection<Row> {
  edges: { cursor: string; node: Row }[];
  pageInfo: PageInfo;
  /** Every row of the list, whatever the page; counted only when asked. */
  totalCount(): Promise<number>;
}

/**
 * One page of a list as the Relay specification defines it: the rows after `after` and before
 * `before`, the first `first` of them or the last `last`. The flag of the side the page was read
 * towards comes from one extra row; the other side's says whether the list holds anything at or
 * beyond the cursor given there (false without one).
 */
export async function connectionPage<Row>(list: KeysetList<Row>, args: PageArguments): Promise<Connection<Row>> {
  const { size, backward } = pageSize(args);
  const after = args.after == null ? undefined : decodeCursor(list.order, args.after, 'after');
  const before = args.before == null ? undefined : decodeCursor(list.order, args.before, 'before');
  const exclusive = (key?: Key) => key && { key, inclusive: false };
  const anyFrom = async (seek: Omit<Seek, 'limit'>) => (await list.read({ ...seek, limit: 1 })).length > 0;
  const [rows, beyondCursor] = await Promise.all([
    list.read({ after: exclusive(after), before: exclusive(before), backward, limit: size + 1 }),
    backward
      ? before !== undefined && anyFrom({ after: { key: before, inclusive: true }, backward: false })
      : after !== undefined && anyFrom({ before: { key: after, inclusive: true }, backward: true }),
  ]);
  const more = rows.length > size;
  const page = rows.slice(0, size);
  if (backward) page.reverse();
  const edges = page.map((node) => new Edge(node, list));
  return {
    edges,
    pageInfo: {
      hasNextPage: backward ? beyondCursor : more,
      hasPreviousPage: backward ? more : beyondCursor,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
    totalCount: () => list.count(),
  };
}

/** A row and its cursor, encoded when asked for: most pages ask for the end cursor alone. */
class Edge<Row> {
  constructor(
    readonly node: Row,
    private readonly list: Pick<KeysetList<Row>, 'order' | 'keyOf'>,
  ) {}

  get cursor(): string {
    return encodeCursor(this.list.order, this.list.keyOf(this.node));
  }
}

function pageSize({ first, last }: PageArguments): { size: number; backward: boolean } {
  if ((first == null) === (last == null)) throw badRequest('Pass exactly one of first and last.');
  const [name, size] = first != null ? ['first', first] : ['last', last!];
  if (!Number.isInteger(size) || size < 1 || size > MAX_PAGE_SIZE) throw badRequest(`${name} must be between 1 and ${MAX_PAGE_SIZE}.`);
  return { size, backward: first == null };
}

// A cursor is base64url of JSON [version, list name, ...key]: opaque to callers, and a later
// version can change the format and still recognise (or refuse) older cursors.
const CURSOR_VERSION = 1;
const MAX_CURSOR_LENGTH = 200;

export const encodeCursor = (order: KeysetOrder, key: Key) =>
  Buffer.from(JSON.stringify([CURSOR_VERSION, order.name, ...key])).toString('base64url');

function decodeCursor(order: KeysetOrder, cursor: string, argument: 'after' | 'before'): Key {
  const invalid = () => badRequest(`${argument} is not a cursor of this list.`);
  if (cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (!Array.isArray(parsed) || parsed[0] !== CURSOR_VERSION || parsed[1] !== order.name || parsed.length !== 2 + order.columns.length)
    throw invalid();
  const key = parsed.slice(2) as unknown[];
  if (!order.columns.every((column, i) => typeof key[i] === 'number' && column.accepts(key[i]))) throw invalid();
  return key as number[];
}
