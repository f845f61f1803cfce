// Opens the database, always PostgreSQL: the server named by DATABASE_URL, or the embedded one under
// DATA_DIR. Migrations are applied before the client is handed out. DATABASE_URL may go through a
// pooler in transaction mode (PgBouncer) when DATABASE_DIRECT_URL names PostgreSQL itself: what needs
// a session of its own (LISTEN, session-level advisory locks, migrations) uses the direct URL.
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from '../generated/prisma/client.js';
import type { Config } from '../config.js';
import { StartupError } from '../startup-error.js';
import { logger } from '../logging.js';
import { SQL_TYPE_PARSERS, sqlOver, type Sql } from './sql.js';
import { EMBEDDED_DATABASE, startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres.js';
import { applyMigrationsAndDisconnect, hasPendingMigrations } from './migrations.js';
import { lockWait } from './lock-wait.js';
import { withLibpqSslModes } from './tls.js';
import { preparesStatements, probePreparedStatements, type PreparedStatementsSetting } from './prepared-statements.js';

export type DatabaseClient = PrismaClient;

export interface Database {
  prisma: PrismaClient;
  /** Hand-written statements for the hot paths, on Prisma's own connection pool (sql.ts). */
  sql: Sql;
  /** Whether `sql` prepares its named statements on each connection (db/prepared-statements.ts). */
  preparesStatements: boolean;
  /** The connection pool under both (its counts for the metrics). */
  pool: pg.Pool;
  /** Who hears of an idle pooled connection that failed (default: a warning in the log); src/server.ts tells the database status. */
  onIdleConnectionError(handler: (error: Error) => void): void;
  kind: 'external' | 'embedded';
  /** The connection string in use (for the embedded database: its Unix socket), through a pooler when it differs from `directUrl`. */
  url: string;
  /** PostgreSQL itself, for sessions of their own (LISTEN); `url` when there is no pooler. */
  directUrl: string;
  close(): Promise<void>;
}

/** How long a statement waits for a lock before PostgreSQL gives up (55P03); 0 or unset: no limit. */
interface PoolOptions {
  lockWaitSeconds?: number;
  /** Default auto (db/prepared-statements.ts). */
  preparedStatements?: PreparedStatementsSetting;
}

export type DatabaseOptions = PoolOptions &
  (
    | {
        databaseUrl: string;
        /** PostgreSQL itself when databaseUrl goes through a pooler in transaction mode (DATABASE_DIRECT_URL). */
        directUrl?: string;
        waitSeconds?: number;
        log?: (line: string) => void;
      }
    /**
     * The embedded PostgreSQL under dataDir. The server owns it (one server per data directory; it
     * stops PostgreSQL when it stops); a tool only borrows it, and stops it afterwards only when it
     * started it and no server has come up meanwhile.
     */
    | { dataDir: string; owner: 'server' | 'tool'; tcpPort?: number; log?: (line: string) => void }
  );

export function databaseOptionsFor(config: Config, owner: 'server' | 'tool', log?: (line: string) => void): DatabaseOptions {
  const pool = { lockWaitSeconds: config.databaseLockWaitSeconds, preparedStatements: config.databasePreparedStatements };
  return config.databaseUrl
    ? { databaseUrl: config.databaseUrl, directUrl: config.databaseDirectUrl, waitSeconds: config.databaseWaitSeconds, ...pool, log }
    : { dataDir: config.dataDir, owner, tcpPort: config.embeddedPostgresPort, ...pool, log };
}

/** Connections per process (node-postgres's default); several processes share one PostgreSQL. */
export const POOL_SIZE = 10;

// Constants shared by every process of this application.
const MIGRATION_LOCK_KEY = 7_294_015_331;
const SERVER_LOCK_KEY = 7_294_015_332;
/** Held by the process that runs the file sweep (src/domain/uploads/file-sweeper.ts). */
export const FILE_SWEEP_LOCK_KEY = 7_294_015_333;

/**
 * Runs `work` under the session-level advisory lock `key` when no other session holds it; when one
 * does, returns at once without running it. The lock's session is a connection of its own to
 * `directUrl` (PostgreSQL itself: through a pooler in transaction mode, the session's lock would go
 * to whoever gets the connection next); it ends with `work`, or with the connection if that drops.
 */
export async function ifAdvisoryLockFree<T>(
  directUrl: string,
  key: number,
  work: () => Promise<T>,
): Promise<{ ran: true; value: T } | { ran: false }> {
  return withClient(directUrl, async (client) => {
    const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [key]);
    if (!rows[0]!.locked) return { ran: false };
    try {
      return { ran: true, value: await work() };
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [key]).catch(() => {});
    }
  });
}

/** Where the pool connects, and where sessions of their own go (the same URL without a pooler). */
interface ConnectionUrls {
  url: string;
  directUrl: string;
}

export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if ('databaseUrl' in options) {
    const url = withLibpqSslModes(options.databaseUrl);
    const directUrl = options.directUrl ? withLibpqSslModes(options.directUrl) : url;
    const wait = (each: string, startup: pg.ClientConfig) =>
      waitForPostgres(each, startup, options.waitSeconds ?? 0, options.log ?? (() => {}));
    if (directUrl !== url) await wait(directUrl, {});
    // With the pool's own start-up parameters: a pooler named without DATABASE_DIRECT_URL fails here, not at every request.
    await wait(url, lockWaitOf({ url, directUrl }, options).connection);
    return openPostgres({ url, directUrl }, 'external', options, async () => {});
  }
  return openEmbedded(options);
}

const lockWaitOf = (urls: ConnectionUrls, options: PoolOptions) =>
  lockWait((options.lockWaitSeconds ?? 0) * 1000, urls.url !== urls.directUrl);

async function openPostgres(
  urls: ConnectionUrls,
  kind: Database['kind'],
  options: PoolOptions,
  afterClose: () => Promise<void>,
): Promise<Database> {
  await migrateOnce(urls.directUrl);
  const limit = lockWaitOf(urls, options);
  const throughPooler = urls.url !== urls.directUrl;
  const prepare = preparesStatements(options.preparedStatements ?? 'auto', throughPooler);
  if (prepare && throughPooler) await probePreparedStatements(urls.url, limit.connection);
  const pool = new pg.Pool({ connectionString: urls.url, max: POOL_SIZE, ...limit.connection, types: SQL_TYPE_PARSERS });
  // An idle connection's error (PostgreSQL restarted, a network cut) must not end the process;
  // requests meet the error themselves and answer 503 (src/http/database-status.ts).
  let idleConnectionFailed = (error: Error) => logger.warn({ err: error }, 'idle database connection failed');
  pool.on('error', (error) => idleConnectionFailed(error));
  // A connection the database drops while the pool has lent it out and no statement is running on
  // it (between two statements, or while the pool ends a client released with an error) emits
  // 'error' on its client, which the pool hears only while the client is idle: unheard, that event
  // ends the process (found by the fault soak with backends terminated). Heard always: the next
  // statement on it fails instead, as an outage (outage-errors.ts).
  pool.on('connect', (client) => client.on('error', () => {}));
  const prisma = new PrismaClient({ adapter: limit.prismaAdapter(new PrismaPg(pool)) });
  return {
    prisma,
    sql: sqlOver(pool, limit.begin, prepare),
    preparesStatements: prepare,
    pool,
    onIdleConnectionError: (handler) => void (idleConnectionFailed = handler),
    kind,
    ...urls,
    async close() {
      // pool.end() resolves before its connections have ended: stopping the embedded PostgreSQL
      // right after terminates those still ending, which is the close going as planned, not a warning.
      idleConnectionFailed = () => {};
      await prisma.$disconnect();
      await pool.end();
      await afterClose();
    },
  };
}

/**
 * Several server processes may start at once: an advisory lock lets one of them migrate at a time. It
 * is a session's lock, held across statements and the schema engine's own connections: `directUrl`.
 */
async function migrateOnce(directUrl: string): Promise<void> {
  await withClient(directUrl, async (client) => {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    if (await hasPendingMigrations(client)) await applyMigrationsAndDisconnect(new PrismaPg({ connectionString: directUrl }));
  });
}

async function withClient<T>(connectionString: string, work: (client: pg.Client) => Promise<T>, startup: pg.ClientConfig = {}): Promise<T> {
  const client = new pg.Client({ connectionString, ...startup });
  // A connection dropped between statements (a terminated backend) fails the next statement; unheard,
  // its 'error' event would end the process.
  client.on('error', () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const RETRYABLE_CONNECT_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTFOUND',
  'ENOENT',
  '57P03',
]);

/** PgBouncer's answer to the lock wait limit's start-up parameter names what is missing. */
const hintFor = (reason: string) =>
  /unsupported startup parameter/.test(reason) ? ' (a pooler such as PgBouncer: set DATABASE_DIRECT_URL to PostgreSQL itself)' : '';

/** For the start-up banner: where the data is, without the password. */
export function describeDatabase(database: Database): string {
  const url = new URL(database.url);
  const socket = url.searchParams.get('host');
  if (database.kind === 'embedded') {
    return `embedded PostgreSQL, socket in ${socket ?? `127.0.0.1:${url.port}`} (psql -h ${socket ?? `127.0.0.1 -p ${url.port}`} -U ${url.username} ${url.pathname.slice(1)})`;
  }
  if (database.directUrl !== database.url) return `${describe(database.url)} (direct: ${describe(database.directUrl)})`;
  return describe(database.url);
}

function describe(url: string): string {
  const parsed = new URL(url);
  return `PostgreSQL at ${decodeURIComponent(parsed.hostname || 'localhost')}:${parsed.port || 5432}/${parsed.pathname.slice(1)}`;
}

/** Waits for PostgreSQL to accept connections, saying so on every try; refusals that waiting cannot fix fail at once. */
async function waitForPostgres(url: string, startup: pg.ClientConfig, waitSeconds: number, log: (line: string) => void): Promise<void> {
  const deadline = Date.now() + waitSeconds * 1000;
  for (let attempt = 1; ; attempt++) {
    try {
      await withClient(url, (client) => client.query('SELECT 1'), startup);
      return;
    } catch (error) {
      const code = (error as { code?: string }).code ?? '';
      const reason = (error as Error).message || code;
      if (!RETRYABLE_CONNECT_ERRORS.has(code)) throw new StartupError(`Cannot use ${describe(url)}: ${reason}${hintFor(reason)}`);
      if (Date.now() + 2000 > deadline) {
        throw new StartupError(
          `${describe(url)} is unreachable (${reason}); gave up after ${attempt} tries (DATABASE_WAIT_SECONDS=${waitSeconds}).`,
        );
      }
      log(`${describe(url)} is unreachable (${reason}); trying again in 2 s (try ${attempt}).`);
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  }
}

async function openEmbedded(options: Extract<DatabaseOptions, { dataDir: string }>): Promise<Database> {
  const embedded = await startEmbeddedPostgres(options.dataDir, { tcpPort: options.tcpPort, log: options.log });
  try {
    await createDatabaseIfMissing(embedded.url);
    const urls = { url: embedded.url, directUrl: embedded.url };
    if (options.owner === 'tool') return await openPostgres(urls, 'embedded', options, () => stopIfNoServer(embedded));
    const serverLock = await takeServerLock(embedded, options.dataDir);
    return await openPostgres(urls, 'embedded', options, async () => {
      await serverLock.end();
      await embedded.stop();
    });
  } catch (error) {
    if (embedded.startedHere) await embedded.stop();
    throw error;
  }
}

async function createDatabaseIfMissing(url: string): Promise<void> {
  const maintenance = new URL(url);
  maintenance.pathname = '/postgres';
  await withClient(maintenance.href, async (client) => {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [EMBEDDED_DATABASE]);
    if (!rowCount) await client.query(`CREATE DATABASE "${EMBEDDED_DATABASE}"`);
  });
}

/**
 * One server per embedded database: a session-level advisory lock, held on a connection of its own
 * for the server's lifetime. It dies with its process, so a killed server never blocks a restart.
 */
async function takeServerLock(embedded: EmbeddedPostgres, dataDir: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: embedded.url, application_name: 'teamchat server lock' });
  await client.connect();
  const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [SERVER_LOCK_KEY]);
  if (rows[0]!.locked) return client;
  await client.end();
  throw new StartupError(
    `Another server is already running on the embedded database in ${dataDir}: stop it first, or set DATA_DIR elsewhere.`,
  );
}

async function stopIfNoServer(embedded: EmbeddedPostgres): Promise<void> {
  if (!embedded.startedHere) return;
  const serverRunning = await withClient(embedded.url, async (client) => {
    const { rows } = await client.query<{ free: boolean }>('SELECT pg_try_advisory_lock($1) AS free', [SERVER_LOCK_KEY]);
    return !rows[0]!.free;
  });
  if (!serverRunning) await embedded.stop();
}
