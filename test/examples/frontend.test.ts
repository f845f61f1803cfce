// The frontend examples (docs/examples/frontend, docs/guide/frontend.md), run as a frontend runs them:
// against a server that runs their manifest's documents only (GRAPHQL_TRUSTED_ONLY), as a member
// and an administrator who are not allowed any other document.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { GraphQLRequestError, request, type Connection } from '../../docs/examples/frontend/client.js';
import { checkForm, submitForm } from '../../docs/examples/frontend/invite-form.js';
import { InvitationList, keepInvitationsCurrent } from '../../docs/examples/frontend/live-invitations.js';
import { filePages } from '../../docs/examples/frontend/paged-files.js';
import { graphql } from '../generated/gql.js';
import { gql } from '../support/graphql.js';
import { postFiles } from '../support/uploads.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { eventually } from '../support/subscriptions.js';
import { createWorld, type World } from '../support/world.js';

const MANIFEST = fileURLToPath(new URL('../../docs/examples/frontend/gql/persisted-documents.json', import.meta.url));

let server: TestServer;
let world: World;
beforeAll(async () => {
  const { graphqlTrustedDocuments } = loadConfig({ GRAPHQL_TRUSTED_DOCUMENTS: MANIFEST, GRAPHQL_TRUSTED_ONLY: 'true' });
  server = await startTestServer({ graphqlTrustedDocuments });
  world = await createWorld(server.app.prisma);
});
afterAll(() => server.close());

const as = (who: 'member' | 'admin' | 'owner'): Connection => ({ url: server.url, authorization: world.users[who].auth });

const WholeList = graphql(`
  query ExampleWholeFileList {
    attachments {
      attachments {
        id
        name
      }
    }
  }
`);

test('the paged list: every file once, in the order of the whole list', async () => {
  for (let i = 0; i < 7; i++)
    expect(
      (await postFiles(server.url, '/user_uploads', world.users.member.auth, [{ name: `page-${i}.txt`, content: `file ${i}` }])).status,
    ).toBe(200);
  const paged = [];
  const totals = [];
  for await (const page of filePages(as('member'), 3)) {
    totals.push(page.totalCount);
    paged.push(...page.nodes.map(({ id, name }) => ({ id, name })));
  }
  // The whole list, asked as an administrator may (members may run the manifest's documents only).
  const whole = await gql(server.url, WholeList, {}, world.users.member.auth);
  expect(whole.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_ONLY');
  const listed = await server.app.prisma.attachment.findMany({
    where: { ownerId: world.users.member.id },
    orderBy: { id: 'asc' },
    select: { id: true, name: true },
  });
  expect(paged).toEqual(listed);
  expect(totals).toEqual(Array(Math.ceil(listed.length / 3)).fill(listed.length));
});

test('the invitation form: the preview marks the bad address, the send invites the others', async () => {
  const input = { inviteeEmails: ['form-one@example.net', 'not an address', 'form-two@example.net'], streamIds: [] };
  const preview = await checkForm(as('admin'), input);
  expect(preview).toMatchObject({ __typename: 'InvitationFailedError' });
  const fixed = { ...input, inviteeEmails: ['form-one@example.net, form-two@example.net', world.users.member.email] };
  expect(await checkForm(as('admin'), fixed)).toEqual({
    __typename: 'InvitationPreview',
    wouldInvite: 2,
    addresses: [
      { email: 'form-one@example.net', willInvite: true, reason: null, deactivated: false },
      { email: 'form-two@example.net', willInvite: true, reason: null, deactivated: false },
      { email: world.users.member.email, willInvite: false, reason: 'Already has an account.', deactivated: false },
    ],
  });
  const sent = await submitForm(as('admin'), fixed);
  expect(sent).toMatchObject({
    __typename: 'SendInvitationsSuccess',
    invitations: [{ email: 'form-one@example.net' }, { email: 'form-two@example.net' }],
  });
});

test('the live list: shown at once, then after each change', async () => {
  const shown: string[][] = [];
  const stop = keepInvitationsCurrent(as('owner'), (invitations) => shown.push(invitations.map((i) => i.email)));
  try {
    await eventually(() => shown.length === 1);
    const before = shown[0]!;
    await eventually(() => server.app.eventStreams!.size > 0);
    expect(await submitForm(as('admin'), { inviteeEmails: ['live-list@example.net'], streamIds: [] })).toMatchObject({
      __typename: 'SendInvitationsSuccess',
    });
    await eventually(() => shown.length === 2, 5_000);
    expect(shown[1]).toEqual(['live-list@example.net', ...before]);
    // The form test's send, committed before the subscription, was not delivered as a change: the
    // next change is the next list shown (an earlier event would have come before it).
    expect(await submitForm(as('admin'), { inviteeEmails: ['live-list-2@example.net'], streamIds: [] })).toMatchObject({
      __typename: 'SendInvitationsSuccess',
    });
    await eventually(() => shown.length >= 3, 5_000);
    expect(shown).toEqual([before, ['live-list@example.net', ...before], ['live-list-2@example.net', 'live-list@example.net', ...before]]);
    expect((await request(as('owner'), InvitationList, {})).invitations.map((i) => i.email)).toEqual(shown[2]);
  } finally {
    stop();
  }
});

test('the typed client reports refusals with their code', async () => {
  await expect(request({ url: server.url, authorization: 'Basic eDp5' }, InvitationList, {})).rejects.toEqual(
    expect.any(GraphQLRequestError),
  );
});
