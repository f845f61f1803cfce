// Driving the bundled GraphiQL in Chromium as a user does: its editors take pasted text, its
// execute button runs the operation, its response pane shows the result.
import type { Browser, Page, Request } from 'playwright-core';
import { expect } from 'vitest';

export const OPERATION_EDITOR = 'section[aria-label="Operation Editor"]';
export const HEADERS_EDITOR = 'section[aria-label="Headers"] .graphiql-editor:not(.hidden)';
export const VARIABLES_EDITOR = 'section[aria-label="Variables"] .graphiql-editor:not(.hidden)';
const RESPONSE_PANE = '.graphiql-response .view-lines';

/** Monaco renders spaces as no-break spaces. */
const plainText = (text: string) => text.replace(/\u00a0/g, ' ');

/**
 * A fresh browser profile on GraphiQL at `serverUrl`; `promptAnswer` is what the user types into a
 * Basic-auth prompt. Every request the page sends is recorded.
 */
export async function openGraphiQL(
  browser: Browser,
  serverUrl: string,
  promptAnswer?: { username: string; password: string },
): Promise<{ page: Page; requests: Request[] }> {
  const context = await browser.newContext({ httpCredentials: promptAnswer });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: serverUrl });
  const page = await context.newPage();
  const requests: Request[] = [];
  page.on('request', (request) => requests.push(request));
  const response = await page.goto(`${serverUrl}/graphql`);
  expect(response?.status()).toBe(200);
  expect(response?.headers()['content-type']).toMatch(/^text\/html/);
  await page.locator('.graphiql-container').first().waitFor();
  await page.locator('.graphiql-query-editor .monaco-editor').waitFor();
  return { page, requests };
}

/** Replaces an editor's whole text the way a user does: select all, paste. */
export async function replaceEditorText(page: Page, editorSelector: string, text: string) {
  const editor = page.locator(`${editorSelector} .monaco-editor`);
  await page.evaluate((t) => navigator.clipboard.writeText(t), text);
  await editor.click();
  await page.keyboard.press('ControlOrMeta+A');
  await page.keyboard.press('ControlOrMeta+V');
  await expect.poll(async () => plainText(await editor.locator('.view-lines').innerText())).toBe(text);
  if (editorSelector === OPERATION_EDITOR) await operationsParsed(page, text);
}

/**
 * Waits until GraphiQL has parsed the operation editor's `text`. It parses 100 ms after the last change
 * (debounced), and until then its execute button acts on the operations it parsed before: after the
 * two-operation example it is the menu that asks which one to run, and a click that opens it just
 * before the parse shows one operation is lost (no menu stays open, no request goes out). In the same
 * step as the parse GraphiQL stores the text under `graphiql:query`: that value is the positive signal.
 */
async function operationsParsed(page: Page, text: string) {
  await expect.poll(() => page.evaluate(() => localStorage.getItem('graphiql:query'))).toBe(text);
}

/** Opens the Variables or Headers tab below the operation editor. */
export async function openEditorTool(page: Page, tab: 'Variables' | 'Headers') {
  await page.locator('.graphiql-editor-tools button', { hasText: tab }).click();
  await page.locator(`section[aria-label="${tab}"] .graphiql-editor:not(.hidden) .monaco-editor`).waitFor();
}

async function responsePaneText(page: Page): Promise<string> {
  return plainText(await page.locator(RESPONSE_PANE).innerText());
}

const parsedOrUndefined = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** The response pane's text, parsed; undefined while it holds no whole JSON document. */
export async function responsePaneJson(page: Page): Promise<unknown> {
  return parsedOrUndefined(await responsePaneText(page));
}

const ACCEPTED = 'a whole JSON result that the test takes';

/**
 * The result GraphiQL shows, once its response pane holds a whole JSON document that `accept` takes
 * (a test running a second operation waits for a result other than the first's).
 */
export async function shownResult(page: Page, accept: (result: unknown) => boolean = () => true, timeout = 20_000): Promise<unknown> {
  let result: unknown;
  await expect
    .poll(
      async () => {
        const text = await responsePaneText(page);
        result = parsedOrUndefined(text);
        // On a timeout the failure names what the pane showed.
        return result !== undefined && accept(result) ? ACCEPTED : text;
      },
      { timeout },
    )
    .toBe(ACCEPTED);
  return result;
}

/** The GraphQL document a request to /graphql carries: in its JSON body (POST) or its `query` parameter (GET). */
function documentOf(request: Request): string | undefined {
  const url = new URL(request.url());
  if (url.pathname !== '/graphql') return undefined;
  if (request.method() === 'GET') return url.searchParams.get('query') ?? undefined;
  return request.postData() ?? undefined;
}

/**
 * Clicks the execute button and waits for the request to /graphql it sends, the one whose document
 * names `field` (GraphiQL posts queries and opens subscriptions' event streams with GET).
 */
export async function execute(page: Page, field: string): Promise<Request> {
  const sent = page.waitForRequest((r) => Boolean(documentOf(r)?.includes(field)));
  await page.locator('.graphiql-execute-button').click();
  return sent;
}

/**
 * GraphiQL, opened by a signed-in user, names them in its bar and runs `{ me }` as them on the
 * session's cookie alone (no Authorization header).
 */
export async function expectSignedInGraphiQL(page: Page, email: string): Promise<void> {
  await expect.poll(() => page.locator('#signed-in-as').textContent(), { timeout: 20_000 }).toContain(email);
  await page.locator('.graphiql-query-editor .monaco-editor').waitFor();
  await replaceEditorText(page, OPERATION_EDITOR, '{ me { email } }');
  const query = await execute(page, 'me');
  expect(query.headers().authorization).toBeUndefined();
  expect(await shownResult(page)).toEqual({ data: { me: { email } } });
}
