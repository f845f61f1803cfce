// A server process (`node dist/main.js`) over the test database, as production runs it: it gets none
// of the test runner's environment, and SIGTERM lets a request in flight finish before it exits.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { holdOrganizationRow } from '../support/contention.js';
import { listeningUrl, startServerProcess, testDatabaseEnvironment, waitForOutput, type Started } from '../support/process.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

let server: TestServer;
let world: World;
let dataDir: string;
let started: Started;
let url: string;
beforeAll(async () => {
  // In-process, only to create the organization (before the process starts: no demo organization).
  server = await startTestServer();
  world = await createWorld(server.app.prisma);
  dataDir = await mkdtemp(join(tmpdir(), 'teamchat-drain-'));
  started = startServerProcess({ ...(await testDatabaseEnvironment()), DATA_DIR: dataDir });
  url = await listeningUrl(started);
}, 120_000);
afterAll(async () => {
  started?.child.kill('SIGKILL');
  await server?.close();
  await rm(dataDir, { recursive: true, force: true });
});

test("the process has none of the test runner's variables and logs at the production level (info)", async () => {
  const variables = (await readFile(`/proc/${started.child.pid}/environ`, 'utf8')).split('\0').map((entry) => entry.split('=')[0]);
  expect(variables.filter((name) => /^(VITEST|TEST$|NODE_ENV$|MODE$|LOG_LEVEL$)/.test(name))).toEqual([]);
  expect((await fetch(`${url}/api/v1/users/me`, { headers: { authorization: world.users.member.auth } })).status).toBe(200);
  const line = await waitForOutput(started, /^\{.*"msg":"request".*\}$/m, 10);
  expect(JSON.parse(line[0])).toMatchObject({ level: 30, method: 'GET', path: '/api/v1/users/me', status: 200 });
});

test('SIGTERM while a request waits in the database: the request completes with 200, then the process exits with 0', async () => {
  // The request is slow because the test holds the organization's row: PostgreSQL shows it waiting.
  const hold = await holdOrganizationRow(world.org.id);
  let inFlight: Promise<Response>;
  try {
    inFlight = fetch(`${url}/api/v1/invites`, {
      method: 'POST',
      headers: { authorization: world.users.admin.auth },
      body: new URLSearchParams({ invitee_emails: 'late-in-the-day@elsewhere.example', stream_ids: '[]' }),
    });
    await hold.untilWaiting(1);
    started.child.kill('SIGTERM');
    await waitForOutput(started, /SIGTERM received: finishing requests in flight, then exiting\./, 10);
    expect(started.child.exitCode).toBeNull();
  } finally {
    await hold.release();
  }
  const answer = await inFlight;
  expect({ status: answer.status, body: await answer.json() }).toEqual({ status: 200, body: { result: 'success', msg: '' } });
  expect(await started.exited).toBe(0);
  expect(
    await server.app.prisma.invitation.count({ where: { organizationId: world.org.id, email: 'late-in-the-day@elsewhere.example' } }),
  ).toBe(1);
});
