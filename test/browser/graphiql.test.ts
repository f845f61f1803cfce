// GraphiQL in a real browser: the bundled page renders without reaching beyond this server, and a
// query run from its editors with the Authorization header answers `me`.
import type { Page, Request } from 'playwright-core';
import { expect, test } from 'vitest';
import { browserWithWorld } from '../support/browser.js';

const files = browserWithWorld();

const LOCAL_HOSTS = ['127.0.0.1', 'localhost'];
/** Requests that would leave the machine (blob: and data: URLs are the page's own memory). */
const leavesThisMachine = (url: string) => {
  const { protocol, hostname } = new URL(url);
  return !['blob:', 'data:'].includes(protocol) && !LOCAL_HOSTS.includes(hostname);
};

const OPERATION_EDITOR = 'section[aria-label="Operation Editor"]';
const HEADERS_EDITOR = 'section[aria-label="Headers"] .graphiql-editor:not(.hidden)';

/** A fresh browser profile on GraphiQL; `promptAnswer` is what the user types into a Basic-auth prompt. */
async function openGraphiQL(promptAnswer?: { username: string; password: string }): Promise<{ page: Page; requests: Request[] }> {
  const context = await files.browser.newContext({ httpCredentials: promptAnswer });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: files.server.url });
  const page = await context.newPage();
  const requests: Request[] = [];
  page.on('request', (request) => requests.push(request));
  const response = await page.goto(`${files.server.url}/graphql`);
  expect(response?.status()).toBe(200);
  expect(response?.headers()['content-type']).toMatch(/^text\/html/);
  await page.locator('.graphiql-container').first().waitFor();
  await page.locator('.graphiql-query-editor .monaco-editor').waitFor();
  return { page, requests };
}

/** Replaces an editor's whole text the way a user does: select all, paste. */
async function replaceEditorText(page: Page, editorSelector: string, text: string) {
  const editor = page.locator(`${editorSelector} .monaco-editor`);
  await page.evaluate((t) => navigator.clipboard.writeText(t), text);
  await editor.click();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.press('ControlOrMeta+V');
  await expect.poll(async () => (await editor.locator('.view-lines').innerText()).replace(/\u00a0/g, ' ')).toBe(text);
}

/** The result GraphiQL shows, once its response editor holds a whole JSON document. */
async function shownResult(page: Page): Promise<unknown> {
  const pane = page.locator('.graphiql-response .view-lines');
  let result: unknown;
  await expect
    .poll(async () => {
      try {
        result = JSON.parse((await pane.innerText()).replace(/\u00a0/g, ' '));
        return true;
      } catch {
        return false;
      }
    }, { timeout: 20_000 })
    .toBe(true);
  return result;
}

test('GraphiQL renders from this server alone and runs { me } with the Authorization header typed into its Headers tab', async () => {
  const { page, requests } = await openGraphiQL();
  const owner = files.world.users.owner;

  await replaceEditorText(page, HEADERS_EDITOR, JSON.stringify({ Authorization: owner.auth }));
  await replaceEditorText(page, OPERATION_EDITOR, '{ me { email role } }');
  const sent = page.waitForRequest((r) => r.method() === 'POST' && new URL(r.url()).pathname === '/graphql' && (r.postData() ?? '').includes('me'));
  await page.locator('.graphiql-execute-button').click();

  expect((await sent).headers().authorization).toBe(owner.auth);
  expect(await shownResult(page)).toEqual({ data: { me: { email: owner.email, role: 'OWNER' } } });

  expect(requests.length).toBeGreaterThan(0);
  expect(requests.map((r) => r.url()).filter(leavesThisMachine)).toEqual([]);
}, 90_000);

// The server answers a missing or wrong Authorization header with 401 and `WWW-Authenticate: Basic`,
// so a browser asks for credentials itself; e-mail and API key typed there work like the header.
test("with an empty Headers tab the browser's own Basic-auth prompt takes e-mail and API key", async () => {
  const member = files.world.users.member;
  const runWithPromptAnswer = async (password: string) => {
    const { page, requests } = await openGraphiQL({ username: member.email, password });
    await replaceEditorText(page, HEADERS_EDITOR, '{}');
    await replaceEditorText(page, OPERATION_EDITOR, '{ me { email role } }');
    await page.locator('.graphiql-execute-button').click();
    const shown = await shownResult(page);
    expect(requests.map((r) => r.url()).filter(leavesThisMachine)).toEqual([]);
    return shown;
  };

  expect(await runWithPromptAnswer(member.apiKey)).toEqual({ data: { me: { email: member.email, role: 'MEMBER' } } });
  const refused = (await runWithPromptAnswer(files.world.users.owner.apiKey)) as { data?: unknown; errors: object[] };
  expect(refused.data).toBeUndefined();
  expect(refused.errors).toHaveLength(1);
  expect(refused.errors[0]).toMatchObject({ message: 'Invalid API key', extensions: { code: 'UNAUTHORIZED' } });
}, 90_000);
