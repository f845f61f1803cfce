// GraphiQL in a real browser runs a subscription: the bundled page's default transport
// is fetch-based Server-Sent Events (a GET with `Accept: text/event-stream`, which needs no CSRF
// header here), so the stream carries the Authorization header typed into its Headers tab, and an
// emoji deactivated by someone else while it runs appears in its response pane.
import { expect, test } from 'vitest';
import { browserWithWorld } from '../support/browser.js';
import {
  execute,
  HEADERS_EDITOR,
  OPERATION_EDITOR,
  openGraphiQL,
  replaceEditorText,
  responsePaneJson,
  shownResult,
} from '../support/graphiql.js';
import { callApi } from '../support/rest.js';

const files = browserWithWorld();

const SUBSCRIPTION = 'subscription { customEmojiChanged { change emoji { name } } }';

test("GraphiQL runs customEmojiChanged over Server-Sent Events and shows the owner's deactivation of an emoji", async () => {
  const { owner, member } = files.world.users;
  const { page } = await openGraphiQL(files.browser, files.server.url);
  await replaceEditorText(page, HEADERS_EDITOR, JSON.stringify({ Authorization: member.auth }));
  await replaceEditorText(page, OPERATION_EDITOR, SUBSCRIPTION);

  const sent = await execute(page, 'customEmojiChanged');
  expect(sent.headers()).toMatchObject({ authorization: member.auth, accept: expect.stringContaining('text/event-stream') });
  const stream = await sent.response();
  expect(stream?.status()).toBe(200);
  expect(stream?.headers()['content-type']).toMatch(/^text\/event-stream/);

  // The stream is open and nothing has changed yet: the pane shows no event.
  expect(await responsePaneJson(page)).toBeUndefined();

  const deleted = await callApi(files.server.url, 'DELETE', '/realm/emoji/lighthouse', { authorization: owner.auth });
  expect(deleted).toMatchObject({ status: 200, body: { result: 'success' } });

  expect(await shownResult(page)).toEqual({ data: { customEmojiChanged: { change: 'DEACTIVATED', emoji: { name: 'lighthouse' } } } });
}, 90_000);
