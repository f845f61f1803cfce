// Observability: JSON log lines, a request id on every line of a request and in X-Request-Id, one
// info line per request, never the Authorization header, an API key or an acceptance key.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { NamedStatement } from '../../src/db/sql.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { createInvitation } from '../support/invitations.js';
import { capturedLogger } from '../support/log-capture.js';
import { givePassword, PASSWORD, signIn } from '../support/sessions.js';
import { testDatabaseUrl } from '../support/server.js';
import { eventually, subscribe, TRANSPORTS } from '../support/subscriptions.js';
import { postFiles } from '../support/uploads.js';
import { createWorld, type World } from '../support/world.js';

const { logger, raw, lines, clear } = capturedLogger('debug');

let server: RunningServer;
let dataDir: string;
let w: World;
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'teamchat-logging-'));
  server = await startServer(
    { ...loadConfig({}), host: '127.0.0.1', port: 0, dataDir },
    { databaseUrl: await testDatabaseUrl() },
    {
      outbox: false,
      logger,
    },
  );
  server.app.config.serverUrl = server.url;
  w = await createWorld(server.app.prisma);
});
afterAll(async () => {
  await server?.close();
  await rm(dataDir, { recursive: true, force: true });
});

test('a request id on every line and in the response; one info line per request; no credentials', async () => {
  clear();
  const chosen = await fetch(`${server.url}/api/v1/users/me`, {
    headers: { authorization: w.users.member.auth, 'x-request-id': 'client-id-42' },
  });
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
  for (const secret of [w.users.member.apiKey, w.users.member.auth.slice('Basic '.length), invitation.confirmationKey])
    expect(text).not.toContain(secret);
});

/** Until the returned function is called, reading a user's files fails with an unexpected error (other statements go through). */
function failFileReads(): () => void {
  const { sql } = server.app;
  const rows = sql.rows;
  sql.rows = <Row>(statement: string | NamedStatement, values: readonly unknown[]) =>
    /\bFROM attachment\b/.test(typeof statement === 'string' ? statement : statement.text)
      ? Promise.reject(new Error('injected failure'))
      : rows.call<typeof sql, [string | NamedStatement, readonly unknown[]], Promise<Row[]>>(sql, statement, values);
  return () => void (sql.rows = rows);
}

const errorLines = () => lines.filter((line) => line.level >= 50).map((line) => [line.requestId, line.msg, line.err?.message]);

test('an unexpected error is logged once, at error, with the id of the request it broke (REST and GraphQL)', async () => {
  const auth = w.users.member.auth;
  expect((await fetch(`${server.url}/api/v1/users/me`, { headers: { authorization: auth } })).status).toBe(200); // authenticated: cached
  const restore = failFileReads();
  clear();
  let rest: Response;
  let graphqlBody: unknown;
  try {
    rest = await fetch(`${server.url}/api/v1/attachments`, { headers: { authorization: auth, 'x-request-id': 'rest-broken' } });
    const answer = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: auth, 'x-request-id': 'graphql-broken' },
      body: JSON.stringify({ query: '{ attachments { uploadSpaceUsed } }' }),
    });
    graphqlBody = await answer.json();
  } finally {
    restore();
  }
  expect({ status: rest.status, body: await rest.json() }).toEqual({
    status: 500,
    body: { result: 'error', msg: 'Internal server error', code: 'BAD_REQUEST' },
  });
  expect(graphqlBody).toEqual({
    data: null,
    errors: [
      { message: 'Unexpected error.', locations: expect.any(Array), path: ['attachments'], extensions: { code: 'INTERNAL_SERVER_ERROR' } },
    ],
  });
  expect(errorLines()).toEqual([
    ['rest-broken', 'unexpected error', 'injected failure'],
    ['graphql-broken', 'unexpected error', 'injected failure'],
  ]);
  for (const line of lines) expect(line.requestId).toEqual(expect.any(String));
});

test.each(TRANSPORTS)(
  'over %s, an unexpected error in a subscription event is logged with the id of the subscribing request',
  async (transport) => {
    const world = await createWorld(server.app.prisma);
    const before = server.app.eventStreams!.size;
    const subscription = subscribe(
      transport,
      server.url,
      world.users.member.auth,
      'subscription { attachmentsChanged { change attachment { name } } }',
      {},
      {
        headers: { 'x-request-id': `${transport}-events` },
      },
    );
    try {
      await eventually(() => server.app.eventStreams!.size > before, 60_000);
      const restore = failFileReads();
      clear();
      try {
        expect((await postFiles(server.url, '/user_uploads', world.users.member.auth, [{ name: 'a.txt', content: 'x' }])).status).toBe(200);
        expect(await subscription.next()).toMatchObject({
          data: { attachmentsChanged: { change: 'ADDED', attachment: null } },
          errors: [{ message: 'Unexpected error.' }],
        });
      } finally {
        restore();
      }
      expect(errorLines()).toEqual([[`${transport}-events`, 'unexpected error', 'injected failure']]);
    } finally {
      await subscription.close();
    }
  },
);

test('signing in and a reset link: no password, session token or reset token in the log; the link is logged as its route', async () => {
  await givePassword(server.app.prisma, w.users.owner.id);
  clear();
  const session = await signIn(server.url, { username: w.users.owner.email, realm: w.org.stringId });
  expect((await fetch(`${server.url}/json/users/me`, { headers: { cookie: session.cookie } })).status).toBe(200);
  const resetToken = `abc-${'x'.repeat(32)}`;
  await fetch(`${server.url}/accounts/password/reset/MTIz/${resetToken}/`);
  const paths = lines.filter((line) => line.msg === 'request').map((line) => `${line.method} ${line.path}`);
  expect(paths).toEqual([
    'GET /accounts/login/',
    'POST /accounts/login/',
    'GET /json/users/me',
    'GET /accounts/password/reset/:uid/:token/',
  ]);
  const text = raw.join('\n');
  for (const secret of [PASSWORD, session.cookie.split('=')[1]!, session.csrfToken, resetToken]) expect(text).not.toContain(secret);
});
