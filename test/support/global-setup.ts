// Once per test run: the PostgreSQL the tests use (the server named by DATABASE_URL, or an embedded
// one started here in a temporary folder), and a migrated template database that each test file
// copies (test/support/postgres-databases.ts). With DATABASE_DIRECT_URL, DATABASE_URL goes through a
// pooler (PgBouncer in transaction mode): test servers use both, as production does; creating,
// copying and migrating databases goes to PostgreSQL itself (a pooler's idle server connection to
// the template would keep PostgreSQL from copying it).
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '../../src/db/database.js';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres.js';
import { createTemplate, dropCopies, withDatabase } from './postgres-databases.js';

export default async function setup(project: TestProject) {
  const { DATABASE_URL, DATABASE_DIRECT_URL } = process.env;
  let databaseUrl = DATABASE_DIRECT_URL || DATABASE_URL;
  let stopEmbedded = async () => {};
  if (!databaseUrl) {
    const folder = await mkdtemp(join(tmpdir(), 'tc-tests-'));
    // As root the embedded PostgreSQL runs as the postgres user: it must reach the folder, or its
    // cluster would go to /var/lib/teamchat and outlive the folder's removal.
    await chmod(folder, 0o711);
    const embedded = await startEmbeddedPostgres(folder);
    databaseUrl = withDatabase(embedded.url, 'postgres');
    stopEmbedded = async () => {
      await embedded.stop();
      await rm(folder, { recursive: true, force: true });
    };
  }
  const template = await openDatabase({ databaseUrl: await createTemplate(databaseUrl) });
  await template.close();
  project.provide('databaseUrl', databaseUrl);
  project.provide('pooledDatabaseUrl', DATABASE_DIRECT_URL && DATABASE_URL ? DATABASE_URL : databaseUrl);
  // Tests reach the databases through inject(); a server process a test starts without DATABASE_URL
  // must not inherit a DATABASE_DIRECT_URL (a start-up error) from the run's environment.
  delete process.env.DATABASE_DIRECT_URL;
  return async () => {
    await dropCopies(databaseUrl);
    await stopEmbedded();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The PostgreSQL database whose server holds the template and every per-file copy (a direct connection). */
    databaseUrl: string;
    /** The same database through the pooler DATABASE_URL names when DATABASE_DIRECT_URL is set; otherwise databaseUrl. */
    pooledDatabaseUrl: string;
  }
}
