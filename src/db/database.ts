// Opens the database: real PostgreSQL when a URL is given, otherwise embedded PGlite on disk (or in
// memory for tests). Migrations are applied before the client is handed out.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import lockfile from 'proper-lockfile';
import { PrismaClient } from '../generated/prisma/client.js';
import type { Config } from '../config.js';
import { applyMigrations, applyMigrationsAndDisconnect } from './migrations.js';

export type Prisma = PrismaClient;

export interface Database {
  prisma: PrismaClient;
  kind: 'postgres' | 'pglite';
  /** For connections of the application's own (LISTEN); undefined for PGlite. */
  connectionString?: string;
  close(): Promise<void>;
}

export type DatabaseOptions =
  | { databaseUrl: string }
  | { dataDir: string }
  /** In-memory PGlite, optionally started from a dumped data directory (tests). */
  | { memory: true; loadDataDir?: Blob };

export function databaseOptionsFor(config: Config): DatabaseOptions {
  return config.databaseUrl ? { databaseUrl: config.databaseUrl } : { dataDir: config.dataDir };
}

// Any constant shared by every process of this application.
const MIGRATION_LOCK_KEY = 7_294_015_331;

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if ('databaseUrl' in options) return openPostgres(options.databaseUrl);
  if ('dataDir' in options) return openPgliteOnDisk(options.dataDir);
  return openPglite(new PGlite({ loadDataDir: options.loadDataDir }), async () => {});
}

async function openPostgres(connectionString: string): Promise<Database> {
  await migratePostgresOnce(connectionString);
  const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString }) });
  return { prisma, kind: 'postgres', connectionString, close: () => prisma.$disconnect() };
}

/** Several server processes may start at once: an advisory lock lets one of them migrate at a time. */
async function migratePostgresOnce(connectionString: string): Promise<void> {
  const lockClient = new pg.Client({ connectionString });
  await lockClient.connect();
  try {
    await lockClient.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await applyMigrationsAndDisconnect(new PrismaPg({ connectionString }));
  } finally {
    await lockClient.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {});
    await lockClient.end();
  }
}

export class DataDirInUseError extends Error {}

/** PGlite takes no lock of its own; two processes on one data directory silently lose writes. */
async function openPgliteOnDisk(dataDir: string): Promise<Database> {
  await mkdir(dataDir, { recursive: true });
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(dataDir, { lockfilePath: join(dataDir, '.lock'), stale: 15_000, update: 5_000 });
  } catch {
    throw new DataDirInUseError(
      `The embedded database in ${dataDir} is in use by another process (is the server running?). ` +
        'Stop it first, or point DATA_DIR elsewhere.',
    );
  }
  return openPglite(new PGlite(join(dataDir, 'pgdata')), release);
}

async function openPglite(pglite: PGlite, release: () => Promise<void>): Promise<Database> {
  await pglite.waitReady;
  await applyMigrations(new PrismaPGlite(pglite));
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(pglite) });
  return {
    prisma,
    kind: 'pglite',
    async close() {
      await prisma.$disconnect();
      await pglite.close();
      await release();
    },
  };
}

/** Dumps a freshly migrated in-memory database, so tests pay for initdb and migrations once. */
export async function migratedTemplate(): Promise<Blob> {
  const pglite = new PGlite();
  await applyMigrations(new PrismaPGlite(pglite));
  const dump = await pglite.dumpDataDir('none');
  await pglite.close();
  return dump;
}
