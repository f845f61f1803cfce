import { builder } from '../builder.js';
import { notImplemented } from './not-implemented.js';
import { User } from './user.js';

export interface DirectMessageShape {
  id: number;
  senderId: number;
  content: string;
  dateSent: Date;
}

export const DirectMessage = builder.objectRef<DirectMessageShape>('DirectMessage').implement({
  fields: (t) => ({
    id: t.exposeInt('id'),
    sender: t.field({ type: User, resolve: notImplemented }),
    content: t.exposeString('content'),
    dateSent: t.field({ type: 'SafeInt', description: 'UNIX time in seconds.', resolve: notImplemented }),
  }),
});

builder.queryField('directMessages', (t) =>
  t.field({
    type: [DirectMessage],
    description:
      'Direct messages the authenticated user received, newest first (for example from the\nnotification and welcome bots).',
    args: { limit: t.arg.int({ defaultValue: 20 }) },
    resolve: notImplemented,
  }),
);
