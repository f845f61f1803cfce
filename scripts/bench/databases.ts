// Fresh databases beside DATABASE_URL's for external runs (its role needs CREATEDB).
import pg from 'pg';

const named = (databaseUrl: string, database: string) => Object.assign(new URL(databaseUrl), { pathname: `/${database}` }).toString();

async function asAdministrator(databaseUrl: string, statement: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  try {
    await statement(admin);
  } finally {
    await admin.end();
  }
}

/** `<database>_<suffix>` beside DATABASE_URL's, emptied if an earlier run left it; its URL. */
export async function freshDatabaseBeside(databaseUrl: string, suffix: string): Promise<string> {
  const name = `${new URL(databaseUrl).pathname.slice(1)}_${suffix}`;
  await asAdministrator(databaseUrl, async (admin) => {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.query(`CREATE DATABASE "${name}"`);
  });
  return named(databaseUrl, name);
}

export async function dropDatabaseBeside(databaseUrl: string, freshUrl: string): Promise<void> {
  await asAdministrator(databaseUrl, (admin) =>
    admin.query(`DROP DATABASE IF EXISTS "${new URL(freshUrl).pathname.slice(1)}" WITH (FORCE)`),
  );
}
