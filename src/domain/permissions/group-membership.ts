// Who holds a group setting. A setting names a group: a system group (`role:*`, membership follows
// roles), a named group, or an anonymous one; members of subgroups (recursively) are members too.
import type { AppContext } from '../../app-context.js';
import { statementRows } from '../../db/sql.js';
import { Prisma } from '../../generated/prisma/client.js';
import { DAY_MS } from '../time.js';
import { ROLE } from '../users/roles.js';
import { readThrough } from './permission-cache.js';

export interface Member {
  id: number;
  role: number;
  dateJoined: Date;
}

function inSystemGroup(name: string, user: Member, waitingPeriodDays: number, now: Date): boolean {
  switch (name) {
    case 'role:owners':
      return user.role <= ROLE.OWNER;
    case 'role:administrators':
      return user.role <= ROLE.ADMINISTRATOR;
    case 'role:moderators':
      return user.role <= ROLE.MODERATOR;
    case 'role:fullmembers':
      return (
        user.role < ROLE.MEMBER || (user.role === ROLE.MEMBER && now.getTime() - user.dateJoined.getTime() >= waitingPeriodDays * DAY_MS)
      );
    case 'role:members':
      return user.role <= ROLE.MEMBER;
    case 'role:everyone':
      return true;
    default:
      return false;
  }
}

/** What reads permissions: the database, through this process's cache when it has one. */
export type PermissionReader = Pick<AppContext, 'sql' | 'permissionCache'>;

/** A root group of a setting, and one group it reaches through subgroups (itself included). */
interface ReachedGroup {
  root: number;
  name: string | null;
  isSystemGroup: boolean;
  isMember: boolean;
}

/**
 * The subset of `settingGroupIds` whose groups contain the user, in one query whatever their number
 * (none when cached). Null ids (settings not set) contain nobody.
 */
export async function settingsHeldBy(
  db: PermissionReader,
  user: Member,
  organization: { waitingPeriodThreshold: number },
  settingGroupIds: (number | null)[],
  now = new Date(),
): Promise<Set<number>> {
  const roots = [...new Set(settingGroupIds.filter((id): id is number => id !== null))].sort((a, b) => a - b);
  if (roots.length === 0) return new Set();
  // Through the driver: every invitation asks (Prisma's raw-query path cost more than the statement).
  const rows = await readThrough(db.permissionCache, `reach:${user.id}:${roots.join(',')}`, () =>
    statementRows<ReachedGroup>(
      db.sql,
      Prisma.sql`
    WITH RECURSIVE reach(root, id) AS (
      SELECT r, r FROM unnest(${roots}::int[]) AS r
      UNION
      SELECT reach.root, s."subgroupId" FROM user_group_subgroup s JOIN reach ON s."supergroupId" = reach.id
    )
    SELECT reach.root, g.name, g."isSystemGroup",
           EXISTS (SELECT 1 FROM user_group_member m WHERE m."groupId" = g.id AND m."userId" = ${user.id}) AS "isMember"
    FROM reach JOIN user_group g ON g.id = reach.id`,
    ),
  );
  // Membership of system groups follows the user's role (and, for full members, time): never cached.
  const held = new Set<number>();
  for (const row of rows) {
    const systemMatch = row.isSystemGroup && inSystemGroup(row.name ?? '', user, organization.waitingPeriodThreshold, now);
    if (row.isMember || systemMatch) held.add(row.root);
  }
  return held;
}

export async function holdsSetting(
  db: PermissionReader,
  user: Member,
  organization: { waitingPeriodThreshold: number },
  settingGroupId: number | null,
): Promise<boolean> {
  if (settingGroupId === null) return false;
  return (await settingsHeldBy(db, user, organization, [settingGroupId])).has(settingGroupId);
}
