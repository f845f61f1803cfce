// The whole journey in a real browser: the e-mail arrives over SMTP, its link opens in Chromium, the
// form (refusing a weak password) creates the account, the API key on the page works against
// GraphQL, and the password fetches the same key.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { graphql } from '../generated/gql.js';
import { launchBrowser } from '../support/browser.js';
import { expectSignedInGraphiQL } from '../support/graphiql.js';
import { AcceptedMe } from '../support/accepted-account.js';
import { gql } from '../support/graphql.js';
import { createInvitation, uniqueEmail } from '../support/invitations.js';
import { callApi } from '../support/rest.js';
import { basicAuth } from '../support/server.js';
import { eventually, startMailReceiver, startServerWithOutbox, type MailReceiver } from '../support/smtp.js';
import { createWorld } from '../support/world.js';
import { WELCOME_BOT_INTRO } from '../../src/domain/invitations/accept.js';
import type { RunningServer } from '../../src/server.js';

let receiver: MailReceiver;
let server: RunningServer;
let browser: Browser;
beforeAll(async () => {
  receiver = await startMailReceiver();
  server = await startServerWithOutbox({ smtpUrl: receiver.url });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await receiver?.close();
});

const Inbox = graphql(`
  query BrowserInbox {
    directMessages(limit: 5) {
      content
      dateSent
      sender {
        fullName
      }
    }
  }
`);

async function linkFromMailTo(address: string): Promise<string> {
  const mail = await eventually(
    () => receiver.received.find((m) => m.to && !Array.isArray(m.to) && m.to.value[0]?.address === address),
    `the invitation e-mail to ${address}`,
  );
  const href = /<a href="([^"]+)">/.exec(mail.html || '')?.[1];
  expect(href).toBeDefined();
  expect(mail.text).toContain(href!);
  return href!;
}

test('an invitee follows the e-mailed link, signs up in the browser and uses the API key', async () => {
  const world = await createWorld(server.app.prisma);
  const email = uniqueEmail('browser');
  await createInvitation(server, world, {
    email,
    referrer: 'member',
    invitedAs: 600,
    channelIds: [await world.channelId('design')],
    groupIds: [await world.groupId('support')],
    welcomeMessageCustomText: 'Glad you are here, <friend>!',
  });
  const href = await linkFromMailTo(email);

  const page = await browser.newPage();
  try {
    const response = await page.goto(href);
    expect(response?.status()).toBe(200);
    expect(await page.textContent('h1')).toBe('Join Lighthouse Cooperative');
    expect(await page.textContent('#invitee')).toBe(email);
    await page.fill('#full_name', '  Bea <Browser>  ');
    await page.fill('#password', 'Bea-lighthouse-2026');
    await page.click('#submit');
    await page.waitForSelector('#error');
    expect(await page.textContent('#error')).toBe('Invalid characters in name!');
    // A weak password: the form again (200), the name kept, the password not, and no account.
    await page.fill('#full_name', 'Bea Browser');
    await page.fill('#password', 'password123');
    const [weak] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.click('#submit')]);
    expect(weak.status()).toBe(200);
    expect(await page.textContent('#error')).toBe('The password is too weak.');
    expect(await page.inputValue('#full_name')).toBe('Bea Browser');
    expect(await page.inputValue('#password')).toBe('');
    expect(await server.app.prisma.user.count({ where: { organizationId: world.org.id, emailKey: email } })).toBe(0);
    await page.fill('#password', 'Bea-lighthouse-2026');
    await page.click('#submit');
    await page.waitForSelector('#api-key');
    expect(await page.textContent('h1')).toBe('Welcome to Lighthouse Cooperative, Bea Browser!');
    const apiKey = (await page.textContent('#api-key'))!;
    expect(apiKey).toMatch(/^[A-Za-z0-9]{32}$/);

    // The password signs in: fetch_api_key hands back the same key.
    const fetched = await callApi(server.url, 'POST', '/fetch_api_key', { form: { username: email, password: 'Bea-lighthouse-2026' } });
    expect(fetched.body).toMatchObject({ result: 'success', api_key: apiKey, email });

    const auth = basicAuth(email, apiKey);
    expect(await gql(server.url, AcceptedMe, {}, auth)).toEqual({
      status: 200,
      data: { me: { email, fullName: 'Bea Browser', role: 'GUEST', subscriptions: [{ name: 'design' }], groups: [{ name: 'support' }] } },
    });
    const inbox = await gql(server.url, Inbox, {}, auth);
    expect(inbox.data?.directMessages.map((m) => [m.sender.fullName, m.content])).toEqual([
      ['Welcome Bot', 'Glad you are here, <friend>!'],
      ['Welcome Bot', WELCOME_BOT_INTRO],
    ]);
    expect(Math.abs(inbox.data!.directMessages[0]!.dateSent - Date.now() / 1000)).toBeLessThan(600);
    const user = await server.app.prisma.user.findFirstOrThrow({ where: { organizationId: world.org.id, emailKey: email } });
    const referrerInbox = await gql(server.url, Inbox, {}, world.users.member.auth);
    expect(referrerInbox.data?.directMessages.map((m) => [m.sender.fullName, m.content])).toEqual([
      ['Notification Bot', `@_**Bea Browser|${user.id}** accepted your invitation to join Zulip!`],
    ]);

    // The same link, opened again, explains that it was used.
    const again = await page.goto(href);
    expect(again?.status()).toBe(410);
    expect(await page.textContent('#error')).toBe('This invitation link has already been used to create an account.');
  } finally {
    await page.close();
  }
}, 120_000);

test("a revoked invitation's e-mailed link shows why it cannot be used", async () => {
  const world = await createWorld(server.app.prisma);
  const email = uniqueEmail('revoked');
  const invitation = await createInvitation(server, world, { email, referrer: 'admin' });
  const href = await linkFromMailTo(email);
  const revoke = await fetch(`${server.url}/api/v1/invites/${invitation.id}`, {
    method: 'DELETE',
    headers: { authorization: world.users.admin.auth },
  });
  expect(revoke.status).toBe(200);
  const page = await browser.newPage();
  try {
    const response = await page.goto(href);
    expect(response?.status()).toBe(410);
    expect(await page.textContent('#error')).toBe('This invitation has been revoked. Ask the person who invited you for a new invitation.');
    expect(await page.$('form')).toBeNull();
  } finally {
    await page.close();
  }
});

test('the new person is signed in: the welcome page leads to GraphiQL, where `{ me { email } }` answers their address', async () => {
  const world = await createWorld(server.app.prisma);
  const email = uniqueEmail('signed-in');
  await createInvitation(server, world, { email, referrer: 'admin' });
  const href = await linkFromMailTo(email);

  const context = await browser.newContext();
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  const page = await context.newPage();
  try {
    await page.goto(href);
    await page.fill('#full_name', 'Gia GraphiQL');
    await page.fill('#password', 'Gia-lighthouse-2026');
    await page.click('#submit');
    await page.waitForSelector('#api-key');
    expect(await page.textContent('#api-key')).toMatch(/^[A-Za-z0-9]{32}$/);
    const session = (await context.cookies()).find((cookie) => cookie.name === 'sessionid');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax' });

    await page.click('#graphiql');
    await page.waitForURL(`${server.url}/graphql`);
    await expectSignedInGraphiQL(page, email);

    // GraphiQL's bar signs out (the welcome page, never cached, cannot be gone back to).
    await page.click('#sign-out');
    await page.waitForURL(`${server.url}/accounts/login/`);
    expect((await context.cookies()).find((cookie) => cookie.name === 'sessionid')).toBeUndefined();
    expect((await context.request.get(`${server.url}/json/users/me`)).status()).toBe(401);
  } finally {
    await context.close();
  }
}, 120_000);
