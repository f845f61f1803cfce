// GraphiQL in a real browser: the bundled page renders without reaching beyond this server, and a
// query run from its editors with the Authorization header answers `me`.
import { expect, test } from 'vitest';
import { browserWithWorld } from '../support/browser.js';
import {
  execute,
  HEADERS_EDITOR,
  OPERATION_EDITOR,
  openGraphiQL as openGraphiQLOn,
  replaceEditorText,
  shownResult,
} from '../support/graphiql.js';

const files = browserWithWorld();

const LOCAL_HOSTS = ['127.0.0.1', 'localhost'];
/** Requests that would leave the machine (blob: and data: URLs are the page's own memory). */
const leavesThisMachine = (url: string) => {
  const { protocol, hostname } = new URL(url);
  return !['blob:', 'data:'].includes(protocol) && !LOCAL_HOSTS.includes(hostname);
};

const openGraphiQL = (promptAnswer?: { username: string; password: string }) =>
  openGraphiQLOn(files.browser, files.server.url, promptAnswer);

test('GraphiQL renders from this server alone and runs { me } with the Authorization header typed into its Headers tab', async () => {
  const { page, requests } = await openGraphiQL();
  const owner = files.world.users.owner;

  await replaceEditorText(page, HEADERS_EDITOR, JSON.stringify({ Authorization: owner.auth }));
  await replaceEditorText(page, OPERATION_EDITOR, '{ me { email role } }');
  const sent = execute(page, 'me');

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
