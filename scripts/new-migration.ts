// Writes the SQL that takes the committed migrations to the current prisma/schema.prisma as a new
// migration folder. Usage: npm run db:migration -- <name>
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrismaPg } from '@prisma/adapter-pg';
import { startEmbeddedPostgres } from '../src/db/embedded-postgres.js';
import { openSchemaEngine } from '../src/db/schema-engine.js';
import { loadMigrationList, MIGRATIONS_DIR, SCHEMA_PATH } from '../src/db/migrations.js';

const name = (process.argv[2] ?? '').replace(/[^a-z0-9_]/gi, '_');
if (!name) {
  console.error('usage: npm run db:migration -- <name>');
  process.exit(2);
}
const schema = { path: SCHEMA_PATH, content: await readFile(SCHEMA_PATH, 'utf8') };
// The engine replays the migrations into a shadow database: a scratch embedded PostgreSQL holds it.
// (A config object, not a URL: the adapter names the shadow database by overriding `database`.)
const scratchDir = await mkdtemp(join(tmpdir(), 'tc-migration-'));
const scratch = await startEmbeddedPostgres(scratchDir);
const socket = new URL(scratch.url).searchParams.get('host')!;
const engine = await openSchemaEngine(schema, new PrismaPg({ host: socket, user: new URL(scratch.url).username, database: 'postgres' }));
const migrationsList = await loadMigrationList();
const from = migrationsList.migrationDirectories.length
  ? { tag: 'migrations' as const, ...migrationsList }
  : { tag: 'empty' as const };
const { stdout } = await engine.diff({
  from,
  to: { tag: 'schemaDatamodel', files: [schema] },
  script: true,
  exitCode: null,
  filters: { externalTables: [], externalEnums: [] },
});
engine.free();
await scratch.stop();
await rm(scratchDir, { recursive: true, force: true });

const sql = (stdout ?? '').trim();
if (!sql || sql === '-- This is an empty migration.') {
  console.log('The schema matches the migrations: nothing to write.');
  process.exit(0);
}
const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
const folder = join(MIGRATIONS_DIR, `${stamp}_${name}`);
await mkdir(folder, { recursive: true });
await writeFile(join(folder, 'migration.sql'), sql + '\n');
await writeFile(join(MIGRATIONS_DIR, 'migration_lock.toml'), 'provider = "postgresql"\n');
console.log(`Wrote ${folder}/migration.sql`);
