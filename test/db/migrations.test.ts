// Migrations: idempotent, and applied by exactly one of several processes starting at once against
// one PostgreSQL server (the embedded one, or the server named by DATABASE_URL). With a pooler in the
// run (DATABASE_DIRECT_URL), the processes open the database through it, as servers do: the advisory
// locks of migrating are sessions' locks and must have been taken on PostgreSQL itself, where they end
// with their connections (through the pooler they would stay on a server connection for good).
import { readdir } from 'node:fs/promises';
import { expect, inject, test } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { MIGRATIONS_DIR } from '../../src/db/migrations.js';
import { withDatabase, withEmptyDatabase } from '../support/postgres-databases.js';

async function migrationNames(): Promise<string[]> {
  const entries = await readdir(MIGRATIONS_DIR, { withFileTypes: true });
  return entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

test('two processes starting at once against one PostgreSQL migrate it once; opening again applies nothing', async () => {
  await withEmptyDatabase(inject('databaseUrl'), 'teamchat_migrate', async ({ name, url, admin }) => {
    const urls = { databaseUrl: withDatabase(inject('pooledDatabaseUrl'), name), directUrl: url };
    const [first, second] = await Promise.all([openDatabase(urls), openDatabase(urls)]);
    const advisoryLocks = await admin.query(
      `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = $1)`,
      [name],
    );
    expect(advisoryLocks.rows).toEqual([{ n: 0 }]);
    const applied = await first.prisma.$queryRaw<{ migration_name: string; finished: boolean }[]>`
      SELECT migration_name, finished_at IS NOT NULL AS finished FROM _prisma_migrations ORDER BY migration_name`;
    expect(applied).toEqual((await migrationNames()).map((migration_name) => ({ migration_name, finished: true })));
    expect(await second.prisma.organization.count()).toBe(0);
    await Promise.all([first.close(), second.close()]);
    const again = await openDatabase(urls);
    const rows = await again.prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM _prisma_migrations`;
    await again.close();
    expect(rows).toEqual([{ n: applied.length }]);
  });
}, 120_000);
