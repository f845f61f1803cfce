// For the benchmark: counts every SQL statement this process sends through the `pg` driver (Prisma's
// adapter included) and prints the running total on SIGUSR2. Installed only when
// SQL_STATEMENT_COUNTER=1, so the driver's query method stays untouched otherwise.
import pg from 'pg';

export const STATEMENT_COUNT_PREFIX = 'sql-statements ';

export function installStatementCounter(): void {
  let statements = 0;
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function countedQuery(this: pg.Client, ...args: unknown[]) {
    statements++;
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  process.on('SIGUSR2', () => process.stdout.write(`${STATEMENT_COUNT_PREFIX}${statements}\n`));
}

if (process.env.SQL_STATEMENT_COUNTER === '1') installStatementCounter();
