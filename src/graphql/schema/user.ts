import type { Actor } from '../../domain/auth/authenticate.js';
import { builder } from '../builder.js';
import { actorOf } from '../context.js';
import type { UserSummary } from '../../domain/users/user-summary.js';
import { Channel, UserGroup } from './channel.js';

export const Role = builder.enumType('Role', {
  description: 'Organization-level role. REST uses the integer codes noted on each value.',
  values: {
    OWNER: { value: 100, description: '100' },
    ADMINISTRATOR: { value: 200, description: '200' },
    MODERATOR: { value: 300, description: '300' },
    MEMBER: { value: 400, description: '400' },
    GUEST: { value: 600, description: '600' },
  } as const,
});

export const User = builder.objectRef<UserSummary>('User').implement({
  fields: (t) => ({
    id: t.exposeInt('id'),
    email: t.exposeString('email'),
    fullName: t.exposeString('fullName'),
    role: t.field({ type: Role, resolve: (u) => u.role as 100 }),
    isBot: t.exposeBoolean('isBot'),
  }),
});

export const Viewer = builder.objectRef<Actor>('Viewer').implement({
  fields: (t) => ({
    id: t.exposeInt('id'),
    email: t.exposeString('email'),
    fullName: t.exposeString('fullName'),
    role: t.field({ type: Role, resolve: (u) => u.role as 100 }),
    isBot: t.exposeBoolean('isBot'),
    subscriptions: t.field({
      type: [Channel],
      description: 'Channels the user is subscribed to.',
      resolve: (u, _args, context) => context.loaders.subscribedChannelsByUserId.load(u.id),
    }),
    groups: t.field({
      type: [UserGroup],
      description: 'User groups the user is a direct member of.',
      resolve: (u, _args, context) => context.loaders.directGroupsByUserId.load(u.id),
    }),
  }),
});

builder.queryField('me', (t) =>
  t.field({
    type: Viewer,
    description: 'The authenticated user, with what only they may see about themselves.',
    resolve: (_root, _args, context) => actorOf(context),
  }),
);
