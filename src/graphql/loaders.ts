// DataLoaders, one set per request, so lists of objects load their relations in one query.
import DataLoader from 'dataloader';
import type { AppContext } from '../app-context.js';
import type { Actor } from '../domain/auth/authenticate.js';
import type { UserSummary } from '../domain/users/user-summary.js';
import { loadInvitePermissions, type InvitePermissions } from '../domain/invitations/invite-permissions.js';
import { latestInvitationEmails, type EmailDelivery } from '../domain/email/delivery.js';

type Database = Pick<AppContext, 'prisma' | 'sql' | 'permissionCache'>;

/** What the actor may pick when inviting, loaded once per request for both invitable lists. */
const invitePermissionsLoader = (db: Database) =>
  new DataLoader<Actor, InvitePermissions, number>((actors) => Promise.all(actors.map((actor) => loadInvitePermissions(db, actor))), {
    cacheKeyFn: (actor) => actor.id,
  });

const latestInvitationEmailLoader = ({ prisma }: Database) =>
  new DataLoader<number, EmailDelivery | null>(async (ids) => {
    const byInvitation = await latestInvitationEmails(prisma, ids);
    return ids.map((id) => byInvitation.get(id) ?? null);
  });

/** Straight through the driver: one small statement per batch (emoji authors, message senders), where Prisma's query engine cost a tenth of a list's CPU. */
const userByIdLoader = ({ sql }: Database) =>
  new DataLoader<number, UserSummary | null>(async (ids) => {
    const users = await sql.rows<UserSummary>('SELECT id, email, "fullName", role, "isBot" FROM user_account WHERE id = ANY($1::int[])', [
      [...ids],
    ]);
    const byId = new Map(users.map((u) => [u.id, u]));
    return ids.map((id) => byId.get(id) ?? null);
  });

/** Channels each user is subscribed to, by name; one query per batch. */
const subscribedChannelsLoader = ({ prisma }: Database) =>
  new DataLoader<number, { id: number; name: string; isDefault: boolean }[]>(async (ids) => {
    const rows = await prisma.subscription.findMany({
      where: { userId: { in: [...ids] } },
      select: { userId: true, channel: { select: { id: true, name: true, isDefault: true } } },
      orderBy: { channel: { name: 'asc' } },
    });
    return ids.map((id) => rows.filter((r) => r.userId === id).map((r) => r.channel));
  });

/** Named groups each user is a direct member of, by name; one query per batch. */
const directGroupsLoader = ({ prisma }: Database) =>
  new DataLoader<number, { id: number; name: string }[]>(async (ids) => {
    const rows = await prisma.userGroupMember.findMany({
      where: { userId: { in: [...ids] }, group: { name: { not: null } } },
      select: { userId: true, group: { select: { id: true, name: true } } },
      orderBy: { group: { name: 'asc' } },
    });
    return ids.map((id) => rows.filter((r) => r.userId === id).map((r) => ({ id: r.group.id, name: r.group.name! })));
  });

/**
 * A request's loaders, each made when first used: a subscription holds its context for hours and most
 * requests use one loader or none, so five empty loaders per context would be memory for nothing.
 */
export class Loaders {
  #invitePermissions?: ReturnType<typeof invitePermissionsLoader>;
  #latestInvitationEmail?: ReturnType<typeof latestInvitationEmailLoader>;
  #userById?: ReturnType<typeof userByIdLoader>;
  #subscribedChannelsByUserId?: ReturnType<typeof subscribedChannelsLoader>;
  #directGroupsByUserId?: ReturnType<typeof directGroupsLoader>;

  constructor(private readonly db: Database) {}

  get invitePermissions() {
    return (this.#invitePermissions ??= invitePermissionsLoader(this.db));
  }
  get latestInvitationEmail() {
    return (this.#latestInvitationEmail ??= latestInvitationEmailLoader(this.db));
  }
  get userById() {
    return (this.#userById ??= userByIdLoader(this.db));
  }
  get subscribedChannelsByUserId() {
    return (this.#subscribedChannelsByUserId ??= subscribedChannelsLoader(this.db));
  }
  get directGroupsByUserId() {
    return (this.#directGroupsByUserId ??= directGroupsLoader(this.db));
  }
}
