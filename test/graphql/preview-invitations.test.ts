// previewInvitations over real HTTP: the verdicts sendInvitations would give per address, its
// whole-request refusals with the same messages and flags, and nothing written, locked or sent.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PreviewInvitations } from '../support/invitation-documents.js';
import type { SendInvitationsInput } from '../generated/graphql.js';
import { gql } from '../support/graphql.js';
import { createInvitations } from '../support/invitations.js';
import { connectToTestDatabase, startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World, type WorldUserName } from '../support/world.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const world = (customize?: Parameters<typeof createWorld>[1]) => createWorld(server.app.prisma, customize);

async function preview(w: World, who: WorldUserName, input: Partial<SendInvitationsInput>) {
  const result = await gql(
    server.url,
    PreviewInvitations,
    { input: { inviteeEmails: ['new@elsewhere.example'], streamIds: [], ...input } },
    w.users[who].auth,
  );
  expect(result.status).toBe(200);
  expect(result.errors).toBeUndefined();
  return result.data!.previewInvitations;
}

/** Every row an invitation would write, in the whole database of this file (its tests run one at a time). */
async function writtenRows() {
  const [counts] = await server.app.prisma.$queryRaw<Record<string, number>[]>`
    SELECT (SELECT count(*) FROM invitation)::int AS invitations,
           (SELECT count(*) FROM invitation_channel)::int AS "invitationChannels",
           (SELECT count(*) FROM invitation_group)::int AS "invitationGroups",
           (SELECT count(*) FROM outbox_email)::int AS outbox,
           (SELECT count(*) FROM event)::int AS events,
           (SELECT count(*) FROM audit_log_entry)::int AS "auditLog"`;
  return counts!;
}

const invite = (email: string) => ({ email, willInvite: true, reason: null, deactivated: false });
const refuse = (email: string, reason: string, deactivated = false) => ({ email, willInvite: false, reason, deactivated });
const badRequest = (message: string, code = 'BAD_REQUEST') => ({ __typename: 'BadRequestError', message, code });
const invitationFailed = (message: string, fields: { errors?: unknown[]; sent?: boolean; daily?: boolean; license?: boolean } = {}) => ({
  __typename: 'InvitationFailedError',
  message,
  code: 'INVITATION_FAILED',
  errors: fields.errors ?? [],
  sentInvitations: fields.sent ?? false,
  dailyLimitReached: fields.daily ?? false,
  licenseLimitReached: fields.license ?? false,
});

describe('previewInvitations', () => {
  test('one verdict per parsed address, in the order given, duplicates once; wouldInvite counts the invited', async () => {
    const w = await world();
    const before = await writtenRows();
    const result = await preview(w, 'member', {
      inviteeEmails: [
        'Fresh One <fresh@elsewhere.example>, MARK@lighthouse.example',
        'dora@lighthouse.example\nfresh@elsewhere.example',
        'FRESH@elsewhere.example',
        'notification-bot@zulip.com, bolt-bot@lighthouse.example',
        'second@sub.lighthouse.example',
      ],
      streamIds: [await w.channelId('general')],
      groupIds: [await w.groupId('support')],
    });
    expect(result).toEqual({
      __typename: 'InvitationPreview',
      wouldInvite: 2,
      addresses: [
        invite('fresh@elsewhere.example'),
        refuse('MARK@lighthouse.example', 'Already has an account.'),
        refuse('dora@lighthouse.example', 'Account has been deactivated.', true),
        refuse('notification-bot@zulip.com', 'Reserved for system bots.'),
        refuse('bolt-bot@lighthouse.example', 'Already has an account.'),
        invite('second@sub.lighthouse.example'),
      ],
    });
    expect(await writtenRows()).toEqual(before);
  });

  test('an invalid address refuses the whole request: invalid ones first, then existing accounts', async () => {
    const w = await world();
    const input = {
      inviteeEmails: [
        'mark@lighthouse.example, not-an-address, fine@elsewhere.example, x@mailinator.com',
        'dora@lighthouse.example, a@@b.example',
      ],
    };
    expect(await preview(w, 'member', input)).toEqual(
      invitationFailed("Some emails did not validate, so we didn't send any invitations.", {
        errors: [
          { email: 'not-an-address', reason: 'Invalid address.', deactivated: false },
          { email: 'x@mailinator.com', reason: 'Please use your real email address.', deactivated: false },
          { email: 'a@@b.example', reason: 'Invalid address.', deactivated: false },
          { email: 'mark@lighthouse.example', reason: 'Already has an account.', deactivated: false },
          { email: 'dora@lighthouse.example', reason: 'Account has been deactivated.', deactivated: true },
        ],
      }),
    );
  });

  test("an organization restricted to its domains refuses other domains and '+' addresses", async () => {
    const w = await world((f) => (f.organization.emails_restricted_to_domains = true));
    expect(await preview(w, 'admin', { inviteeEmails: ['ok@lighthouse.example, a+b@lighthouse.example, x@elsewhere.example'] })).toEqual(
      invitationFailed("Some emails did not validate, so we didn't send any invitations.", {
        errors: [
          { email: 'a+b@lighthouse.example', reason: 'Email addresses containing + are not allowed.', deactivated: false },
          { email: 'x@elsewhere.example', reason: 'Outside your domain.', deactivated: false },
        ],
      }),
    );
    const allowed = await world((f) => (f.organization.disallow_disposable_email_addresses = false));
    expect(await preview(allowed, 'admin', { inviteeEmails: ['x@mailinator.com'] })).toEqual({
      __typename: 'InvitationPreview',
      wouldInvite: 1,
      addresses: [invite('x@mailinator.com')],
    });
  });

  test('when nobody would be invited, the answer is the refusal the send would give', async () => {
    const w = await world();
    expect(await preview(w, 'member', { inviteeEmails: ['mark@lighthouse.example', 'Dora <DORA@lighthouse.example>'] })).toEqual(
      invitationFailed("We weren't able to invite anyone.", {
        errors: [
          { email: 'mark@lighthouse.example', reason: 'Already has an account.', deactivated: false },
          { email: 'DORA@lighthouse.example', reason: 'Account has been deactivated.', deactivated: true },
        ],
      }),
    );
  });

  test('whole-request refusals: the same messages and codes, in the same order as sendInvitations', async () => {
    const w = await world();
    const other = await world();
    const boardroom = await w.channelId('boardroom');
    const foreignChannel = await other.channelId('general');
    const before = await writtenRows();
    const cases: [WorldUserName, Partial<SendInvitationsInput>, unknown][] = [
      ['guest', { inviteAs: 'OWNER' }, badRequest('Not allowed for guest users')],
      ['bot', {}, badRequest('This endpoint does not accept bot requests.')],
      ['member', { inviteAs: 'OWNER' }, badRequest('Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL')],
      ['member', { inviteAs: 'MODERATOR' }, badRequest('Must be an organization administrator')],
      ['member', { inviteeEmails: [' , ', '\n'] }, badRequest('You must specify at least one email address.')],
      ['admin', { streamIds: [boardroom] }, badRequest(`Invalid channel ID ${boardroom}. No invites were sent.`)],
      ['admin', { streamIds: [foreignChannel] }, badRequest(`Invalid channel ID ${foreignChannel}. No invites were sent.`)],
      ['admin', { streamIds: [2_147_483_647] }, badRequest('Invalid channel ID 2147483647. No invites were sent.')],
      ['owner', { groupIds: [await w.groupId('role:members')] }, badRequest('Insufficient permission')],
      ['owner', { groupIds: [await other.groupId('support')] }, badRequest('Invalid user group')],
      ['owner', { groupIds: [await w.groupId('alumni')] }, badRequest('User group is deactivated.')],
      ['member', { welcomeMessageCustomText: '' }, badRequest('Must be an organization administrator')],
      [
        'admin',
        { welcomeMessageCustomText: 'x'.repeat(8001) },
        badRequest('welcome_message_custom_text is too long (limit: 8000 characters)'),
      ],
      ['admin', { inviteExpiresInMinutes: -(2 ** 31) }, badRequest('Invalid invite_expires_in_minutes: Value error, Out of range')],
      // Channel errors come before the welcome-text check, address errors after both.
      [
        'member',
        { streamIds: [boardroom], welcomeMessageCustomText: 'hi', inviteeEmails: ['bad'] },
        badRequest(`Invalid channel ID ${boardroom}. No invites were sent.`),
      ],
    ];
    for (const [who, input, expected] of cases) expect(await preview(w, who, input), `${who} ${JSON.stringify(input)}`).toEqual(expected);
    expect(await writtenRows()).toEqual(before);
  });

  test('the settings of who may invite and who may add subscribers', async () => {
    const w = await world((f) => (f.organization.can_invite_users_group = 'role:administrators'));
    expect(await preview(w, 'member', {})).toEqual(badRequest('Insufficient permission'));
    expect((await preview(w, 'admin', {})).__typename).toBe('InvitationPreview');
    const subscribers = await world((f) => (f.organization.can_add_subscribers_group = 'role:administrators'));
    const design = await subscribers.channelId('design');
    expect(await preview(subscribers, 'member', { streamIds: [design] })).toEqual(
      badRequest('You do not have permission to subscribe other users to channels.'),
    );
    expect((await preview(subscribers, 'admin', { streamIds: [design] })).__typename).toBe('InvitationPreview');
  });

  test('the limits: a preview reports the refusal the send would give, counting what was sent today', async () => {
    const daily = await world((f) => (f.organization.max_invites = 3));
    await createInvitations(server, daily, [{ email: 'earlier@elsewhere.example' }]);
    expect(await preview(daily, 'member', { inviteeEmails: ['a@elsewhere.example, b@elsewhere.example'] })).toMatchObject({
      wouldInvite: 2,
    });
    expect(
      await preview(daily, 'member', { inviteeEmails: ['a@elsewhere.example, b@elsewhere.example, mark@lighthouse.example'] }),
    ).toEqual(
      invitationFailed(
        'To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.',
        { daily: true },
      ),
    );
    // Active humans: four non-guests and a guest.
    const seats = await world((f) => (f.organization.license_limit = 5));
    expect(await preview(seats, 'admin', { inviteeEmails: ['a@elsewhere.example, b@elsewhere.example'] })).toEqual(
      invitationFailed('Your organization does not have enough Zulip licenses. Invitations were not sent.', { license: true }),
    );
    expect(await preview(seats, 'admin', { inviteeEmails: ['a@elsewhere.example'] })).toMatchObject({ wouldInvite: 1 });
    const joinedNow = Math.floor(Date.now() / 1000);
    const young = await world((f) => {
      f.organization.invite_required = false;
      for (const u of f.users) u.date_joined = joinedNow;
    });
    expect(await preview(young, 'member', {})).toEqual(
      invitationFailed(
        'Your account is too new to send invites for this organization. Ask an organization admin, or a more experienced user.',
      ),
    );
    expect((await preview(young, 'admin', {})).__typename).toBe('InvitationPreview');
  });

  test("answers while another request holds the organization's lock: it takes no lock", async () => {
    const w = await world();
    const holder = await connectToTestDatabase();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT id FROM organization WHERE id = $1 FOR UPDATE', [w.org.id]);
      const [{ pid }] = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows as [{ pid: number }];
      // Were the preview to take the lock, a backend would be seen waiting on the holder (however slow the machine).
      let answered = false;
      const waitsOnTheHolder = async () => {
        while (!answered) {
          const [waiting] = await server.app.sql.rows<{ n: number }>(
            'SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))',
            [pid],
          );
          if (waiting!.n > 0) return 'a backend waited on the lock';
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      };
      const answer = await Promise.race([preview(w, 'member', {}).finally(() => (answered = true)), waitsOnTheHolder()]);
      expect(answer).toEqual({ __typename: 'InvitationPreview', wouldInvite: 1, addresses: [invite('new@elsewhere.example')] });
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
  });

  test('10,000 addresses are answered whole, and nothing is written', async () => {
    const w = await world((f) => (f.organization.max_invites = null));
    const before = await writtenRows();
    const many = Array.from({ length: 10_000 }, (_, i) => `many-${i}@elsewhere.example`);
    const result = await preview(w, 'owner', { inviteeEmails: [many.join(',')] });
    expect(result).toEqual({ __typename: 'InvitationPreview', wouldInvite: 10_000, addresses: many.map(invite) });
    expect(await writtenRows()).toEqual(before);
  });

  test('without credentials the answer is 401; wrong types are validation errors', async () => {
    const anonymous = await gql(server.url, PreviewInvitations, { input: { inviteeEmails: ['a@b.example'], streamIds: [] } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.errors?.[0]?.extensions?.code).toBe('UNAUTHORIZED');
    const w = await world();
    const response = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: w.users.member.auth },
      body: JSON.stringify({
        query: 'query { previewInvitations(input: { inviteeEmails: ["a@b.example"], streamIds: [1e20] }) { __typename } }',
      }),
    });
    const body = (await response.json()) as { data?: unknown; errors: { message: string }[] };
    expect(body.data).toBeUndefined();
    expect(body.errors[0]!.message).toMatch(/Int cannot represent non-integer value: 1e20/);
  });
});
