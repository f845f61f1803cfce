// DataLoaders, one set per request, so lists of objects load their relations in one query.
import DataLoader from 'dataloader';
import type { AppContext } from '../app-context.js';
import type { Actor } from '../domain/auth/authenticate.js';
import {
  directGroupsOf,
  organizationUserSummaries,
  subscribedChannelsOf,
  type NamedMembership,
  type UserSummary,
} from '../domain/users/user-summary.js';
import { loadInvitePermissions, type InvitePermissions } from '../domain/invitations/invite-permissions.js';
import { latestInvitationEmails, type EmailDelivery } from '../domain/email/delivery.js';

/** What the actor may pick when inviting, loaded once per request for both invitable lists. */
const invitePermissionsLoader = (app: AppContext) =>
  new DataLoader<Actor, InvitePermissions, number>((actors) => Promise.all(actors.map((actor) => loadInvitePermissions(app, actor))), {
    cacheKeyFn: (actor) => actor.id,
  });

/** The ids are those of invitations already listed to the actor. */
const latestInvitationEmailLoader = (app: AppContext) =>
  new DataLoader<number, EmailDelivery | null>(async (ids) => {
    const byInvitation = await latestInvitationEmails(app, ids);
    return ids.map((id) => byInvitation.get(id) ?? null);
  });

/** Emoji authors, message senders, referrers: users of the actor's organization, one statement per batch. */
const userByIdLoader = (app: AppContext, actor: () => Actor) =>
  new DataLoader<number, UserSummary | null>(async (ids) => {
    const byId = new Map((await organizationUserSummaries(app, actor(), [...ids])).map((user) => [user.id, user]));
    return ids.map((id) => byId.get(id) ?? null);
  });

const membershipsLoader = <M>(read: (ids: readonly number[]) => Promise<Map<number, M[]>>) =>
  new DataLoader<number, M[]>(async (ids) => {
    const byUser = await read(ids);
    return ids.map((id) => byUser.get(id) ?? []);
  });

/**
 * A request's loaders, each made when first used: a subscription holds its context for hours and most
 * requests use one loader or none, so five empty loaders per context would be memory for nothing.
 */
export class Loaders {
  #invitePermissions?: ReturnType<typeof invitePermissionsLoader>;
  #latestInvitationEmail?: ReturnType<typeof latestInvitationEmailLoader>;
  #userById?: ReturnType<typeof userByIdLoader>;
  #subscribedChannelsByUserId?: DataLoader<number, (NamedMembership & { isDefault: boolean })[]>;
  #directGroupsByUserId?: DataLoader<number, NamedMembership[]>;

  /** `actor`: the request's actor, asked for only when a loader first loads (resolvers reach loaders once authenticated). */
  constructor(
    private readonly app: AppContext,
    private readonly actor: () => Actor,
  ) {}

  get invitePermissions() {
    return (this.#invitePermissions ??= invitePermissionsLoader(this.app));
  }
  get latestInvitationEmail() {
    return (this.#latestInvitationEmail ??= latestInvitationEmailLoader(this.app));
  }
  get userById() {
    return (this.#userById ??= userByIdLoader(this.app, this.actor));
  }
  get subscribedChannelsByUserId() {
    return (this.#subscribedChannelsByUserId ??= membershipsLoader((ids) => subscribedChannelsOf(this.app, this.actor(), ids)));
  }
  get directGroupsByUserId() {
    return (this.#directGroupsByUserId ??= membershipsLoader((ids) => directGroupsOf(this.app, this.actor(), ids)));
  }
}
