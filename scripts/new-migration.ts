// Writes the SQL that takes the committed migrations to the current prisma/schema.prisma as a new
// migration folder. Usage: npm run db:migration -- <name>
//
// A development tool only: the schema engine replays the migrations into an in-memory PGlite (a
// devDependency) and diffs. Through @prisma/adapter-pg its introspection fails ("Column type 'char'
// could not be deserialized"), so the diff cannot run on the server's own PostgreSQL.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { openSchemaEngine } from '../src/db/schema-engine.js';
import { loadMigrationList, MIGRATIONS_DIR, SCHEMA_PATH } from '../src/db/migrations.js';

const name = (process.argv[2] ?? '').replace(/[^a-z0-9_]/gi, '_');
if (!name) {
  console.error('usage: npm run db:migration -- <name>');
  process.exit(2);
}
const schema = { path: SCHEMA_PATH, content: await readFile(SCHEMA_PATH, 'utf8') };
const scratch = new PGlite();
const engine = await openSchemaEngine(schema, new PrismaPGlite(scratch));
const migrationsList = await loadMigrationList();
const from = migrationsList.migrationDirectories.length ? { tag: 'migrations' as const, ...migrationsList } : { tag: 'empty' as const };
const { stdout } = await engine.diff({
  from,
  to: { tag: 'schemaDatamodel', files: [schema] },
  script: true,
  exitCode: null,
  filters: { externalTables: [], externalEnums: [] },
});
engine.free();
await scratch.close();

const sql = (stdout ?? '').trim();
if (!sql || sql === '-- This is an empty migration.') {
  console.log('The schema matches the migrations: nothing to write.');
  process.exit(0);
}
const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
const folder = join(MIGRATIONS_DIR, `${stamp}_${name}`);
await mkdir(folder, { recursive: true });
await writeFile(join(folder, 'migration.sql'), `${sql}\n`);
await writeFile(join(MIGRATIONS_DIR, 'migration_lock.toml'), 'provider = "postgresql"\n');
console.log(`Wrote ${folder}/migration.sql`);
