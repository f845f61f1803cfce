// Applies the committed migrations under prisma/migrations with the WebAssembly schema engine.
// Applying is idempotent (the engine records applied migrations in _prisma_migrations).
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import type { MigrationList } from '@prisma/schema-engine-wasm/schema_engine_bg';
import type pg from 'pg';

export const SCHEMA_PATH = fileURLToPath(new URL('../../prisma/schema.prisma', import.meta.url));
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../prisma/migrations', import.meta.url));

/** The migrations' folders in the order they apply; with `through`, only those up to that one. */
async function migrationFolders(through?: string): Promise<string[]> {
  const entries = await readdir(MIGRATIONS_DIR, { withFileTypes: true }).catch(() => []);
  const folders = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  if (through === undefined) return folders;
  if (!folders.includes(through)) throw new Error(`No migration named ${through}`);
  return folders.filter((folder) => folder <= through);
}

/**
 * Whether the database lacks any of the committed migrations (by name, as the schema engine
 * records them). Lets a server skip loading the schema engine, about 40 MiB of WebAssembly that
 * would stay resident, on every start but the ones that migrate.
 */
export async function hasPendingMigrations(client: pg.Client): Promise<boolean> {
  let applied: Set<string>;
  try {
    const { rows } = await client.query(
      'SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
    );
    applied = new Set(rows.map((r: { migration_name: string }) => r.migration_name));
  } catch (error) {
    if ((error as { code?: string }).code === '42P01') return true; // no _prisma_migrations table yet
    throw error;
  }
  return (await migrationFolders()).some((folder) => !applied.has(folder));
}

export async function loadMigrationList(through?: string): Promise<MigrationList> {
  const folders = await migrationFolders(through);
  const migrationDirectories = await Promise.all(
    folders.map(async (folder) => ({
      path: folder,
      migrationFile: {
        path: 'migration.sql',
        content: { tag: 'ok' as const, value: await readFile(join(MIGRATIONS_DIR, folder, 'migration.sql'), 'utf8') },
      },
    })),
  );
  const lockfilePath = join(MIGRATIONS_DIR, 'migration_lock.toml');
  return {
    baseDir: MIGRATIONS_DIR,
    lockfile: { path: 'migration_lock.toml', content: await readFile(lockfilePath, 'utf8').catch(() => null) },
    shadowDbInitScript: '',
    migrationDirectories,
  } as MigrationList;
}

/**
 * Applies every migration not yet applied (with `through`, those up to that one: how a test builds
 * a database as an older server left it); returns the names of those it applied.
 */
export async function applyMigrations(adapterFactory: SqlMigrationAwareDriverAdapterFactory, through?: string): Promise<string[]> {
  const schema = { path: SCHEMA_PATH, content: await readFile(SCHEMA_PATH, 'utf8') };
  const { openSchemaEngine } = await import('./schema-engine.js');
  const engine = await openSchemaEngine(schema, adapterFactory);
  try {
    const { appliedMigrationNames } = await engine.applyMigrations({
      migrationsList: await loadMigrationList(through),
      filters: { externalTables: [], externalEnums: [] },
    });
    return appliedMigrationNames;
  } finally {
    engine.free();
  }
}

/**
 * Applies migrations through connections of their own and closes them afterwards (the schema
 * engine does not): left open, they would hold a PostgreSQL connection for the process's lifetime.
 */
export async function applyMigrationsAndDisconnect(
  adapterFactory: SqlMigrationAwareDriverAdapterFactory,
  through?: string,
): Promise<string[]> {
  const opened: { dispose(): Promise<void> }[] = [];
  const remember = <T extends { dispose(): Promise<void> }>(adapter: T) => (opened.push(adapter), adapter);
  const tracked: SqlMigrationAwareDriverAdapterFactory = {
    provider: adapterFactory.provider,
    adapterName: adapterFactory.adapterName,
    connect: async () => remember(await adapterFactory.connect()),
    connectToShadowDb: async () => remember(await adapterFactory.connectToShadowDb()),
  };
  try {
    return await applyMigrations(tracked, through);
  } finally {
    await Promise.all(opened.map((adapter) => adapter.dispose()));
  }
}
