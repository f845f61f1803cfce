// sendInvitations, invitableChannels and invitableGroups through the GraphQL door: the same service
// as POST /api/v1/invites, so the same rules and messages, answered as the contract's types.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { graphql } from '../generated/gql.js';
import type { SendInvitationsInput } from '../generated/graphql.js';
import { gql } from '../support/graphql.js';
import { storedInvitations } from '../support/invites.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const SendInvitations = graphql(`
  mutation SendInvitations($input: SendInvitationsInput!) {
    sendInvitations(input: $input) {
      __typename
      ... on SendInvitationsSuccess {
        invitations {
          email
          invitedAs
          invitedAt
          expiresAt
          status
          referrer {
            email
          }
        }
      }
      ... on Error {
        message
        code
      }
      ...InvitationRefusalFields
    }
  }
`);

const Invitable = graphql(`
  query Invitable {
    invitableChannels {
      name
      isDefault
    }
    invitableGroups {
      name
    }
  }
`);

const world = (customize?: Parameters<typeof createWorld>[1]) => createWorld(server.app.prisma, customize);

async function send(w: World, who: keyof World['users'], input: Partial<SendInvitationsInput>) {
  const result = await gql(
    server.url,
    SendInvitations,
    { input: { inviteeEmails: ['new@elsewhere.example'], streamIds: [], ...input } },
    w.users[who].auth,
  );
  expect(result.status).toBe(200);
  expect(result.errors).toBeUndefined();
  return result.data!.sendInvitations;
}

const badRequest = (message: string, code = 'BAD_REQUEST') => ({ __typename: 'BadRequestError', message, code });

describe('sendInvitations', () => {
  test('creates the invitations and returns them', async () => {
    const w = await world();
    const before = Math.floor(Date.now() / 1000);
    const result = await send(w, 'moderator', {
      inviteeEmails: ['Ann <ann@elsewhere.example>, bob@elsewhere.example', 'ANN@elsewhere.example'],
      inviteAs: 'MODERATOR',
      inviteExpiresInMinutes: 60,
    });
    expect(result.__typename).toBe('SendInvitationsSuccess');
    const invitations = (result as { invitations: { invitedAt: number; expiresAt: number | null }[] }).invitations;
    expect(invitations.map(({ invitedAt: _i, expiresAt: _e, ...rest }) => rest)).toEqual([
      { email: 'ann@elsewhere.example', invitedAs: 'MODERATOR', status: 'PENDING', referrer: { email: w.users.moderator.email } },
      { email: 'bob@elsewhere.example', invitedAs: 'MODERATOR', status: 'PENDING', referrer: { email: w.users.moderator.email } },
    ]);
    expect(invitations[0]!.invitedAt).toBeGreaterThanOrEqual(before - 1);
    expect(invitations[0]!.expiresAt! - invitations[0]!.invitedAt).toBeGreaterThanOrEqual(3599);
    expect(await storedInvitations(server.app.prisma, w.org.id)).toHaveLength(2);
  });

  test('null expiry never expires; omitted expiry is the server default', async () => {
    const w = await world();
    const never = await send(w, 'member', { inviteExpiresInMinutes: null });
    expect((never as { invitations: { expiresAt: number | null }[] }).invitations[0]!.expiresAt).toBeNull();
    const byDefault = (await send(w, 'member', { inviteeEmails: ['other@elsewhere.example'] })) as {
      invitations: { invitedAt: number; expiresAt: number }[];
    };
    const [invitation] = byDefault.invitations;
    expect(invitation!.expiresAt - invitation!.invitedAt).toBeGreaterThanOrEqual(14400 * 60 - 1);
    expect(invitation!.expiresAt - invitation!.invitedAt).toBeLessThanOrEqual(14400 * 60 + 1);
  });

  test('every business rule answers as data, with the REST messages and codes', async () => {
    const w = await world();
    const other = await world();
    const boardroom = await w.channelId('boardroom');
    const cases: [keyof World['users'], Partial<SendInvitationsInput>, unknown][] = [
      ['guest', {}, badRequest('Not allowed for guest users')],
      ['bot', {}, badRequest('This endpoint does not accept bot requests.')],
      ['member', { inviteAs: 'OWNER' }, badRequest('Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL')],
      ['member', { inviteAs: 'ADMINISTRATOR' }, badRequest('Must be an organization administrator')],
      ['member', { inviteeEmails: [' , '] }, badRequest('You must specify at least one email address.')],
      ['member', { inviteeEmails: [] }, badRequest('You must specify at least one email address.')],
      ['admin', { streamIds: [boardroom] }, badRequest(`Invalid channel ID ${boardroom}. No invites were sent.`)],
      [
        'admin',
        { streamIds: [await other.channelId('general')] },
        badRequest(`Invalid channel ID ${await other.channelId('general')}. No invites were sent.`),
      ],
      ['owner', { groupIds: [await w.groupId('role:members')] }, badRequest('Insufficient permission')],
      ['owner', { groupIds: [await other.groupId('support')] }, badRequest('Invalid user group')],
      ['owner', { groupIds: [await w.groupId('alumni')] }, badRequest('User group is deactivated.')],
      ['member', { welcomeMessageCustomText: '' }, badRequest('Must be an organization administrator')],
      [
        'admin',
        { welcomeMessageCustomText: 'x'.repeat(8001) },
        badRequest('welcome_message_custom_text is too long (limit: 8000 characters)'),
      ],
      [
        'member',
        { inviteExpiresInMinutes: 2 ** 31 - 1, inviteeEmails: ['a@b.example'] },
        { __typename: 'SendInvitationsSuccess', invitations: expect.any(Array) },
      ],
    ];
    for (const [who, input, expected] of cases) expect(await send(w, who, input)).toEqual(expected);
    expect(await storedInvitations(server.app.prisma, w.org.id)).toHaveLength(1);
  });

  test('INVITATION_FAILED outcomes carry their errors and flags', async () => {
    const w = await world((f) => (f.organization.max_invites = 3));
    expect(await send(w, 'member', { inviteeEmails: ['dora@lighthouse.example', 'nope'] })).toEqual({
      __typename: 'InvitationFailedError',
      message: "Some emails did not validate, so we didn't send any invitations.",
      code: 'INVITATION_FAILED',
      errors: [
        { email: 'nope', reason: 'Invalid address.', deactivated: false },
        { email: 'dora@lighthouse.example', reason: 'Account has been deactivated.', deactivated: true },
      ],
      sentInvitations: false,
      dailyLimitReached: false,
      licenseLimitReached: false,
    });
    expect(await send(w, 'member', { inviteeEmails: ['mark@lighthouse.example', 'fresh@elsewhere.example'] })).toEqual({
      __typename: 'InvitationFailedError',
      message:
        "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!",
      code: 'INVITATION_FAILED',
      errors: [{ email: 'mark@lighthouse.example', reason: 'Already has an account.', deactivated: false }],
      sentInvitations: true,
      dailyLimitReached: false,
      licenseLimitReached: false,
    });
    expect(await send(w, 'member', { inviteeEmails: ['a@elsewhere.example, b@elsewhere.example, c@elsewhere.example'] })).toMatchObject({
      __typename: 'InvitationFailedError',
      code: 'INVITATION_FAILED',
      errors: [],
      sentInvitations: false,
      dailyLimitReached: true,
      licenseLimitReached: false,
    });
    expect((await storedInvitations(server.app.prisma, w.org.id)).map((i) => i.email)).toEqual(['fresh@elsewhere.example']);
  });

  test('type errors are GraphQL validation errors; without credentials the answer is 401', async () => {
    const w = await world();
    const wrongType = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: w.users.member.auth },
      body: JSON.stringify({
        query: 'mutation { sendInvitations(input: { inviteeEmails: ["a@b.example"], streamIds: ["x"] }) { __typename } }',
      }),
    });
    const body = (await wrongType.json()) as { data?: unknown; errors: { message: string }[] };
    expect(body.data).toBeUndefined();
    expect(body.errors[0]!.message).toMatch(/Int cannot represent non-integer value: "x"/);
    const anonymous = await gql(server.url, SendInvitations, { input: { inviteeEmails: ['a@b.example'], streamIds: [] } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.errors?.[0]?.extensions?.code).toBe('UNAUTHORIZED');
    await expect(storedInvitations(server.app.prisma, w.org.id)).resolves.toEqual([]);
  });
});

describe('invitableChannels and invitableGroups: exactly what sendInvitations accepts', () => {
  test('for a member, an administrator, the owner and a guest', async () => {
    const w = await world((f) => (f.organization.can_add_subscribers_group = 'role:administrators'));
    const invitable = async (who: keyof World['users']) => (await gql(server.url, Invitable, {}, w.users[who].auth)).data;
    expect(await invitable('member')).toEqual({
      invitableChannels: [{ name: 'general', isDefault: true }],
      invitableGroups: [{ name: 'support' }],
    });
    expect(await invitable('admin')).toEqual({
      invitableChannels: [
        { name: 'general', isDefault: true },
        { name: 'design', isDefault: false },
      ],
      invitableGroups: [{ name: 'support' }, { name: 'leads' }],
    });
    expect((await invitable('owner'))!.invitableChannels.map((c) => c.name)).toEqual(['general', 'boardroom', 'design']);
    expect(await invitable('guest')).toEqual({ invitableChannels: [], invitableGroups: [] });

    // Each listed id is accepted, and an unlisted one is refused.
    const ids = async (names: string[]) => Promise.all(names.map((n) => w.channelId(n)));
    expect((await send(w, 'member', { streamIds: await ids(['general']), groupIds: [await w.groupId('support')] })).__typename).toBe(
      'SendInvitationsSuccess',
    );
    expect((await send(w, 'member', { inviteeEmails: ['x@elsewhere.example'], streamIds: await ids(['design']) })).__typename).toBe(
      'BadRequestError',
    );
  });
});
