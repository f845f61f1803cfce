// A user's own credentials over REST: PATCH /settings changes the password (signin.md section 3),
// POST /users/me/api_key/regenerate gives a new key (section 6), GET /server_settings says so
// (section 7: test/rest/server-settings.test.ts).
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { setPassword } from '../../src/domain/auth/sign-in.js';
import { hashApiKey } from '../../src/domain/users/api-keys.js';
import { callApi, type ApiResponse } from '../support/rest.js';
import { basicAuth, startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

let server: TestServer;
let world: World;
const PASSWORD = 'lighthouse-keeper-42';
const NEW_PASSWORD = 'harbor-pilot-1977';
beforeAll(async () => {
  server = await startTestServer({ failedLoginLimit: null });
  world = await createWorld(server.app.prisma);
});
afterAll(() => server.close());
beforeEach(async () => {
  for (const who of ['owner', 'member', 'guest', 'admin'] as const) await setPassword(server.app.prisma, world.users[who].id, PASSWORD);
});

const settings = (auth: string, form: Record<string, string>) => callApi(server.url, 'PATCH', '/settings', { authorization: auth, form });
const outcome = (response: ApiResponse) => ({ status: response.status, body: response.body });
const error = (msg: string) => ({ status: 400, body: { result: 'error', msg, code: 'BAD_REQUEST' } });
const passwordHashOf = async (id: number) => (await server.app.prisma.user.findUniqueOrThrow({ where: { id } })).passwordHash;
const fetchKey = (username: string, password: string, realm = world.org.stringId) =>
  callApi(server.url, 'POST', '/fetch_api_key', { form: { username, password, realm } });
const auditOf = (actorId: number, eventType: string) => server.app.prisma.auditLogEntry.findMany({ where: { actorId, eventType } });

describe('section 3: PATCH /settings with old_password and new_password', () => {
  test('success: the new password signs in, the old one not; the API key stays; the audit log records it', async () => {
    const member = world.users.member;
    const before = await passwordHashOf(member.id);
    expect(outcome(await settings(member.auth, { old_password: PASSWORD, new_password: NEW_PASSWORD }))).toEqual({
      status: 200,
      body: { result: 'success', msg: '' },
    });
    expect(await passwordHashOf(member.id)).not.toBe(before);
    expect((await callApi(server.url, 'GET', '/users/me', { authorization: member.auth })).status).toBe(200);
    expect((await fetchKey(member.email, PASSWORD)).status).toBe(401);
    expect((await fetchKey(member.email, NEW_PASSWORD)).body).toMatchObject({ result: 'success', api_key: member.apiKey });
    const audit = await auditOf(member.id, 'USER_PASSWORD_CHANGED');
    expect(audit.map((entry) => [entry.organizationId, entry.extraData])).toEqual([[world.org.id, { modified_user_id: member.id }]]);
  });

  test('a wrong old password: 400 Wrong password!, nothing changed (no old password at all too)', async () => {
    const guest = world.users.guest;
    const before = await passwordHashOf(guest.id);
    expect(outcome(await settings(guest.auth, { old_password: 'not-it', new_password: NEW_PASSWORD }))).toEqual(error('Wrong password!'));
    expect(outcome(await settings(guest.auth, { new_password: NEW_PASSWORD }))).toEqual(error('Wrong password!'));
    expect(await passwordHashOf(guest.id)).toBe(before);
    expect(await auditOf(guest.id, 'USER_PASSWORD_CHANGED')).toEqual([]);
  });

  test('a weak new password: 400 New password is too weak! (checked after the old one), nothing changed', async () => {
    const admin = world.users.admin;
    const before = await passwordHashOf(admin.id);
    for (const weak of ['abc', 'password123', 'x7#Qp', `${'Zq9!'.repeat(25)}x`, '']) {
      const response = await settings(admin.auth, { old_password: PASSWORD, new_password: weak });
      // An empty new password changes nothing and says so by success, as the reference.
      expect({ weak, ...outcome(response) }).toEqual({
        weak,
        ...(weak === '' ? { status: 200, body: { result: 'success', msg: '' } } : error('New password is too weak!')),
      });
    }
    expect(outcome(await settings(admin.auth, { old_password: 'not-it', new_password: 'abc' }))).toEqual(error('Wrong password!'));
    expect(await passwordHashOf(admin.id)).toBe(before);
  });

  test("too many wrong old passwords: the address's sign-in attempts count them, and then even the right one is refused", async () => {
    const owner = world.users.owner;
    await server.app.prisma.rateCounter.deleteMany({ where: { key: `sign-in:${owner.email}` } });
    for (let i = 0; i < 5; i++)
      expect(outcome(await settings(owner.auth, { old_password: 'not-it', new_password: NEW_PASSWORD }))).toEqual(error('Wrong password!'));
    const refused = await settings(owner.auth, { old_password: PASSWORD, new_password: NEW_PASSWORD });
    expect(refused.status).toBe(400);
    const seconds = Number(/^You're making too many attempts! Try again in (\d+) seconds\.$/.exec(refused.body.msg)?.[1]);
    expect(seconds).toBeGreaterThan(1790);
    expect(seconds).toBeLessThanOrEqual(1800);
    expect(refused.body).toEqual({ result: 'error', msg: refused.body.msg, code: 'BAD_REQUEST' });
    // The same count as signing in: fetch_api_key is refused too.
    expect((await fetchKey(owner.email, PASSWORD)).status).toBe(429);
    // A password set anew (here by an administrator's tool) clears it.
    await setPassword(server.app.prisma, owner.id, PASSWORD);
    expect((await fetchKey(owner.email, PASSWORD)).status).toBe(200);
  });

  test('a password holding NUL, old or new: 400 Null characters are not allowed., nothing changed, no attempt counted', async () => {
    const member = world.users.member;
    const attemptsKey = `sign-in:${member.email.toLowerCase()}`;
    await server.app.prisma.rateCounter.deleteMany({ where: { key: attemptsKey } });
    const before = await passwordHashOf(member.id);
    const audited = (await auditOf(member.id, 'USER_PASSWORD_CHANGED')).length;
    const withNul = `${NEW_PASSWORD.slice(0, 5)}\0${NEW_PASSWORD.slice(5)}`;
    for (const form of [
      { old_password: PASSWORD, new_password: withNul },
      { old_password: `${PASSWORD}\0`, new_password: NEW_PASSWORD },
    ]) {
      expect(outcome(await settings(member.auth, form))).toEqual(error('Null characters are not allowed.'));
    }
    expect(await passwordHashOf(member.id)).toBe(before);
    expect(await auditOf(member.id, 'USER_PASSWORD_CHANGED')).toHaveLength(audited);
    expect(await server.app.prisma.rateCounter.count({ where: { key: attemptsKey } })).toBe(0);
    expect(outcome(await fetchKey(member.email, withNul))).toEqual(error('Null characters are not allowed.'));
    expect((await fetchKey(member.email, PASSWORD)).status).toBe(200);
  });

  test('a bot has no password; other parameters are reported as ignored', async () => {
    expect(outcome(await settings(world.users.bot.auth, { old_password: '', new_password: NEW_PASSWORD }))).toEqual(
      error('Wrong password!'),
    );
    expect(outcome(await settings(world.users.member.auth, { full_name: 'Someone' }))).toEqual({
      status: 200,
      body: { result: 'success', msg: '', ignored_parameters_unsupported: ['full_name'] },
    });
  });

  test('needs credentials; other methods are 405', async () => {
    expect(
      outcome(await callApi(server.url, 'PATCH', '/settings', { form: { old_password: PASSWORD, new_password: NEW_PASSWORD } })),
    ).toMatchObject({ status: 401 });
    expect(outcome(await callApi(server.url, 'POST', '/settings', { authorization: world.users.member.auth }))).toEqual({
      status: 405,
      body: { result: 'error', msg: 'Method Not Allowed', allowed_methods: ['PATCH'] },
    });
  });
});

describe('section 6: POST /users/me/api_key/regenerate', () => {
  test('a new key; the old one is refused at once; sessions and password stay; the audit log records it', async () => {
    const own = await createWorld(server.app.prisma);
    const member = own.users.member;
    await setPassword(server.app.prisma, member.id, PASSWORD);
    expect((await callApi(server.url, 'GET', '/users/me', { authorization: member.auth })).status).toBe(200); // cached now
    const hashBefore = await passwordHashOf(member.id);
    const response = await callApi(server.url, 'POST', '/users/me/api_key/regenerate', { authorization: member.auth });
    expect(response.status).toBe(200);
    const apiKey = response.body.api_key as string;
    expect(response.body).toEqual({ result: 'success', msg: '', api_key: apiKey });
    expect(apiKey).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(apiKey).not.toBe(member.apiKey);
    expect(outcome(await callApi(server.url, 'GET', '/users/me', { authorization: member.auth }))).toEqual({
      status: 401,
      body: { result: 'error', msg: 'Invalid API key', code: 'UNAUTHORIZED' },
    });
    expect((await callApi(server.url, 'GET', '/users/me', { authorization: basicAuth(member.email, apiKey) })).status).toBe(200);
    expect((await fetchKey(member.email, PASSWORD, own.org.stringId)).body).toMatchObject({ result: 'success', api_key: apiKey });
    const row = await server.app.prisma.user.findUniqueOrThrow({ where: { id: member.id } });
    expect({ hash: row.apiKeyHash, password: row.passwordHash }).toEqual({ hash: hashApiKey(apiKey), password: hashBefore });
    expect((await auditOf(member.id, 'USER_API_KEY_CHANGED')).map((entry) => entry.extraData)).toEqual([{ modified_user_id: member.id }]);
  });

  test('POST only, Basic credentials only', async () => {
    expect((await callApi(server.url, 'POST', '/users/me/api_key/regenerate')).status).toBe(401);
    expect(outcome(await callApi(server.url, 'GET', '/users/me/api_key/regenerate', { authorization: world.users.guest.auth }))).toEqual({
      status: 405,
      body: { result: 'error', msg: 'Method Not Allowed', allowed_methods: ['POST'] },
    });
    expect((await callApi(server.url, 'GET', '/users/me', { authorization: world.users.guest.auth })).status).toBe(200);
  });
});
