// What lists show of a user beside what they list, and reading it for users of one organization.
import type { AppContext } from '../../app-context.js';
import { namedStatement } from '../../db/sql.js';
import type { Actor } from '../auth/authenticate.js';
import { distinctRowIds } from '../ids.js';

/** What lists show of a user beside what they list (an invitation's referrer, an emoji's author). */
export interface UserSummary {
  id: number;
  email: string;
  fullName: string;
  role: number;
  isBot: boolean;
}

/** The summary of a user read whole (the request's actor). */
export const userSummaryOf = ({ id, email, fullName, role, isBot }: UserSummary): UserSummary => ({ id, email, fullName, role, isBot });

export const ORGANIZATION_USER_SUMMARIES = namedStatement(
  'users.summaries',
  'SELECT id, email, "fullName", role, "isBot" FROM user_account WHERE "organizationId" = $1 AND id = ANY($2::int[]) ORDER BY id',
);

/**
 * Those of `ids` that are users of the organization, by ascending id, deactivated ones too (lists show
 * them as referrers and authors); another organization's users name nothing.
 */
export async function organizationUserSummaries(app: AppContext, actor: Actor, ids: number[]): Promise<UserSummary[]> {
  const rowIds = distinctRowIds(ids);
  if (rowIds.length === 0) return [];
  return app.sql.rows<UserSummary>(ORGANIZATION_USER_SUMMARIES, [actor.organizationId, rowIds]);
}

/** A user's channel or named group as their profile lists it. */
export interface NamedMembership {
  id: number;
  name: string;
}

/** The channels each of `userIds` is subscribed to in the actor's organization, by name. */
export async function subscribedChannelsOf(
  app: AppContext,
  actor: Actor,
  userIds: readonly number[],
): Promise<Map<number, (NamedMembership & { isDefault: boolean })[]>> {
  const rows = await app.prisma.subscription.findMany({
    where: { userId: { in: [...userIds] }, channel: { organizationId: actor.organizationId } },
    select: { userId: true, channel: { select: { id: true, name: true, isDefault: true } } },
    orderBy: { channel: { name: 'asc' } },
  });
  return groupedByUser(rows.map((row) => ({ userId: row.userId, membership: row.channel })));
}

/** The named groups each of `userIds` is a direct member of in the actor's organization, by name. */
export async function directGroupsOf(app: AppContext, actor: Actor, userIds: readonly number[]): Promise<Map<number, NamedMembership[]>> {
  const rows = await app.prisma.userGroupMember.findMany({
    where: { userId: { in: [...userIds] }, group: { name: { not: null }, organizationId: actor.organizationId } },
    select: { userId: true, group: { select: { id: true, name: true } } },
    orderBy: { group: { name: 'asc' } },
  });
  return groupedByUser(rows.map((row) => ({ userId: row.userId, membership: { id: row.group.id, name: row.group.name! } })));
}

function groupedByUser<M>(rows: { userId: number; membership: M }[]): Map<number, M[]> {
  const byUser = new Map<number, M[]>();
  for (const { userId, membership } of rows) {
    const memberships = byUser.get(userId);
    if (memberships) memberships.push(membership);
    else byUser.set(userId, [membership]);
  }
  return byUser;
}
