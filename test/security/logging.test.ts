// Observability: JSON log lines, a request id on every line of a request and in X-Request-Id, one
// info line per request, never the Authorization header, an API key or an acceptance key.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { createInvitation } from '../support/invitations.js';
import { capturedLogger } from '../support/log-capture.js';
import { givePassword, PASSWORD, signIn } from '../support/sessions.js';
import { testDatabaseUrl } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

const { logger, raw, lines, clear } = capturedLogger('debug');

let server: RunningServer;
let dataDir: string;
let w: World;
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'teamchat-logging-'));
  server = await startServer({ ...loadConfig({}), host: '127.0.0.1', port: 0, dataDir }, { databaseUrl: await testDatabaseUrl() }, {
    outbox: false,
    logger,
  });
  server.app.config.serverUrl = server.url;
  w = await createWorld(server.app.prisma);
});
afterAll(async () => {
  await server?.close();
  await rm(dataDir, { recursive: true, force: true });
});

test('a request id on every line and in the response; one info line per request; no credentials', async () => {
  clear();
  const chosen = await fetch(`${server.url}/api/v1/users/me`, { headers: { authorization: w.users.member.auth, 'x-request-id': 'client-id-42' } });
  expect(chosen.headers.get('x-request-id')).toBe('client-id-42');
  const fresh = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: w.users.member.auth },
    body: JSON.stringify({ query: '{ me { email } }' }),
  });
  const freshId = fresh.headers.get('x-request-id')!;
  expect(freshId).toMatch(/^[0-9a-f-]{36}$/);
  const invitation = await createInvitation(server, w, { email: 'logged@example.net' });
  await fetch(`${server.url}/accounts/do_confirm/${invitation.confirmationKey}`);

  for (const line of lines) expect(line.requestId).toEqual(expect.any(String));
  const summaries = lines.filter((line) => line.msg === 'request');
  expect(summaries.map((line) => [line.level, line.method, line.path, line.status])).toEqual([
    [30, 'GET', '/api/v1/users/me', 200],
    [30, 'POST', '/graphql', 200],
    [30, 'GET', '/accounts/do_confirm/:key', 200],
  ]);
  expect(summaries.slice(0, 2).map((line) => line.requestId)).toEqual(['client-id-42', freshId]);
  expect(lines.filter((line) => line.level === 20).length).toBeGreaterThanOrEqual(3);
  const text = raw.join('\n');
  for (const secret of [w.users.member.apiKey, w.users.member.auth.slice('Basic '.length), invitation.confirmationKey]) expect(text).not.toContain(secret);
});

test('signing in and a reset link: no password, session token or reset token in the log; the link is logged as its route', async () => {
  await givePassword(server.app.prisma, w.users.owner.id);
  clear();
  const session = await signIn(server.url, { username: w.users.owner.email, realm: w.org.stringId });
  expect((await fetch(`${server.url}/json/users/me`, { headers: { cookie: session.cookie } })).status).toBe(200);
  const resetToken = `abc-${'x'.repeat(32)}`;
  await fetch(`${server.url}/accounts/password/reset/MTIz/${resetToken}/`);
  const paths = lines.filter((line) => line.msg === 'request').map((line) => `${line.method} ${line.path}`);
  expect(paths).toEqual(['GET /accounts/login/', 'POST /accounts/login/', 'GET /json/users/me', 'GET /accounts/password/reset/:uid/:token/']);
  const text = raw.join('\n');
  for (const secret of [PASSWORD, session.cookie.split('=')[1]!, session.csrfToken, resetToken]) expect(text).not.toContain(secret);
});
