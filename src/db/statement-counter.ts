// Counts every SQL statement this process sends through the `pg` driver (Prisma's adapter and the
// hand-written hot paths alike). The benchmark turns it on with SQL_STATEMENT_COUNTER=1 and reads the
// running total on SIGUSR2; tests read it directly, or count (or keep) the statements of one shape
// only. Until someone asks, the driver stays untouched.
import pg from 'pg';

export const STATEMENT_COUNT_PREFIX = 'sql-statements ';

let statements = 0;
const shapes: { pattern: RegExp; captured: CapturedStatement[] }[] = [];

export interface CapturedStatement {
  text: string;
  values: unknown[];
  /** Set when the statement was sent named (prepared once per connection, db/sql.ts). */
  name?: string;
}
let installed = false;

const statementValues = ([first, second]: unknown[]): unknown[] =>
  Array.isArray(second) ? second : Array.isArray((first as { values?: unknown })?.values) ? (first as { values: unknown[] }).values : [];

const statementText = (first: unknown): string =>
  typeof first === 'string' ? first : typeof (first as { text?: unknown })?.text === 'string' ? (first as { text: string }).text : '';

function install(): void {
  if (installed) return;
  installed = true;
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function countedQuery(this: pg.Client, ...args: unknown[]) {
    statements++;
    if (shapes.length > 0) {
      const text = statementText(args[0]);
      const name = (args[0] as { name?: string } | undefined)?.name;
      for (const shape of shapes) if (shape.pattern.test(text)) shape.captured.push({ text, values: statementValues(args), name });
    }
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
}

/** Starts counting (once per process); returns a reader of the running total. */
export function countStatements(): () => number {
  install();
  return () => statements;
}

/** Counts, from now on, the statements whose text matches `pattern`; returns a reader of that count. */
export function countStatementsMatching(pattern: RegExp): () => number {
  const captured = captureStatements(pattern);
  return () => captured.length;
}

/** Keeps, from now on, the text and values of each statement whose text matches `pattern` (tests: to EXPLAIN them). */
export function captureStatements(pattern: RegExp): CapturedStatement[] {
  install();
  const captured: CapturedStatement[] = [];
  shapes.push({ pattern, captured });
  return captured;
}

if (process.env.SQL_STATEMENT_COUNTER === '1') {
  const total = countStatements();
  process.on('SIGUSR2', () => process.stderr.write(`${STATEMENT_COUNT_PREFIX}${total()}\n`));
}
