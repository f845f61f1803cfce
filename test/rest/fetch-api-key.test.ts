// POST /api/v1/fetch_api_key (signin.md section 1) and its rate limits (section 2): every line, over
// real HTTP, on this file's database.
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { setPassword } from '../../src/domain/auth/sign-in.js';
import { hashApiKey } from '../../src/domain/users/api-keys.js';
import { callApi, type ApiResponse } from '../support/rest.js';
import { basicAuth, startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World, type WorldUserName } from '../support/world.js';

let server: TestServer;
let limited: TestServer;
beforeAll(async () => {
  // The failed-login limit per client address is off on the first server: every test here comes from 127.0.0.1.
  server = await startTestServer({ failedLoginLimit: null });
  limited = await startTestServer({ failedLoginLimit: { windowSeconds: 600, maxRequests: 3 }, signInLimit: null });
});
afterAll(async () => {
  await Promise.all([server?.close(), limited?.close()]);
});

const PASSWORD = 'lighthouse-keeper-42';

/** A world whose users (bots aside) all have PASSWORD. */
async function worldWithPasswords(): Promise<World> {
  const world = await createWorld(server.app.prisma);
  for (const who of ['owner', 'admin', 'moderator', 'member', 'guest', 'deactivated'] as WorldUserName[]) {
    await setPassword(server.app.prisma, world.users[who].id, PASSWORD);
  }
  return world;
}

const fetchKey = (form: Record<string, string>, on: TestServer = server) => callApi(on.url, 'POST', '/fetch_api_key', { form });

const failure = (msg: string, code: string) => ({ status: 401, body: { result: 'error', msg, code } });
const WRONG = failure('Your username or password is incorrect', 'AUTHENTICATION_FAILED');
const outcome = (response: ApiResponse) => ({ status: response.status, body: response.body });

let world: World;
beforeAll(async () => {
  world = await worldWithPasswords();
});
// Every world has the same addresses, and the attempts are counted per address: each test starts afresh.
beforeEach(async () => {
  await server.app.prisma.rateCounter.deleteMany({ where: { key: { startsWith: 'sign-in:' } } });
});

describe('section 1: the request', () => {
  test('POST only: other methods answer 405 with allowed_methods, before any parameter is read', async () => {
    for (const method of ['GET', 'PATCH', 'PUT', 'DELETE']) {
      const response = await callApi(server.url, method, '/fetch_api_key', {
        query: { username: world.users.member.email, password: PASSWORD },
      });
      expect({ method, status: response.status, body: response.body }).toEqual({
        method,
        status: 405,
        body: { result: 'error', msg: 'Method Not Allowed', allowed_methods: ['POST'] },
      });
    }
  });

  test('missing parameters, username first; then an address that is not one', async () => {
    const missing = (name: string) => ({
      status: 400,
      body: { result: 'error', msg: `Missing '${name}' argument`, var_name: name, code: 'REQUEST_VARIABLE_MISSING' },
    });
    expect(outcome(await fetchKey({}))).toEqual(missing('username'));
    expect(outcome(await fetchKey({ password: PASSWORD }))).toEqual(missing('username'));
    expect(outcome(await fetchKey({ username: 'not an address' }))).toEqual(missing('password'));
    const invalid = { status: 400, body: { result: 'error', msg: 'Enter a valid email address.', code: 'BAD_REQUEST' } };
    for (const username of [
      '',
      'mark',
      'mark@',
      '@lighthouse.example',
      'mark@lighthouse.example\u0000',
      'a b@lighthouse.example',
      `${'x'.repeat(320)}@lighthouse.example`,
    ]) {
      expect({ username, ...outcome(await fetchKey({ username, password: PASSWORD })) }).toEqual({ username, ...invalid });
    }
  });

  test('a password holding NUL: 400 Null characters are not allowed., for any address, no attempt counted', async () => {
    for (const username of [world.users.member.email, 'nobody-here@lighthouse.example']) {
      expect(outcome(await fetchKey({ username, password: `${PASSWORD}\0`, realm: world.org.stringId }))).toEqual({
        status: 400,
        body: { result: 'error', msg: 'Null characters are not allowed.', code: 'BAD_REQUEST' },
      });
    }
    expect(await server.app.prisma.rateCounter.count({ where: { key: { startsWith: 'sign-in:' } } })).toBe(0);
  });

  test("success: the account's current key, its address as stored and its id; fetching does not change it", async () => {
    const member = world.users.member;
    const first = await fetchKey({ username: member.email, password: PASSWORD });
    expect(outcome(first)).toEqual({
      status: 200,
      body: { result: 'success', msg: '', api_key: member.apiKey, email: member.email, user_id: member.id },
    });
    const again = await fetchKey({ username: member.email.toUpperCase(), password: PASSWORD });
    expect(again.body).toEqual(first.body);
    expect((await callApi(server.url, 'GET', '/users/me', { authorization: member.auth })).status).toBe(200);
  });

  test('multipart/form-data, as zulip-js sends it', async () => {
    const form = new FormData();
    form.set('username', world.users.guest.email);
    form.set('password', PASSWORD);
    const response = await fetch(`${server.url}/api/v1/fetch_api_key`, { method: 'POST', body: form });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      result: 'success',
      msg: '',
      api_key: world.users.guest.apiKey,
      email: world.users.guest.email,
      user_id: world.users.guest.id,
    });
  });

  test('a wrong password, an unknown address, a bot, an account without a password: one answer', async () => {
    const other = await createWorld(server.app.prisma); // no passwords set
    const cases = {
      'wrong password': { username: world.users.admin.email, password: `${PASSWORD}!` },
      'empty password': { username: world.users.admin.email, password: '' },
      'unknown address': { username: 'nobody-here@lighthouse.example', password: PASSWORD },
      bot: { username: world.users.bot.email, password: PASSWORD },
      'no password': { username: other.users.member.email, password: PASSWORD },
    };
    // The other world's member shares the address with this world's: give the realm so that only it is named.
    const realms: Record<string, string | undefined> = { 'no password': other.org.stringId };
    for (const [name, form] of Object.entries(cases)) {
      const realm = realms[name];
      const response = await fetchKey({ ...form, ...(realm && { realm }) });
      expect({ name, ...outcome(response) }).toEqual({ name, ...WRONG });
      expect(response.headers.get('www-authenticate')).toBeNull();
    }
  });

  test('deactivated account, deactivated organization: told only after the right password', async () => {
    const dora = world.users.deactivated;
    const here = world.org.stringId;
    expect(outcome(await fetchKey({ username: dora.email, password: 'wrong-password', realm: here }))).toEqual(WRONG);
    expect(outcome(await fetchKey({ username: dora.email, password: PASSWORD, realm: here }))).toEqual(
      failure('Account is deactivated', 'USER_DEACTIVATED'),
    );

    const closed = await worldWithPasswords();
    await server.app.prisma.organization.update({ where: { id: closed.org.id }, data: { deactivated: true } });
    const realm = closed.org.stringId;
    expect(outcome(await fetchKey({ username: closed.users.owner.email, password: 'wrong-password', realm }))).toEqual(WRONG);
    expect(outcome(await fetchKey({ username: closed.users.owner.email, password: PASSWORD, realm }))).toEqual(
      failure('This organization has been deactivated', 'REALM_DEACTIVATED'),
    );
    // A deactivated account in a deactivated organization hears about the organization.
    expect(outcome(await fetchKey({ username: closed.users.deactivated.email, password: PASSWORD, realm }))).toEqual(
      failure('This organization has been deactivated', 'REALM_DEACTIVATED'),
    );
  });

  test('one address in several organizations: realm chooses; without it, or naming another organization, the ordinary failure', async () => {
    const second = await worldWithPasswords(); // the same addresses as `world`
    const email = second.users.moderator.email;
    expect(outcome(await fetchKey({ username: email, password: PASSWORD }))).toEqual(WRONG);
    const chosen = await fetchKey({ username: email, password: PASSWORD, realm: second.org.stringId });
    expect(chosen.body).toMatchObject({ result: 'success', api_key: second.users.moderator.apiKey, user_id: second.users.moderator.id });
    const first = await fetchKey({ username: email, password: PASSWORD, realm: world.org.stringId });
    expect(first.body).toMatchObject({ result: 'success', api_key: world.users.moderator.apiKey, user_id: world.users.moderator.id });
    for (const realm of ['no-such-org', 'UPPER', '', 'x'.repeat(41)]) {
      expect({ realm, ...outcome(await fetchKey({ username: email, password: PASSWORD, realm })) }).toEqual({ realm, ...WRONG });
    }
    expect(outcome(await fetchKey({ username: email, password: PASSWORD, realm: 'a\u0000b' }))).toEqual({
      status: 400,
      body: { result: 'error', msg: 'realm contains NULL (0x00) characters.', code: 'BAD_REQUEST' },
    });
  });

  test('a key issued before keys were sealed is replaced at the first fetch, once', async () => {
    const own = await worldWithPasswords();
    const owner = own.users.owner;
    await server.app.prisma.user.update({ where: { id: owner.id }, data: { apiKeySealed: null } });
    const first = await fetchKey({ username: owner.email, password: PASSWORD, realm: own.org.stringId });
    expect(first.body).toMatchObject({ result: 'success', user_id: owner.id });
    const newKey = first.body.api_key as string;
    expect(newKey).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(newKey).not.toBe(owner.apiKey);
    expect((await callApi(server.url, 'GET', '/users/me', { authorization: owner.auth })).status).toBe(401);
    expect((await callApi(server.url, 'GET', '/users/me', { authorization: basicAuth(owner.email, newKey) })).status).toBe(200);
    expect((await fetchKey({ username: owner.email, password: PASSWORD, realm: own.org.stringId })).body.api_key).toBe(newKey);
    const row = await server.app.prisma.user.findUniqueOrThrow({ where: { id: owner.id } });
    expect(row.apiKeyHash).toBe(hashApiKey(newKey));
    expect(row.apiKeySealed).not.toContain(newKey);
  });

  test("a Django hash from an import signs in and is replaced by this server's Argon2id", async () => {
    const own = await createWorld(server.app.prisma);
    const admin = own.users.admin;
    // Python's hashlib.pbkdf2_hmac('sha256', b'correct horse battery', b'Hw6D8sZyb2pS', 10000)
    const django = 'pbkdf2_sha256$10000$Hw6D8sZyb2pS$E8RaacGAtAUE5BW4Y1D+tIc56awidvf1lwQ93sWYvtQ=';
    await server.app.prisma.user.update({ where: { id: admin.id }, data: { passwordHash: django } });
    expect(outcome(await fetchKey({ username: admin.email, password: 'correct horse batter', realm: own.org.stringId }))).toEqual(WRONG);
    expect((await server.app.prisma.user.findUniqueOrThrow({ where: { id: admin.id } })).passwordHash).toBe(django);
    const signedIn = await fetchKey({ username: admin.email, password: 'correct horse battery', realm: own.org.stringId });
    expect(signedIn.body).toMatchObject({ result: 'success', api_key: admin.apiKey });
    const upgraded = (await server.app.prisma.user.findUniqueOrThrow({ where: { id: admin.id } })).passwordHash!;
    expect(upgraded).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect((await fetchKey({ username: admin.email, password: 'correct horse battery', realm: own.org.stringId })).body).toMatchObject({
      result: 'success',
    });
  });
});

describe('section 2: rate limits', () => {
  const refusedBody = (response: ApiResponse) => {
    const { 'retry-after': retryAfter, ...rest } = response.body;
    return { status: response.status, body: rest, retryAfter, header: Number(response.headers.get('retry-after')) };
  };

  test('5 attempts per address in 30 minutes, counted before the check: the 6th is refused even with the right password', async () => {
    const own = await worldWithPasswords();
    const email = own.users.member.email;
    const realm = own.org.stringId;
    for (let i = 0; i < 5; i++)
      expect(outcome(await fetchKey({ username: i % 2 ? email.toUpperCase() : email, password: 'nope-nope', realm }))).toEqual(WRONG);
    const refused = refusedBody(await fetchKey({ username: email, password: PASSWORD, realm }));
    expect(refused).toMatchObject({ status: 429, body: { result: 'error', msg: 'API usage exceeded rate limit', code: 'RATE_LIMIT_HIT' } });
    expect(refused.retryAfter).toBeGreaterThan(1790);
    expect(refused.retryAfter).toBeLessThanOrEqual(1800);
    expect(refused.header).toBe(Math.ceil(refused.retryAfter));
    // Another address is not affected.
    expect((await fetchKey({ username: own.users.guest.email, password: PASSWORD, realm })).status).toBe(200);
  });

  test('the limit counts the address as typed, lower-cased: unknown addresses too', async () => {
    const email = `Someone-${Date.now()}@Nowhere.example`;
    for (let i = 0; i < 5; i++) expect(outcome(await fetchKey({ username: email, password: 'x' }))).toEqual(WRONG);
    expect((await fetchKey({ username: email.toLowerCase(), password: 'x' })).status).toBe(429);
  });

  test('a successful sign-in clears the count', async () => {
    const own = await worldWithPasswords();
    const email = own.users.admin.email;
    const realm = own.org.stringId;
    for (let i = 0; i < 4; i++) expect((await fetchKey({ username: email, password: 'nope-nope', realm })).status).toBe(401);
    expect((await fetchKey({ username: email, password: PASSWORD, realm })).status).toBe(200);
    for (let i = 0; i < 4; i++) expect((await fetchKey({ username: email, password: 'nope-nope', realm })).status).toBe(401);
    expect((await fetchKey({ username: email, password: PASSWORD, realm })).status).toBe(200);
  });

  test("the client address's failed-login limit (AUTH_FAILURE_LIMIT) counts wrong passwords and unknown addresses", async () => {
    const own = await worldWithPasswords();
    const realm = own.org.stringId;
    expect(outcome(await fetchKey({ username: own.users.admin.email, password: 'nope-nope', realm }, limited))).toEqual(WRONG);
    expect(outcome(await fetchKey({ username: 'ghost@nowhere.example', password: 'nope-nope' }, limited))).toEqual(WRONG);
    expect(outcome(await fetchKey({ username: own.users.guest.email, password: 'nope-nope', realm }, limited))).toEqual(WRONG);
    const fourth = await fetchKey({ username: own.users.owner.email, password: 'nope-nope', realm }, limited);
    expect(fourth.status).toBe(429);
    expect(fourth.body.code).toBe('RATE_LIMIT_HIT');
    // Locked out: the right password is refused too, before it is checked.
    const right = await fetchKey({ username: own.users.owner.email, password: PASSWORD, realm }, limited);
    expect(right.status).toBe(429);
  });
});
