// Counts every SQL statement this process sends through the `pg` driver (Prisma's adapter and the
// hand-written hot paths alike). The benchmark turns it on with SQL_STATEMENT_COUNTER=1 and reads the
// running total on SIGUSR2; tests read it directly. Until someone asks, the driver stays untouched.
import pg from 'pg';

export const STATEMENT_COUNT_PREFIX = 'sql-statements ';

let statements = 0;
let installed = false;

/** Starts counting (once per process); returns a reader of the running total. */
export function countStatements(): () => number {
  if (!installed) {
    installed = true;
    const query = pg.Client.prototype.query;
    pg.Client.prototype.query = function countedQuery(this: pg.Client, ...args: unknown[]) {
      statements++;
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
  }
  return () => statements;
}

if (process.env.SQL_STATEMENT_COUNTER === '1') {
  const total = countStatements();
  process.on('SIGUSR2', () => process.stdout.write(`${STATEMENT_COUNT_PREFIX}${total()}\n`));
}
