// Who may invite, as what, to which channels and groups (behaviour.md 3.2 steps 2-13, 3.3, 3.5, 3.6,
// Decision 1). The same rules answer "what may I pick?" for the GraphQL invitable lists, so what a
// user can pick is exactly what sending accepts.
import type { DatabaseClient } from '../../db/database.js';
import type { AppContext } from '../../app-context.js';
import type { Actor } from '../auth/authenticate.js';
import { DomainError, badRequest } from '../errors.js';
import type { Channel, Organization, OrganizationDomain, UserGroup } from '../../generated/prisma/client.js';
import { distinctRowIds } from '../ids.js';
import { settingsHeldBy, type PermissionReader } from '../permissions/group-membership.js';
import { readThrough } from '../permissions/permission-cache.js';
import { ROLE, isAdministrator, isGuest } from '../users/roles.js';

/** Runs before anything else, even parameter parsing (the reference's decorators). */
export function assertMayUseInvitations(actor: Actor): void {
  if (isGuest(actor.role)) throw badRequest('Not allowed for guest users');
  if (actor.botType !== null) throw badRequest('This endpoint does not accept bot requests.');
}

/** Whether assertMayUseInvitations lets the actor through. */
export function mayUseInvitations(actor: Actor): boolean {
  try {
    assertMayUseInvitations(actor);
    return true;
  } catch (error) {
    if (error instanceof DomainError) return false;
    throw error;
  }
}

/** Decision 1: owners invite anyone; administrators up to administrator; moderators up to moderator. */
export function assertMayInviteAs(actor: Actor, inviteAs: number): void {
  if (inviteAs === ROLE.OWNER && actor.role !== ROLE.OWNER) {
    throw new DomainError('Must be an organization owner', { code: 'UNAUTHORIZED_PRINCIPAL' });
  }
  const mayGrant = inviteAs === ROLE.MODERATOR ? actor.role <= ROLE.MODERATOR : isAdministrator(actor.role);
  if (inviteAs < ROLE.MEMBER && !mayGrant) throw badRequest('Must be an organization administrator');
}

type ChannelRow = Channel;
type GroupRow = UserGroup;

// Requested ids travel as one array parameter (`= ANY`), however many a request names; none, no query.
async function loadChannels(db: DatabaseClient, organizationId: number, ids?: number[]): Promise<Channel[]> {
  if (ids?.length === 0) return [];
  if (!ids) return db.channel.findMany({ where: { organizationId }, orderBy: { id: 'asc' } });
  return db.$queryRaw<Channel[]>`
    SELECT * FROM channel WHERE "organizationId" = ${organizationId} AND id = ANY(${distinctRowIds(ids)}::int[]) ORDER BY id`;
}

async function loadGroups(db: DatabaseClient, organizationId: number, ids?: number[]): Promise<UserGroup[]> {
  if (ids?.length === 0) return [];
  if (!ids) return db.userGroup.findMany({ where: { organizationId, name: { not: null } }, orderBy: { id: 'asc' } });
  return db.$queryRaw<UserGroup[]>`
    SELECT * FROM user_group
    WHERE "organizationId" = ${organizationId} AND name IS NOT NULL AND id = ANY(${distinctRowIds(ids)}::int[]) ORDER BY id`;
}

/**
 * Everything the permission checks need about the actor, their organization and the channels and
 * groups in question, loaded with a fixed number of queries.
 */
export interface InvitePermissions {
  organization: InvitingOrganization;
  channels: Map<number, ChannelRow>;
  groups: Map<number, GroupRow>;
  subscribed: Set<number>;
  held: Set<number>;
  actor: Actor;
}

/** What inviting needs of the organization: its limits, address policy and group settings. */
type InvitingOrganization = Pick<
  Organization,
  | 'id'
  | 'name'
  | 'maxInvites'
  | 'licenseLimit'
  | 'inviteRequired'
  | 'emailsRestrictedToDomains'
  | 'disallowDisposableEmailAddresses'
  | 'waitingPeriodThreshold'
  | 'canInviteUsersGroupId'
  | 'canAddSubscribersGroupId'
  | 'canManageAllGroupsId'
> & { domains: Pick<OrganizationDomain, 'domain' | 'allowSubdomains'>[] };

/**
 * The organization with its allowed domains, in one statement, through the driver (every invitation
 * asks; Prisma's raw-query path cost more than the statement), or from this process's cache. Only
 * columns the driver reads as Prisma would (no dates, no bigints). Frozen: the cache shares it.
 */
function loadOrganization(db: PermissionReader, organizationId: number): Promise<InvitingOrganization | undefined> {
  return readThrough(db.permissionCache, `organization:${organizationId}`, async () => {
    const [organization] = await db.sql.rows<InvitingOrganization>(
      `SELECT o.id, o.name, o."maxInvites", o."licenseLimit", o."inviteRequired", o."emailsRestrictedToDomains",
              o."disallowDisposableEmailAddresses", o."waitingPeriodThreshold", o."canInviteUsersGroupId",
              o."canAddSubscribersGroupId", o."canManageAllGroupsId",
              coalesce((
                SELECT json_agg(json_build_object('domain', d.domain, 'allowSubdomains', d."allowSubdomains") ORDER BY d.id)
                FROM organization_domain d WHERE d."organizationId" = o.id), '[]') AS domains
         FROM organization o WHERE o.id = $1`,
      [organizationId],
    );
    if (!organization) return undefined;
    organization.domains.forEach((domain) => Object.freeze(domain));
    Object.freeze(organization.domains);
    return Object.freeze(organization);
  });
}

/** Without ids in `scope`, every channel and named group of the organization. */
export async function loadInvitePermissions(
  app: Pick<AppContext, 'prisma' | 'sql' | 'permissionCache'>,
  actor: Actor,
  scope: { channelIds?: number[]; groupIds?: number[] } = {},
): Promise<InvitePermissions> {
  const { prisma } = app;
  const [organization, channels, groups, subscriptions] = await Promise.all([
    loadOrganization(app, actor.organizationId),
    loadChannels(prisma, actor.organizationId, scope.channelIds),
    loadGroups(prisma, actor.organizationId, scope.groupIds),
    // Subscriptions matter only for channel access.
    scope.channelIds?.length === 0 ? [] : prisma.subscription.findMany({ where: { userId: actor.id }, select: { channelId: true } }),
  ]);
  if (!organization) throw badRequest('Invalid organization');
  const settingIds = [
    organization.canInviteUsersGroupId,
    organization.canAddSubscribersGroupId,
    organization.canManageAllGroupsId,
    ...channels.flatMap((c) => [c.canAddSubscribersGroupId, c.canSubscribeGroupId, c.canAdministerChannelGroupId]),
    ...groups.flatMap((g) => [g.canManageGroupId, g.canAddMembersGroupId]),
  ];
  return {
    organization,
    channels: new Map(channels.map((c) => [c.id, c])),
    groups: new Map(groups.map((g) => [g.id, g])),
    subscribed: new Set(subscriptions.map((s) => s.channelId)),
    held: await settingsHeldBy(app, actor, organization, settingIds),
    actor,
  };
}

const holds = (p: InvitePermissions, groupId: number | null) => groupId !== null && p.held.has(groupId);

export function assertMayInvite(p: InvitePermissions): void {
  if (!holds(p, p.organization.canInviteUsersGroupId)) throw badRequest('Insufficient permission');
}

/** Step 10: the channel is the caller's organization's, not archived, and its content is visible to them. */
function hasContentAccess(p: InvitePermissions, channel: ChannelRow | undefined): channel is ChannelRow {
  if (!channel || channel.isArchived) return false;
  return (
    channel.isWebPublic ||
    p.subscribed.has(channel.id) ||
    !channel.inviteOnly ||
    holds(p, channel.canAddSubscribersGroupId) ||
    holds(p, channel.canSubscribeGroupId)
  );
}

/** Step 11: default channels are always allowed. */
function mayAddSubscribers(p: InvitePermissions, channel: ChannelRow): boolean {
  return (
    isAdministrator(p.actor.role) ||
    holds(p, p.organization.canAddSubscribersGroupId) ||
    channel.isDefault ||
    holds(p, channel.canAdministerChannelGroupId) ||
    holds(p, channel.canAddSubscribersGroupId)
  );
}

export function assertChannelsInvitable(p: InvitePermissions, channelIds: number[]): void {
  for (const id of channelIds) {
    if (!hasContentAccess(p, p.channels.get(id))) throw badRequest(`Invalid channel ID ${id}. No invites were sent.`);
  }
  if (!channelIds.every((id) => mayAddSubscribers(p, p.channels.get(id)!))) {
    throw badRequest('You do not have permission to subscribe other users to channels.');
  }
}

/** Step 12: the reason the caller cannot add invitees to the group, or null. */
function groupRefusal(p: InvitePermissions, id: number): string | null {
  const group = p.groups.get(id);
  if (!group) return 'Invalid user group';
  if (group.deactivated) return 'User group is deactivated.';
  if (group.isSystemGroup) return 'Insufficient permission';
  const allowed = holds(p, p.organization.canManageAllGroupsId) || holds(p, group.canManageGroupId) || holds(p, group.canAddMembersGroupId);
  return allowed ? null : 'Insufficient permission';
}

export function assertGroupsInvitable(p: InvitePermissions, groupIds: number[]): void {
  for (const id of groupIds) {
    const refusal = groupRefusal(p, id);
    if (refusal) throw badRequest(refusal);
  }
}

function mayInviteAtAll(p: InvitePermissions): boolean {
  try {
    assertMayUseInvitations(p.actor);
    assertMayInvite(p);
    return true;
  } catch (error) {
    if (error instanceof DomainError) return false;
    throw error;
  }
}

/** Channels the actor may name in stream_ids: exactly those sending accepts. `p` covers every channel. */
export function invitableChannels(p: InvitePermissions): ChannelRow[] {
  if (!mayInviteAtAll(p)) return [];
  return [...p.channels.values()].filter((c) => hasContentAccess(p, c) && mayAddSubscribers(p, c));
}

/** Groups the actor may name in group_ids: exactly those sending accepts. `p` covers every group. */
export function invitableGroups(p: InvitePermissions): GroupRow[] {
  if (!mayInviteAtAll(p)) return [];
  return [...p.groups.values()].filter((g) => groupRefusal(p, g.id) === null);
}
