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

type Database = { prisma: Prisma; sql: Sql };

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

/**
 * A DataLoader whose values, once preloaded, are handed out as they are. graphql-jit completes a plain
 * value in place, where a promise per list item costs several more: a list preloads its items'
 * relation in one batch, then each item's field resolves at once.
 */
export class PreloadingLoader<K, V> {
  readonly #loaded = new Map<K, V>();

  constructor(private readonly loader: DataLoader<K, V>) {}

  load(key: K): V | Promise<V> {
    return this.#loaded.has(key) ? this.#loaded.get(key)! : this.loader.load(key);
  }

  /** Loads `keys` in one batch, so that later loads of them answer at once. */
  async preload(keys: Iterable<K>): Promise<void> {
    const missing = [...new Set(keys)].filter((key) => !this.#loaded.has(key));
    const values = await this.loader.loadMany(missing);
    missing.forEach((key, i) => {
      const value = values[i];
      if (!(value instanceof Error)) this.#loaded.set(key, value as V);
    });
  }
}

/** Straight through the driver: a list's referrers are one small statement, where Prisma's query engine was a tenth of the list's CPU. */
const userByIdLoader = ({ sql }: Database) =>
  new PreloadingLoader(
    new DataLoader<number, UserSummary | null>(async (ids) => {
      const users = await sql.rows<UserSummary>('SELECT id, email, "fullName", role, "isBot" FROM user_account WHERE id = ANY($1::int[])', [[...ids]]);
      const byId = new Map(users.map((u) => [u.id, u]));
      return ids.map((id) => byId.get(id) ?? null);
    }),
  );

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
