// A person signs in in Chromium and uses GraphiQL with nothing pasted: the sign-in
// link on GraphiQL's bar, the form, back on GraphiQL as themselves with this API's example document;
// `{ me { email } }` and a subscription that shows a change made by someone else run on the
// session's cookie; signing out ends it, and the same page's requests are refused.
import { randomBytes } from 'node:crypto';
import { expect, test } from 'vitest';
import { browserWithWorld } from '../support/browser.js';
import { execute, expectSignedInGraphiQL, HEADERS_EDITOR, OPERATION_EDITOR, replaceEditorText, shownResult } from '../support/graphiql.js';
import { callApi } from '../support/rest.js';
import { runOnTestDatabase } from '../support/server.js';
import { givePassword, PASSWORD } from '../support/sessions.js';

const files = browserWithWorld();

/** Monaco renders spaces as no-break spaces. */
const editorText = async (page: import('playwright-core').Page, selector: string) =>
  (await page.locator(`${selector} .monaco-editor .view-lines`).innerText()).replace(/\u00a0/g, ' ');

test('sign in through the form, use GraphiQL with the session (a query, a subscription), sign out, and the page is refused', async () => {
  const { member, owner } = files.world.users;
  // World addresses repeat across organizations: this member gets one of their own (no organization to choose).
  const email = `member-${randomBytes(4).toString('hex')}@session.example`;
  await runOnTestDatabase(`UPDATE user_account SET email = $1, "emailKey" = lower($1) WHERE id = $2`, [email, member.id]);
  await givePassword(files.server.app.prisma, member.id);

  const context = await files.browser.newContext();
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: files.server.url });
  const page = await context.newPage();

  // A first visit opens on this API's example document, with no placeholder header to paste over.
  await page.goto(`${files.server.url}/graphql`);
  await page.locator('.graphiql-query-editor .monaco-editor').waitFor();
  await expect.poll(() => editorText(page, OPERATION_EDITOR)).toContain('query Overview');
  expect((await editorText(page, HEADERS_EDITOR)).trim()).toBe('');

  // Not signed in: GraphiQL's bar links to the sign-in page, which comes back here.
  await page.locator('#sign-in').click();
  await page.waitForURL(/\/accounts\/login\/\?next=%2Fgraphql$/);
  await page.locator('#username').fill(email);
  await page.locator('#password').fill(PASSWORD);
  await page.locator('#submit').click();
  await page.waitForURL(`${files.server.url}/graphql`);
  await expectSignedInGraphiQL(page, email);

  await replaceEditorText(page, OPERATION_EDITOR, 'subscription { customEmojiChanged { change emoji { name } } }');
  const stream = await (await execute(page, 'customEmojiChanged')).response();
  expect(stream?.status()).toBe(200);
  const deleted = await callApi(files.server.url, 'DELETE', '/realm/emoji/lighthouse', { authorization: owner.auth });
  expect(deleted.status).toBe(200);
  expect(await shownResult(page, (result) => JSON.stringify(result).includes('DEACTIVATED'))).toEqual({
    data: { customEmojiChanged: { change: 'DEACTIVATED', emoji: { name: 'lighthouse' } } },
  });

  // Sign out from GraphiQL's bar: the sign-in page; the same page (back, as a browser keeps it) is refused.
  await page.locator('#sign-out').click();
  await page.waitForURL(`${files.server.url}/accounts/login/`);
  await page.goBack();
  await page.locator('.graphiql-query-editor .monaco-editor').waitFor();
  await expect.poll(() => page.locator('#sign-in').isVisible(), { timeout: 20_000 }).toBe(true);
  await replaceEditorText(page, OPERATION_EDITOR, '{ me { email } }');
  // (The pane wraps the long message across lines: the answer is read from the request itself.)
  const refused = await (await execute(page, 'me')).response();
  expect(refused?.status()).toBe(401);
  expect(((await refused!.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('UNAUTHORIZED');
  const me = await page.evaluate(async () => (await fetch('/json/users/me')).status);
  expect(me).toBe(401);
  await context.close();
}, 120_000);
