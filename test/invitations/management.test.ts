// Listing, revoking and resending invitations through REST and GraphQL: the permission matrix, whole
// bodies, database state, and other organizations' ids behaving as ids that do not exist.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { graphql } from '../generated/gql.js';
import { gql } from '../support/graphql.js';
import { createInvitation, createInvitations, uniqueEmail, type CreatedInvitation } from '../support/invitations.js';
import { startCountingApp } from '../support/query-count.js';
import { callApi } from '../support/rest.js';
import { startServerWithOutbox } from '../support/smtp.js';
import { createWorld, type World } from '../support/world.js';
import type { RunningServer } from '../../src/server.js';

let server: RunningServer;
beforeAll(async () => {
  // No worker: queued e-mail stays in the outbox, where the tests count it.
  server = await startServerWithOutbox({}, { outbox: false });
});
afterAll(() => server.close());

const DAY = 24 * 3600 * 1000;
const seconds = (date: Date) => Math.floor(date.getTime() / 1000);
const noSuchInvitation = { result: 'error', msg: 'No such invitation', code: 'BAD_REQUEST' };

async function scenario() {
  const world = await createWorld(server.app.prisma);
  const other = await createWorld(server.app.prisma);
  const byMember = await createInvitation(server, world, { email: uniqueEmail('m'), referrer: 'member' });
  const byAdmin = await createInvitation(server, world, {
    email: uniqueEmail('a'),
    referrer: 'admin',
    invitedAs: 300,
    notifyReferrerOnJoin: false,
  });
  const asOwner = await createInvitation(server, world, { email: uniqueEmail('o'), referrer: 'owner', invitedAs: 100, expiresAt: null });
  const expired = await createInvitation(server, world, {
    email: uniqueEmail('e'),
    referrer: 'member',
    invitedAt: new Date(Date.now() - 3 * DAY),
    expiresAt: new Date(Date.now() - DAY),
  });
  const revoked = await createInvitation(server, world, { email: uniqueEmail('r'), referrer: 'member', status: 'REVOKED' });
  const elsewhere = await createInvitation(server, other, { email: uniqueEmail('x'), referrer: 'admin' });
  return { world, other, byMember, byAdmin, asOwner, expired, revoked, elsewhere };
}

async function restShape(_world: World, invitation: CreatedInvitation) {
  const row = await server.app.prisma.invitation.findUniqueOrThrow({ where: { id: invitation.id } });
  return {
    id: row.id,
    invited_by_user_id: row.referrerId,
    invited: seconds(row.invitedAt),
    expiry_date: row.expiresAt ? seconds(row.expiresAt) : null,
    email: row.email,
    invited_as: row.invitedAs,
    notify_referrer_on_join: row.notifyReferrerOnJoin,
    is_multiuse: false,
  };
}

const statusOf = async (invitation: CreatedInvitation) =>
  (await server.app.prisma.invitation.findUniqueOrThrow({ where: { id: invitation.id } })).status;
const emailsQueued = (invitation: CreatedInvitation) => server.app.prisma.outboxEmail.count({ where: { invitationId: invitation.id } });

test('GET /invites: administrators see every pending, unexpired invitation; others their own; guests and bots none', async () => {
  const s = await scenario();
  const { users } = s.world;
  const asAdmin = await callApi(server.url, 'GET', '/invites', { authorization: users.admin.auth });
  expect(asAdmin.status).toBe(200);
  expect(asAdmin.body).toEqual({
    result: 'success',
    msg: '',
    invites: [await restShape(s.world, s.byMember), await restShape(s.world, s.byAdmin), await restShape(s.world, s.asOwner)],
  });
  const asMember = await callApi(server.url, 'GET', '/invites', { authorization: users.member.auth });
  expect(asMember.body).toEqual({ result: 'success', msg: '', invites: [await restShape(s.world, s.byMember)] });
  const asModerator = await callApi(server.url, 'GET', '/invites', { authorization: users.moderator.auth });
  expect(asModerator.body).toEqual({ result: 'success', msg: '', invites: [] });
  const asGuest = await callApi(server.url, 'GET', '/invites', { authorization: users.guest.auth });
  expect(asGuest).toMatchObject({ status: 400, body: { result: 'error', msg: 'Not allowed for guest users', code: 'BAD_REQUEST' } });
  const asBot = await callApi(server.url, 'GET', '/invites', { authorization: users.bot.auth });
  expect(asBot).toMatchObject({
    status: 400,
    body: { result: 'error', msg: 'This endpoint does not accept bot requests.', code: 'BAD_REQUEST' },
  });
});

test('DELETE /invites/{id}: referrer or administrator; owner invitations need an owner; the rest is "No such invitation"', async () => {
  const s = await scenario();
  const { users } = s.world;
  const revoke = (who: keyof typeof users, id: number | string) =>
    callApi(server.url, 'DELETE', `/invites/${id}`, { authorization: users[who].auth });

  for (const [who, invitation] of [
    ['moderator', s.byAdmin],
    ['member', s.byAdmin],
    ['admin', s.elsewhere],
    ['member', s.revoked],
  ] as const) {
    const refused = await revoke(who, invitation.id);
    expect({ status: refused.status, body: refused.body }).toEqual({ status: 400, body: noSuchInvitation });
  }
  expect((await revoke('admin', '99999999999999999999999')).body).toEqual(noSuchInvitation);
  expect((await revoke('admin', 0)).body).toEqual(noSuchInvitation);
  const ownerOnly = await revoke('admin', s.asOwner.id);
  expect({ status: ownerOnly.status, body: ownerOnly.body }).toEqual({
    status: 400,
    body: { result: 'error', msg: 'Must be an organization owner', code: 'UNAUTHORIZED_PRINCIPAL' },
  });
  expect((await revoke('guest', s.byMember.id)).body).toEqual({ result: 'error', msg: 'Not allowed for guest users', code: 'BAD_REQUEST' });
  // Refused requests changed nothing.
  expect([await statusOf(s.byAdmin), await statusOf(s.asOwner), await statusOf(s.elsewhere), await statusOf(s.byMember)]).toEqual([
    'PENDING',
    'PENDING',
    'PENDING',
    'PENDING',
  ]);

  const own = await revoke('member', s.byMember.id);
  expect({ status: own.status, body: own.body }).toEqual({ status: 200, body: { result: 'success', msg: '' } });
  expect(await statusOf(s.byMember)).toBe('REVOKED');
  expect((await revoke('member', s.byMember.id)).body).toEqual(noSuchInvitation);
  expect((await revoke('admin', s.expired.id)).body).toEqual({ result: 'success', msg: '' });
  expect((await revoke('owner', s.asOwner.id)).body).toEqual({ result: 'success', msg: '' });
  const withExtra = await callApi(server.url, 'DELETE', `/invites/${s.byAdmin.id}`, {
    authorization: users.admin.auth,
    form: { surprise: '1' },
  });
  expect(withExtra.body).toEqual({ result: 'success', msg: '', ignored_parameters_unsupported: ['surprise'] });
  expect(await statusOf(s.elsewhere)).toBe('PENDING');
});

test('POST /invites/{id}/resend queues the e-mail again, re-dates the invitation and counts towards the daily limit', async () => {
  const s = await scenario();
  const { users } = s.world;
  const resend = (who: keyof typeof users, id: number) =>
    callApi(server.url, 'POST', `/invites/${id}/resend`, { authorization: users[who].auth });

  expect((await resend('member', s.byAdmin.id)).body).toEqual(noSuchInvitation);
  expect((await resend('admin', s.elsewhere.id)).body).toEqual(noSuchInvitation);
  expect((await resend('admin', s.asOwner.id)).body).toEqual({
    result: 'error',
    msg: 'Must be an organization owner',
    code: 'UNAUTHORIZED_PRINCIPAL',
  });
  expect([await emailsQueued(s.byAdmin), await emailsQueued(s.elsewhere), await emailsQueued(s.asOwner)]).toEqual([1, 1, 1]);

  const before = await server.app.prisma.invitation.findUniqueOrThrow({ where: { id: s.expired.id } });
  const revived = await resend('member', s.expired.id);
  expect({ status: revived.status, body: revived.body }).toEqual({ status: 200, body: { result: 'success', msg: '' } });
  const after = await server.app.prisma.invitation.findUniqueOrThrow({ where: { id: s.expired.id } });
  expect(after.invitedAt.getTime()).toBeGreaterThan(before.invitedAt.getTime());
  expect(after.expiresAt!.getTime() - after.invitedAt.getTime()).toBe(2 * DAY);
  expect(after.confirmationKey).toBe(before.confirmationKey);
  expect(await emailsQueued(s.expired)).toBe(2);

  // The organization's limit is 50 a day; fill it up to exactly the limit, then one more is refused.
  const queued = await server.app.prisma.outboxEmail.count({ where: { organizationId: s.world.org.id } });
  await server.app.prisma.organization.update({ where: { id: s.world.org.id }, data: { maxInvites: queued + 1 } });
  expect((await resend('admin', s.byMember.id)).body).toEqual({ result: 'success', msg: '' });
  const limited = await resend('admin', s.byMember.id);
  expect({ status: limited.status, body: limited.body }).toEqual({
    status: 400,
    body: {
      result: 'error',
      msg: 'To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.',
      errors: [],
      sent_invitations: false,
      license_limit_reached: false,
      daily_limit_reached: true,
      code: 'INVITATION_FAILED',
    },
  });
  expect(await emailsQueued(s.byMember)).toBe(2);
});

const Invitations = graphql(`
  query ManagedInvitations($includeInactive: Boolean) {
    invitations(includeInactive: $includeInactive) {
      id
      email
      status
      invitedAs
      expiresAt
      referrer {
        id
      }
    }
  }
`);

const Revoke = graphql(`
  mutation RevokeManagedInvitation($id: Int!) {
    revokeInvitation(id: $id) {
      __typename
      ... on InvitationActionSuccess {
        invitation {
          id
          status
        }
      }
      ... on Error {
        message
        code
      }
    }
  }
`);

const Resend = graphql(`
  mutation ResendManagedInvitation($id: Int!) {
    resendInvitation(id: $id) {
      __typename
      ... on InvitationActionSuccess {
        invitation {
          id
          status
        }
      }
      ... on Error {
        message
        code
      }
    }
  }
`);

test('GraphQL: invitations newest first, revoke and resend with the same rules', async () => {
  const s = await scenario();
  const { users } = s.world;
  const mine = await gql(server.url, Invitations, {}, users.member.auth);
  expect(mine).toEqual({
    status: 200,
    data: {
      invitations: [
        {
          id: s.byMember.id,
          email: s.byMember.email,
          status: 'PENDING',
          invitedAs: 'MEMBER',
          expiresAt: expect.any(Number),
          referrer: { id: users.member.id },
        },
      ],
    },
  });
  const all = await gql(server.url, Invitations, { includeInactive: true }, users.member.auth);
  // Newest first: the revoked one was created last; the expired one was dated three days back.
  expect(all.data?.invitations.map((i) => [i.id, i.status])).toEqual([
    [s.revoked.id, 'REVOKED'],
    [s.byMember.id, 'PENDING'],
    [s.expired.id, 'EXPIRED'],
  ]);
  const adminView = await gql(server.url, Invitations, {}, users.admin.auth);
  expect(adminView.data?.invitations.map((i) => i.id)).toEqual([s.asOwner.id, s.byAdmin.id, s.byMember.id]);

  expect(await gql(server.url, Revoke, { id: s.byAdmin.id }, users.member.auth)).toEqual({
    status: 200,
    data: { revokeInvitation: { __typename: 'NotFoundError', message: 'No such invitation', code: 'BAD_REQUEST' } },
  });
  expect(await gql(server.url, Revoke, { id: s.elsewhere.id }, users.admin.auth)).toEqual({
    status: 200,
    data: { revokeInvitation: { __typename: 'NotFoundError', message: 'No such invitation', code: 'BAD_REQUEST' } },
  });
  expect(await gql(server.url, Resend, { id: s.asOwner.id }, users.admin.auth)).toEqual({
    status: 200,
    data: { resendInvitation: { __typename: 'BadRequestError', message: 'Must be an organization owner', code: 'UNAUTHORIZED_PRINCIPAL' } },
  });
  expect(await gql(server.url, Resend, { id: s.byMember.id }, users.member.auth)).toEqual({
    status: 200,
    data: { resendInvitation: { __typename: 'InvitationActionSuccess', invitation: { id: s.byMember.id, status: 'PENDING' } } },
  });
  expect(await emailsQueued(s.byMember)).toBe(2);
  expect(await gql(server.url, Revoke, { id: s.byAdmin.id }, users.admin.auth)).toEqual({
    status: 200,
    data: { revokeInvitation: { __typename: 'InvitationActionSuccess', invitation: { id: s.byAdmin.id, status: 'REVOKED' } } },
  });
  expect(await gql(server.url, Revoke, { id: s.byAdmin.id }, users.admin.auth)).toEqual({
    status: 200,
    data: { revokeInvitation: { __typename: 'NotFoundError', message: 'No such invitation', code: 'BAD_REQUEST' } },
  });
  expect(await statusOf(s.elsewhere)).toBe('PENDING');
  const guest = await gql(server.url, Invitations, {}, users.guest.auth);
  expect(guest).toEqual({
    status: 200,
    data: null,
    errors: [
      { message: 'Not allowed for guest users', locations: expect.any(Array), path: ['invitations'], extensions: { code: 'BAD_REQUEST' } },
    ],
  });
});

type Listed = { id: number; referrer?: { id: number; email: string } };

test('GraphQL: the invitation list and its pages take the same statements for 3 and 30 invitations; referrers other than the lister take one more', async () => {
  const counting = await startCountingApp();
  try {
    /** A world whose member and admin sent `count` invitations; `lister` lists them. */
    const listed = async (count: number, lister: 'owner' | 'admin' = 'owner') => {
      const world = await createWorld(server.app.prisma);
      const inputs = Array.from({ length: count }, (_, i) => ({
        email: uniqueEmail(`s${i}`),
        referrer: lister === 'admin' || i % 2 ? ('admin' as const) : ('member' as const),
        queueEmail: false,
      }));
      const created = await createInvitations(server, world, inputs);
      const referrerOf = new Map(created.map((invitation, i) => [invitation.id, world.users[inputs[i]!.referrer].id]));
      const list = async (query: string) => {
        const { response, statements } = await counting.request('/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: world.users[lister].auth },
          body: JSON.stringify({ query }),
        });
        const body = (await response.json()) as {
          data: { invitations?: Listed[]; me?: { invitationPage: { nodes?: Listed[]; edges?: { node: Listed }[] } } };
        };
        const page = body.data.me?.invitationPage;
        const invitations = body.data.invitations ?? page?.nodes ?? page!.edges!.map((edge) => edge.node);
        expect(invitations).toHaveLength(count);
        return { invitations, statements };
      };
      await list('{ invitations { id } }'); // authenticates the lister: the counts below are the lists' alone
      const referrerEmailOf = new Map(created.map((invitation, i) => [invitation.id, world.users[inputs[i]!.referrer].email]));
      return { referrerOf, referrerEmailOf, list };
    };
    const direct = '{ invitations { id referrer { id email } } }';
    const throughFragment = '{ invitations { id ...Who } } fragment Who on Invitation { ... on Invitation { referrer { id email } } }';
    const pageNodes = '{ me { invitationPage(first: 40) { nodes { id referrer { id email } } } } }';
    const pageEdges =
      '{ me { invitationPage(first: 40) { edges { node { id ...Who } } } } } fragment Who on Invitation { referrer { id email } }';
    const few = await listed(3);
    const many = await listed(30);
    const own = await listed(30, 'admin');
    /**
     * Each query asking for referrers takes the statements of `without`, plus one for the referrers
     * other than the lister (none when the lister referred them all), for 3 invitations as for 30, and
     * gives each invitation its own referrer.
     */
    const statementsOfReferrers = async (without: string, withReferrers: string[]) => {
      const { statements } = await many.list(without);
      for (const query of withReferrers) {
        const listers = [
          { world: many, referrerStatements: 1 },
          { world: own, referrerStatements: 0 },
        ];
        for (const {
          world: { list, referrerOf, referrerEmailOf },
          referrerStatements,
        } of listers) {
          const { invitations, statements: listing } = await list(query);
          expect(listing).toBe(statements + referrerStatements);
          expect(invitations.map((i) => [i.id, i.referrer?.id, i.referrer?.email])).toEqual(
            invitations.map((i) => [i.id, referrerOf.get(i.id), referrerEmailOf.get(i.id)]),
          );
        }
        expect((await few.list(query)).statements).toBe(statements + 1);
      }
    };
    await statementsOfReferrers('{ invitations { id email } }', [direct, throughFragment]);
    await statementsOfReferrers('{ me { invitationPage(first: 40) { nodes { id email } } } }', [pageNodes, pageEdges]);
  } finally {
    await counting.close();
  }
});
