// NUL characters (behaviour.md Decision 10) and ID lists as long as the body
// limit allows answer the documented error on both doors, never a 500, and write nothing.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { callApi } from '../support/rest.js';
import { storedInvitations } from '../support/invites.js';
import { submitAcceptance } from '../support/invitations.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';
import { expectMatchesOpenApi } from '../support/openapi.js';

let server: TestServer;
let w: World;
beforeAll(async () => {
  server = await startTestServer();
  w = await createWorld(server.app.prisma);
});
afterAll(() => server?.close());

async function graphql(query: string, variables: object, auth = w.users.owner.auth) {
  const response = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: auth },
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, ...((await response.json()) as { data?: any; errors?: unknown[] }) };
}

const SEND = `mutation ($input: SendInvitationsInput!) {
  sendInvitations(input: $input) { __typename ... on Error { message code } ... on InvitationFailedError { errors { email reason } } }
}`;

/** Invitations, outbox rows and active emoji of the world: what a refused request must leave alone. */
async function snapshot() {
  const prisma = server.app.prisma;
  return {
    invitations: (await storedInvitations(prisma, w.org.id)).length,
    outbox: await prisma.outboxEmail.count({ where: { organizationId: w.org.id } }),
    activeEmoji: await prisma.customEmoji.count({ where: { organizationId: w.org.id, deactivated: false } }),
    audit: await prisma.auditLogEntry.count({ where: { organizationId: w.org.id } }),
  };
}

describe('row 5: NUL characters', () => {
  test('REST: welcome_message_custom_text with NUL is refused by the parameter parser', async () => {
    const before = await snapshot();
    const answer = await callApi(server.url, 'POST', '/invites', {
      authorization: w.users.owner.auth,
      form: { invitee_emails: 'nul-a@example.net', stream_ids: '[]', welcome_message_custom_text: 'hi\u0000' },
    });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({
      result: 'error',
      msg: 'welcome_message_custom_text contains NULL (0x00) characters.',
      code: 'BAD_REQUEST',
    });
    expectMatchesOpenApi('post', '/invites', answer);
    expect(await snapshot()).toEqual(before);
  });

  test('REST: an address with NUL is an invalid address like any other', async () => {
    const before = await snapshot();
    const answer = await callApi(server.url, 'POST', '/invites', {
      authorization: w.users.owner.auth,
      form: { invitee_emails: 'ok@example.net, bad\u0000@example.net', stream_ids: '[]' },
    });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 'INVITATION_FAILED', errors: [['bad\u0000@example.net', 'Invalid address.', false]] });
    expect(await snapshot()).toEqual(before);
  });

  test('REST: DELETE /realm/emoji/a%00b names no emoji', async () => {
    const before = await snapshot();
    const answer = await callApi(server.url, 'DELETE', '/realm/emoji/green_tick%00', { authorization: w.users.owner.auth });
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual({ result: 'error', msg: "Emoji 'green_tick\u0000' does not exist", code: 'BAD_REQUEST' });
    expect(await snapshot()).toEqual(before);
  });

  test('GraphQL: the same three answer BadRequestError, InvitationFailedError and NotFoundError', async () => {
    const before = await snapshot();
    const welcome = await graphql(SEND, {
      input: { inviteeEmails: ['nul-b@example.net'], streamIds: [], welcomeMessageCustomText: 'hi\u0000' },
    });
    expect(welcome.data.sendInvitations).toEqual({
      __typename: 'BadRequestError',
      message: 'welcome_message_custom_text contains NULL (0x00) characters.',
      code: 'BAD_REQUEST',
    });
    const address = await graphql(SEND, { input: { inviteeEmails: ['bad\u0000@example.net'], streamIds: [] } });
    expect(address.data.sendInvitations).toMatchObject({
      __typename: 'InvitationFailedError',
      errors: [{ email: 'bad\u0000@example.net', reason: 'Invalid address.' }],
    });
    const emoji = await graphql('mutation ($n: String!) { deactivateCustomEmoji(emojiName: $n) { __typename ... on Error { message } } }', {
      n: 'a\u0000b',
    });
    expect(emoji.data.deactivateCustomEmoji).toEqual({ __typename: 'NotFoundError', message: "Emoji 'a\u0000b' does not exist" });
    expect(await snapshot()).toEqual(before);
  });

  test('the acceptance page refuses a full name with NUL as a form error (400) and creates no account', async () => {
    const sent = await callApi(server.url, 'POST', '/invites', {
      authorization: w.users.owner.auth,
      form: { invitee_emails: 'nul-accept@example.net', stream_ids: '[]' },
    });
    expect(sent.status).toBe(200);
    const invitation = await server.app.prisma.invitation.findFirstOrThrow({
      where: { organizationId: w.org.id, email: 'nul-accept@example.net' },
    });
    const answer = await submitAcceptance(server.url, invitation.confirmationKey, {
      full_name: 'Ann\u0000Smith',
      password: 'lighthouse-keeper-42',
    });
    expect(answer.status).toBe(400);
    expect(await server.app.prisma.user.count({ where: { organizationId: w.org.id, emailKey: 'nul-accept@example.net' } })).toBe(0);
  });
});

describe('row 6: ID lists as long as the body limit allows', () => {
  const ids = Array.from({ length: 100_000 }, (_, i) => i + 1);

  test("REST: 100,000 stream_ids or group_ids answer the reference's error for the first unknown id", async () => {
    const before = await snapshot();
    const channel = await w.channelId('general');
    const streams = await callApi(server.url, 'POST', '/invites', {
      authorization: w.users.owner.auth,
      form: { invitee_emails: 'long@example.net', stream_ids: JSON.stringify([channel, ...ids]) },
    });
    expect(streams.status).toBe(400);
    expect(streams.body.msg).toMatch(/^Invalid channel ID \d+\. No invites were sent\.$/);
    const groups = await callApi(server.url, 'POST', '/invites', {
      authorization: w.users.owner.auth,
      form: {
        invitee_emails: 'long@example.net',
        stream_ids: '[]',
        group_ids: JSON.stringify(ids.slice(0, 60_000).map((id) => id + 10_000_000)),
      },
    });
    expect(groups.status).toBe(400);
    expect(groups.body).toEqual({ result: 'error', msg: 'Invalid user group', code: 'BAD_REQUEST' });
    expect(await snapshot()).toEqual(before);
  });

  test('REST: 100,000 copies of one valid id are one channel', async () => {
    const channel = await w.channelId('general');
    const answer = await callApi(server.url, 'POST', '/invites', {
      authorization: w.users.owner.auth,
      form: { invitee_emails: 'repeated@example.net', stream_ids: JSON.stringify(Array(100_000).fill(channel)) },
    });
    expect(answer.status).toBe(200);
    const invitation = await server.app.prisma.invitation.findFirstOrThrow({
      where: { organizationId: w.org.id, email: 'repeated@example.net' },
      include: { channels: true },
    });
    expect(invitation.channels.map((c) => c.channelId)).toEqual([channel]);
  });

  test('GraphQL: 100,000 streamIds in variables answer BadRequestError', async () => {
    const before = await snapshot();
    const answer = await graphql(SEND, { input: { inviteeEmails: ['long@example.net'], streamIds: ids } });
    expect(answer.data.sendInvitations).toMatchObject({
      __typename: 'BadRequestError',
      message: expect.stringMatching(/^Invalid channel ID \d+/),
    });
    expect(await snapshot()).toEqual(before);
  });
});
