// Repeated failed logins from one client address answer 429 RATE_LIMIT_HIT with
// Retry-After (the reference's shape and wording) without locking out other addresses; the per-user
// and failed-login limits hold across server processes sharing one PostgreSQL database, and deleting
// the failure counters ends a lockout in every process.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { basicAuth, runOnTestDatabase, startTestServer, type TestServer } from '../support/server.js';
import { givePassword, PASSWORD } from '../support/sessions.js';
import { createWorld, type World } from '../support/world.js';

let defaults: TestServer;
let first: TestServer;
let second: TestServer;
let w: World;
beforeAll(async () => {
  defaults = await startTestServer();
  // Two processes' worth of servers on one database, with small limits.
  const limits = { failedLoginLimit: { windowSeconds: 600, maxRequests: 4 }, rateLimits: [{ windowSeconds: 3600, maxRequests: 6 }] };
  first = await startTestServer(limits);
  second = await startTestServer(limits);
  w = await createWorld(defaults.app.prisma);
});
afterAll(async () => {
  await Promise.all([defaults?.close(), first?.close(), second?.close()]);
});

/** GET over a connection from the given local address (every 127.x address reaches a server on 127.0.0.1). */
function get(
  url: string,
  authorization: string,
  localAddress = '127.0.0.1',
): Promise<{ status: number; headers: Record<string, unknown>; body: any }> {
  return new Promise((resolve, reject) => {
    const call = request(url, { headers: { authorization }, localAddress }, (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: JSON.parse(text) }));
    });
    call.on('error', reject);
    call.end();
  });
}

const wrongKey = (email: string) => basicAuth(email, 'x'.repeat(32));

/** POST a form over a connection from the given local address. */
function post(url: string, form: Record<string, string>, localAddress: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const body = new URLSearchParams(form).toString();
    const headers = { 'content-type': 'application/x-www-form-urlencoded' };
    const call = request(url, { method: 'POST', headers, localAddress }, (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, body: JSON.parse(text) }));
    });
    call.on('error', reject);
    call.end(body);
  });
}

test('row 11: with the default limit, 300 wrong keys from one address end in 429s; another address still gets in', async () => {
  const address = '127.0.0.11';
  const statuses: number[] = [];
  for (let i = 0; i < 300; i++)
    statuses.push((await get(`${defaults.url}/api/v1/users/me`, wrongKey(w.users.member.email), address)).status);
  expect(statuses.slice(0, 100)).toEqual(Array(100).fill(401));
  expect(statuses.slice(100)).toEqual(Array(200).fill(429));
  // The failure that reaches the lockout, and those after it: 429s with the lockout's headers.
  const wrong = await get(`${defaults.url}/api/v1/users/me`, wrongKey(w.users.member.email), address);
  expect(wrong.headers).toMatchObject({ 'x-ratelimit-limit': '100', 'x-ratelimit-remaining': '0' });
  const locked = await get(`${defaults.url}/api/v1/users/me`, w.users.member.auth, address);
  expect(locked.status).toBe(429);
  expect(Object.keys(locked.body)).toEqual(['result', 'msg', 'retry-after', 'code']);
  expect(locked.body).toMatchObject({ result: 'error', msg: 'API usage exceeded rate limit', code: 'RATE_LIMIT_HIT' });
  expect(locked.headers['x-ratelimit-remaining']).toBe('0');
  expect(locked.headers['x-ratelimit-limit']).toBe('100');
  expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
  const elsewhere = await get(`${defaults.url}/api/v1/users/me`, w.users.member.auth, '127.0.0.12');
  expect(elsewhere.status).toBe(200);
});

test('failed logins count across processes: 2 + 2 failures on two servers, the fifth is refused on either door', async () => {
  const address = '127.0.0.21';
  const auth = wrongKey(w.users.owner.email);
  for (const server of [first, second, first, second]) expect((await get(`${server.url}/api/v1/users/me`, auth, address)).status).toBe(401);
  expect((await get(`${first.url}/api/v1/users/me`, auth, address)).status).toBe(429);
  const graphql = await get(`${second.url}/graphql?query=${encodeURIComponent('{ me { email } }')}`, w.users.owner.auth, address);
  expect(graphql.status).toBe(429);
  expect(graphql.body.errors[0].extensions.code).toBe('RATE_LIMIT_HIT');
  expect((await get(`${second.url}/api/v1/users/me`, w.users.owner.auth, '127.0.0.22')).status).toBe(200);
});

test('the per-user limit counts across processes: 6 requests over two servers, the seventh is refused', async () => {
  const auth = w.users.moderator.auth;
  const statuses: number[] = [];
  for (const server of [first, second, first, second, first, second, first])
    statuses.push((await get(`${server.url}/api/v1/users/me`, auth, '127.0.0.31')).status);
  expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429]);
});

describe('without per-user limits (API_RATE_LIMIT=off), lockouts are known from notifications', () => {
  const settings = { rateLimits: [], failedLoginLimit: { windowSeconds: 600, maxRequests: 3 } };
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    [a, b] = await Promise.all([startTestServer(settings), startTestServer(settings)]);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });

  test('a lockout reached on one server refuses valid credentials on another, and on a server started later', async () => {
    const address = '127.0.0.41';
    const auth = wrongKey(w.users.member.email);
    for (let i = 0; i < 3; i++) expect((await get(`${a.url}/api/v1/users/me`, auth, address)).status).toBe(401);
    expect((await get(`${a.url}/api/v1/users/me`, auth, address)).status).toBe(429);
    expect((await get(`${a.url}/api/v1/users/me`, w.users.member.auth, address)).status).toBe(429);
    // The other server hears of it at the failure's commit, a moment later.
    await vi.waitFor(async () => expect((await get(`${b.url}/api/v1/users/me`, w.users.member.auth, address)).status).toBe(429), {
      timeout: 5000,
    });
    // ... from memory, not from a statement.
    expect(b.app.rateLimiter.lockouts.lockedUntil(`failed-login:${address}`)).toBeGreaterThan(Date.now());
    const later = await startTestServer(settings);
    try {
      const refused = await get(`${later.url}/api/v1/users/me`, w.users.member.auth, address);
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ result: 'error', code: 'RATE_LIMIT_HIT' });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(500);
      expect(later.app.rateLimiter.lockouts.lockedUntil(`failed-login:${address}`)).toBeGreaterThan(Date.now());
    } finally {
      await later.close();
    }
    expect((await get(`${b.url}/api/v1/users/me`, w.users.member.auth, '127.0.0.42')).status).toBe(200);
  });

  test('deleting the failure counters ends the lockout at once for sign-ins, and in every process for API requests', async () => {
    const address = '127.0.0.44';
    await givePassword(a.app.prisma, w.users.guest.id);
    const auth = wrongKey(w.users.guest.email);
    for (let i = 0; i < 4; i++) await get(`${a.url}/api/v1/users/me`, auth, address);
    const signIn = () => post(`${a.url}/api/v1/fetch_api_key`, { username: w.users.guest.email, password: PASSWORD }, address);
    expect((await signIn()).status).toBe(429);
    const statusOn = async (server: TestServer) => (await get(`${server.url}/api/v1/users/me`, w.users.guest.auth, address)).status;
    await vi.waitFor(async () => expect(await statusOn(b)).toBe(429), { timeout: 5000 });

    await runOnTestDatabase(`DELETE FROM rate_counter WHERE key LIKE 'failed-login:%'`);
    expect((await signIn()).status).toBe(200);
    // API requests check the lockout in memory (no per-user statement to read it with): each process hears of the release.
    for (const server of [a, b]) {
      await vi.waitFor(async () => expect(await statusOn(server)).toBe(200), { timeout: 5000 });
      expect(server.app.rateLimiter.lockouts.lockedUntil(`failed-login:${address}`)).toBe(0);
    }
  });

  test('below the limit nobody is locked out', async () => {
    const address = '127.0.0.43';
    for (let i = 0; i < 2; i++) expect((await get(`${a.url}/api/v1/users/me`, wrongKey(w.users.member.email), address)).status).toBe(401);
    for (const server of [a, b]) expect((await get(`${server.url}/api/v1/users/me`, w.users.member.auth, address)).status).toBe(200);
  });
});
