// The database-bound limit of a list scenario: the server's own statement sent through `pg` alone (no
// HTTP, no server), by as many clients as the load has connections, for as long as a round. Sent as
// the server sends it by default (named: prepared once per connection), its rows parsed by the driver
// as the bench's pool parses them; a server can answer no faster than this. PostgreSQL's CPU per
// statement meanwhile is what one list costs the database with no server at all.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { namedStatement, SQL_TYPE_PARSERS } from '../../src/db/sql.js';
import { postgresCpuSince } from './load.js';

export interface DatabaseStatement {
  text: string;
  values: unknown[];
}

export interface StatementAlone {
  perSecond: number;
  /** PostgreSQL's CPU time per statement (its cluster's processes, postgresCpuSince). */
  postgresCpuMs: number;
}

/** Statements per second of `connections` clients sending `statement` one after another for `seconds`. */
export async function statementsPerSecond(
  databaseUrl: string,
  statement: DatabaseStatement,
  { connections, seconds, postmaster }: { connections: number; seconds: number; postmaster?: number },
): Promise<StatementAlone> {
  // "bench...": the bench leaves these backends out of the server's database memory.
  const clients = Array.from(
    { length: connections },
    () => new pg.Client({ connectionString: databaseUrl, application_name: 'bench database limit', types: SQL_TYPE_PARSERS }),
  );
  const query = { ...namedStatement('bench.alone', statement.text), values: statement.values };
  await Promise.all(clients.map((client) => client.connect()));
  try {
    // Each connection prepares the statement before the count starts.
    await Promise.all(clients.map((client) => client.query(query)));
    let done = 0;
    const postgresCpu = postgresCpuSince(postmaster);
    const started = performance.now();
    const end = started + seconds * 1000;
    await Promise.all(
      clients.map(async (client) => {
        while (performance.now() < end) {
          await client.query(query);
          done++;
        }
      }),
    );
    const perSecond = done / ((performance.now() - started) / 1000);
    return { perSecond, postgresCpuMs: postgresCpu() / done };
  } finally {
    await Promise.all(clients.map((client) => client.end()));
  }
}
