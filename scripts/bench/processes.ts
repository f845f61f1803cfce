// The processes the benchmark measures: the real server, started as `npm start` starts it, and the
// floor; their resident memory read from /proc, and their SQL statement counts (SIGUSR2).
import type pg from 'pg';
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { STATEMENT_COUNT_PREFIX } from '../../src/db/statement-counter.js';
import { violation } from './violations.js';

export interface BenchProcess {
  name: string;
  url: string;
  child: ChildProcess;
  /** The process's own data directory (the embedded database lives there when DATABASE_URL is unset). */
  dataDir: string;
  /** Total SQL statements the process has sent so far. */
  statements(): Promise<number>;
  /** The last lines of its log (standard output, in its data directory) and of its standard error. */
  output(): string[];
  /** Sends a signal the process is expected to exit by (its exit is then no violation). */
  signal(name: NodeJS.Signals): void;
  stop(): Promise<void>;
}

/**
 * How the real server is started: exactly as `npm start` starts it (`exec node <flags> dist/main.js`),
 * from this checkout or from the checkout of another build (`buildDir`, with its own package.json).
 */
export function realServerCommand(buildDir = '.'): string[] {
  const start: string = JSON.parse(readFileSync(join(buildDir, 'package.json'), 'utf8')).scripts.start;
  const [node, ...words] = start.replace(/^exec\s+/, '').split(/\s+/);
  if (node !== 'node') throw new Error(`npm start is no longer "node ...": update realServerCommand (${start})`);
  const args = words.map((word) => (word.endsWith('.js') ? join(buildDir, word) : word));
  // BENCH_CPU_PROF=<dir>: every server the bench starts writes a V8 CPU profile there when it exits.
  const profileDir = process.env.BENCH_CPU_PROF;
  return profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, ...args] : args;
}
/** The administration CLI of the same build (`npm run cli`). */
export const cliCommand = () => ['dist/cli/main.js'];

export const FLOOR_COMMAND = ['--import', 'tsx', 'scripts/bench/floor.ts'];

/**
 * How the throughput rounds run the server and the floor (the bench's and compare-builds' alike):
 * no per-user limits, and EMAIL_WORKER=off, the e-mail being delivered between rounds (the floor
 * never delivers its own).
 */
export const THROUGHPUT_ENV = {
  NODE_ENV: 'production',
  API_RATE_LIMIT: 'off',
  API_IP_RATE_LIMIT: 'off',
  SERVER_URL: 'http://bench.example',
  INVITATION_LINK_VALIDITY_MINUTES: '14400',
  EMAIL_WORKER: 'off',
};

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Every server and floor still running: a bench that fails stops them as it exits (SIGTERM: a server stops its embedded database too). */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGTERM');
});

/**
 * The process's standard output (its log, a line per request) goes to `<dataDir>/stdout.log`, as a
 * deployment's would go to a file or journal: read line by line here, it made the bench process (which
 * also runs the load) work for every request of the server's rounds and none of the floor's.
 */
export async function startProcess(
  name: string,
  args: string[],
  env: Record<string, string | undefined>,
  dataDir: string,
): Promise<BenchProcess> {
  const port = await freePort();
  mkdirSync(dataDir, { recursive: true });
  const logFile = join(dataDir, 'stdout.log');
  const stdout = openSync(logFile, 'a');
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, SQL_STATEMENT_COUNTER: '1' },
    stdio: ['ignore', stdout, 'pipe'],
  });
  closeSync(stdout);
  running.add(child);
  child.once('exit', () => running.delete(child));
  const errors: string[] = [];
  const counts: ((n: number) => void)[] = [];
  createInterface({ input: child.stderr! }).on('line', (line) => {
    if (line.startsWith(STATEMENT_COUNT_PREFIX)) counts.shift()?.(Number(line.slice(STATEMENT_COUNT_PREFIX.length)));
    else errors.push(line);
  });
  const output = () => [...lastLines(logFile, 20), ...errors.slice(-20)];
  const url = `http://127.0.0.1:${port}`;
  await waitUntilServing(url, child, output);
  let exitExpected = false;
  child.once('exit', (code, signal) => {
    if (!exitExpected) violation(name, `the process died (exit ${code ?? signal}):\n${output().join('\n')}`);
  });
  return {
    name,
    url,
    child,
    dataDir,
    output,
    statements: () =>
      new Promise<number>((resolve) => {
        counts.push(resolve);
        child.kill('SIGUSR2');
      }),
    signal: (signal) => {
      exitExpected = true;
      child.kill(signal);
    },
    stop: async () => {
      exitExpected = true;
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

const lastLines = (file: string, count: number) => (existsSync(file) ? readFileSync(file, 'utf8').trimEnd().split('\n').slice(-count) : []);

export async function waitUntilServing(url: string, child: ChildProcess, output: () => string[]) {
  for (let attempt = 0; attempt < 600; attempt++) {
    if (child.exitCode !== null) throw new Error(`${url}: the process exited (${child.exitCode}):\n${output().join('\n')}`);
    try {
      const response = await fetch(`${url}/health`);
      await response.arrayBuffer();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not answer /health within 60 s:\n${output().join('\n')}`);
}

/** Resident memory of one process (VmRSS), in bytes; 0 once it has gone. */
export const rssOf = (pid: number) => procField(`/proc/${pid}/status`, 'VmRSS');

/**
 * Proportional set size: resident memory with pages shared between processes divided among them, so
 * the sum over PostgreSQL's processes counts its shared buffers once (their RSS would count them
 * once per process).
 */
export const pssOf = (pid: number) => procField(`/proc/${pid}/smaps_rollup`, 'Pss');

function procField(path: string, field: string): number {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(path, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** The ids of the machine's processes, as /proc lists them. */
export const processIds = () => readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));

/** What /proc/<pid>/stat says of a process: its command, its parent, and the CPU time (user + system, ms) it has used so far; undefined once it has gone. */
export function procStat(pid: number | string): { command: string; parent: number; cpuMs: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command (field 2, in parentheses) may hold spaces: the fields after it are counted from its end.
    // Field 4 is the parent; 14 and 15 (utime, stime) are in clock ticks.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      command: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
      parent: Number(fields[1]),
      cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / 100,
    };
  } catch {
    return undefined;
  }
}

/** The embedded PostgreSQL's processes: the postmaster named in postmaster.pid under dataDir, and its children. */
export function embeddedPostgresPids(dataDir: string): number[] {
  const pidFile = findFile(dataDir, 'postmaster.pid', 3);
  if (!pidFile) return [];
  const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  const children = processIds()
    .filter((pid) => procStat(pid)?.parent === postmaster)
    .map(Number);
  return [postmaster, ...children];
}

function findFile(dir: string, name: string, depth: number): string | undefined {
  if (depth < 0 || !existsSync(dir)) return undefined;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isFile() && entry.name === name) return path;
    if (entry.isDirectory()) {
      const found = findFile(path, name, depth - 1);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * The embedded PostgreSQL's processes as the server alone would have them: less the backends of the
 * benchmark's own connections (the floor's, the bench's: application_name "bench..."), which a
 * deployment does not have. Those are learnt from pg_stat_activity twice a second.
 */
export function serverDatabasePids(dataDir: string, db: pg.Pool) {
  let benchBackends = new Set<number>();
  const refresh = () =>
    db.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'bench%'").then(
      ({ rows }) => void (benchBackends = new Set(rows.map((row) => row.pid))),
      () => {},
    );
  void refresh();
  const timer = setInterval(refresh, 500).unref();
  return {
    all: () => embeddedPostgresPids(dataDir),
    isBench: (pid: number) => benchBackends.has(pid),
    stop: () => clearInterval(timer),
  };
}

type DatabasePids = { all(): number[]; isBench(pid: number): boolean };
const NO_DATABASE: DatabasePids = { all: () => [], isBench: () => false };

/**
 * Samples a set of processes' RSS until stopped; reports the peak of the server and of its database
 * (the server's backends, and all). The server is read every 100 ms (VmRSS is cheap to read); the
 * database only when `sampleDatabase` is called, between rounds: walking /proc and every backend's
 * smaps_rollup while the server was measured raised its CPU per GraphQL list by half on the
 * embedded database (3.2 -> 4.9-5.1 ms, once a second; 4.5-5.3 ten times a second), and only there.
 */
export function sampleRss(server: number, database: DatabasePids = NO_DATABASE) {
  let serverPeak = rssOf(server);
  let databasePeak = 0;
  let databaseAllPeak = 0;
  let databaseCounted = true;
  const sampleDatabase = () => {
    if (!databaseCounted) return;
    let served = 0;
    let all = 0;
    for (const pid of database.all()) {
      const pss = pssOf(pid);
      all += pss;
      if (!database.isBench(pid)) served += pss;
    }
    databasePeak = Math.max(databasePeak, served);
    databaseAllPeak = Math.max(databaseAllPeak, all);
  };
  const sample = () => void (serverPeak = Math.max(serverPeak, rssOf(server)));
  sample();
  const timer = setInterval(sample, 100);
  return {
    /** While `work` runs, the database's memory is not counted (it serves other processes' connections then). */
    async withoutDatabase<T>(work: () => Promise<T>): Promise<T> {
      databaseCounted = false;
      try {
        return await work();
      } finally {
        databaseCounted = true;
      }
    },
    /** Reads the database's memory now (between rounds: its backends keep what they held). */
    sampleDatabase,
    stop() {
      clearInterval(timer);
      sample();
      sampleDatabase();
      return { serverPeak, databasePeak, databaseAllPeak };
    },
  };
}

/** Removes a run's work directory; retried, as a process just stopped may still be removing files in it (ENOTEMPTY). */
export const removeWorkDir = (workDir: string) => rm(workDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
