// The server and the CLI as users run them: the compiled JavaScript under dist/ (built before the
// tests by `pretest`), with plain `node`, in processes of their own.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect } from 'vitest';
import { testDatabaseUrl } from './server.js';

export interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

const running = new Set<Started>();
afterAll(() => {
  for (const started of running) started.child.kill('SIGTERM');
});

/**
 * What the test runner adds to its own environment (Vitest's and Vite's variables, NODE_ENV=test)
 * and the tests' LOG_LEVEL: a server or CLI process gets none of it, and runs as in production.
 */
const TEST_RUNNER_VARIABLES = ['TEST', 'NODE_ENV', 'MODE', 'DEV', 'PROD', 'SSR', 'BASE_URL', 'FORCE_TTY', 'LOG_LEVEL'];

/** The environment of a newcomer's shell: no DATABASE_URL (nor DATABASE_DIRECT_URL) or SERVER_URL unless given, nothing of the test runner's. */
export function environment(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOST: '127.0.0.1' };
  for (const name of Object.keys(env)) if (name.startsWith('VITEST') || TEST_RUNNER_VARIABLES.includes(name)) delete env[name];
  delete env.DATABASE_URL;
  delete env.DATABASE_DIRECT_URL;
  delete env.SERVER_URL;
  return { ...env, ...extra };
}

/** `node dist/main.js` with this environment (PORT defaults to 0), in this checkout (default: this one). */
export function startServerProcess(env: NodeJS.ProcessEnv, cwd?: string): Started {
  const child = spawn(process.execPath, ['dist/main.js'], { cwd, env: environment({ PORT: '0', ...env }), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const started: Started = { child, output: () => output, exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))) };
  running.add(started);
  void started.exited.then(() => running.delete(started));
  return started;
}

export async function waitForOutput(started: Started, pattern: RegExp, seconds = 90): Promise<RegExpExecArray> {
  for (let i = 0; i < seconds * 10 && !pattern.test(started.output()); i++) {
    if (started.child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(started.output()).toMatch(pattern);
  return pattern.exec(started.output())!;
}

/** The base URL the server printed once it listens. */
export async function listeningUrl(started: Started): Promise<string> {
  return (await waitForOutput(started, /Server listening on (http:\/\/\S+)/))[1]!;
}

export async function stopServerProcess(started: Started): Promise<void> {
  started.child.kill('SIGTERM');
  const code = await started.exited;
  expect({ code, signal: started.child.signalCode, output: started.output() }).toMatchObject({ code: 0, signal: null });
}

export interface ProcessesOnTestDatabase {
  /** Each process's base URL. */
  urls: string[];
  /** SIGTERM to each (every one must exit with 0), then their data directories removed. */
  stop(): Promise<void>;
}

/** `count` server processes over this test file's database, each with a data directory of its own, once they listen. */
export async function serverProcessesOnTestDatabase(count: number, env: NodeJS.ProcessEnv = {}): Promise<ProcessesOnTestDatabase> {
  const databaseUrl = await testDatabaseUrl();
  const dataDirs = await Promise.all(Array.from({ length: count }, () => mkdtemp(join(tmpdir(), 'teamchat-process-'))));
  const processes = dataDirs.map((dataDir) => startServerProcess({ DATABASE_URL: databaseUrl, DATA_DIR: dataDir, ...env }));
  return {
    urls: await Promise.all(processes.map(listeningUrl)),
    async stop() {
      await Promise.all(processes.map(stopServerProcess));
      await Promise.all(dataDirs.map((dataDir) => rm(dataDir, { recursive: true, force: true })));
    },
  };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `node dist/cli/main.js ...args` */
export function runCli(env: NodeJS.ProcessEnv, ...args: string[]): Promise<CliResult> {
  return runCliIn(undefined, env, ...args);
}

/** `node dist/cli/main.js ...args` with `input` written to its standard input (then closed). */
export function runCliWithInput(env: NodeJS.ProcessEnv, input: string, ...args: string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, ['dist/cli/main.js', ...args], { env: environment(env) }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.on('error', reject);
    child.stdin!.end(input);
  });
}

/** `node dist/cli/main.js ...args` in that checkout. */
export function runCliIn(cwd: string | undefined, env: NodeJS.ProcessEnv, ...args: string[]): Promise<CliResult> {
  return promisify(execFile)(process.execPath, ['dist/cli/main.js', ...args], { cwd, env: environment(env) }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error) => ({ code: error.code as number, stdout: error.stdout as string, stderr: error.stderr as string }),
  );
}
