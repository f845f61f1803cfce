// HTTP Basic authentication and method dispatch of /api/v1 (behaviour.md sections 1.2 and 2),
// exercised on GET /attachments and DELETE /realm/emoji/{name}; then GET /users/me, which shows whom
// the credentials identify.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generateApiKey, hashApiKey } from '../../src/domain/users/api-keys.js';
import { expectMatchesOpenApi } from '../support/openapi.js';
import { callApi, type ApiCall } from '../support/rest.js';
import { basicAuth, startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

let server: TestServer;
let world: World;
beforeAll(async () => {
  server = await startTestServer();
  world = await createWorld(server.app.prisma);
});
afterAll(() => server.close());

const WWW_AUTHENTICATE = 'Basic realm="zulip"';
const base64 = (text: string) => Buffer.from(text).toString('base64');
const unauthorized = (msg: string) => ({ result: 'error', msg, code: 'UNAUTHORIZED' });

async function getAttachments(call: ApiCall = {}) {
  const response = await callApi(server.url, 'GET', '/attachments', call);
  if (response.status !== 302) expectMatchesOpenApi('GET', '/attachments', response);
  return response;
}

async function expectRefused(call: ApiCall, status: number, body: object, wwwAuthenticate: string | null = WWW_AUTHENTICATE) {
  const response = await getAttachments(call);
  expect(response.status).toBe(status);
  expect(response.body).toEqual(body);
  expect(response.headers.get('www-authenticate')).toBe(wwwAuthenticate);
  expect(response.headers.get('content-type')).toBe('application/json');
}

describe('no Authorization header', () => {
  test('an API client gets 401 with WWW-Authenticate', async () => {
    await expectRefused({}, 401, unauthorized('Not logged in: API authentication or user session required'));
    await expectRefused(
      { headers: { accept: 'application/json' } },
      401,
      unauthorized('Not logged in: API authentication or user session required'),
    );
  });

  test('a browser (text/html preferred) is redirected to the login page', async () => {
    const response = await getAttachments({ headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' } });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/login/?next=%2Fapi%2Fv1%2Fattachments');
    expect(response.body).toBeNull();
  });

  test('application/json ranked above text/html is an API client', async () => {
    await expectRefused(
      { headers: { accept: 'text/html;q=0.5, application/json' } },
      401,
      unauthorized('Not logged in: API authentication or user session required'),
    );
  });
});

describe('header parsing', () => {
  test('a scheme other than Basic is 400 BAD_REQUEST without WWW-Authenticate', async () => {
    const body = { result: 'error', msg: 'This endpoint requires HTTP basic authentication.', code: 'BAD_REQUEST' };
    await expectRefused({ authorization: `Bearer ${world.users.member.apiKey}` }, 400, body, null);
    await expectRefused({ authorization: `Digest ${base64(`${world.users.member.email}:${world.users.member.apiKey}`)}` }, 400, body, null);
  });

  test('the scheme is case-insensitive', async () => {
    const response = await getAttachments({ authorization: `bAsIc ${base64(`${world.users.member.email}:${world.users.member.apiKey}`)}` });
    expect(response.status).toBe(200);
  });

  test('bad base64, a wrong number of parts, non-UTF-8 and a missing or extra colon are 401 invalid header', async () => {
    const invalid = unauthorized('Invalid authorization header for basic auth');
    const headers = [
      'Basic !!!not-base64!!!',
      'Basic',
      `Basic ${base64('a:b')} extra`,
      `Basic ${Buffer.from([0xff, 0xfe, 0x3a, 0x41]).toString('base64')}`,
      `Basic ${base64(`${world.users.member.email}${world.users.member.apiKey}`)}`,
      `Basic ${base64(`${world.users.member.email}:${world.users.member.apiKey}:x`)}`,
    ];
    for (const authorization of headers) await expectRefused({ authorization }, 401, invalid);
  });
});

describe('credentials', () => {
  test('a key that is not 32 letters or digits is `Malformed API key`', async () => {
    for (const key of ['short', `${world.users.member.apiKey}x`, `${world.users.member.apiKey.slice(0, 31)}-`]) {
      await expectRefused({ authorization: basicAuth(world.users.member.email, key) }, 401, unauthorized('Malformed API key'));
    }
  });

  test("an unknown key, or a known key with another account's e-mail, is `Invalid API key`", async () => {
    await expectRefused({ authorization: basicAuth(world.users.member.email, generateApiKey()) }, 401, unauthorized('Invalid API key'));
    await expectRefused(
      { authorization: basicAuth(world.users.owner.email, world.users.member.apiKey) },
      401,
      unauthorized('Invalid API key'),
    );
  });

  test('the e-mail matches ignoring case, and both parts are whitespace-stripped', async () => {
    const shouting = await getAttachments({ authorization: basicAuth(world.users.member.email.toUpperCase(), world.users.member.apiKey) });
    expect(shouting.status).toBe(200);
    const padded = await getAttachments({
      authorization: `Basic ${base64(` ${world.users.member.email} : ${world.users.member.apiKey} `)}`,
    });
    expect(padded.status).toBe(200);
    expect(padded.body.attachments.map((a: { name: string }) => a.name)).toEqual(['plan.pdf', 'draft.txt']);
  });

  test('a deactivated user is `Account is deactivated`', async () => {
    await expectRefused({ authorization: world.users.deactivated.auth }, 401, unauthorized('Account is deactivated'));
  });

  test('a user of a deactivated organization is `This organization has been deactivated`', async () => {
    const other = await createWorld(server.app.prisma, (file) => (file.organization.deactivated = true));
    await expectRefused({ authorization: other.users.owner.auth }, 401, unauthorized('This organization has been deactivated'));
    // The organization check comes before the user check.
    await expectRefused({ authorization: other.users.deactivated.auth }, 401, unauthorized('This organization has been deactivated'));
  });

  test('an incoming-webhook bot is refused; a generic bot is not', async () => {
    const apiKey = generateApiKey();
    const email = `hook-${apiKey.slice(0, 8).toLowerCase()}@lighthouse.example`;
    await server.app.prisma.user.create({
      data: {
        organizationId: world.org.id,
        email,
        emailKey: email,
        fullName: 'Hook',
        isBot: true,
        botType: 2,
        apiKeyHash: hashApiKey(apiKey),
      },
    });
    await expectRefused(
      { authorization: basicAuth(email, apiKey) },
      401,
      unauthorized('This API is not available to incoming webhook bots.'),
    );
    expect((await getAttachments({ authorization: world.users.bot.auth })).status).toBe(200);
  });
});

describe('method dispatch comes before authentication', () => {
  test('OPTIONS answers 204 with the allowed methods sorted', async () => {
    const attachments = await callApi(server.url, 'OPTIONS', '/attachments');
    expect(attachments.status).toBe(204);
    expect(attachments.headers.get('allow')).toBe('GET, HEAD');
    expect(attachments.body).toBeNull();
    const emoji = await callApi(server.url, 'OPTIONS', '/realm/emoji/green_tick');
    expect(emoji.status).toBe(204);
    expect(emoji.headers.get('allow')).toBe('DELETE, POST');
  });

  test('an unsupported method is 405 with allowed_methods (no code), with or without credentials', async () => {
    for (const authorization of [undefined, world.users.member.auth, 'Bearer nonsense']) {
      const post = await callApi(server.url, 'POST', '/attachments', { authorization });
      expect(post.status).toBe(405);
      expect(post.body).toEqual({ result: 'error', msg: 'Method Not Allowed', allowed_methods: ['GET', 'HEAD'] });
      expect(post.headers.get('allow')).toBe('GET, HEAD');
      expectMatchesOpenApi('GET', '/attachments', post);
      const get = await callApi(server.url, 'GET', '/realm/emoji/green_tick', { authorization });
      expect(get.status).toBe(405);
      expect(get.body).toEqual({ result: 'error', msg: 'Method Not Allowed', allowed_methods: ['POST', 'DELETE'] });
      expect(get.headers.get('allow')).toBe('POST, DELETE');
    }
    expect(await server.app.prisma.customEmoji.count({ where: { organizationId: world.org.id, deactivated: true } })).toBe(1);
  });

  test('HEAD is GET without a body: authenticated 200, anonymous 401', async () => {
    const head = await callApi(server.url, 'HEAD', '/attachments', { authorization: world.users.member.auth });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe('application/json');
    expect(head.body).toBeNull();
    const anonymous = await callApi(server.url, 'HEAD', '/attachments');
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe(WWW_AUTHENTICATE);
  });

  test('DELETE /realm/emoji/{name} authenticates like every route', async () => {
    const anonymous = await callApi(server.url, 'DELETE', '/realm/emoji/green_tick');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual(unauthorized('Not logged in: API authentication or user session required'));
    expectMatchesOpenApi('DELETE', '/realm/emoji/{emoji_name}', anonymous);
    const badKey = await callApi(server.url, 'DELETE', '/realm/emoji/green_tick', {
      authorization: basicAuth(world.users.member.email, generateApiKey()),
    });
    expect(badKey.body).toEqual(unauthorized('Invalid API key'));
    expect(await server.app.prisma.customEmoji.count({ where: { organizationId: world.org.id, deactivated: false } })).toBe(2);
  });
});

describe('GET /users/me', () => {
  test("answers the caller's profile in Zulip's shape", async () => {
    const response = await callApi(server.url, 'GET', '/users/me', { authorization: world.users.admin.auth });
    const row = await server.app.prisma.user.findUniqueOrThrow({ where: { id: world.users.admin.id } });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      result: 'success',
      msg: '',
      avatar_url: null,
      avatar_version: 1,
      email: 'adam@lighthouse.example',
      delivery_email: 'adam@lighthouse.example',
      full_name: 'Adam Admin',
      user_id: world.users.admin.id,
      role: 200,
      is_owner: false,
      is_admin: true,
      is_guest: false,
      is_billing_admin: false,
      is_bot: false,
      is_active: true,
      timezone: '',
      date_joined: row.dateJoined.toISOString(),
      profile_data: {},
    });
    expect(response.body.date_joined).toBe('2026-01-01T00:00:00.000Z');
  });

  test('flags follow the role, and bots carry their bot type', async () => {
    const me = async (authorization: string) => (await callApi(server.url, 'GET', '/users/me', { authorization })).body;
    expect(await me(world.users.owner.auth)).toMatchObject({ role: 100, is_owner: true, is_admin: true, is_guest: false });
    expect(await me(world.users.guest.auth)).toMatchObject({ role: 600, is_owner: false, is_admin: false, is_guest: true });
    const bot = await me(world.users.bot.auth);
    expect(bot).toMatchObject({ is_bot: true, bot_type: 1, bot_owner_id: null, user_id: world.users.bot.id });
    expect('bot_type' in (await me(world.users.member.auth))).toBe(false);
  });

  test('needs credentials', async () => {
    const response = await callApi(server.url, 'GET', '/users/me', { authorization: world.users.deactivated.auth });
    expect(response.status).toBe(401);
    expect(response.body).toEqual(unauthorized('Account is deactivated'));
  });
});
