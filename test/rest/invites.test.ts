// POST /api/v1/invites through the REST door: every step of behaviour.md 3.2 (with the Decisions),
// whole bodies, statuses, OpenAPI validation, and what was (or was not) written.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generateApiKey, hashApiKey } from '../../src/domain/users/api-keys.js';
import type { OrganizationFile } from '../../src/import/organization-file.js';
import { badRequestBody, invitationFailedBody, postInvites, storedInvitations, type RestResult } from '../support/invites.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';
import { whileOrganizationLocked } from '../support/contention.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const SUCCESS = { result: 'success', msg: '' };

async function world(customize?: (file: OrganizationFile) => void): Promise<World> {
  return createWorld(server.app.prisma, customize);
}

function invite(w: World, who: keyof World['users'], fields: Record<string, string>, options?: Parameters<typeof postInvites>[3]) {
  return postInvites(server.url, w.users[who].auth, fields, options);
}

async function expectNothingWritten(w: World) {
  expect(await storedInvitations(server.app.prisma, w.org.id)).toEqual([]);
  expect(await server.app.prisma.outboxEmail.count({ where: { organizationId: w.org.id } })).toBe(0);
}

async function expectRefused(w: World, result: RestResult, body: Record<string, unknown>) {
  expect(result).toEqual({ status: 400, body });
  await expectNothingWritten(w);
}

const basic = (emails: string, extra: Record<string, string> = {}) => ({ invitee_emails: emails, stream_ids: '[]', ...extra });

describe('who may call it at all (steps 2-3, before any parameter is read)', () => {
  test('a guest is refused even with broken parameters', async () => {
    const w = await world();
    await expectRefused(w, await invite(w, 'guest', { stream_ids: 'nonsense' }), badRequestBody('Not allowed for guest users'));
  });

  test('a bot is refused', async () => {
    const w = await world();
    await expectRefused(
      w,
      await invite(w, 'bot', basic('new@lighthouse.example')),
      badRequestBody('This endpoint does not accept bot requests.'),
    );
  });
});

describe('parameter parsing (step 4): declaration order, first failure wins, exact templates', () => {
  const cases: [string, Record<string, string>, Record<string, unknown>][] = [
    ['group_ids not JSON', { group_ids: 'x', stream_ids: 'x' }, badRequestBody('group_ids is not valid JSON')],
    ['group_ids not a list', { group_ids: '{"a":1}' }, badRequestBody('group_ids is not a list')],
    ['group_ids item not an integer', { group_ids: '[1,"2"]' }, badRequestBody('group_ids[1] is not an integer')],
    [
      'include_realm_default_subscriptions not a boolean',
      { include_realm_default_subscriptions: '1' },
      badRequestBody('include_realm_default_subscriptions is not a boolean'),
    ],
    [
      'include_realm_default_subscriptions Python spelling',
      { include_realm_default_subscriptions: 'True' },
      badRequestBody('include_realm_default_subscriptions is not valid JSON'),
    ],
    ['invite_as not JSON', { invite_as: 'member' }, badRequestBody('invite_as is not valid JSON')],
    ['invite_as not an integer', { invite_as: '"400"' }, badRequestBody('invite_as is not an integer')],
    ['invite_as not a role', { invite_as: '500' }, badRequestBody('Invalid invite_as: Value error, Not in the list of possible values')],
    [
      'invite_expires_in_minutes a string',
      { invite_expires_in_minutes: '"60"' },
      badRequestBody('invite_expires_in_minutes is not an integer'),
    ],
    ['invite_expires_in_minutes empty', { invite_expires_in_minutes: '' }, badRequestBody('invite_expires_in_minutes is not valid JSON')],
    ['notify_referrer_on_join yes', { notify_referrer_on_join: 'yes' }, badRequestBody('notify_referrer_on_join is not valid JSON')],
    ['stream_ids not a list', { stream_ids: '5' }, badRequestBody('stream_ids is not a list')],
    ['stream_ids item not an integer', { stream_ids: '[1, 2.5]' }, badRequestBody('stream_ids[1] is not an integer')],
    ['stream_ids not JSON', { stream_ids: '[1,' }, badRequestBody('stream_ids is not valid JSON')],
  ];
  test.each(cases)('%s', async (_name, fields, body) => {
    const w = await world();
    await expectRefused(w, await invite(w, 'member', { invitee_emails: 'new@lighthouse.example', stream_ids: '[]', ...fields }), body);
  });

  test('a missing invitee_emails names the variable', async () => {
    const w = await world();
    await expectRefused(w, await invite(w, 'member', { stream_ids: '[]' }), {
      result: 'error',
      msg: "Missing 'invitee_emails' argument",
      var_name: 'invitee_emails',
      code: 'REQUEST_VARIABLE_MISSING',
    });
  });

  test('a missing stream_ids beats "Insufficient permission"', async () => {
    const w = await world((f) => (f.organization.can_invite_users_group = 'role:nobody'));
    await expectRefused(w, await invite(w, 'member', { invitee_emails: 'new@lighthouse.example' }), {
      result: 'error',
      msg: "Missing 'stream_ids' argument",
      var_name: 'stream_ids',
      code: 'REQUEST_VARIABLE_MISSING',
    });
  });

  test('a non-administrator with 8001 characters of welcome text gets the length error', async () => {
    const w = await world();
    const result = await invite(w, 'member', basic('new@lighthouse.example', { welcome_message_custom_text: 'x'.repeat(8001) }));
    await expectRefused(w, result, badRequestBody('welcome_message_custom_text is too long (limit: 8000 characters)'));
  });

  test('the length limit counts code points: 8000 astral characters are accepted', async () => {
    const w = await world();
    const text = '🚀'.repeat(8000);
    expect(await invite(w, 'admin', basic('new@lighthouse.example', { welcome_message_custom_text: text }))).toEqual({
      status: 200,
      body: SUCCESS,
    });
    expect((await storedInvitations(server.app.prisma, w.org.id))[0]!.welcomeMessageCustomText).toBe(text);
  });

  test('a JSON request body is not read: every parameter is missing', async () => {
    const w = await world();
    const response = await fetch(`${server.url}/api/v1/invites`, {
      method: 'POST',
      headers: { authorization: w.users.member.auth, 'content-type': 'application/json' },
      body: JSON.stringify(basic('new@lighthouse.example')),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      result: 'error',
      msg: "Missing 'invitee_emails' argument",
      var_name: 'invitee_emails',
      code: 'REQUEST_VARIABLE_MISSING',
    });
  });
});

describe('invite permission and the role matrix (steps 5-7, Decision 1)', () => {
  test('with can_invite_users_group = role:nobody even the owner is refused', async () => {
    const w = await world((f) => (f.organization.can_invite_users_group = 'role:nobody'));
    await expectRefused(w, await invite(w, 'owner', basic('new@lighthouse.example')), badRequestBody('Insufficient permission'));
  });

  test('with a custom group, administrators outside it are refused and its members may invite', async () => {
    const w = await world((f) => (f.organization.can_invite_users_group = 'support'));
    await expectRefused(w, await invite(w, 'admin', basic('new@lighthouse.example')), badRequestBody('Insufficient permission'));
    expect(await invite(w, 'member', basic('new@lighthouse.example'))).toEqual({ status: 200, body: SUCCESS });
  });

  const matrix: [keyof World['users'], number, Record<string, unknown> | null][] = [
    ['member', 100, { result: 'error', msg: 'Must be an organization owner', code: 'UNAUTHORIZED_PRINCIPAL' }],
    ['admin', 100, { result: 'error', msg: 'Must be an organization owner', code: 'UNAUTHORIZED_PRINCIPAL' }],
    ['owner', 100, null],
    ['moderator', 200, badRequestBody('Must be an organization administrator')],
    ['admin', 200, null],
    ['member', 300, badRequestBody('Must be an organization administrator')],
    ['moderator', 300, null],
    ['member', 400, null],
    ['member', 600, null],
  ];
  test.each(matrix)('%s inviting as %i', async (who, inviteAs, refusal) => {
    const w = await world();
    const result = await invite(w, who, basic('new@lighthouse.example', { invite_as: String(inviteAs) }));
    if (refusal) return expectRefused(w, result, refusal);
    expect(result).toEqual({ status: 200, body: SUCCESS });
    expect((await storedInvitations(server.app.prisma, w.org.id)).map((i) => i.invitedAs)).toEqual([inviteAs]);
  });
});

describe('the address list (step 8 and 3.4 with Decision 7)', () => {
  test.each(['', ',', ' \n , '])('%j is "no address"', async (emails) => {
    const w = await world();
    await expectRefused(w, await invite(w, 'member', basic(emails)), badRequestBody('You must specify at least one email address.'));
  });

  test('commas, newlines, display names, case-insensitive duplicates and empty pieces', async () => {
    const w = await world();
    const emails = 'Alice Test <Alice@Elsewhere.example>,alice@elsewhere.example\n\nBob<bob@elsewhere.example>, carol@elsewhere.example ,';
    expect(await invite(w, 'member', basic(emails))).toEqual({ status: 200, body: SUCCESS });
    const stored = await storedInvitations(server.app.prisma, w.org.id);
    expect(stored.map((i) => i.email)).toEqual(['Alice@Elsewhere.example', 'bob@elsewhere.example', 'carol@elsewhere.example']);
  });
});

describe('channels (steps 10-11)', () => {
  test('the first inaccessible id is named: unknown, archived, other organization, private, out of range', async () => {
    const w = await world();
    const other = await world();
    const cases: [string, string][] = [
      [`[${await w.channelId('general')}, 999999999, 5]`, '999999999'],
      [`[${await w.channelId('old-news')}]`, String(await w.channelId('old-news'))],
      [`[${await other.channelId('general')}]`, String(await other.channelId('general'))],
      [`[${await w.channelId('boardroom')}]`, String(await w.channelId('boardroom'))],
      ['[100000000000000]', '100000000000000'],
      ['[-3]', '-3'],
    ];
    for (const [streamIds, named] of cases) {
      const result = await invite(w, 'admin', basic('new@lighthouse.example', { stream_ids: streamIds }));
      await expectRefused(w, result, badRequestBody(`Invalid channel ID ${named}. No invites were sent.`));
    }
  });

  test('the owner, subscribed to the private channel, may invite to it', async () => {
    const w = await world();
    const boardroom = await w.channelId('boardroom');
    expect(await invite(w, 'owner', basic('new@lighthouse.example', { stream_ids: `[${boardroom}]` }))).toEqual({
      status: 200,
      body: SUCCESS,
    });
    expect((await storedInvitations(server.app.prisma, w.org.id))[0]!.channels).toEqual([{ channelId: boardroom }]);
  });

  test('without the add-subscribers permission only default channels may be listed', async () => {
    const w = await world((f) => (f.organization.can_add_subscribers_group = 'role:administrators'));
    const design = await w.channelId('design');
    const general = await w.channelId('general');
    await expectRefused(
      w,
      await invite(w, 'member', basic('new@lighthouse.example', { stream_ids: `[${general}, ${design}]` })),
      badRequestBody('You do not have permission to subscribe other users to channels.'),
    );
    const withDefaults = basic('new@lighthouse.example', { stream_ids: `[${general}]`, include_realm_default_subscriptions: 'true' });
    expect(await invite(w, 'member', withDefaults)).toEqual({ status: 200, body: SUCCESS });
    expect(await invite(w, 'admin', basic('other@lighthouse.example', { stream_ids: `[${design}]` }))).toEqual({
      status: 200,
      body: SUCCESS,
    });
  });
});

describe('groups (step 12)', () => {
  test('unknown, other organization, anonymous, deactivated and system groups', async () => {
    const w = await world();
    const other = await world();
    const leads = await server.app.prisma.userGroup.findUniqueOrThrow({ where: { id: await w.groupId('leads') } });
    const cases: [number, string][] = [
      [999999999, 'Invalid user group'],
      [await other.groupId('support'), 'Invalid user group'],
      [leads.canAddMembersGroupId!, 'Invalid user group'],
      [await w.groupId('alumni'), 'User group is deactivated.'],
      [await w.groupId('role:members'), 'Insufficient permission'],
    ];
    for (const [groupId, msg] of cases) {
      await expectRefused(w, await invite(w, 'owner', basic('new@lighthouse.example', { group_ids: `[${groupId}]` })), badRequestBody(msg));
    }
  });

  test('adding members follows the group settings, with no administrator bypass', async () => {
    const w = await world();
    const leads = await w.groupId('leads');
    const support = await w.groupId('support');
    await expectRefused(
      w,
      await invite(w, 'member', basic('new@lighthouse.example', { group_ids: `[${support}, ${leads}]` })),
      badRequestBody('Insufficient permission'),
    );
    await expectRefused(
      w,
      await invite(w, 'moderator', basic('new@lighthouse.example', { group_ids: `[${leads}]` })),
      badRequestBody('Insufficient permission'),
    );
    expect(await invite(w, 'admin', basic('new@lighthouse.example', { group_ids: `[${leads}, ${support}, ${leads}]` }))).toEqual({
      status: 200,
      body: SUCCESS,
    });
    expect((await storedInvitations(server.app.prisma, w.org.id))[0]!.groups).toEqual(
      expect.arrayContaining([{ groupId: leads }, { groupId: support }]),
    );
  });
});

describe('welcome text (step 13)', () => {
  test('a non-administrator may not supply it, not even empty; channel errors come first', async () => {
    const w = await world();
    await expectRefused(
      w,
      await invite(w, 'moderator', basic('new@lighthouse.example', { welcome_message_custom_text: '' })),
      badRequestBody('Must be an organization administrator'),
    );
    await expectRefused(
      w,
      await invite(w, 'member', basic('new@lighthouse.example', { welcome_message_custom_text: 'hi', stream_ids: '[999999999]' })),
      badRequestBody('Invalid channel ID 999999999. No invites were sent.'),
    );
  });

  test('an administrator stores "" as "" and an omitted text as null', async () => {
    const w = await world();
    expect(await invite(w, 'admin', basic('a@elsewhere.example', { welcome_message_custom_text: '' }))).toEqual({
      status: 200,
      body: SUCCESS,
    });
    expect(await invite(w, 'admin', basic('b@elsewhere.example'))).toEqual({ status: 200, body: SUCCESS });
    expect((await storedInvitations(server.app.prisma, w.org.id)).map((i) => i.welcomeMessageCustomText)).toEqual(['', null]);
  });
});

describe('limits (steps 15-17)', () => {
  const addresses = (n: number, prefix = 'p') => Array.from({ length: n }, (_, i) => `${prefix}${i}@elsewhere.example`).join(',');
  const dailyLimit = invitationFailedBody(
    'To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.',
    { daily: true },
  );

  test('the daily limit counts invitations sent in the last 24 hours plus the request', async () => {
    const w = await world((f) => (f.organization.max_invites = 3));
    await expectRefused(w, await invite(w, 'admin', basic(addresses(4))), dailyLimit);
    expect(await invite(w, 'admin', basic(addresses(3)))).toEqual({ status: 200, body: SUCCESS });
    const again = await invite(w, 'admin', basic('late@elsewhere.example'));
    expect(again).toEqual({ status: 400, body: dailyLimit });
    expect(await storedInvitations(server.app.prisma, w.org.id)).toHaveLength(3);
  });

  test('invitations older than 24 hours no longer count', async () => {
    const w = await world((f) => (f.organization.max_invites = 2));
    expect(await invite(w, 'admin', basic(addresses(2)))).toEqual({ status: 200, body: SUCCESS });
    await server.app.prisma.outboxEmail.updateMany({
      where: { organizationId: w.org.id },
      data: { createdAt: new Date(Date.now() - 25 * 3600 * 1000) },
    });
    expect(await invite(w, 'admin', basic(addresses(2, 'q')))).toEqual({ status: 200, body: SUCCESS });
  });

  test('without an organization limit the server default applies (INVITES_DEFAULT_REALM_DAILY_MAX)', async () => {
    const limited = await startTestServer({ invitesDefaultRealmDailyMax: 1 });
    try {
      const w = await createWorld(limited.app.prisma, (f) => (f.organization.max_invites = null));
      const result = await postInvites(limited.url, w.users.admin.auth, basic(addresses(2)));
      expect(result).toEqual({ status: 400, body: dailyLimit });
    } finally {
      await limited.close();
    }
  });

  test('the license limit counts seats: non-guests one each, guests five to a seat', async () => {
    // Active humans: owner, admin, moderator, member (4 non-guests) and one guest.
    const w = await world((f) => (f.organization.license_limit = 5));
    const licenses = invitationFailedBody('Your organization does not have enough Zulip licenses. Invitations were not sent.', {
      license: true,
    });
    await expectRefused(w, await invite(w, 'admin', basic(addresses(2))), licenses);
    await expectRefused(w, await invite(w, 'admin', basic(addresses(25), { invite_as: '600' })), licenses);
    expect(await invite(w, 'admin', basic(addresses(24), { invite_as: '600' }))).toEqual({ status: 200, body: SUCCESS });
    expect(await invite(w, 'admin', basic('one@elsewhere.example'))).toEqual({ status: 200, body: SUCCESS });
  });

  test('an account younger than three days may not invite when the organization does not require invitations', async () => {
    const joinedNow = Math.floor(Date.now() / 1000);
    const w = await world((f) => {
      f.organization.invite_required = false;
      for (const u of f.users) u.date_joined = joinedNow;
    });
    const tooNew = invitationFailedBody(
      'Your account is too new to send invites for this organization. Ask an organization admin, or a more experienced user.',
    );
    await expectRefused(w, await invite(w, 'member', basic('new@elsewhere.example')), tooNew);
    expect(await invite(w, 'admin', basic('new@elsewhere.example'))).toEqual({ status: 200, body: SUCCESS });
  });
});

describe('addresses (steps 18-21)', () => {
  test('invalid addresses refuse the whole request, listing invalid ones before existing accounts', async () => {
    const w = await world();
    const emails = 'mark@lighthouse.example, not-an-address, fine@elsewhere.example, x@mailinator.com, a@@b.example';
    await expectRefused(
      w,
      await invite(w, 'member', basic(emails)),
      invitationFailedBody("Some emails did not validate, so we didn't send any invitations.", {
        errors: [
          ['not-an-address', 'Invalid address.', false],
          ['x@mailinator.com', 'Please use your real email address.', false],
          ['a@@b.example', 'Invalid address.', false],
          ['mark@lighthouse.example', 'Already has an account.', false],
        ],
      }),
    );
  });

  test('organizations restricted to their domains refuse + and outside domains', async () => {
    const w = await world((f) => (f.organization.emails_restricted_to_domains = true));
    const emails = 'a+b@lighthouse.example, c@elsewhere.example, d@sub.lighthouse.example, e@x.mailinator.com';
    await expectRefused(
      w,
      await invite(w, 'member', basic(emails)),
      invitationFailedBody("Some emails did not validate, so we didn't send any invitations.", {
        errors: [
          ['a+b@lighthouse.example', 'Email addresses containing + are not allowed.', false],
          ['c@elsewhere.example', 'Outside your domain.', false],
          ['e@x.mailinator.com', 'Outside your domain.', false],
        ],
      }),
    );
  });

  test('when every address has an account nobody is invited', async () => {
    const w = await world();
    await expectRefused(
      w,
      await invite(w, 'member', basic('MARK@lighthouse.example, dora@lighthouse.example, welcome-bot@zulip.com')),
      invitationFailedBody("We weren't able to invite anyone.", {
        errors: [
          ['MARK@lighthouse.example', 'Already has an account.', false],
          ['dora@lighthouse.example', 'Account has been deactivated.', true],
          ['welcome-bot@zulip.com', 'Reserved for system bots.', false],
        ],
      }),
    );
  });

  test('when some have accounts the others are invited and committed, with sent_invitations', async () => {
    const w = await world();
    const result = await invite(w, 'member', basic('bolt-bot@lighthouse.example, new@elsewhere.example'));
    expect(result).toEqual({
      status: 400,
      body: invitationFailedBody(
        "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!",
        { errors: [['bolt-bot@lighthouse.example', 'Already has an account.', false]], sent: true },
      ),
    });
    expect((await storedInvitations(server.app.prisma, w.org.id)).map((i) => i.email)).toEqual(['new@elsewhere.example']);
    expect(await server.app.prisma.outboxEmail.count({ where: { organizationId: w.org.id } })).toBe(1);
  });

  test("an address with a pending invitation may be invited again; another organization's users may be invited", async () => {
    const w = await world();
    const other = await world();
    await server.app.prisma.user.create({
      data: {
        organizationId: other.org.id,
        email: 'outsider@elsewhere.example',
        emailKey: 'outsider@elsewhere.example',
        fullName: 'Outsider',
        apiKeyHash: hashApiKey(generateApiKey()),
      },
    });
    expect(await invite(w, 'member', basic('again@elsewhere.example'))).toEqual({ status: 200, body: SUCCESS });
    expect(await invite(w, 'member', basic('again@elsewhere.example, OUTSIDER@elsewhere.example'))).toEqual({ status: 200, body: SUCCESS });
    expect(await storedInvitations(server.app.prisma, w.org.id)).toHaveLength(3);
  });
});

describe('what a successful request stores (step 20)', () => {
  test('every field, channel and group, a confirmation key and a queued e-mail', async () => {
    const w = await world();
    const general = await w.channelId('general');
    const design = await w.channelId('design');
    const support = await w.groupId('support');
    const before = Date.now();
    const result = await invite(w, 'admin', {
      invitee_emails: 'Newcomer <new@elsewhere.example>',
      stream_ids: `[${design}, ${general}, ${design}]`,
      group_ids: `[${support}]`,
      invite_as: '300',
      invite_expires_in_minutes: '90',
      include_realm_default_subscriptions: 'true',
      notify_referrer_on_join: 'false',
      welcome_message_custom_text: 'Hello **there**',
    });
    expect(result).toEqual({ status: 200, body: SUCCESS });
    const [stored] = await storedInvitations(server.app.prisma, w.org.id);
    expect(stored).toMatchObject({
      email: 'new@elsewhere.example',
      referrerId: w.users.admin.id,
      invitedAs: 300,
      status: 'PENDING',
      includeRealmDefaultSubscriptions: true,
      notifyReferrerOnJoin: false,
      welcomeMessageCustomText: 'Hello **there**',
      createdUserId: null,
    });
    expect(stored!.confirmationKey).toMatch(/^[a-z2-7]{24}$/);
    expect(stored!.channels.map((c) => c.channelId).sort()).toEqual([general, design].sort());
    expect(stored!.groups).toEqual([{ groupId: support }]);
    const lifetime = stored!.expiresAt!.getTime() - stored!.invitedAt.getTime();
    expect(lifetime).toBe(90 * 60_000);
    expect(stored!.invitedAt.getTime()).toBeGreaterThanOrEqual(before - 1000);
    const [email] = await server.app.prisma.outboxEmail.findMany({ where: { organizationId: w.org.id } });
    expect(email).toMatchObject({
      invitationId: stored!.id,
      toAddress: 'new@elsewhere.example',
      subject: 'Adam Admin has invited you to join Lighthouse Cooperative',
    });
    expect(email!.textBody).toContain(`/accounts/do_confirm/${stored!.confirmationKey}`);
  });

  test('defaults: member, 14400 minutes, notify on join; null expiry never expires; zero and negative are accepted', async () => {
    const w = await world();
    expect(await invite(w, 'member', basic('a@elsewhere.example'))).toEqual({ status: 200, body: SUCCESS });
    expect(await invite(w, 'member', basic('b@elsewhere.example', { invite_expires_in_minutes: 'null' }))).toEqual({
      status: 200,
      body: SUCCESS,
    });
    expect(await invite(w, 'member', basic('c@elsewhere.example', { invite_expires_in_minutes: '-5' }))).toEqual({
      status: 200,
      body: SUCCESS,
    });
    const [a, b, c] = await storedInvitations(server.app.prisma, w.org.id);
    expect(a).toMatchObject({
      invitedAs: 400,
      notifyReferrerOnJoin: true,
      includeRealmDefaultSubscriptions: false,
      welcomeMessageCustomText: null,
    });
    expect(a!.expiresAt!.getTime() - a!.invitedAt.getTime()).toBe(14400 * 60_000);
    expect(b!.expiresAt).toBeNull();
    expect(c!.expiresAt!.getTime() - c!.invitedAt.getTime()).toBe(-5 * 60_000);
  });

  test('an expiry past any representable date is refused cleanly', async () => {
    const w = await world();
    await expectRefused(
      w,
      await invite(w, 'member', basic('a@elsewhere.example', { invite_expires_in_minutes: '1e300' })),
      badRequestBody('invite_expires_in_minutes is not an integer'),
    );
    await expectRefused(
      w,
      await invite(w, 'member', basic('a@elsewhere.example', { invite_expires_in_minutes: '9007199254740991' })),
      badRequestBody('Invalid invite_expires_in_minutes: Value error, Out of range'),
    );
  });

  test('unknown parameters from the body and the query string are reported, sorted', async () => {
    const w = await world();
    const result = await invite(w, 'member', basic('a@elsewhere.example', { zeta: '1', alpha: '2' }), { query: { beta: '3' } });
    expect(result).toEqual({ status: 200, body: { ...SUCCESS, ignored_parameters_unsupported: ['alpha', 'beta', 'zeta'] } });
  });

  test('multipart bodies (as zulip-js sends them) work, and the body wins over the query string', async () => {
    const w = await world();
    const result = await invite(w, 'member', basic('a@elsewhere.example'), {
      multipart: true,
      query: { invitee_emails: 'ignored@elsewhere.example' },
    });
    expect(result).toEqual({ status: 200, body: SUCCESS });
    expect((await storedInvitations(server.app.prisma, w.org.id)).map((i) => i.email)).toEqual(['a@elsewhere.example']);
  });
});

test('concurrent requests cannot pass the daily limit together', async () => {
  const w = await world((f) => (f.organization.max_invites = 5));
  // Released together once two wait on the organization's lock (a process lets no more than two
  // sends per organization wait there; the others queue in the process): they contend for real.
  const results = await whileOrganizationLocked(
    w.org.id,
    () => Promise.all(Array.from({ length: 12 }, (_, i) => invite(w, 'admin', basic(`c${i}@elsewhere.example`)))),
    { waiters: 2 },
  );
  // Every answer counted: a 500 (or anything else) fails the test.
  expect(results.map((r) => r.status).sort()).toEqual([...Array(5).fill(200), ...Array(7).fill(400)]);
  for (const refused of results.filter((r) => r.status === 400))
    expect(refused.body).toMatchObject({ code: 'INVITATION_FAILED', daily_limit_reached: true });
  expect(await storedInvitations(server.app.prisma, w.org.id)).toHaveLength(5);
  expect(await server.app.prisma.outboxEmail.count({ where: { organizationId: w.org.id } })).toBe(5);
});

test("sends waiting for their organization's lock leave the connection pool to everyone else", async () => {
  const [w, other] = [await world(), await world()];
  let otherAnswer: number | undefined;
  // More sends than the pool has connections: were each to wait for the lock in an open transaction,
  // the other organization's request would find no connection until the lock is released.
  const results = await whileOrganizationLocked(
    w.org.id,
    () => Promise.all(Array.from({ length: 15 }, (_, i) => invite(w, 'admin', basic(`pool${i}@elsewhere.example`)))),
    {
      waiters: 2,
      whileBlocked: async () => {
        const response = await fetch(`${server.url}/api/v1/invites`, { headers: { authorization: other.users.admin.auth } });
        otherAnswer = response.status;
      },
    },
  );
  expect(otherAnswer).toBe(200);
  expect(results.map((r) => r.status)).toEqual(Array(15).fill(200));
  expect(await storedInvitations(server.app.prisma, w.org.id)).toHaveLength(15);
});

test('OPTIONS and unsupported methods answer before authentication', async () => {
  const options = await fetch(`${server.url}/api/v1/invites`, { method: 'OPTIONS' });
  expect(options.status).toBe(204);
  expect(options.headers.get('allow')).toBe('GET, HEAD, POST');
  const patch = await fetch(`${server.url}/api/v1/invites`, { method: 'PATCH' });
  expect(patch.status).toBe(405);
  expect(patch.headers.get('allow')).toBe('GET, POST, HEAD');
  expect(await patch.json()).toEqual({ result: 'error', msg: 'Method Not Allowed', allowed_methods: ['GET', 'POST', 'HEAD'] });
});
