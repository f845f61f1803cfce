// Relay global object identification (docs/contract/additions/node.graphql): the Node interface, its
// global ids, and Query.node and Query.nodes. Every type keeps the contract's `id: Int!`, so the global
// id is the field `globalId` (a Relay client sets its compiler's schemaConfig.nodeInterfaceIdField and
// its store's getDataID to it). A global id is the base64 of "<type name>:<row id>", as Relay's own
// helpers write them. An object is found exactly when a list it comes from shows it to the caller,
// through that list's own code; anything else is null, whether or not it exists. @pothos/plugin-relay
// (idFieldName 'globalId') would replace this file.
import DataLoader from 'dataloader';
import { brandWithType, type ObjectRef } from '@pothos/core';
import { createGraphQLError } from 'graphql-yoga';
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

/** The most ids one `nodes` field takes (a connection's largest page). */
export const MAX_NODES = 100;

/** Longer than any global id this server writes (a type name, a colon and ten digits, in base64). */
const MAX_GLOBAL_ID_LENGTH = 100;

interface NodeShape {
  id: number;
}

/** A type that implements Node: how the objects among some ids that the caller may see are read. */
interface NodeType {
  ref: ObjectRef<Types, NodeShape>;
  find(context: GraphQLContext, ids: number[]): Promise<NodeShape[]>;
}

const nodeType = <Shape extends NodeShape>(
  ref: ObjectRef<Types, Shape>,
  find: (context: GraphQLContext, ids: number[]) => Promise<Shape[]>,
) => ({ ref, find }) as unknown as NodeType;

const channelShape = ({ id, name, isDefault }: ChannelShape): ChannelShape => ({ id, name, isDefault });

/** Per type, the lists its objects come from (the same calls as those lists' fields). */
const NODE_TYPES: Record<string, NodeType> = {
  // Query.attachments and Viewer.attachmentPage: the caller's own files.
  Attachment: nodeType(Attachment, (context, ids) => ownAttachmentsWithMessagesWithIds(context.app.sql, actorOf(context), ids)),
  // Query.invitations(includeInactive: true) and Viewer.invitationPage.
  Invitation: nodeType(Invitation, (context, ids) => listedInvitationsWithIds(context.app.sql, actorOf(context), ids)),
  // Query.customEmoji(includeDeactivated: true).
  CustomEmoji: nodeType(CustomEmoji, (context, ids) =>
    listCustomEmoji(context.app.prisma, actorOf(context), { includeDeactivated: true, ids }),
  ),
  // Viewer.subscriptions and Query.invitableChannels.
  Channel: nodeType(Channel, async (context, ids) => {
    const actor = actorOf(context);
    const [subscribed, permissions] = await Promise.all([
      context.loaders.subscribedChannelsByUserId.load(actor.id),
      loadInvitePermissions(context.app, actor, { channelIds: ids, groupIds: [] }),
    ]);
    return [...subscribed, ...invitableChannels(permissions)].map(channelShape);
  }),
  // Viewer.groups and Query.invitableGroups.
  UserGroup: nodeType(UserGroup, async (context, ids) => {
    const actor = actorOf(context);
    const [direct, permissions] = await Promise.all([
      context.loaders.directGroupsByUserId.load(actor.id),
      loadInvitePermissions(context.app, actor, { channelIds: [], groupIds: ids }),
    ]);
    return [...direct, ...invitableGroups(permissions).map((g): UserGroupShape => ({ id: g.id, name: g.name! }))];
  }),
  // Referrers, emoji authors and message senders: users of the caller's organization.
  User: nodeType(User, (context, ids) => organizationUserSummaries(context.app.sql, actorOf(context).organizationId, ids)),
};

export const toGlobalId = (typeName: string, id: number) => Buffer.from(`${typeName}:${id}`).toString('base64');

const GLOBAL_ID_TEXT = /^([A-Za-z_][A-Za-z0-9_]*):([1-9][0-9]*)$/;

const badUserInput = (message: string) => createGraphQLError(message, { extensions: { code: 'BAD_USER_INPUT' } });

/**
 * The type and row id a global id names. Throws BAD_USER_INPUT unless it is exactly what toGlobalId
 * writes for some type name and positive integer (canonical base64, no other spelling of a number);
 * null when it is, but names no type of ours or no possible row.
 */
function parseGlobalId(globalId: string): { type: NodeType; id: number } | null {
  const text = globalId.length <= MAX_GLOBAL_ID_LENGTH ? Buffer.from(globalId, 'base64').toString('latin1') : '';
  const match = GLOBAL_ID_TEXT.exec(text);
  // Node's decoder skips what is not base64: only the canonical spelling of the text counts.
  if (!match || Buffer.from(text, 'latin1').toString('base64') !== globalId) {
    throw badUserInput('Not a global id: expected the base64 of "<type name>:<id>", as globalId gives it');
  }
  const [, typeName, digits] = match;
  const type = Object.hasOwn(NODE_TYPES, typeName!) ? NODE_TYPES[typeName!]! : null;
  const id = Number(digits);
  return type && id <= 2 ** 31 - 1 ? { type, id } : null;
}

const loadersByRequest = new WeakMap<Loaders, Map<NodeType, DataLoader<number, NodeShape | null>>>();

/** The request's loader of one node type: the ids a request names of that type are read in one batch. */
function loaderOf(context: GraphQLContext, type: NodeType): DataLoader<number, NodeShape | null> {
  let loaders = loadersByRequest.get(context.loaders);
  if (!loaders) loadersByRequest.set(context.loaders, (loaders = new Map()));
  let loader = loaders.get(type);
  if (!loader) {
    loader = new DataLoader(async (ids) => {
      const found = new Map((await type.find(context, [...ids])).map((node) => [node.id, node]));
      for (const node of found.values()) brandWithType(node, type.ref);
      return ids.map((id) => found.get(id) ?? null);
    });
    loaders.set(type, loader);
  }
  return loader;
}

const loadNode = (context: GraphQLContext, globalId: ReturnType<typeof parseGlobalId>) =>
  globalId ? loaderOf(context, globalId.type).load(globalId.id) : null;

export const Node = builder.interfaceRef<NodeShape>('Node').implement({
  description: 'An object a client can refetch by its global id, with Query.node or Query.nodes.',
  fields: (t) => ({
    globalId: t.id({
      description: 'Unique across every type, unlike `id`; opaque. Relay clients use it as the Node id field.',
      resolve: (node, _args, _context, info) => toGlobalId(info.parentType.name, node.id),
    }),
  }),
});

for (const { ref } of Object.values(NODE_TYPES)) ref.addInterfaces([Node]);

builder.queryFields((t) => ({
  node: t.field({
    type: Node,
    nullable: true,
    description:
      'The object with this global id, when a list it comes from shows it to the caller; null otherwise\n' +
      '(also for an id of no type of ours). An id that is not a global id is a BAD_USER_INPUT error.',
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => domainQuery(async () => loadNode(context, parseGlobalId(String(args.id)))),
  }),
  nodes: t.field({
    type: [Node],
    nullable: { list: false, items: true },
    description:
      'The objects with these global ids, in the order given, each as node answers it (null where it would be).\n' +
      `At most ${MAX_NODES} ids; one that is not a global id fails the whole field.`,
    args: { ids: t.arg.idList({ required: true }) },
    resolve: (_root, args, context) =>
      domainQuery(async () => {
        if (args.ids.length > MAX_NODES) throw badUserInput(`At most ${MAX_NODES} ids`);
        const globalIds = args.ids.map((id) => parseGlobalId(String(id)));
        return Promise.all(globalIds.map((globalId) => loadNode(context, globalId)));
      }),
  }),
}));
