import { builder } from '../builder.js';
import { invitableChannels, invitableGroups } from '../../domain/invitations/invite-permissions.js';
import { actorOf } from '../context.js';

export interface ChannelShape {
  id: number;
  name: string;
  isDefault: boolean;
}

export interface UserGroupShape {
  id: number;
  name: string;
}

export const Channel = builder.objectRef<ChannelShape>('Channel').implement({
  fields: (t) => ({
    id: t.exposeInt('id'),
    name: t.exposeString('name'),
    isDefault: t.exposeBoolean('isDefault'),
  }),
});

export const UserGroup = builder.objectRef<UserGroupShape>('UserGroup').implement({
  fields: (t) => ({
    id: t.exposeInt('id'),
    name: t.exposeString('name'),
  }),
});

builder.queryFields((t) => ({
  invitableChannels: t.field({
    type: [Channel],
    description: 'Channels the authenticated user may name in sendInvitations.streamIds.',
    resolve: async (_root, _args, context) => invitableChannels(await context.loaders.invitePermissions.load(actorOf(context))),
  }),
  invitableGroups: t.field({
    type: [UserGroup],
    description: 'User groups the authenticated user may name in sendInvitations.groupIds.',
    resolve: async (_root, _args, context) =>
      invitableGroups(await context.loaders.invitePermissions.load(actorOf(context))).map((g) => ({ id: g.id, name: g.name! })),
  }),
}));
