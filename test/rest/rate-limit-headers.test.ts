// rate-limits.md section 1 and its checks RL1-RL4, RL7 and RL8 over real HTTP: the X-RateLimit-*
// headers on every answer where a limiter ran (both REST doors, the sign-in routes, server_settings),
// none where none ran, the 429's own, and their exposure to allowed origins. Each test has fresh
// users of its own world, so its counts start at zero.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { countStatementsMatching } from '../../src/db/statement-counter.js';
import { expectMatchesOpenApi } from '../support/openapi.js';
import { callApi, type ApiResponse } from '../support/rest.js';
import { basicAuth, startTestServer, type TestServer } from '../support/server.js';
import { givePassword, openForm, PASSWORD, postForm, signIn } from '../support/sessions.js';
import { createWorld, type World } from '../support/world.js';

const ORIGIN = 'https://admin.example.test';
let server: TestServer;
let w: World;
beforeAll(async () => {
  server = await startTestServer({ allowedOrigins: [ORIGIN] });
  w = await createWorld(server.app.prisma);
});
afterAll(() => server?.close());

const rateHeaders = (headers: Headers) => ({
  limit: headers.get('x-ratelimit-limit'),
  remaining: headers.get('x-ratelimit-remaining'),
  reset: headers.get('x-ratelimit-reset'),
});
const NO_HEADERS = { limit: null, remaining: null, reset: null };

/** Whole UNIX seconds, from now (truncated) to `window` seconds ahead. */
function expectResetWithin(reset: string | null, window: number): void {
  expect(reset).toMatch(/^\d+$/);
  const now = Math.trunc(Date.now() / 1000);
  expect(Number(reset)).toBeGreaterThanOrEqual(now);
  expect(Number(reset)).toBeLessThanOrEqual(now + window);
}

test('RL1: two requests with Basic credentials: Limit 200, Remaining one less on the second, Reset within a minute', async () => {
  const first = await callApi(server.url, 'GET', '/attachments', { authorization: w.users.member.auth });
  const second = await callApi(server.url, 'GET', '/attachments', { authorization: w.users.member.auth });
  for (const answer of [first, second]) {
    expect(answer.status).toBe(200);
    expectMatchesOpenApi('GET', '/attachments', answer);
    expect(answer.headers.get('x-ratelimit-limit')).toBe('200');
    expectResetWithin(answer.headers.get('x-ratelimit-reset'), 60);
  }
  expect(first.headers.get('x-ratelimit-remaining')).toBe('199');
  expect(second.headers.get('x-ratelimit-remaining')).toBe('198');
  expect(second.headers.get('x-ratelimit-reset')).toBe(first.headers.get('x-ratelimit-reset'));
});

test('RL2: a wrong key is answered 401 before any limiter: none of the headers', async () => {
  const refused = await callApi(server.url, 'GET', '/attachments', { authorization: basicAuth(w.users.admin.email, 'x'.repeat(32)) });
  expect(refused.status).toBe(401);
  expectMatchesOpenApi('GET', '/attachments', refused);
  expect(rateHeaders(refused.headers)).toEqual(NO_HEADERS);
});

test('RL3: past 200 requests in a minute: Remaining fell by one per answer, then 429 with Remaining 0 and Retry-After', async () => {
  const auth = w.users.moderator.auth;
  const remaining: number[] = [];
  for (let i = 0; i < 200; i++) {
    const answer = await fetch(`${server.url}/api/v1/users/me`, { headers: { authorization: auth } });
    await answer.arrayBuffer();
    expect(answer.status).toBe(200);
    remaining.push(Number(answer.headers.get('x-ratelimit-remaining')));
  }
  expect(remaining).toEqual(Array.from({ length: 200 }, (_, i) => 199 - i));
  const refused: ApiResponse = await callApi(server.url, 'GET', '/attachments', { authorization: auth });
  expect(refused.status).toBe(429);
  expectMatchesOpenApi('GET', '/attachments', refused);
  const body = { result: 'error', msg: 'API usage exceeded rate limit', 'retry-after': expect.any(Number), code: 'RATE_LIMIT_HIT' };
  expect(refused.body).toEqual(body);
  expect(refused.headers.get('x-ratelimit-limit')).toBe('200');
  expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
  expectResetWithin(refused.headers.get('x-ratelimit-reset'), 60);
  expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
});

test('RL4: /json with a session counts against the same per-user counter', async () => {
  await givePassword(server.app.prisma, w.users.owner.id);
  const session = await signIn(server.url, { username: w.users.owner.email });
  const viaSession = await fetch(`${server.url}/json/attachments`, { headers: { cookie: session.cookie } });
  expect(viaSession.status).toBe(200);
  expect(rateHeaders(viaSession.headers)).toMatchObject({ limit: '200', remaining: '199' });
  const viaKey = await callApi(server.url, 'GET', '/attachments', { authorization: w.users.owner.auth });
  expect(rateHeaders(viaKey.headers)).toMatchObject({ limit: '200', remaining: '198' });
});

test('RL7: an allowed origin may read the three headers', async () => {
  const answer = await fetch(`${server.url}/api/v1/users/me`, { headers: { authorization: w.users.guest.auth, origin: ORIGIN } });
  expect(answer.status).toBe(200);
  const exposed = (answer.headers.get('access-control-expose-headers') ?? '').split(',').map((name) => name.trim().toLowerCase());
  expect(exposed).toEqual(expect.arrayContaining(['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after']));
  expect(answer.headers.get('x-ratelimit-limit')).toBe('200');
});

test('RL8: fetch_api_key with a wrong password, first attempt for the address: 401 with Limit 5, Remaining 4', async () => {
  await givePassword(server.app.prisma, w.users.admin.id);
  const wrongPassword = { username: w.users.admin.email, password: 'wrong password' };
  const refused = await callApi(server.url, 'POST', '/fetch_api_key', { form: wrongPassword });
  expect(refused.status).toBe(401);
  expect(rateHeaders(refused.headers)).toMatchObject({ limit: '5', remaining: '4' });
  expectResetWithin(refused.headers.get('x-ratelimit-reset'), 1800);
  const fetched = await callApi(server.url, 'POST', '/fetch_api_key', { form: { username: w.users.admin.email, password: PASSWORD } });
  expect(fetched.status).toBe(200);
  expect(rateHeaders(fetched.headers)).toMatchObject({ limit: '5', remaining: '3' });
});

test('the routes without credentials count per client address (api_by_ip, 100 a minute)', async () => {
  const first = await callApi(server.url, 'GET', '/server_settings');
  const second = await callApi(server.url, 'GET', '/server_settings');
  expect(first.status).toBe(200);
  expect(first.headers.get('x-ratelimit-limit')).toBe('100');
  expect(Number(second.headers.get('x-ratelimit-remaining'))).toBe(Number(first.headers.get('x-ratelimit-remaining')) - 1);
  expectResetWithin(first.headers.get('x-ratelimit-reset'), 60);
  // The sign-in form's POST: the sign-in attempts' limit (5) is the smaller one.
  const form = await openForm(`${server.url}/accounts/login/`);
  const signedIn = await postForm(
    `${server.url}/accounts/login/`,
    { csrfmiddlewaretoken: form.token, username: 'nobody@lighthouse.example', password: 'x', realm: '', next: '' },
    form.cookies,
  );
  expect(rateHeaders(signedIn.headers)).toMatchObject({ limit: '5', remaining: '4' });
});

test('no headers where no limiter ran: /health, the GraphiQL page, a route that does not exist, an OPTIONS request', async () => {
  const answers = [
    await fetch(`${server.url}/health`),
    await fetch(`${server.url}/graphql`, { headers: { accept: 'text/html' } }),
    await fetch(`${server.url}/api/v1/no-such-route`, { headers: { authorization: w.users.member.auth } }),
    await fetch(`${server.url}/api/v1/users/me`, { method: 'OPTIONS' }),
    await fetch(`${server.url}/accounts/login/`),
  ];
  for (const answer of answers) {
    await answer.arrayBuffer();
    expect(answer.status, answer.url).toBeLessThan(500);
    expect(rateHeaders(answer.headers), answer.url).toEqual(NO_HEADERS);
  }
});

test("one statement for a request's limiters together: Basic, session, server_settings (a wrong password adds its failure's)", async () => {
  const limiterStatements = countStatementsMatching(/rate_counter/);
  const statementsOf = async (request: () => Promise<Response | ApiResponse>) => {
    const before = limiterStatements();
    const answer = await request();
    if (answer instanceof Response) await answer.arrayBuffer();
    return limiterStatements() - before;
  };
  const bot = w.users.bot;
  expect(await statementsOf(() => callApi(server.url, 'GET', '/users/me', { authorization: bot.auth }))).toBe(1);
  expect(await statementsOf(() => callApi(server.url, 'GET', '/server_settings'))).toBe(1);
  // The address's request, the sign-in attempt and the lockout's check in one; then the failure counted.
  const wrong = () => callApi(server.url, 'POST', '/fetch_api_key', { form: { username: 'nobody@lighthouse.example', password: 'x' } });
  expect(await statementsOf(wrong)).toBe(2);
  const malformed = () => callApi(server.url, 'POST', '/fetch_api_key', { form: { username: 'not an address', password: 'x' } });
  expect(await statementsOf(malformed)).toBe(1);
});

test('API_IP_RATE_LIMIT: past it the forms answer a 429 page, server_settings the 429 envelope, with Retry-After', async () => {
  // A window of its own length: its counter (per address and window) is not the other tests' 60-second one.
  const tight = await startTestServer({ addressRateLimits: [{ windowSeconds: 61, maxRequests: 2 }] });
  try {
    // Counted before the form is read: a POST without its CSRF token (403) counts too.
    const statuses = [];
    for (let i = 0; i < 2; i++) statuses.push((await postForm(`${tight.url}/accounts/password/reset/`, { email: 'a@b.example' })).status);
    expect(statuses).toEqual([403, 403]);
    const page = await postForm(`${tight.url}/accounts/password/reset/`, { email: 'a@b.example' });
    expect(page.status).toBe(429);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(Number(page.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(rateHeaders(page.headers)).toMatchObject({ limit: '2', remaining: '0' });
    const settings = await callApi(tight.url, 'GET', '/server_settings');
    expect(settings.status).toBe(429);
    expect(settings.body).toMatchObject({ result: 'error', msg: 'API usage exceeded rate limit', code: 'RATE_LIMIT_HIT' });
    expect(rateHeaders(settings.headers)).toMatchObject({ limit: '2', remaining: '0' });
  } finally {
    await tight.close();
  }
});
