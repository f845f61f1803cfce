// signin.md Decision 7 in Chromium: a page served from another port of this host (the same site, so
// its cookies reach this server and SameSite=Lax does not stop its form) reads the victim's CSRF
// cookie or plants a session id and CSRF token of its own, and posts the sign-in form with the
// attacker's credentials; the victim stays signed out, or signed in as themselves. GraphiQL cannot be
// framed by such a page, and a document put in its URL fills the editor but runs only when its user
// clicks Run.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { csrfTokenOf } from '../../src/domain/auth/sessions.js';
import { browserWithWorld } from '../support/browser.js';
import { OPERATION_EDITOR } from '../support/graphiql.js';
import { givePassword, PASSWORD, signIn } from '../support/sessions.js';

const files = browserWithWorld();

/** The attacker's pages, on a port of their own. */
let attacker: Server;
let attackerUrl: string;
const attackerPages = new Map<string, string>();
beforeAll(async () => {
  attacker = createServer((request, response) => {
    const body = attackerPages.get(request.url ?? '');
    response.writeHead(body ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
    response.end(body ?? '');
  });
  await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
  await givePassword(files.server.app.prisma, files.world.users.admin.id);
  await givePassword(files.server.app.prisma, files.world.users.member.id);
});
afterAll(() => new Promise<void>((resolve) => (attacker ? attacker.close(() => resolve()) : resolve())));

const attr = (text: string) => text.replace(/&/g, '&amp;').replace(/"/g, '&quot;');

/**
 * Posts the attacker's credentials with a CSRF token that passes the double submit: the victim's own
 * (cookies know no ports: the page reads the CSRF cookie), or with none, a `sessionid` and `csrftoken`
 * of its own planted for the sign-in path.
 */
function loginCsrfPage(): string {
  const session = 'A'.repeat(43);
  const token = csrfTokenOf(session);
  const { admin } = files.world.users;
  const field = (name: string, value: string) => `<input type="hidden" name="${name}" value="${attr(value)}">`;
  return `<!DOCTYPE html><form id="attack" method="post" action="${files.server.url}/accounts/login/">
${field('csrfmiddlewaretoken', token)}${field('username', admin.email)}${field('password', PASSWORD)}${field('realm', files.world.org.stringId)}${field('next', '/')}
</form>
<script>
var form = document.getElementById('attack');
var victims = (document.cookie.match(/(?:^|;\\s*)csrftoken=([^;]+)/) || [])[1];
if (victims) {
  form.csrfmiddlewaretoken.value = victims;
} else {
  document.cookie = 'sessionid=${session}; path=/accounts/login/';
  document.cookie = 'csrftoken=${token}; path=/accounts/login/';
}
form.submit();
</script>`;
}

/** Opens the attacker's page and waits for the answer to the form it posts. */
async function suffer(page: Page): Promise<number> {
  attackerPages.set('/login-csrf.html', loginCsrfPage());
  const answered = page.waitForResponse(
    (response) => response.url() === `${files.server.url}/accounts/login/` && response.request().method() === 'POST',
  );
  await page.goto(`${attackerUrl}/login-csrf.html`);
  return (await answered).status();
}

/** Who the browser is signed in as, asked of /json from a page of the server (one whose policy lets it fetch). */
async function signedInAs(page: Page): Promise<string | null> {
  await page.goto(`${files.server.url}/health`);
  return page.evaluate(async () => {
    const response = await fetch('/json/users/me');
    return response.ok ? ((await response.json()) as { email: string }).email : null;
  });
}

const attackerSessions = () => files.server.app.prisma.userSession.count({ where: { userId: files.world.users.admin.id } });

test('a page on another port posts the sign-in form with planted cookies: the signed-out victim stays signed out', async () => {
  const context = await files.browser.newContext();
  const page = await context.newPage();
  const before = await attackerSessions();
  expect(await suffer(page)).toBe(403);
  expect(await page.locator('#error').textContent()).toContain(
    `Origin checking failed - ${attackerUrl} does not match any trusted origins.`,
  );
  expect(await signedInAs(page)).toBeNull();
  expect(await attackerSessions()).toBe(before);
  await context.close();
}, 90_000);

test('the same attack on a signed-in victim: they stay signed in as themselves', async () => {
  const context = await files.browser.newContext();
  const page = await context.newPage();
  const { member } = files.world.users;
  await page.goto(`${files.server.url}/accounts/login/`);
  await page.locator('#username').fill(member.email);
  await page.locator('#password').fill(PASSWORD);
  await page.locator('summary').click();
  await page.locator('#realm').fill(files.world.org.stringId);
  await page.locator('#submit').click();
  await page.waitForURL(`${files.server.url}/`);
  expect(await signedInAs(page)).toBe(member.email);
  const before = await attackerSessions();
  expect(await suffer(page)).toBe(403);
  expect(await signedInAs(page)).toBe(member.email);
  expect(await attackerSessions()).toBe(before);
  await context.close();
}, 90_000);

/** A browser signed in as the owner (the session's cookies put in its jar). */
async function ownerContext(): Promise<BrowserContext> {
  const { owner } = files.world.users;
  await givePassword(files.server.app.prisma, owner.id);
  const session = await signIn(files.server.url, { username: owner.email, realm: files.world.org.stringId });
  const context = await files.browser.newContext();
  await context.addCookies(Object.entries(session.cookies).map(([name, value]) => ({ name, value, url: files.server.url })));
  return context;
}

const DEACTIVATE = 'mutation { deactivateCustomEmoji(emojiName: "lighthouse") { __typename } }';
const emojiDeactivated = async () =>
  (await files.server.app.prisma.customEmoji.findFirstOrThrow({ where: { organizationId: files.world.org.id, name: 'lighthouse' } }))
    .deactivated;

test("another port's page cannot frame GraphiQL", async () => {
  const context = await ownerContext();
  const page = await context.newPage();
  attackerPages.set(
    '/frame.html',
    `<!DOCTYPE html><iframe id="victim" src="${files.server.url}/graphql?query=${encodeURIComponent(DEACTIVATE)}"
    onload="document.title = 'frame loaded'"></iframe>`,
  );
  await page.goto(`${attackerUrl}/frame.html`);
  await page.waitForFunction(() => document.title === 'frame loaded');
  const framed = page.frames().find((frame) => frame !== page.mainFrame())!;
  // Chromium shows its error page in place of a page that refuses to be framed.
  expect(framed.url()).toMatch(/^chrome-error:/);
  expect(await emojiDeactivated()).toBe(false);
  await context.close();
}, 90_000);

test("a document in GraphiQL's URL fills the editor and runs only when clicked", async () => {
  const context = await ownerContext();
  const page = await context.newPage();
  const mutations: Request[] = [];
  page.on('request', (request) => {
    if (request.method() === 'POST' && request.postData()?.includes('deactivateCustomEmoji')) mutations.push(request);
  });
  await page.goto(`${files.server.url}/graphql?query=${encodeURIComponent(DEACTIVATE)}`);
  await expect
    .poll(async () => (await page.locator(`${OPERATION_EDITOR} .monaco-editor .view-lines`).innerText()).replace(/\u00a0/g, ' '), {
      timeout: 30_000,
    })
    .toContain('deactivateCustomEmoji');
  await expect.poll(() => page.locator('#signed-in-as').textContent(), { timeout: 20_000 }).toContain(files.world.users.owner.email);
  expect(await emojiDeactivated()).toBe(false);
  // The click is what runs it: exactly one request, the click's.
  const clicked = page.waitForResponse((response) => response.request().postData()?.includes('deactivateCustomEmoji') ?? false);
  await page.locator('.graphiql-execute-button').click();
  expect((await clicked).status()).toBe(200);
  expect(await emojiDeactivated()).toBe(true);
  expect(mutations).toHaveLength(1);
  await context.close();
}, 90_000);
