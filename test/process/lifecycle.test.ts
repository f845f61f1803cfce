// The server as a newcomer runs it: `tsx src/main.ts` on an embedded data directory.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';

let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'teamchat-lifecycle-'));
});
afterAll(() => rm(dataDir, { recursive: true, force: true }));

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function startMain(port: number): Started {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1' };
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

async function waitForOutput(started: Started, pattern: RegExp): Promise<void> {
  for (let i = 0; i < 600 && !pattern.test(started.output()); i++) {
    if (started.child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(started.output()).toMatch(pattern);
}

test('a second server on the same data directory is refused; SIGTERM exits cleanly and releases it', async () => {
  const first = startMain(0);
  await waitForOutput(first, /Server listening on (http:\/\/\S+)/);
  const url = /Server listening on (http:\/\/\S+)/.exec(first.output())![1];
  expect((await fetch(`${url}/health`)).status).toBe(200);

  const second = startMain(0);
  expect(await second.exited).toBe(1);
  expect(second.output()).toContain(`The embedded database in ${dataDir} is in use by another process`);

  first.child.kill('SIGTERM');
  expect(await first.exited).toBe(0);

  const third = startMain(0);
  await waitForOutput(third, /Server listening on/);
  third.child.kill('SIGTERM');
  expect(await third.exited).toBe(0);
}, 120_000);
