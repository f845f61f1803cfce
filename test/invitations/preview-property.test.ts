// Property (fast-check, fixed seed): over generated organizations (settings that matter to inviting,
// extra users active or not, callers old or new) and generated inputs (addresses of members,
// deactivated users, bots, fresh, malformed, disposable, duplicated in any case; channel and group ids
// valid or not; roles, welcome texts, expiries), previewInvitations followed at once by
// sendInvitations, same caller and input, over real HTTP: the send gives the verdict the preview gave
// for every address and stores exactly the invitations it announced, or the same refusal.
import fc from 'fast-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { PreviewInvitations } from '../support/invitation-documents.js';
import { graphql } from '../generated/gql.js';
import type { PreviewInvitationsQuery, Role, SendInvitationsInput } from '../generated/graphql.js';
import { gql } from '../support/graphql.js';
import { createInvitations } from '../support/invitations.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World, type WorldUserName } from '../support/world.js';
import type { OrganizationFile } from '../../src/import/organization-file.js';

const SEED = 20260521;
const RUNS = 50;

let server: TestServer;
/** Another organization, whose channel and group ids the inputs may name. */
let other: World;
beforeAll(async () => {
  server = await startTestServer();
  other = await createWorld(server.app.prisma);
});
afterAll(() => server?.close());

const SendAfterPreview = graphql(`
  mutation SendAfterPreview($input: SendInvitationsInput!) {
    sendInvitations(input: $input) {
      __typename
      ... on SendInvitationsSuccess {
        invitations {
          email
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

const DAY_SECONDS = 24 * 3600;
const ROLE_CODES = [100, 200, 300, 400, 600] as const;

// --- Organizations -------------------------------------------------------------------------------

/** One of the values, each as often as its weight says. */
const weighted = <T>(choices: [T, number][]) => fc.oneof(...choices.map(([value, weight]) => ({ arbitrary: fc.constant(value), weight })));

const organizationArbitrary = fc.record({
  inviteRequired: fc.boolean(),
  restrictedToDomains: weighted([
    [false, 5],
    [true, 1],
  ]),
  disposableRefused: fc.boolean(),
  /** max_invites = the invitations sent today + this; null: no daily limit. */
  dailyHeadroom: weighted<number | null>([
    [null, 12],
    [0, 1],
    [2, 1],
    [4, 1],
  ]),
  /** license_limit = the seats taken + this; null: no limit. */
  spareSeats: weighted<number | null>([
    [null, 10],
    [-1, 1],
    [2, 1],
    [8, 1],
  ]),
  canInviteUsers: weighted([
    ['role:members', 24],
    ['role:administrators', 1],
    ['role:moderators', 1],
    ['role:fullmembers', 1],
    ['role:nobody', 1],
  ]),
  waitingPeriodDays: fc.constantFrom(0, 10),
  canAddSubscribers: fc.constantFrom('role:members', 'role:administrators'),
  designInviteOnly: fc.boolean(),
  /** Extra users extra0@, extra1@, ... with these roles, active or not. */
  extraUsers: fc.array(fc.record({ role: fc.constantFrom(...ROLE_CODES), active: fc.boolean() }), { maxLength: 4 }),
  /** The base users who joined yesterday rather than months ago. */
  newcomers: fc.subarray(['olga', 'adam', 'mona', 'mark', 'gina', 'bolt-bot']),
  invitationsSentToday: fc.integer({ min: 0, max: 3 }),
});
type GeneratedOrganization = typeof organizationArbitrary extends fc.Arbitrary<infer T> ? T : never;

function customize(o: GeneratedOrganization) {
  return (file: OrganizationFile) => {
    const now = Math.floor(Date.now() / 1000);
    Object.assign(file.organization, {
      invite_required: o.inviteRequired,
      emails_restricted_to_domains: o.restrictedToDomains,
      disallow_disposable_email_addresses: o.disposableRefused,
      max_invites: o.dailyHeadroom === null ? null : o.invitationsSentToday + o.dailyHeadroom,
      can_invite_users_group: o.canInviteUsers,
      waiting_period_threshold: o.waitingPeriodDays,
      can_add_subscribers_group: o.canAddSubscribers,
    });
    for (const user of file.users) {
      user.date_joined = o.newcomers.includes(user.email.split('@')[0]!) ? now - DAY_SECONDS : now - 100 * DAY_SECONDS;
    }
    o.extraUsers.forEach(({ role, active }, i) =>
      file.users.push({
        email: `extra${i}@lighthouse.example`,
        full_name: `Extra ${i}`,
        role,
        is_active: active,
        is_bot: false,
        bot_type: null,
        date_joined: now - 100 * DAY_SECONDS,
      }),
    );
    const seatsTaken = file.users.filter((u) => u.is_active && !u.is_bot && u.role !== 600).length;
    file.organization.license_limit = o.spareSeats === null ? null : Math.max(0, seatsTaken + o.spareSeats);
    file.channels.find((c) => c.name === 'design')!.invite_only = o.designInviteOnly;
  };
}

// --- Inputs --------------------------------------------------------------------------------------

const ACTIVE = ['olga', 'adam', 'mona', 'mark', 'gina', 'bolt-bot'].map((n) => `${n}@lighthouse.example`);
/** Dora is deactivated; the extra users are when generated so (or do not exist). */
const MAYBE_DEACTIVATED = ['dora', 'extra0', 'extra1', 'extra2', 'extra3'].map((n) => `${n}@lighthouse.example`);
const FRESH = ['new1@elsewhere.example', 'new2@lighthouse.example', 'new3@sub.lighthouse.example', '"quoted"@lighthouse.example'];
/** Fresh addresses that some settings refuse ('+', other domains, disposable), and a system bot's. */
const SPECIAL = ['a+b@lighthouse.example', 'x@mailinator.com', 'welcome-bot@zulip.com'];
const MALFORMED = ['nope', 'a@@b.example', 'x@-bad-.example', 'two words@elsewhere.example', '@elsewhere.example'];

const addressArbitrary = fc
  .tuple(
    fc.oneof(
      { arbitrary: fc.constantFrom(...ACTIVE), weight: 3 },
      { arbitrary: fc.constantFrom(...MAYBE_DEACTIVATED), weight: 3 },
      { arbitrary: fc.constantFrom(...FRESH), weight: 8 },
      { arbitrary: fc.constantFrom(...SPECIAL), weight: 2 },
      { arbitrary: fc.constantFrom(...MALFORMED), weight: 1 },
    ),
    fc.boolean(),
    fc.boolean(),
  )
  .map(([address, upperCase, named]) => {
    const spelled = upperCase ? address.toUpperCase() : address;
    return named ? `Someone <${spelled}>` : spelled;
  });

const entryArbitrary = fc
  .tuple(fc.array(addressArbitrary, { minLength: 1, maxLength: 3 }), fc.constantFrom(',', '\n', ', ', ',,'))
  .map(([addresses, separator]) => addresses.join(separator));

type ChannelName = 'general' | 'boardroom' | 'old-news' | 'design' | 'foreign' | 'missing';
type GroupName = 'support' | 'leads' | 'alumni' | 'role:members' | 'foreign' | 'missing';

// Each refusal of the whole request is rare, so that most runs reach the addresses and the limits.
const inputArbitrary = fc.record({
  caller: weighted<WorldUserName>([
    ['owner', 4],
    ['admin', 4],
    ['moderator', 3],
    ['member', 8],
    ['guest', 1],
    ['bot', 1],
  ]),
  entries: fc.oneof(
    { arbitrary: fc.array(entryArbitrary, { minLength: 1, maxLength: 3 }), weight: 20 },
    // Only addresses that have accounts (or are reserved): the send invites nobody.
    {
      arbitrary: fc.array(fc.constantFrom(...ACTIVE, 'dora@lighthouse.example', 'welcome-bot@zulip.com'), { minLength: 1, maxLength: 3 }),
      weight: 3,
    },
    { arbitrary: fc.constant<string[]>([]), weight: 1 },
  ),
  channels: fc.oneof(
    { arbitrary: fc.constant<ChannelName[]>([]), weight: 5 },
    {
      arbitrary: fc.subarray<ChannelName>(['general', 'boardroom', 'old-news', 'design', 'foreign', 'missing'], { maxLength: 2 }),
      weight: 1,
    },
  ),
  groups: fc.oneof(
    { arbitrary: fc.constant<GroupName[]>([]), weight: 10 },
    {
      arbitrary: fc.subarray<GroupName>(['support', 'leads', 'alumni', 'role:members', 'foreign', 'missing'], { maxLength: 2 }),
      weight: 1,
    },
  ),
  inviteAs: weighted<Role>([
    ['MEMBER', 16],
    ['GUEST', 4],
    ['MODERATOR', 1],
    ['ADMINISTRATOR', 1],
    ['OWNER', 1],
  ]),
  welcome: weighted<string | undefined>([
    [undefined, 20],
    ['', 1],
    ['Welcome!', 1],
  ]),
  expiry: weighted<number | null | undefined>([
    [undefined, 16],
    [null, 2],
    [60, 2],
    [-(2 ** 31), 1],
  ]),
});
type GeneratedInput = typeof inputArbitrary extends fc.Arbitrary<infer T> ? T : never;

const MISSING_ID = 2_147_483_647;

async function toInput(w: World, g: GeneratedInput): Promise<SendInvitationsInput> {
  const channelId = (name: ChannelName) =>
    name === 'missing' ? MISSING_ID : name === 'foreign' ? other.channelId('general') : w.channelId(name);
  const groupId = (name: GroupName) => (name === 'missing' ? MISSING_ID : name === 'foreign' ? other.groupId('support') : w.groupId(name));
  return {
    inviteeEmails: g.entries,
    streamIds: await Promise.all(g.channels.map(channelId)),
    groupIds: await Promise.all(g.groups.map(groupId)),
    inviteAs: g.inviteAs,
    ...(g.welcome === undefined ? {} : { welcomeMessageCustomText: g.welcome }),
    ...(g.expiry === undefined ? {} : { inviteExpiresInMinutes: g.expiry }),
  };
}

// --- The property --------------------------------------------------------------------------------

type Preview = PreviewInvitationsQuery['previewInvitations'];

async function previewOf(w: World, caller: WorldUserName, input: SendInvitationsInput) {
  const result = await gql(server.url, PreviewInvitations, { input }, w.users[caller].auth);
  expect(result.errors).toBeUndefined();
  return result.data!.previewInvitations;
}

async function send(w: World, caller: WorldUserName, input: SendInvitationsInput) {
  const result = await gql(server.url, SendAfterPreview, { input }, w.users[caller].auth);
  expect(result.errors).toBeUndefined();
  return result.data!.sendInvitations;
}

/** What sendInvitations answers when it does what the preview announced. */
function sendAnswerFor(preview: Preview) {
  if (preview.__typename !== 'InvitationPreview') return preview;
  const invited = preview.addresses.filter((a) => a.willInvite).map(({ email }) => ({ email }));
  const skipped = preview.addresses.filter((a) => !a.willInvite).map(({ email, reason, deactivated }) => ({ email, reason, deactivated }));
  if (skipped.length === 0) return { __typename: 'SendInvitationsSuccess', invitations: invited };
  return {
    __typename: 'InvitationFailedError',
    message:
      "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!",
    code: 'INVITATION_FAILED',
    errors: skipped,
    sentInvitations: true,
    dailyLimitReached: false,
    licenseLimitReached: false,
  };
}

/** The refusal, or each verdict's kind (an invitation, or a skip with its reason and flag). */
function outcomeKinds(preview: Preview): string[] {
  if (preview.__typename !== 'InvitationPreview') return [`${preview.__typename}:${preview.message}`];
  return preview.addresses.map((a) => (a.willInvite ? 'verdict:invite' : `verdict:${a.reason}${a.deactivated ? ' (deactivated)' : ''}`));
}

const invitationEmails = async (w: World) =>
  (
    await server.app.prisma.invitation.findMany({ where: { organizationId: w.org.id }, orderBy: { id: 'asc' }, select: { email: true } })
  ).map((i) => i.email);

/** How often each kind of outcome occurred: the generators must reach all of them. */
const outcomes = new Map<string, number>();

test('a preview followed at once by the send: the same verdict for every address, or the same refusal', async () => {
  await fc.assert(
    // Without fast-check's bias toward the first choices, the runs spread over the weights.
    fc.asyncProperty(fc.noBias(organizationArbitrary), fc.noBias(inputArbitrary), async (organization, generated) => {
      const w = await createWorld(server.app.prisma, customize(organization));
      const earlier = Array.from({ length: organization.invitationsSentToday }, (_, i) => ({ email: `earlier${i}@elsewhere.example` }));
      if (earlier.length > 0) await createInvitations(server, w, earlier);
      const input = await toInput(w, generated);

      const preview = await previewOf(w, generated.caller, input);
      const before = await invitationEmails(w);
      const sent = await send(w, generated.caller, input);
      const stored = (await invitationEmails(w)).slice(before.length);

      expect(sent).toEqual(sendAnswerFor(preview));
      const announced = preview.__typename === 'InvitationPreview' ? preview.addresses.filter((a) => a.willInvite).map((a) => a.email) : [];
      expect(stored).toEqual(announced);
      if (preview.__typename === 'InvitationPreview') expect(preview.wouldInvite).toBe(announced.length);

      for (const kind of outcomeKinds(preview)) outcomes.set(kind, (outcomes.get(kind) ?? 0) + 1);
    }),
    { seed: SEED, numRuns: RUNS },
  );
  console.log(Object.fromEntries(outcomes));
  // Every kind of verdict, and refusals from each stage: per address, the limits and the request checks.
  expect([...outcomes.keys()]).toEqual(
    expect.arrayContaining([
      'verdict:invite',
      'verdict:Already has an account.',
      'verdict:Account has been deactivated. (deactivated)',
      'verdict:Reserved for system bots.',
      "InvitationFailedError:We weren't able to invite anyone.",
      "InvitationFailedError:Some emails did not validate, so we didn't send any invitations.",
      expect.stringMatching(/^InvitationFailedError:To protect users/),
      expect.stringMatching(/^InvitationFailedError:Your organization does not have enough Zulip licenses/),
      expect.stringMatching(/^InvitationFailedError:Your account is too new/),
      expect.stringMatching(/^BadRequestError:Invalid channel ID/),
      'BadRequestError:Insufficient permission',
    ]),
  );
}, 60_000);
