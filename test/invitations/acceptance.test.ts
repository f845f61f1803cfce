// Accepting invitations over plain HTTP: what the new account gets, the bots' messages, every way a
// link can be unusable, name checks, escaping and double submits.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { graphql } from '../generated/gql.js';
import { AcceptedMe } from '../support/accepted-account.js';
import { gql } from '../support/graphql.js';
import { createInvitation, submitAcceptance, uniqueEmail } from '../support/invitations.js';
import { basicAuth } from '../support/server.js';
import { formCsrfToken, postForm, setCookieHeader, setCookies } from '../support/sessions.js';
import { startServerWithOutbox } from '../support/smtp.js';
import { whileOrganizationLocked } from '../support/contention.js';
import { createWorld, type World } from '../support/world.js';
import { WELCOME_BOT_INTRO } from '../../src/domain/invitations/accept.js';
import type { RunningServer } from '../../src/server.js';

let server: RunningServer;
beforeAll(async () => {
  server = await startServerWithOutbox({}, { outbox: false });
});
afterAll(() => server.close());

const DAY = 24 * 3600 * 1000;
const link = (key: string) => `${server.url}/accounts/do_confirm/${key}`;
const open = async (key: string) => {
  const response = await fetch(link(key));
  return { status: response.status, type: response.headers.get('content-type'), body: await response.text() };
};
const submit = async (key: string, fullName: string, password = 'lighthouse-keeper-42') => {
  const response = await submitAcceptance(server.url, key, { full_name: fullName, password });
  return { status: response.status, body: await response.text() };
};
const apiKeyOn = (page: string) => /<code id="api-key">([A-Za-z0-9]{32})<\/code>/.exec(page)?.[1];
const errorOn = (page: string) => /<p class="error" id="error">([^<]*)<\/p>/.exec(page)?.[1];

const Inbox = graphql(`
  query AcceptedInbox($limit: Int) {
    directMessages(limit: $limit) {
      content
      sender {
        email
        fullName
      }
    }
  }
`);

const welcomeBot = { email: 'welcome-bot@zulip.com', fullName: 'Welcome Bot' };
const notificationBot = { email: 'notification-bot@zulip.com', fullName: 'Notification Bot' };

async function accept(world: World, input: Parameters<typeof createInvitation>[2], fullName = 'Nora New') {
  const invitation = await createInvitation(server, world, input);
  const result = await submit(invitation.confirmationKey, fullName);
  expect(result.status).toBe(200);
  const auth = basicAuth(invitation.email, apiKeyOn(result.body)!);
  return { invitation, auth, page: result.body };
}

test("acceptance creates the account with its role, channels, groups, and closes the address's other invitations", async () => {
  const world = await createWorld(server.app.prisma);
  const other = await createWorld(server.app.prisma);
  const email = uniqueEmail('nora');
  const sameAddressAgain = await createInvitation(server, world, { email: email.toUpperCase(), referrer: 'member' });
  const elsewhere = await createInvitation(server, other, { email });
  const { invitation, auth, page } = await accept(world, {
    email,
    referrer: 'admin',
    invitedAs: 300,
    channelIds: [await world.channelId('design'), await world.channelId('old-news')],
    groupIds: [await world.groupId('support'), await world.groupId('alumni')],
    includeRealmDefaultSubscriptions: true,
  });
  expect(page).toContain(`<code id="email">${email}</code>`);

  expect(await gql(server.url, AcceptedMe, {}, auth)).toEqual({
    status: 200,
    data: {
      me: {
        email,
        fullName: 'Nora New',
        role: 'MODERATOR',
        subscriptions: [{ name: 'design' }, { name: 'general' }],
        groups: [{ name: 'support' }],
      },
    },
  });
  const user = await server.app.prisma.user.findUniqueOrThrow({
    where: { organizationId_emailKey: { organizationId: world.org.id, emailKey: email } },
  });
  const statuses = await server.app.prisma.invitation.findMany({
    where: { id: { in: [invitation.id, sameAddressAgain.id, elsewhere.id] } },
    orderBy: { id: 'asc' },
    select: { id: true, status: true, createdUserId: true },
  });
  expect(statuses).toEqual([
    { id: sameAddressAgain.id, status: 'REVOKED', createdUserId: null },
    { id: elsewhere.id, status: 'PENDING', createdUserId: null },
    { id: invitation.id, status: 'ACCEPTED', createdUserId: user.id },
  ]);

  // Welcome Bot: the intro, then the organization's text (the invitation's was null).
  expect(await gql(server.url, Inbox, {}, auth)).toEqual({
    status: 200,
    data: {
      directMessages: [
        { content: 'Welcome aboard! Start in #general.', sender: welcomeBot },
        { content: WELCOME_BOT_INTRO, sender: welcomeBot },
      ],
    },
  });
  const referrerInbox = await gql(server.url, Inbox, { limit: 1 }, world.users.admin.auth);
  expect(referrerInbox.data?.directMessages).toEqual([
    { content: `@_**Nora New|${user.id}** accepted your invitation to join Zulip!`, sender: notificationBot },
  ]);
});

test('the welcome text: the invitation\'s own, none for "", and no referrer message when not wanted or the referrer left', async () => {
  const world = await createWorld(server.app.prisma);
  const contents = async (auth: string) => (await gql(server.url, Inbox, {}, auth)).data?.directMessages.map((m) => m.content);
  const custom = await accept(world, {
    email: uniqueEmail('c'),
    welcomeMessageCustomText: 'Hi from **the team**',
    notifyReferrerOnJoin: false,
  });
  expect(await contents(custom.auth)).toEqual(['Hi from **the team**', WELCOME_BOT_INTRO]);
  const none = await accept(world, { email: uniqueEmail('n'), welcomeMessageCustomText: '', referrer: 'deactivated' });
  expect(await contents(none.auth)).toEqual([WELCOME_BOT_INTRO]);
  const dora = world.users.deactivated.id;
  expect(
    await server.app.prisma.directMessageRecipient.count({
      where: { userId: dora, message: { dateSent: { gt: new Date(Date.now() - DAY) } } },
    }),
  ).toBe(0);
  expect(await contents(world.users.admin.auth)).toEqual([]);
});

test('directMessages refuses a limit outside 1..100', async () => {
  const world = await createWorld(server.app.prisma);
  for (const limit of [0, 101, -5]) {
    const result = await gql(server.url, Inbox, { limit }, world.users.admin.auth);
    expect(result).toEqual({
      status: 200,
      data: null,
      errors: [
        {
          message: 'limit must be between 1 and 100',
          locations: expect.any(Array),
          path: ['directMessages'],
          extensions: { code: 'BAD_REQUEST' },
        },
      ],
    });
  }
});

test('unusable links show a clear page and change nothing', async () => {
  const world = await createWorld(server.app.prisma);
  const expired = await createInvitation(server, world, { email: uniqueEmail('exp'), expiresAt: new Date(Date.now() - 1000) });
  const revoked = await createInvitation(server, world, { email: uniqueEmail('rev'), status: 'REVOKED' });
  const existing = await createInvitation(server, world, { email: 'MARK@lighthouse.example' });
  const used = await accept(world, { email: uniqueEmail('used') });
  const cases: [string, number, string][] = [
    ['short', 404, 'This invitation link is malformed. Check that you copied the whole link from the e-mail.'],
    ['a'.repeat(25), 404, 'This invitation link is malformed. Check that you copied the whole link from the e-mail.'],
    [
      '%3Cscript%3Ealert(1)%3C%2Fscript%3Eaaaaaa',
      404,
      'This invitation link is malformed. Check that you copied the whole link from the e-mail.',
    ],
    ['a'.repeat(24), 404, 'This invitation link does not exist. Check that you copied the whole link from the e-mail.'],
    [expired.confirmationKey, 410, 'This invitation link has expired. Ask the person who invited you for a new invitation.'],
    [revoked.confirmationKey, 410, 'This invitation has been revoked. Ask the person who invited you for a new invitation.'],
    [used.invitation.confirmationKey, 410, 'This invitation link has already been used to create an account.'],
    [
      existing.confirmationKey,
      409,
      'An account for MARK@lighthouse.example already exists in Lighthouse Cooperative. Log in with it instead.',
    ],
  ];
  const users = await server.app.prisma.user.count({ where: { organizationId: world.org.id } });
  for (const [key, status, message] of cases) {
    const shown = await open(key);
    expect({ key, status: shown.status, type: shown.type, error: errorOn(shown.body) }).toEqual({
      key,
      status,
      type: 'text/html; charset=utf-8',
      error: message,
    });
    expect(shown.body).not.toContain('<form');
    const posted = await submit(key, 'Eve Evil');
    expect({ key, status: posted.status, error: errorOn(posted.body) }).toEqual({ key, status, error: message });
  }
  expect(await server.app.prisma.user.count({ where: { organizationId: world.org.id } })).toBe(users);
  expect((await server.app.prisma.invitation.findUniqueOrThrow({ where: { id: existing.id } })).status).toBe('PENDING');
});

test('a license limit reached since the invitation was sent refuses cleanly', async () => {
  // Active humans: four non-guests and one guest; one license left for a non-guest.
  const world = await createWorld(server.app.prisma, (file) => (file.organization.license_limit = 5));
  const first = await accept(world, { email: uniqueEmail('seat') });
  expect(apiKeyOn(first.page)).toMatch(/^[A-Za-z0-9]{32}$/);
  const late = await createInvitation(server, world, { email: uniqueEmail('late') });
  const users = await server.app.prisma.user.count({ where: { organizationId: world.org.id } });
  const refused = await submit(late.confirmationKey, 'Larry Late');
  const message =
    'Lighthouse Cooperative has no license left for a new account. Ask the person who invited you to contact an administrator.';
  expect({ status: refused.status, error: errorOn(refused.body) }).toEqual({ status: 403, error: message });
  expect(await server.app.prisma.user.count({ where: { organizationId: world.org.id } })).toBe(users);
  expect((await server.app.prisma.invitation.findUniqueOrThrow({ where: { id: late.id } })).status).toBe('PENDING');
  // A guest still fits: guests take a seat per five.
  const guest = await createInvitation(server, world, { email: uniqueEmail('guest'), invitedAs: 600 });
  expect((await submit(guest.confirmationKey, 'Gil Guest')).status).toBe(200);
});

test('the form escapes everything and re-asks for a bad name without creating anything', async () => {
  const world = await createWorld(server.app.prisma);
  await server.app.prisma.organization.update({ where: { id: world.org.id }, data: { name: '<img src=x onerror=alert(1)>' } });
  const invitation = await createInvitation(server, world, { email: uniqueEmail('esc') });
  const form = await open(invitation.confirmationKey);
  expect(form.status).toBe(200);
  expect(form.body).toContain('<h1>Join &lt;img src=x onerror=alert(1)&gt;</h1>');
  expect(form.body).not.toContain('<img');
  expect(form.body).toContain('<input id="full_name" name="full_name" value=""');

  for (const [name, message] of [
    ['', 'Name too short!'],
    ['  x ', 'Name too short!'],
    ['"><script>alert(1)</script>', 'Invalid characters in name!'],
    ['Bob|12', 'Invalid format!'],
    ['n'.repeat(101), 'Name too long!'],
  ] as const) {
    const refused = await submit(invitation.confirmationKey, name);
    expect({ name, status: refused.status, error: errorOn(refused.body) }).toEqual({ name, status: 400, error: message });
    expect(refused.body).not.toContain('<script>');
  }
  const echoed = await submit(invitation.confirmationKey, '"><script>alert(1)</script>');
  expect(echoed.body).toContain('value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"');
  expect(await server.app.prisma.user.count({ where: { organizationId: world.org.id, emailKey: invitation.email } })).toBe(0);
  expect((await server.app.prisma.invitation.findUniqueOrThrow({ where: { id: invitation.id } })).status).toBe('PENDING');
});

test('the form asks for a password; a weak one (or none) shows the form again with 200 and creates nothing; the password then signs in', async () => {
  const world = await createWorld(server.app.prisma);
  const invitation = await createInvitation(server, world, { email: uniqueEmail('weak') });
  const form = await open(invitation.confirmationKey);
  expect(form.body).toContain(
    '<input id="password" name="password" type="password" required minlength="6" maxlength="100" autocomplete="new-password">',
  );
  for (const weak of ['', 'abc', 'password123', 'x7#Qp', `${'Zq9!'.repeat(25)}x`]) {
    const refused = await submit(invitation.confirmationKey, 'Wendy Weak', weak);
    expect({ weak, status: refused.status, error: errorOn(refused.body) }).toEqual({
      weak,
      status: 200,
      error: 'The password is too weak.',
    });
    expect(refused.body).toContain('value="Wendy Weak"');
    if (weak) expect(refused.body).not.toContain(weak);
  }
  expect(await server.app.prisma.user.count({ where: { organizationId: world.org.id, emailKey: invitation.email } })).toBe(0);
  expect((await server.app.prisma.invitation.findUniqueOrThrow({ where: { id: invitation.id } })).status).toBe('PENDING');

  const created = await submit(invitation.confirmationKey, 'Wendy Weak', 'Wendy-lighthouse-2026');
  expect(created.status).toBe(200);
  const fetched = await fetch(`${server.url}/api/v1/fetch_api_key`, {
    method: 'POST',
    body: new URLSearchParams({ username: invitation.email, password: 'Wendy-lighthouse-2026' }),
  });
  expect(await fetched.json()).toMatchObject({ result: 'success', api_key: apiKeyOn(created.body), email: invitation.email });
});

test("a password holding NUL shows the form again with the reference's words and creates nothing", async () => {
  const world = await createWorld(server.app.prisma);
  const invitation = await createInvitation(server, world, { email: uniqueEmail('nul') });
  for (const withNul of ['Wendy-lighthouse-2026\0', '\0abc']) {
    const refused = await submit(invitation.confirmationKey, 'Nora Nul', withNul);
    expect({ status: refused.status, error: errorOn(refused.body) }).toEqual({ status: 400, error: 'Null characters are not allowed.' });
    expect(refused.body).toContain('value="Nora Nul"');
  }
  expect(await server.app.prisma.user.count({ where: { organizationId: world.org.id, emailKey: invitation.email } })).toBe(0);
  expect((await server.app.prisma.invitation.findUniqueOrThrow({ where: { id: invitation.id } })).status).toBe('PENDING');
});

test('a double submit creates one account; the second submit is told the link was used', async () => {
  const world = await createWorld(server.app.prisma);
  const invitation = await createInvitation(server, world, { email: uniqueEmail('twice') });
  // Both wait on the organization's row (PostgreSQL shows them) before the test lets it go.
  const results = await whileOrganizationLocked(
    world.org.id,
    () => Promise.all([submit(invitation.confirmationKey, 'Twice Tina'), submit(invitation.confirmationKey, 'Twice Tina')]),
    {
      waiters: 2,
    },
  );
  const statuses = results.map((r) => r.status).sort();
  expect(statuses).toEqual([200, 410]);
  const refused = results.find((r) => r.status === 410)!;
  expect(errorOn(refused.body)).toBe('This invitation link has already been used to create an account.');
  expect(await server.app.prisma.user.count({ where: { organizationId: world.org.id, emailKey: invitation.email } })).toBe(1);
  const welcome = await server.app.prisma.directMessageRecipient.count({
    where: { user: { organizationId: world.org.id, emailKey: invitation.email } },
  });
  expect(welcome).toBe(2);
});

test('acceptance signs the new person in as the sign-in form does: the session cookies, a GraphiQL link, a sign-out form', async () => {
  const world = await createWorld(server.app.prisma);
  const invitation = await createInvitation(server, world, { email: uniqueEmail('sid') });
  const fields = { full_name: 'Sid Session', password: 'lighthouse-keeper-42' };
  const answer = await submitAcceptance(server.url, invitation.confirmationKey, fields);
  expect(answer.status).toBe(200);
  const page = await answer.text();
  const cookies = Object.fromEntries(setCookies(answer));
  expect(setCookieHeader(answer, 'sessionid')).toMatch(/^sessionid=[A-Za-z0-9_-]{43}; Max-Age=1209600; Path=\/; SameSite=Lax; HttpOnly$/);
  expect(formCsrfToken(page)).toBe(cookies.csrftoken);
  expect(page).toContain('<a href="/graphql" id="graphiql">');
  expect(page).toContain(
    `<form method="post" action="/accounts/logout/">\n<input type="hidden" name="csrfmiddlewaretoken" value="${cookies.csrftoken}">`,
  );
  expect(apiKeyOn(page)).toMatch(/^[A-Za-z0-9]{32}$/);

  // The session is the new person's, on /graphql and /json.
  const session = { cookie: `sessionid=${cookies.sessionid}` };
  const me = await fetch(`${server.url}/json/users/me`, { headers: session });
  expect(await me.json()).toMatchObject({ result: 'success', email: invitation.email });
  const viaGraphql = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { ...session, 'content-type': 'application/json', 'x-csrftoken': cookies.csrftoken!, origin: server.url },
    body: JSON.stringify({ query: '{ me { email } }' }),
  });
  expect(await viaGraphql.json()).toEqual({ data: { me: { email: invitation.email } } });

  // The welcome page's sign-out form ends it.
  const signedOut = await postForm(`${server.url}/accounts/logout/`, { csrfmiddlewaretoken: formCsrfToken(page) }, cookies);
  expect(signedOut.status).toBe(303);
  expect((await fetch(`${server.url}/json/users/me`, { headers: session })).status).toBe(401);
});

test('the acceptance form is CSRF-checked as the sign-in form: without its token, 403 and no account', async () => {
  const world = await createWorld(server.app.prisma);
  const invitation = await createInvitation(server, world, { email: uniqueEmail('csrf') });
  const opened = await open(invitation.confirmationKey);
  expect(formCsrfToken(opened.body)).toMatch(/^[A-Za-z0-9_-]{43}$/);
  const forged = await fetch(link(invitation.confirmationKey), {
    method: 'POST',
    headers: { origin: server.url },
    body: new URLSearchParams({ full_name: 'Forged Person', password: 'lighthouse-keeper-42' }),
  });
  expect(forged.status).toBe(403);
  expect(errorOn(await forged.text())).toBe('CSRF verification failed. Request aborted. (CSRF cookie not set.)');
  expect(forged.headers.getSetCookie()).toEqual([]);
  expect(await server.app.prisma.user.count({ where: { organizationId: world.org.id, emailKey: invitation.email } })).toBe(0);
});
