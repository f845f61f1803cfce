// The sign-in and sign-out pages and the session's cookies (signin.md section 4): the form, its CSRF
// token, the redirect to `next`, the reference's words for each failure, the cookies' attributes
// on http and https, and what is stored (the token's hash, never the token).
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { csrfTokenOf } from '../../src/domain/auth/sessions.js';
import { cookieHeader, givePassword, openForm, PASSWORD, postForm, setCookieHeader, setCookies, signIn } from '../support/sessions.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

let server: TestServer;
let world: World;
beforeAll(async () => {
  server = await startTestServer();
  world = await createWorld(server.app.prisma);
  await givePassword(server.app.prisma, world.users.member.id);
  await givePassword(server.app.prisma, world.users.deactivated.id);
});
afterAll(() => server?.close());

const loginUrl = () => `${server.url}/accounts/login/`;

/** The form's fields for the member, with the token and cookies of a form just opened. */
async function memberForm(overrides: Record<string, string> = {}) {
  const form = await openForm(loginUrl());
  const fields = {
    csrfmiddlewaretoken: form.token,
    username: world.users.member.email,
    password: PASSWORD,
    realm: world.org.stringId,
    next: '',
    ...overrides,
  };
  return { form, fields };
}

const shownError = (page: string) => /<p class="error" id="error">([^<]*)<\/p>/.exec(page)?.[1];
const decoded = (text: string | undefined) =>
  text
    ?.replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');

async function sessionCount(userId: number) {
  return server.app.prisma.userSession.count({ where: { userId } });
}

describe('GET /accounts/login/', () => {
  test('shows the form (e-mail, password, next, the CSRF token) with no external assets, and sets the CSRF cookie', async () => {
    const response = await fetch(`${loginUrl()}?next=/graphql`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
    const page = await response.text();
    expect(page).toContain('name="username"');
    expect(page).toContain('name="password" type="password"');
    expect(page).toContain('name="next" value="/graphql"');
    expect(page).not.toMatch(/<(script|link|img)\b/);
    const csrf = setCookieHeader(response, 'csrftoken')!;
    expect(csrf).toMatch(/^csrftoken=[A-Za-z0-9_-]{43}; Max-Age=31536000; Path=\/; SameSite=Lax$/);
    // Readable by scripts (Decision 6): not HttpOnly; and the same token is in the form.
    expect(csrf).not.toMatch(/HttpOnly/i);
    expect(page).toContain(`name="csrfmiddlewaretoken" value="${setCookies(response).get('csrftoken')}"`);
  });

  test('a browser that has the CSRF cookie keeps it: the form carries its token and no new cookie is set', async () => {
    const first = await openForm(loginUrl());
    const again = await fetch(loginUrl(), { headers: { cookie: cookieHeader(first.cookies) } });
    expect(again.headers.getSetCookie()).toEqual([]);
    expect(await again.text()).toContain(`value="${first.cookies.csrftoken}"`);
  });

  test("the reference's /login/ (where /api/v1 sends a browser) leads to the form, with its next", async () => {
    const response = await fetch(`${server.url}/login/?next=%2Fapi%2Fv1%2Fattachments`, { redirect: 'manual' });
    expect(response.headers.get('location')).toBe('/accounts/login/?next=%2Fapi%2Fv1%2Fattachments');
  });
});

describe('POST /accounts/login/', () => {
  test("signs in: 303 to next, the session cookie (HttpOnly, SameSite=Lax, two weeks) and the session's CSRF token; only the token's hash is stored", async () => {
    const { form, fields } = await memberForm({ next: '/graphql?x=1#top' });
    const before = await sessionCount(world.users.member.id);
    const response = await postForm(loginUrl(), fields, form.cookies);
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/graphql?x=1#top');
    const session = setCookieHeader(response, 'sessionid')!;
    expect(session).toMatch(/^sessionid=[A-Za-z0-9_-]{43}; Max-Age=1209600; Path=\/; SameSite=Lax; HttpOnly$/);
    const cookies = setCookies(response);
    const token = cookies.get('sessionid')!;
    // The CSRF token changes at sign-in to the session's own.
    expect(cookies.get('csrftoken')).toBe(csrfTokenOf(token));
    expect(cookies.get('csrftoken')).not.toBe(form.cookies.csrftoken);
    expect(await sessionCount(world.users.member.id)).toBe(before + 1);
    const stored = await server.app.prisma.userSession.findFirstOrThrow({
      where: { userId: world.users.member.id },
      orderBy: { id: 'desc' },
    });
    expect(stored.tokenHash).toBe(createHash('sha256').update(token).digest('hex'));
    expect(JSON.stringify(stored)).not.toContain(token);
    expect(stored.expiresAt.getTime() - stored.createdAt.getTime()).toBe(14 * 24 * 3600 * 1000);
  });

  test.each([
    ['no next', '', '/'],
    ['another site', 'https://evil.example/steal', '/'],
    ['a scheme-relative URL', '//evil.example/steal', '/'],
    ['a backslash', '/\\evil.example', '/'],
    ['a tab in the host', '/\t/evil.example', '/'],
    ['javascript:', 'javascript:alert(1)', '/'],
    ['a path of this server', '/json/users/me', '/json/users/me'],
  ])('next: %s', async (_, next, location) => {
    const { form, fields } = await memberForm({ next });
    const response = await postForm(loginUrl(), fields, form.cookies);
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe(location);
  });

  test('without the CSRF cookie, without the token, or with another token: 403, nobody signed in', async () => {
    const before = await sessionCount(world.users.member.id);
    const { form, fields } = await memberForm();
    const noCookie = await postForm(loginUrl(), fields);
    expect(noCookie.status).toBe(403);
    expect(await noCookie.text()).toContain('CSRF cookie not set.');
    const { csrfmiddlewaretoken: _, ...withoutToken } = fields;
    const missing = await postForm(loginUrl(), withoutToken, form.cookies);
    expect(missing.status).toBe(403);
    expect(await missing.text()).toContain('CSRF token missing.');
    const other = await openForm(loginUrl());
    const incorrect = await postForm(loginUrl(), { ...fields, csrfmiddlewaretoken: other.token }, form.cookies);
    expect(incorrect.status).toBe(403);
    expect(await incorrect.text()).toContain('CSRF token incorrect.');
    for (const response of [noCookie, missing, incorrect]) expect(response.headers.getSetCookie()).toEqual([]);
    expect(await sessionCount(world.users.member.id)).toBe(before);
  });

  test("a wrong password and an unknown address show the form again (200) with the reference's words, the address kept", async () => {
    for (const overrides of [{ password: 'not the password' }, { username: 'nobody-here@lighthouse.example' }] as Record<
      string,
      string
    >[]) {
      const { form, fields } = await memberForm(overrides);
      const response = await postForm(loginUrl(), fields, form.cookies);
      expect(response.status).toBe(200);
      const page = await response.text();
      expect(shownError(page)).toBe('Please enter a correct email and password. Note that both fields may be case-sensitive.');
      expect(page).toContain(`value="${fields.username}"`);
      expect(response.headers.getSetCookie().filter((c) => c.startsWith('sessionid'))).toEqual([]);
    }
  });

  test("a password holding NUL shows the form again with the reference's words; no attempt counted", async () => {
    const attemptsKey = `sign-in:${world.users.member.email.toLowerCase()}`;
    const attemptsBefore = await server.app.prisma.rateCounter.findMany({ where: { key: attemptsKey } });
    const { form, fields } = await memberForm({ password: `${PASSWORD}\0` });
    const response = await postForm(loginUrl(), fields, form.cookies);
    const shown = { status: response.status, error: shownError(await response.text()) };
    expect(shown).toEqual({ status: 200, error: 'Null characters are not allowed.' });
    expect(response.headers.getSetCookie().filter((c) => c.startsWith('sessionid'))).toEqual([]);
    expect(await server.app.prisma.rateCounter.findMany({ where: { key: attemptsKey } })).toEqual(attemptsBefore);
  });

  test('a deactivated account (right password) is told so', async () => {
    const { form, fields } = await memberForm({ username: world.users.deactivated.email });
    const response = await postForm(loginUrl(), fields, form.cookies);
    expect(response.status).toBe(200);
    expect(shownError(await response.text())).toBe(
      `Your account ${world.users.deactivated.email} has been deactivated. Please contact your organization administrator to reactivate it.`,
    );
  });

  test("the 6th attempt for an address in 30 minutes is refused with section 2's words, even with the right password", async () => {
    const mine = await createWorld(server.app.prisma);
    await givePassword(server.app.prisma, mine.users.admin.id);
    const attempt = async (password: string) => {
      const form = await openForm(loginUrl());
      const fields = { csrfmiddlewaretoken: form.token, username: mine.users.admin.email, password, realm: mine.org.stringId, next: '' };
      return postForm(loginUrl(), fields, form.cookies);
    };
    for (let i = 0; i < 5; i++) expect((await attempt('wrong password')).status).toBe(200);
    const refused = await attempt(PASSWORD);
    expect(refused.status).toBe(200);
    expect(decoded(shownError(await refused.text()))).toMatch(
      /^You're making too many attempts to sign in\. Try again in \d+ seconds or contact your organization administrator for help\.$/,
    );
  });

  test('a session the browser held before ends at a new sign-in', async () => {
    const first = await signIn(server.url, { username: world.users.member.email, realm: world.org.stringId });
    const form = await openForm(loginUrl(), first.cookies);
    const fields = {
      csrfmiddlewaretoken: form.token,
      username: world.users.member.email,
      password: PASSWORD,
      realm: world.org.stringId,
      next: '',
    };
    expect((await postForm(loginUrl(), fields, form.cookies)).status).toBe(303);
    const me = await fetch(`${server.url}/json/users/me`, { headers: { cookie: first.cookie } });
    expect(me.status).toBe(401);
  });
});

describe('POST /accounts/logout/', () => {
  test('ends the session and redirects to the sign-in page; the cookie goes', async () => {
    const signedIn = await signIn(server.url, { username: world.users.member.email, realm: world.org.stringId });
    expect((await fetch(`${server.url}/json/users/me`, { headers: { cookie: signedIn.cookie } })).status).toBe(200);
    const response = await postForm(`${server.url}/accounts/logout/`, { csrfmiddlewaretoken: signedIn.csrfToken }, signedIn.cookies);
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/accounts/login/');
    expect(setCookieHeader(response, 'sessionid')).toMatch(/^sessionid=; Max-Age=0; Path=\/; SameSite=Lax; HttpOnly$/);
    expect((await fetch(`${server.url}/json/users/me`, { headers: { cookie: signedIn.cookie } })).status).toBe(401);
  });

  test("without the session's CSRF token: 403, the session stays; GET is not a sign-out", async () => {
    const signedIn = await signIn(server.url, { username: world.users.member.email, realm: world.org.stringId });
    const noToken = await postForm(`${server.url}/accounts/logout/`, {}, signedIn.cookies);
    expect(noToken.status).toBe(403);
    // A token that is not the session's (one planted in the CSRF cookie, say) does not do either.
    const planted = await openForm(loginUrl());
    const wrong = await postForm(
      `${server.url}/accounts/logout/`,
      { csrfmiddlewaretoken: planted.token },
      { ...signedIn.cookies, csrftoken: planted.token },
    );
    expect(wrong.status).toBe(403);
    const get = await fetch(`${server.url}/accounts/logout/`, { headers: { cookie: signedIn.cookie }, redirect: 'manual' });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect((await fetch(`${server.url}/json/users/me`, { headers: { cookie: signedIn.cookie } })).status).toBe(200);
  });
});

describe('with an https SERVER_URL', () => {
  let secure: TestServer;
  beforeAll(async () => {
    secure = await startTestServer({ serverUrl: 'https://chat.example' });
  });
  afterAll(() => secure?.close());

  test('the cookies are __Host-sessionid and __Host-csrftoken, Secure, Path=/', async () => {
    const url = `${secure.url}/accounts/login/`;
    const opened = await fetch(url);
    expect(setCookieHeader(opened, '__Host-csrftoken')).toMatch(
      /^__Host-csrftoken=[A-Za-z0-9_-]{43}; Max-Age=31536000; Path=\/; Secure; SameSite=Lax$/,
    );
    const token = setCookies(opened).get('__Host-csrftoken')!;
    const fields = {
      csrfmiddlewaretoken: token,
      username: world.users.member.email,
      password: PASSWORD,
      realm: world.org.stringId,
      next: '',
    };
    // The browser is at SERVER_URL's origin.
    const response = await postForm(url, fields, { '__Host-csrftoken': token }, 'https://chat.example');
    expect(response.status).toBe(303);
    expect(setCookieHeader(response, '__Host-sessionid')).toMatch(
      /^__Host-sessionid=[A-Za-z0-9_-]{43}; Max-Age=1209600; Path=\/; Secure; SameSite=Lax; HttpOnly$/,
    );
    const session = setCookies(response).get('__Host-sessionid')!;
    expect((await fetch(`${secure.url}/json/users/me`, { headers: { cookie: `__Host-sessionid=${session}` } })).status).toBe(200);
    // The plain name means nothing there.
    expect((await fetch(`${secure.url}/json/users/me`, { headers: { cookie: `sessionid=${session}` } })).status).toBe(401);
  });
});
