// Migrations: the same files on PGlite and PostgreSQL, idempotent, and applied by exactly one of
// several processes starting at once against one PostgreSQL server.
import { readdir } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { expect, test } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { MIGRATIONS_DIR, applyMigrations } from '../../src/db/migrations.js';

async function migrationNames(): Promise<string[]> {
  const entries = await readdir(MIGRATIONS_DIR, { withFileTypes: true });
  return entries.filter((e) => e.isDirectory()).map((e) => e.name).sort();
}

test('on PGlite every migration applies once; applying again is a no-op', async () => {
  const pglite = new PGlite();
  try {
    expect(await applyMigrations(new PrismaPGlite(pglite))).toEqual(await migrationNames());
    expect(await applyMigrations(new PrismaPGlite(pglite))).toEqual([]);
    const { rows } = await pglite.query<{ n: number }>('SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name = $1', ['invitation']);
    expect(rows[0]!.n).toBe(1);
  } finally {
    await pglite.close();
  }
});

test.runIf(process.env.DATABASE_URL)('two processes starting at once against one PostgreSQL migrate it once', async () => {
  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  const name = `teamchat_migrate_${process.pid}_${Date.now()}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${name}`;
  try {
    const [first, second] = await Promise.all([openDatabase({ databaseUrl: url.href }), openDatabase({ databaseUrl: url.href })]);
    const applied = await first.prisma.$queryRaw<{ migration_name: string; finished: boolean }[]>`
      SELECT migration_name, finished_at IS NOT NULL AS finished FROM _prisma_migrations ORDER BY migration_name`;
    expect(applied).toEqual((await migrationNames()).map((migration_name) => ({ migration_name, finished: true })));
    expect(await second.prisma.organization.count()).toBe(0);
    await Promise.all([first.close(), second.close()]);
    const again = await openDatabase({ databaseUrl: url.href });
    await again.close();
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
});
