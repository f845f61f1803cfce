// The types that implement Relay's Node (@pothos/plugin-relay, set up in builder.ts), and how each is
// read by id for Query.node and Query.nodes. An object is found exactly when a list it comes from shows
// it to the caller, through that list's own code; anything else is null, whether or not it exists.
import DataLoader from 'dataloader';
import type { ObjectRef } from '@pothos/core';
import { ownAttachmentsWithMessagesWithIds } from '../../domain/attachments/attachments.js';
import { listCustomEmoji } from '../../domain/emoji/custom-emoji.js';
import { invitableChannels, invitableGroups, loadInvitePermissions } from '../../domain/invitations/invite-permissions.js';
import { listedInvitationsWithIds } from '../../domain/invitations/manage.js';
import { organizationUserSummaries } from '../../domain/users/user-summary.js';
import { builder } from '../builder.js';
import { actorOf, type GraphQLContext } from '../context.js';
import type { Loaders } from '../loaders.js';
import { Attachment } from './attachment.js';
import { Channel, UserGroup, type ChannelShape, type UserGroupShape } from './channel.js';
import { CustomEmoji } from './emoji.js';
import { domainQuery } from './errors.js';
import { Invitation } from './invitation.js';
import { User } from './user.js';

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;

/** The objects among some ids that the caller may see (in any order, the others left out). */
type Find<Shape> = (context: GraphQLContext, ids: number[]) => Promise<Shape[]>;

const loadersByRequest = new WeakMap<Loaders, Map<unknown, DataLoader<number, unknown>>>();

/** The request's loader of one node type: the ids a request names of that type are read in one batch. */
function loaderOf<Shape extends { id: number }>(context: GraphQLContext, find: Find<Shape>): DataLoader<number, Shape | null> {
  let loaders = loadersByRequest.get(context.loaders);
  if (!loaders) loadersByRequest.set(context.loaders, (loaders = new Map()));
  let loader = loaders.get(find) as DataLoader<number, Shape | null> | undefined;
  if (!loader) {
    loader = new DataLoader(async (ids) => {
      const found = new Map((await find(context, [...ids])).map((object) => [object.id, object]));
      return ids.map((id) => found.get(id) ?? null);
    });
    loaders.set(find, loader);
  }
  return loader;
}

/** Makes `ref` a Node: its globalId from its row id, and Query.node and Query.nodes reading it through `find`. */
function nodeType<Shape extends { id: number }>(ref: ObjectRef<Types, Shape>, find: Find<Shape>): void {
  builder.nodeRef<Shape, number, ObjectRef<Types, Shape>>(ref, {
    id: { resolve: (object) => object.id, parse: Number },
    // The plugin brands what this returns with the type, which the Node interface's resolveType reads.
    loadWithoutCache: (id, context) => domainQuery(() => loaderOf(context, find).load(id)),
  });
}

const channelShape = ({ id, name, isDefault }: ChannelShape): ChannelShape => ({ id, name, isDefault });

// Query.attachments and Viewer.attachmentPage: the caller's own files.
nodeType(Attachment, (context, ids) => ownAttachmentsWithMessagesWithIds(context.app, actorOf(context), ids));

// Query.invitations(includeInactive: true) and Viewer.invitationPage.
nodeType(Invitation, (context, ids) => listedInvitationsWithIds(context.app, actorOf(context), ids));

// Query.customEmoji(includeDeactivated: true).
nodeType(CustomEmoji, (context, ids) => listCustomEmoji(context.app, actorOf(context), { includeDeactivated: true, ids }));

// Viewer.subscriptions and Query.invitableChannels.
nodeType(Channel, async (context, ids) => {
  const actor = actorOf(context);
  const [subscribed, permissions] = await Promise.all([
    context.loaders.subscribedChannelsByUserId.load(actor.id),
    loadInvitePermissions(context.app, actor, { channelIds: ids, groupIds: [] }),
  ]);
  return [...subscribed, ...invitableChannels(permissions)].map(channelShape);
});

// Viewer.groups and Query.invitableGroups.
nodeType(UserGroup, async (context, ids) => {
  const actor = actorOf(context);
  const [direct, permissions] = await Promise.all([
    context.loaders.directGroupsByUserId.load(actor.id),
    loadInvitePermissions(context.app, actor, { channelIds: [], groupIds: ids }),
  ]);
  return [...direct, ...invitableGroups(permissions).map((g): UserGroupShape => ({ id: g.id, name: g.name! }))];
});

// Referrers, emoji authors and message senders: users of the caller's organization.
nodeType(User, (context, ids) => organizationUserSummaries(context.app, actorOf(context), ids));
