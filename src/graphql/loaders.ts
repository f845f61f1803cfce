// DataLoaders, one set per request, so lists of objects load their relations in one query.
import DataLoader from 'dataloader';
import type { Prisma } from '../db/database.js';
import type { Sql } from '../db/sql.js';
import type { Actor } from '../domain/auth/authenticate.js';
import { loadInvitePermissions, type InvitePermissions } from '../domain/invitations/invite-permissions.js';
import { latestInvitationEmails, type EmailDelivery } from '../domain/email/delivery.js';

export interface UserSummary {
  id: number;
  email: string;
  fullName: string;
  role: number;
  isBot: boolean;
}

export function createLoaders({ prisma, sql }: { prisma: Prisma; sql: Sql }) {
  return {
    /** What the actor may pick when inviting, loaded once per request for both invitable lists. */
    invitePermissions: new DataLoader<Actor, InvitePermissions, number>(
      (actors) => Promise.all(actors.map((actor) => loadInvitePermissions({ prisma, sql }, actor))),
      { cacheKeyFn: (actor) => actor.id },
    ),
    latestInvitationEmail: new DataLoader<number, EmailDelivery | null>(async (ids) => {
      const byInvitation = await latestInvitationEmails(prisma, ids);
      return ids.map((id) => byInvitation.get(id) ?? null);
    }),
    userById: new DataLoader<number, UserSummary | null>(async (ids) => {
      const users = await prisma.user.findMany({
        where: { id: { in: [...ids] } },
        select: { id: true, email: true, fullName: true, role: true, isBot: true },
      });
      const byId = new Map(users.map((u) => [u.id, u]));
      return ids.map((id) => byId.get(id) ?? null);
    }),
    /** Channels each user is subscribed to, by name; one query per batch. */
    subscribedChannelsByUserId: new DataLoader<number, { id: number; name: string; isDefault: boolean }[]>(async (ids) => {
      const rows = await prisma.subscription.findMany({
        where: { userId: { in: [...ids] } },
        select: { userId: true, channel: { select: { id: true, name: true, isDefault: true } } },
        orderBy: { channel: { name: 'asc' } },
      });
      return ids.map((id) => rows.filter((r) => r.userId === id).map((r) => r.channel));
    }),
    /** Named groups each user is a direct member of, by name; one query per batch. */
    directGroupsByUserId: new DataLoader<number, { id: number; name: string }[]>(async (ids) => {
      const rows = await prisma.userGroupMember.findMany({
        where: { userId: { in: [...ids] }, group: { name: { not: null } } },
        select: { userId: true, group: { select: { id: true, name: true } } },
        orderBy: { group: { name: 'asc' } },
      });
      return ids.map((id) => rows.filter((r) => r.userId === id).map((r) => ({ id: r.group.id, name: r.group.name! })));
    }),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
