// Paging through a list in GraphiQL, as a frontend author trying the API does: run the
// first page, copy `endCursor` from the result into the `after` variable, run again, until
// `hasNextPage` is false. The pages together are the whole `attachments` list, in its order.
import type { Page } from 'playwright-core';
import { expect, test } from 'vitest';
import { browserWithWorld } from '../support/browser.js';
import {
  execute,
  HEADERS_EDITOR,
  OPERATION_EDITOR,
  openEditorTool,
  openGraphiQL,
  replaceEditorText,
  shownResult,
  VARIABLES_EDITOR,
} from '../support/graphiql.js';
import { postFiles } from '../support/uploads.js';

const files = browserWithWorld();

const PAGE_QUERY = `query Files($after: String) {
  me { attachmentPage(first: 2, after: $after) { nodes { name } pageInfo { endCursor hasNextPage } totalCount } }
}`;
const WHOLE_LIST_QUERY = '{ attachments { attachments { name } } }';

interface WholeList {
  data: { attachments: { attachments: { name: string }[] } };
}
interface ShownPage {
  data: {
    me: { attachmentPage: { nodes: { name: string }[]; pageInfo: { endCursor: string | null; hasNextPage: boolean }; totalCount: number } };
  };
}

/**
 * Runs the operation in the editor and waits for a result other than `previous` (still shown until
 * the new one arrives); also hands back the variables GraphiQL sent.
 */
async function runAndWaitForNewResult(page: Page, field: string, previous: unknown): Promise<{ result: unknown; sentVariables: unknown }> {
  const sent = await execute(page, field);
  const result = await shownResult(page, (shown) => JSON.stringify(shown) !== JSON.stringify(previous));
  return { result, sentVariables: JSON.parse(sent.postData()!).variables };
}

test('GraphiQL pages through attachmentPage with the after variable until hasNextPage is false; the pages make the whole list', async () => {
  const { member } = files.world.users;
  // The example gives the member two files; three more make three pages of two.
  for (const name of ['minutes-1.txt', 'minutes-2.txt', 'minutes-3.txt']) {
    const uploaded = await postFiles(files.server.url, '/user_uploads', member.auth, [{ name, content: `notes of ${name}` }]);
    expect(uploaded.status).toBe(200);
  }

  const { page } = await openGraphiQL(files.browser, files.server.url);
  await replaceEditorText(page, HEADERS_EDITOR, JSON.stringify({ Authorization: member.auth }));
  await replaceEditorText(page, OPERATION_EDITOR, WHOLE_LIST_QUERY);
  const { result: wholeList } = await runAndWaitForNewResult(page, 'attachments', undefined);
  const allNames = (wholeList as WholeList).data.attachments.attachments.map((file) => file.name);
  expect(allNames).toEqual(['plan.pdf', 'draft.txt', 'minutes-1.txt', 'minutes-2.txt', 'minutes-3.txt']);

  await replaceEditorText(page, OPERATION_EDITOR, PAGE_QUERY);
  await openEditorTool(page, 'Variables');
  let shown = (await runAndWaitForNewResult(page, 'attachmentPage', wholeList)).result as ShownPage;
  const pages = [shown.data.me.attachmentPage];
  while (shown.data.me.attachmentPage.pageInfo.hasNextPage && pages.length <= allNames.length) {
    const after = shown.data.me.attachmentPage.pageInfo.endCursor;
    await replaceEditorText(page, VARIABLES_EDITOR, JSON.stringify({ after }));
    const next = await runAndWaitForNewResult(page, 'attachmentPage', shown);
    expect(next.sentVariables).toEqual({ after });
    shown = next.result as ShownPage;
    pages.push(shown.data.me.attachmentPage);
  }

  expect(
    pages.map((p) => ({ names: p.nodes.map((file) => file.name), hasNextPage: p.pageInfo.hasNextPage, totalCount: p.totalCount })),
  ).toEqual([
    { names: ['plan.pdf', 'draft.txt'], hasNextPage: true, totalCount: 5 },
    { names: ['minutes-1.txt', 'minutes-2.txt'], hasNextPage: true, totalCount: 5 },
    { names: ['minutes-3.txt'], hasNextPage: false, totalCount: 5 },
  ]);
  expect(pages.flatMap((p) => p.nodes.map((file) => file.name))).toEqual(allNames);
}, 120_000);
