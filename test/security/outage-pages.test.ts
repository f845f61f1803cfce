// The server's pages while the database is unavailable (the path to PostgreSQL cut through a proxy, as
// outage.test.ts does): every page answers the site's own 503 page with Retry-After, never JSON;
// signing out still clears the cookies, and the session it ended is refused once the database is back
// (its row deleted), also when the process that answered the sign-out stopped meanwhile.
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { createInvitation, uniqueEmail } from '../support/invitations.js';
import { connectToTestDatabase, testDatabaseUrl } from '../support/server.js';
import { cookieHeader, givePassword, setCookieHeader, signIn, type SignedIn } from '../support/sessions.js';
import { createWorld, type World } from '../support/world.js';
import { lockWaitersOf, terminateLockWaiter } from '../support/contention.js';
import { startDatabaseProxy, type DatabaseProxy } from '../support/tcp-proxy.js';

let proxy: DatabaseProxy;
let w: World;
const servers: { server: RunningServer; dataDir: string; path: DatabaseProxy }[] = [];

async function serverOn(dataDir: string, path = proxy): Promise<RunningServer> {
  const config = { ...loadConfig({}), host: '127.0.0.1', port: 0, dataDir };
  const server = await startServer(config, { databaseUrl: path.url }, { outbox: false });
  server.app.config.serverUrl = server.url;
  servers.push({ server, dataDir, path });
  return server;
}
const newDataDir = () => mkdtemp(join(tmpdir(), 'teamchat-outage-pages-'));

let server: RunningServer;
beforeAll(async () => {
  proxy = await startDatabaseProxy(await testDatabaseUrl());
  server = await serverOn(await newDataDir());
  w = await createWorld(server.app.prisma);
  await givePassword(server.app.prisma, w.users.member.id);
});
afterAll(async () => {
  for (const { server: running, dataDir, path } of servers) {
    await path.restore();
    await running.close().catch(() => {});
    await rm(dataDir, { recursive: true, force: true });
    if (path !== proxy) await path.close();
  }
  await proxy?.close();
});

/** Resolves once `condition` holds; throws after 30 s, so that a test's `finally` still lets go of what it holds. */
const until = async (condition: () => boolean | Promise<boolean>, what = 'the condition') => {
  const deadline = Date.now() + 30_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`30 s passed before ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

afterEach(async () => {
  await proxy.restore();
  await until(async () => !server.databaseStatus.down || (await server.databaseStatus.check()));
});

/** Cuts the path to PostgreSQL; returns once `on` knows the database is down. */
async function cutDatabase(on: RunningServer): Promise<void> {
  await proxy.cut();
  expect(await on.databaseStatus.check()).toBe(false);
  expect(on.databaseStatus.down).toBe(true);
}

/** A form POST as a browser sends it: urlencoded, with its cookies, from the server's origin. */
const postPage = (on: RunningServer, path: string, fields: Record<string, string>, cookies: Record<string, string>) =>
  fetch(`${on.url}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: cookieHeader(cookies), 'content-type': 'application/x-www-form-urlencoded', origin: on.url },
    body: new URLSearchParams(fields),
  });

/** The site's 503 page: its layout, the message, Retry-After; no JSON. */
async function expectUnavailablePage(response: Response, label: string): Promise<void> {
  const body = await response.text();
  const retryAfter = response.headers.get('retry-after');
  expect({ label, status: response.status, type: response.headers.get('content-type'), retryAfter }).toEqual({
    label,
    status: 503,
    type: 'text/html; charset=utf-8',
    retryAfter: '5',
  });
  expect(body).toMatch(/^<!DOCTYPE html>/);
  expect(body).toContain('<p class="error" id="error">The service is temporarily unavailable. Please try again in a few moments.</p>');
}

const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex');
const sessionRows = async (token: string) => {
  const client = await connectToTestDatabase();
  try {
    return (await client.query('SELECT 1 FROM user_session WHERE "tokenHash" = $1', [tokenHash(token)])).rowCount;
  } finally {
    await client.end();
  }
};
const sessionToken = (signedIn: SignedIn) => signedIn.cookies.sessionid!;
const meStatus = async (on: RunningServer, signedIn: SignedIn) =>
  (await fetch(`${on.url}/json/users/me`, { headers: { cookie: signedIn.cookie } })).status;

test("while the database is down, every page answers the site's 503 page with Retry-After", async () => {
  const invitation = await createInvitation(server, w, { email: uniqueEmail('outage') });
  const csrf = 'a'.repeat(43);
  const cookies = { csrftoken: csrf };
  const post = (path: string, fields: Record<string, string>) => postPage(server, path, { csrfmiddlewaretoken: csrf, ...fields }, cookies);
  const resetLink = '/accounts/password/reset/MQ/abc-def/';
  const acceptance = `/accounts/do_confirm/${invitation.confirmationKey}`;
  await cutDatabase(server);
  const pages: [string, () => Promise<Response>][] = [
    ['sign-in form', () => fetch(`${server.url}/accounts/login/`)],
    ['sign-in', () => post('/accounts/login/', { username: w.users.member.email, password: 'x' })],
    ['sign-out by GET', () => fetch(`${server.url}/accounts/logout/`)],
    ['reset request form', () => fetch(`${server.url}/accounts/password/reset/`)],
    ['reset request', () => post('/accounts/password/reset/', { email: w.users.member.email })],
    ['reset done', () => fetch(`${server.url}/accounts/password/reset/done/`)],
    ['reset link', () => fetch(`${server.url}${resetLink}`)],
    ['reset link form', () => post(resetLink, { new_password1: 'x', new_password2: 'x' })],
    ['acceptance link', () => fetch(`${server.url}${acceptance}`)],
    ['acceptance form', () => post(acceptance, { full_name: 'Ola Outage', password: 'lighthouse-keeper-42' })],
  ];
  for (const [label, request] of pages) await expectUnavailablePage(await request(), label);
});

test('a page whose statement loses its connection (the database itself answering) is the 503 page too, not JSON', async () => {
  const invitation = await createInvitation(server, w, { email: uniqueEmail('lost') });
  const admin = await connectToTestDatabase();
  try {
    await admin.query('BEGIN');
    await admin.query('LOCK TABLE invitation IN ACCESS EXCLUSIVE MODE');
    const opened = fetch(`${server.url}/accounts/do_confirm/${invitation.confirmationKey}`);
    await terminateLockWaiter(admin);
    await expectUnavailablePage(await opened, 'acceptance link, connection lost');
  } finally {
    await admin.query('ROLLBACK');
    await admin.end();
  }
  expect(server.databaseStatus.down).toBe(false);
});

test('signing out while the database is down clears the cookies; once it is back the session is refused and its row deleted', async () => {
  const signedIn = await signIn(server.url, { username: w.users.member.email });
  expect(await meStatus(server, signedIn)).toBe(200);
  await cutDatabase(server);

  const signedOut = await postPage(server, '/accounts/logout/', { csrfmiddlewaretoken: signedIn.csrfToken }, signedIn.cookies);
  expect(signedOut.status).toBe(303);
  expect(signedOut.headers.get('location')).toBe('/accounts/login/');
  expect(setCookieHeader(signedOut, 'sessionid')).toBe('sessionid=; Max-Age=0; Path=/; SameSite=Lax; HttpOnly');
  expect(setCookieHeader(signedOut, 'csrftoken')).not.toContain(signedIn.csrfToken);
  // The end is on disk before the answer.
  expect(await readdir(join(servers[0]!.dataDir, 'ended-sessions'))).toEqual([tokenHash(sessionToken(signedIn))]);

  await proxy.restore();
  await until(async () => !server.databaseStatus.down || (await server.databaseStatus.check()));
  // The old cookie, replayed by hand, is refused; the row goes, and the record with it.
  expect(await meStatus(server, signedIn)).toBe(401);
  await until(async () => (await sessionRows(sessionToken(signedIn))) === 0);
  await until(async () => (await readdir(join(servers[0]!.dataDir, 'ended-sessions'))).length === 0);
  expect(await meStatus(server, signedIn)).toBe(401);
});

test('a sign-out recorded by a process that died during the outage is carried out by the next process on its data directory', async () => {
  // The first process reaches PostgreSQL through a path of its own, cut for good: it is as good as
  // dead, and nothing but its data directory can finish the sign-out.
  const deadPath = await startDatabaseProxy(await testDatabaseUrl());
  const dataDir = await newDataDir();
  const first = await serverOn(dataDir, deadPath);
  const signedIn = await signIn(first.url, { username: w.users.member.email });
  expect(await meStatus(first, signedIn)).toBe(200);
  await deadPath.cut();
  expect(await first.databaseStatus.check()).toBe(false);
  const signedOut = await postPage(first, '/accounts/logout/', { csrfmiddlewaretoken: signedIn.csrfToken }, signedIn.cookies);
  expect(signedOut.status).toBe(303);
  expect(setCookieHeader(signedOut, 'sessionid')).toBe('sessionid=; Max-Age=0; Path=/; SameSite=Lax; HttpOnly');
  expect(await sessionRows(sessionToken(signedIn))).toBe(1);

  const admin = await connectToTestDatabase();
  let next: RunningServer;
  try {
    // The row held, so that the next process's deletion waits: the session is refused before its row goes.
    await admin.query('BEGIN');
    await admin.query('SELECT 1 FROM user_session WHERE "tokenHash" = $1 FOR UPDATE', [tokenHash(sessionToken(signedIn))]);
    next = await serverOn(dataDir);
    const deleting = (waiter: { query: string }) => waiter.query.startsWith('DELETE FROM user_session WHERE "tokenHash" = ANY');
    await until(async () => (await lockWaitersOf(admin)).some(deleting), "the next process's deletion waited for the held row");
    expect(await meStatus(next, signedIn)).toBe(401);
  } finally {
    await admin.query('ROLLBACK');
    await admin.end();
  }
  await until(async () => (await sessionRows(sessionToken(signedIn))) === 0);
  await until(async () => (await readdir(join(dataDir, 'ended-sessions'))).length === 0);
  expect(await meStatus(next, signedIn)).toBe(401);
  // Two servers start in it: as the lifecycle tests, it has the time two starts take on a loaded machine.
}, 120_000);
