import { DEFAULT_DIRECT_MESSAGES_LIMIT, receivedDirectMessages, type DirectMessageView } from '../../domain/messages/direct-messages.js';
import { builder } from '../builder.js';
import { actorOf } from '../context.js';
import { domainQuery } from './errors.js';
import { unixSeconds } from '../../domain/time.js';
import { User } from './user.js';

export const DirectMessage = builder.objectRef<DirectMessageView>('DirectMessage').implement({
  fields: (t) => ({
    id: t.exposeInt('id'),
    sender: t.field({
      type: User,
      resolve: async (m, _args, context) => (await context.loaders.userById.load(m.senderId))!,
    }),
    content: t.exposeString('content'),
    dateSent: t.field({ type: 'SafeInt', description: 'UNIX time in seconds.', resolve: (m) => unixSeconds(m.dateSent) }),
  }),
});

builder.queryField('directMessages', (t) =>
  t.field({
    type: [DirectMessage],
    description: 'Direct messages the authenticated user received, newest first (for example from the\nnotification and welcome bots).',
    args: { limit: t.arg.int({ defaultValue: DEFAULT_DIRECT_MESSAGES_LIMIT }) },
    resolve: (_root, args, context) => domainQuery(() => receivedDirectMessages(context.app, actorOf(context), args.limit)),
  }),
);
