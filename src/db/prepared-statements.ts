// Whether the hot paths' named statements (sql.ts `namedStatement`) are prepared on each connection:
// DATABASE_PREPARED_STATEMENTS=auto prepares on the embedded PostgreSQL and on direct connections, and
// not through a pooler in transaction mode (PgBouncer before 1.21 does not carry named statements from
// one server connection to the next); `on` forces it (PgBouncer 1.21+ with max_prepared_statements),
// after a start-up probe that refuses a pooler which loses them; `off` never prepares.
import pg from 'pg';
import { StartupError } from '../startup-error.js';

export type PreparedStatementsSetting = 'auto' | 'on' | 'off';

const SETTINGS: readonly PreparedStatementsSetting[] = ['auto', 'on', 'off'];

/** DATABASE_PREPARED_STATEMENTS: unset or empty is auto. */
export function preparedStatementsSetting(value: string | undefined): PreparedStatementsSetting {
  if (value === undefined || value === '') return 'auto';
  const setting = SETTINGS.find((each) => each === value);
  if (!setting) throw new StartupError(`DATABASE_PREPARED_STATEMENTS must be auto, on or off, got ${JSON.stringify(value)}`);
  return setting;
}

/** `throughPooler`: DATABASE_URL goes through a pooler in transaction mode (DATABASE_DIRECT_URL is set). */
export function preparesStatements(setting: PreparedStatementsSetting, throughPooler: boolean): boolean {
  return setting === 'on' || (setting === 'auto' && !throughPooler);
}

/** SQLSTATE invalid_sql_statement_name: "prepared statement ... does not exist". */
const UNKNOWN_STATEMENT = '26000';

/**
 * Refuses to start when named statements do not survive the pooler at `url`. One connection prepares
 * a statement inside a transaction while a second holds another server connection; both are then
 * released, and the first executes its statement again, inside a transaction that also names its
 * server backend, until it lands on the other server connection (PgBouncer hands out the most recently
 * released one first): a pooler that does not carry the statement there answers 26000.
 */
export async function probePreparedStatements(url: string, startup: pg.ClientConfig): Promise<void> {
  const preparing = new pg.Client({ connectionString: url, ...startup });
  const holding = new pg.Client({ connectionString: url, ...startup });
  for (const client of [preparing, holding]) client.on('error', () => {});
  const probe = { name: 'teamchat.prepared-statements-probe', text: 'SELECT pg_backend_pid() AS pid' };
  try {
    await Promise.all([preparing.connect(), holding.connect()]);
    await preparing.query('BEGIN');
    const first = (await preparing.query(probe)).rows[0].pid as number;
    await holding.query('BEGIN');
    const other = (await holding.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
    await preparing.query('COMMIT');
    await holding.query('COMMIT');
    if (first === other) return;
    for (let attempt = 0; attempt < 4; attempt++) {
      const pid = (await preparing.query(probe)).rows[0].pid as number;
      if (pid !== first) return;
      await holding.query('SELECT 1');
    }
  } catch (error) {
    if ((error as { code?: string }).code === UNKNOWN_STATEMENT) {
      throw new StartupError(
        'DATABASE_PREPARED_STATEMENTS=on: the pooler at DATABASE_URL loses named statements between its server connections ' +
          `(${(error as Error).message}); set DATABASE_PREPARED_STATEMENTS=auto or off, or max_prepared_statements in PgBouncer 1.21+`,
      );
    }
    throw error;
  } finally {
    await Promise.all([preparing.end().catch(() => {}), holding.end().catch(() => {})]);
  }
}
