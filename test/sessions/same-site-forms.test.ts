// signin.md Decision 7: pages of the same site are not trusted. A page on another port of this host
// can plant cookies here (cookies know no ports) and read the CSRF cookie, so the double submit alone
// does not stop it: every form POST and state-changing /json request must name a trusted origin (Origin,
// else Referer, with Django's reasons), a form's token is bound only to a session that exists, and no
// page the server renders may be framed. Cookies follow the scheme a trusted proxy says.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { csrfTokenOf } from '../../src/domain/auth/sessions.js';
import { requestPasswordReset } from '../../src/domain/auth/password-reset.js';
import { createInvitation, uniqueEmail } from '../support/invitations.js';
import { capturedLogger } from '../support/log-capture.js';
import {
  cookieHeader,
  givePassword,
  openForm,
  PASSWORD,
  postForm,
  setCookieHeader,
  setCookies,
  signIn,
  type SignedIn,
} from '../support/sessions.js';
import { runOnTestDatabase, startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

const EVIL = 'https://evil.example';
const FRIEND = 'https://admin.friend.example';
let server: TestServer;
let world: World;
beforeAll(async () => {
  server = await startTestServer({ allowedOrigins: [FRIEND] });
  world = await createWorld(server.app.prisma);
  for (const user of [world.users.member, world.users.admin, world.users.moderator]) await givePassword(server.app.prisma, user.id);
});
afterAll(() => server?.close());

/** A page of this host on another port: the same site, another origin. */
const otherPort = () => server.url.replace(/:\d+$/, (port) => `:${(Number(port.slice(1)) % 60000) + 1}`);
/** What an attacking page plants: a session id of its own making and the CSRF token that goes with it. */
const PLANTED_SESSION = 'A'.repeat(43);
const PLANTED_TOKEN = csrfTokenOf(PLANTED_SESSION);
const planted = { sessionid: PLANTED_SESSION, csrftoken: PLANTED_TOKEN };

const url = (path: string) => `${server.url}${path}`;
const sessionsOf = (userId: number) => server.app.prisma.userSession.count({ where: { userId } });
const stillSignedIn = async (session: SignedIn) =>
  (await fetch(url('/json/users/me'), { headers: { cookie: session.cookie } })).status === 200;
const originRefusal = (origin: string) =>
  `CSRF verification failed. Request aborted. (Origin checking failed - ${origin} does not match any trusted origins.)`;
const signInAs = (who: 'member' | 'admin' | 'moderator') =>
  signIn(server.url, { username: world.users[who].email, realm: world.org.stringId });
const loginFields = (token: string, who: 'member' | 'admin' = 'admin') => ({
  csrfmiddlewaretoken: token,
  username: world.users[who].email,
  password: PASSWORD,
  realm: world.org.stringId,
  next: '',
});

/** A form POST with a Cookie header written whole (a browser sends same-named cookies of several paths, the most specific first). */
const postWithCookieHeader = (path: string, fields: Record<string, string>, cookie: string, origin = server.url) =>
  fetch(url(path), {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, origin, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
  });

describe.each([
  ['another site', () => EVIL],
  ['another port of this host', otherPort],
  ['a privacy-restricted page (Origin: null)', () => 'null'],
])('form POSTs from %s are refused with 403 and do nothing', (_, originOf) => {
  test("sign-in with planted cookies and the attacker's credentials: no session begins", async () => {
    const origin = originOf();
    const before = await sessionsOf(world.users.admin.id);
    const response = await postForm(url('/accounts/login/'), loginFields(PLANTED_TOKEN), planted, origin);
    expect(response.status).toBe(403);
    expect(await response.text()).toContain(originRefusal(origin));
    expect(response.headers.getSetCookie()).toEqual([]);
    expect(await sessionsOf(world.users.admin.id)).toBe(before);
  });

  test("sign-out with the victim's CSRF token (a page of the same host reads the cookie): the session stays", async () => {
    const victim = await signInAs('member');
    const response = await postForm(url('/accounts/logout/'), { csrfmiddlewaretoken: victim.csrfToken }, victim.cookies, originOf());
    expect(response.status).toBe(403);
    expect(response.headers.getSetCookie()).toEqual([]);
    expect(await stillSignedIn(victim)).toBe(true);
  });

  test('a reset request with a planted CSRF cookie: no e-mail', async () => {
    const email = uniqueEmail('reset-victim');
    const response = await postForm(url('/accounts/password/reset/'), { csrfmiddlewaretoken: PLANTED_TOKEN, email }, planted, originOf());
    expect(response.status).toBe(403);
    expect(await server.app.prisma.outboxEmail.count({ where: { toAddress: email } })).toBe(0);
  });

  test("a reset link's form with a planted CSRF cookie: the password stays", async () => {
    const mine = await createWorld(server.app.prisma);
    // World addresses repeat across organizations: this member gets one of their own.
    const email = uniqueEmail('reset-link');
    await runOnTestDatabase(`UPDATE user_account SET email = $1, "emailKey" = lower($1) WHERE id = $2`, [email, mine.users.member.id]);
    await givePassword(server.app.prisma, mine.users.member.id);
    await requestPasswordReset(server.app, { email, clientAddress: '192.0.2.7' });
    const mail = await server.app.prisma.outboxEmail.findFirstOrThrow({ where: { toAddress: email } });
    const link = /http:\/\/\S+\/accounts\/password\/reset\/[^/\s]+\/[^/\s]+\//.exec(mail.textBody)![0];
    const hashBefore = (await server.app.prisma.user.findUniqueOrThrow({ where: { id: mine.users.member.id } })).passwordHash;
    const fields = {
      csrfmiddlewaretoken: PLANTED_TOKEN,
      new_password1: 'an attacker chose this one',
      new_password2: 'an attacker chose this one',
    };
    const response = await postForm(link, fields, planted, originOf());
    expect(response.status).toBe(403);
    expect((await server.app.prisma.user.findUniqueOrThrow({ where: { id: mine.users.member.id } })).passwordHash).toBe(hashBefore);
  });

  test('an invitation acceptance: no account', async () => {
    const invitation = await createInvitation(server, world, { email: uniqueEmail('invitee'), queueEmail: false });
    const response = await postForm(
      url(`/accounts/do_confirm/${invitation.confirmationKey}`),
      { full_name: 'Mallory', password: 'lighthouse-keeper-42' },
      {},
      originOf(),
    );
    expect(response.status).toBe(403);
    expect(await server.app.prisma.user.count({ where: { organizationId: world.org.id, emailKey: invitation.email } })).toBe(0);
  });
});

describe('the source a form POST must name', () => {
  const signInWith = async (headers: Record<string, string>) => {
    const form = await openForm(url('/accounts/login/'));
    return fetch(url('/accounts/login/'), {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: cookieHeader(form.cookies), 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(loginFields(form.token, 'member')),
    });
  };
  const reasonOf = async (response: Response) => /\((.*)\)<\/p>/.exec(await response.text())?.[1]?.replace(/&#39;/g, "'");

  test("without Origin, the Referer decides, in Django's words: none, malformed, another origin's are refused", async () => {
    const none = await signInWith({});
    expect(none.status).toBe(403);
    expect(await reasonOf(none)).toBe('Referer checking failed - no Referer.');
    const malformed = await signInWith({ referer: 'not a url' });
    expect(await reasonOf(malformed)).toBe('Referer checking failed - Referer is malformed.');
    const foreign = `${otherPort()}/attack.html`;
    const other = await signInWith({ referer: foreign });
    expect(other.status).toBe(403);
    expect(await reasonOf(other)).toBe(`Referer checking failed - ${foreign} does not match any trusted origins.`);
    const own = await signInWith({ referer: url('/accounts/login/?next=%2Fgraphql') });
    expect(own.status).toBe(303);
  });

  test('an Origin wins over a Referer; CORS_ALLOWED_ORIGINS are trusted', async () => {
    const forged = await signInWith({ origin: EVIL, referer: url('/accounts/login/') });
    expect(forged.status).toBe(403);
    expect(await reasonOf(forged)).toBe(`Origin checking failed - ${EVIL} does not match any trusted origins.`);
    expect((await signInWith({ origin: FRIEND })).status).toBe(303);
  });
});

describe('a form token is bound only to a session that exists', () => {
  test('a made-up sessionid counts as signed out: its derived token is refused, and the form page clears the cookie', async () => {
    const before = await sessionsOf(world.users.admin.id);
    const refused = await postForm(url('/accounts/login/'), loginFields(PLANTED_TOKEN), { sessionid: PLANTED_SESSION });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('CSRF cookie not set.');
    expect(await sessionsOf(world.users.admin.id)).toBe(before);
    const page = await fetch(url('/accounts/login/'), { headers: { cookie: `sessionid=${PLANTED_SESSION}` } });
    expect(await page.text()).not.toContain(PLANTED_TOKEN);
    expect(setCookieHeader(page, 'sessionid')).toBe('sessionid=; Max-Age=0; Path=/; SameSite=Lax; HttpOnly');
    expect(setCookies(page).get('csrftoken')).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  test("a sign-out forged with a planted sessionid (ahead of the victim's) and its token ends nothing and clears nothing", async () => {
    const victim = await signInAs('moderator');
    const cookie = `sessionid=${PLANTED_SESSION}; csrftoken=${PLANTED_TOKEN}; ${cookieHeader(victim.cookies)}`;
    const response = await postWithCookieHeader('/accounts/logout/', { csrfmiddlewaretoken: PLANTED_TOKEN }, cookie);
    expect(response.status).toBe(403);
    expect(response.headers.getSetCookie()).toEqual([]);
    expect(await stillSignedIn(victim)).toBe(true);
    // The victim's own sign-out, with the planted cookie still ahead of theirs, ends their session.
    const own = await postWithCookieHeader('/accounts/logout/', { csrfmiddlewaretoken: victim.csrfToken }, cookie);
    expect(own.status).toBe(303);
    expect(await stillSignedIn(victim)).toBe(false);
  });
});

describe('/json', () => {
  const register = (session: SignedIn, headers: Record<string, string>) =>
    fetch(url('/json/register'), { method: 'POST', headers: { cookie: session.cookie, ...headers }, body: new URLSearchParams({}) });
  const queuesOf = (userId: number) => server.app.prisma.eventQueue.count({ where: { userId } });

  test("a planted CSRF cookie and a matching X-CSRFToken are refused: the session's own token is what counts", async () => {
    const session = await signInAs('member');
    const before = await queuesOf(world.users.member.id);
    const plantedCookie = `${session.cookie}; csrftoken=${PLANTED_TOKEN}`;
    const response = await fetch(url('/json/register'), {
      method: 'POST',
      headers: { cookie: plantedCookie, origin: server.url, 'x-csrftoken': PLANTED_TOKEN },
      body: new URLSearchParams({}),
    });
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({
      result: 'error',
      msg: 'CSRF error: CSRF token incorrect.',
      code: 'CSRF_FAILED',
      reason: 'CSRF token incorrect.',
    });
    expect(await queuesOf(world.users.member.id)).toBe(before);
  });

  test("a state change with the session's token from another origin, or naming none, is refused (CSRF_FAILED); from its own, it runs", async () => {
    const session = await signInAs('member');
    const before = await queuesOf(world.users.member.id);
    const origin = otherPort();
    const foreign = await register(session, { origin, 'x-csrftoken': session.csrfToken });
    expect(foreign.status).toBe(403);
    const reason = `Origin checking failed - ${origin} does not match any trusted origins.`;
    expect(await foreign.json()).toEqual({ result: 'error', msg: `CSRF error: ${reason}`, code: 'CSRF_FAILED', reason });
    const unnamed = await register(session, { 'x-csrftoken': session.csrfToken });
    expect(await unnamed.json()).toMatchObject({ code: 'CSRF_FAILED', reason: 'Referer checking failed - no Referer.' });
    expect(await queuesOf(world.users.member.id)).toBe(before);
    expect((await register(session, { referer: url('/graphql'), 'x-csrftoken': session.csrfToken })).status).toBe(200);
    expect(await queuesOf(world.users.member.id)).toBe(before + 1);
  });
});

describe('no page the server renders can be framed', () => {
  const pages: [string, () => Promise<Response>][] = [
    ['the sign-in page', () => fetch(url('/accounts/login/'))],
    ['a CSRF refusal', () => postForm(url('/accounts/login/'), {}, {}, EVIL)],
    ['the sign-out page (GET: 405)', () => fetch(url('/accounts/logout/'))],
    ['the reset request page', () => fetch(url('/accounts/password/reset/'))],
    ['the reset done page', () => fetch(url('/accounts/password/reset/done/'))],
    ['an invalid reset link', () => fetch(url('/accounts/password/reset/MQ/abc-def/'))],
    [
      'an invitation',
      async () =>
        fetch(
          url(
            `/accounts/do_confirm/${(await createInvitation(server, world, { email: uniqueEmail('framed'), queueEmail: false })).confirmationKey}`,
          ),
        ),
    ],
    ['an unknown invitation', () => fetch(url('/accounts/do_confirm/nothing0123456789abcdef'))],
    ['GraphiQL', () => fetch(url('/graphql'), { headers: { accept: 'text/html' } })],
  ];
  test.each(pages)('%s: CSP frame-ancestors none and X-Frame-Options DENY', async (_, load) => {
    const response = await load();
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    await response.body?.cancel();
  });
});

describe('cookies follow the scheme a trusted proxy says', () => {
  const logged = capturedLogger('info');
  let proxied: TestServer;
  beforeAll(async () => {
    proxied = await startTestServer({ trustedProxies: ['127.0.0.1', '::1'] }, { outbox: false, logger: logged.logger });
  });
  afterAll(() => proxied?.close());

  const schemeWarnings = () =>
    logged.lines.filter((line) => line.level === 40 && line.msg.startsWith('SERVER_URL is http but a trusted proxy forwards https'));
  const viaHttps = { 'x-forwarded-proto': 'https' };

  test("over https (the proxy says): __Host- names, Secure; the session cookie is read under the name of the request's scheme", async () => {
    expect(schemeWarnings()).toEqual([]);
    const opened = await fetch(`${proxied.url}/accounts/login/`, { headers: viaHttps });
    expect(setCookieHeader(opened, '__Host-csrftoken')).toMatch(
      /^__Host-csrftoken=[A-Za-z0-9_-]{43}; Max-Age=31536000; Path=\/; Secure; SameSite=Lax$/,
    );
    const token = setCookies(opened).get('__Host-csrftoken')!;
    const proxiedWorld = await createWorld(proxied.app.prisma);
    await givePassword(proxied.app.prisma, proxiedWorld.users.member.id);
    // The browser is at https://<the same host>: the request's host with the scheme the proxy says.
    const origin = proxied.url.replace(/^http:/, 'https:');
    const fields = {
      csrfmiddlewaretoken: token,
      username: proxiedWorld.users.member.email,
      password: PASSWORD,
      realm: proxiedWorld.org.stringId,
      next: '',
    };
    const signedIn = await fetch(`${proxied.url}/accounts/login/`, {
      method: 'POST',
      redirect: 'manual',
      headers: { ...viaHttps, origin, cookie: `__Host-csrftoken=${token}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields),
    });
    expect(signedIn.status).toBe(303);
    expect(setCookieHeader(signedIn, '__Host-sessionid')).toMatch(/; Path=\/; Secure; SameSite=Lax; HttpOnly$/);
    const session = setCookies(signedIn).get('__Host-sessionid')!;
    const me = (cookie: string, headers: Record<string, string> = {}) =>
      fetch(`${proxied.url}/json/users/me`, { headers: { cookie, ...headers } }).then((r) => r.status);
    expect(await me(`__Host-sessionid=${session}`, viaHttps)).toBe(200);
    expect(await me(`sessionid=${session}`, viaHttps)).toBe(401);
    // Over plain http the plain name is the one read.
    expect(await me(`sessionid=${session}`)).toBe(200);
    expect(await me(`__Host-sessionid=${session}`)).toBe(401);
  });

  test('the log says once, at the first such request, that SERVER_URL disagrees with the proxy', async () => {
    await fetch(`${proxied.url}/accounts/login/`, { headers: viaHttps });
    await fetch(`${proxied.url}/accounts/password/reset/`, { headers: viaHttps });
    expect(schemeWarnings()).toHaveLength(1);
  });

  test('from a peer that is no trusted proxy, X-Forwarded-Proto is ignored', async () => {
    const opened = await fetch(`${server.url}/accounts/login/`, { headers: viaHttps });
    expect(setCookies(opened).has('csrftoken')).toBe(true);
    expect(setCookies(opened).has('__Host-csrftoken')).toBe(false);
  });
});
