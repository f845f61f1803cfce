// The server as users and process managers run it: one `node` process over the embedded PostgreSQL
// under DATA_DIR. Start-up failures are one line and exit status 1, before anything is written.
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { environment, listeningUrl, startServerProcess, stopServerProcess, waitForOutput } from '../support/process.js';

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'tc-lifecycle-'));
  // As root the embedded PostgreSQL runs as the postgres user, which must be able to pass through.
  await chmod(scratch, 0o711);
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

/** One the postgres user can reach, so that its cluster stays inside (and goes with the scratch folder). */
async function freshDataDir(): Promise<string> {
  const dataDir = await mkdtemp(join(scratch, 'data-'));
  await chmod(dataDir, 0o711);
  return dataDir;
}

async function postmasterPid(dataDir: string): Promise<number | undefined> {
  const content = await readFile(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').catch(() => undefined);
  return content ? Number(content.split('\n')[0]) : undefined;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
};

/** A stopped PostgreSQL removes its postmaster.pid just before its process ends. */
async function expectGone(pid: number) {
  for (let i = 0; i < 50 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  expect(alive(pid)).toBe(false);
}

const health = (url: string) => fetch(`${url}/health`).then((r) => r.status);

describe('the embedded PostgreSQL', () => {
  test('SIGTERM drains and stops the server and its PostgreSQL; a second server on the data directory is refused', async () => {
    const dataDir = await freshDataDir();
    const first = startServerProcess({ DATA_DIR: dataDir });
    const url = await listeningUrl(first);
    expect(await health(url)).toBe(200);
    const postgres = (await postmasterPid(dataDir))!;
    expect(alive(postgres)).toBe(true);

    const second = startServerProcess({ DATA_DIR: dataDir });
    expect(await second.exited).toBe(1);
    expect(second.output()).toContain(
      `Cannot start: Another server is already running on the embedded database in ${dataDir}: stop it first, or set DATA_DIR elsewhere.\n`,
    );
    expect(await health(url)).toBe(200);

    await stopServerProcess(first);
    await expectGone(postgres);
    expect(await postmasterPid(dataDir)).toBeUndefined();
  }, 120_000);

  test('after a SIGKILL of the server, the next start reuses its orphaned PostgreSQL at once, data intact', async () => {
    const dataDir = await freshDataDir();
    const first = startServerProcess({ DATA_DIR: dataDir });
    await waitForOutput(first, /curl -u \S+ \S+\n/);
    const postgres = (await postmasterPid(dataDir))!;
    first.child.kill('SIGKILL');
    await first.exited;
    expect(alive(postgres)).toBe(true);

    const second = startServerProcess({ DATA_DIR: dataDir });
    const url = await listeningUrl(second);
    expect(second.output()).toContain(`Reusing the embedded PostgreSQL already running on ${dataDir}/postgres (pid ${postgres}).`);
    expect(second.output()).toContain('The database already holds 1 organization(s)');
    expect(await health(url)).toBe(200);
    await stopServerProcess(second);
    await expectGone(postgres);
  }, 120_000);
});

describe('start-up failures: one line, exit status 1, nothing written', () => {
  async function refused(env: NodeJS.ProcessEnv): Promise<string> {
    const started = startServerProcess(env);
    expect(await started.exited).toBe(1);
    return started.output();
  }

  test('port in use', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    const dataDir = join(scratch, 'never-created');
    try {
      expect(await refused({ DATA_DIR: dataDir, PORT: String(port) })).toBe(
        `Cannot start: Port ${port} is already in use on 127.0.0.1: stop what runs there, or set PORT.\n`,
      );
      await expect(stat(dataDir)).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      blocker.close();
    }
  });

  test('data directory that cannot be a folder', async () => {
    expect(await refused({ DATA_DIR: '/etc/passwd/data' })).toBe(
      'Cannot start: DATA_DIR /etc/passwd/data is not a writable folder (ENOTDIR): set DATA_DIR elsewhere.\n',
    );
  });

  test('malformed DATABASE_URL', async () => {
    expect(await refused({ DATABASE_URL: 'localhost:5432' })).toBe(
      'Cannot start: DATABASE_URL must start with postgresql:// (got localhost://...)\n',
    );
    expect(await refused({ DATABASE_URL: 'not a url' })).toBe(
      'Cannot start: DATABASE_URL is not a URL: expected postgresql://user:password@host:5432/database\n',
    );
  });

  test('unreachable PostgreSQL: a message per try, then exit', async () => {
    const dataDir = await freshDataDir();
    const output = await refused({
      DATA_DIR: dataDir,
      DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/teamchat',
      DATABASE_WAIT_SECONDS: '3',
    });
    const lines = output.trim().split('\n');
    expect(lines.slice(0, -1).length).toBeGreaterThanOrEqual(1);
    for (const line of lines.slice(0, -1))
      expect(line).toMatch(
        /^PostgreSQL at 127\.0\.0\.1:1\/teamchat is unreachable \(connect ECONNREFUSED 127\.0\.0\.1:1\); trying again in 2 s \(try \d\)\.$/,
      );
    expect(lines.at(-1)).toMatch(
      /^Cannot start: PostgreSQL at 127\.0\.0\.1:1\/teamchat is unreachable .*gave up after \d tries \(DATABASE_WAIT_SECONDS=3\)\.$/,
    );
    expect(await readdir(dataDir)).toEqual([]);
  }, 30_000);
});

test('`npm start`: SIGTERM to the PID it started stops the server and PostgreSQL, nothing left running', async () => {
  const dataDir = await freshDataDir();
  const npm = spawn('npm', ['start', '--silent'], {
    env: environment({ DATA_DIR: dataDir, PORT: '0' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  npm.stdout.on('data', (chunk) => (output += chunk));
  npm.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => npm.on('exit', resolve));
  for (let i = 0; i < 900 && !/Server listening on (http:\/\/\S+)/.test(output); i++) await new Promise((r) => setTimeout(r, 100));
  const url = /Server listening on (http:\/\/\S+)/.exec(output)![1]!;
  expect(await health(url)).toBe(200);
  const postgres = (await postmasterPid(dataDir))!;

  npm.kill('SIGTERM');
  await exited;
  await expectGone(postgres);
  await expect(health(url)).rejects.toThrow();
  expect(output).toContain('SIGTERM received: finishing requests in flight, then exiting.');
}, 180_000);
