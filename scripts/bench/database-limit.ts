// The database-bound limit of a list scenario: the server's own statement sent through `pg` alone (no
// HTTP, no server), by as many clients as the load has connections, for as long as a round. Sent as
// the server sends it (unnamed, the extended protocol), and its rows parsed by the driver as the
// bench's pool parses them; a server can answer no faster than this.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { SQL_TYPE_PARSERS } from '../../src/db/sql.js';

export interface DatabaseStatement {
  text: string;
  values: unknown[];
}

/** Statements per second of `connections` clients sending `statement` one after another for `seconds`. */
export async function statementsPerSecond(
  databaseUrl: string,
  statement: DatabaseStatement,
  { connections, seconds }: { connections: number; seconds: number },
): Promise<number> {
  // "bench...": the bench leaves these backends out of the server's database memory.
  const clients = Array.from(
    { length: connections },
    () => new pg.Client({ connectionString: databaseUrl, application_name: 'bench database limit', types: SQL_TYPE_PARSERS }),
  );
  await Promise.all(clients.map((client) => client.connect()));
  try {
    await clients[0]!.query(statement.text, statement.values);
    let done = 0;
    const started = performance.now();
    const end = started + seconds * 1000;
    await Promise.all(
      clients.map(async (client) => {
        while (performance.now() < end) {
          await client.query(statement.text, statement.values);
          done++;
        }
      }),
    );
    return done / ((performance.now() - started) / 1000);
  } finally {
    await Promise.all(clients.map((client) => client.end()));
  }
}
