// Subscriptions (shared/contract/additions/realtime.graphql): the REST events' changes, with their
// recipients, from the event log's streams (src/domain/events/streams.ts). A payload's fields are
// resolved when it is delivered, with the subscriber's credentials.
import { ownAttachmentWithMessages } from '../../domain/attachments/attachments.js';
import type { Actor } from '../../domain/auth/actor.js';
import { heldCredentials } from '../../domain/auth/held-credentials.js';
import type { CustomEmojiRecord, RealmEmojiPayload } from '../../domain/emoji/custom-emoji.js';
import type { DomainError } from '../../domain/errors.js';
import type { EventType } from '../../domain/events/log.js';
import type { LoggedEvent } from '../../domain/events/reader.js';
import { eventCursor, type StreamItem } from '../../domain/events/streams.js';
import { builder } from '../builder.js';
import { actorOf, freshLoadersForNextPayload, type GraphQLContext } from '../context.js';
import { Attachment } from './attachment.js';
import { CustomEmoji } from './emoji.js';
import { domainQuery, requestError } from './errors.js';
import { Invitation } from './invitation.js';
import { invitationsOf } from './invitation-management.js';

builder.subscriptionType({});

function follow(context: GraphQLContext, types: EventType[], after: string | null | undefined) {
  const streams = context.app.eventStreams;
  const actor = actorOf(context);
  const credentials = heldCredentials(context.app, context.credentials!);
  // A full server refuses the request itself (503 with Retry-After: clients retry, perhaps elsewhere);
  // a bad cursor is the subscription's own error, which the client reads.
  const serverFull = (error: DomainError) => error.status === 503;
  // Yoga's context holds the HTTP request (over WebSocket, the upgrade's, which has no signal).
  const signal = (context as { request?: { signal?: AbortSignal } }).request?.signal;
  // Payloads are resolved for the subscriber as they now are: what they may list, their own name.
  const renewed = (fresh: Actor) => void (context.actor = fresh);
  return domainQuery(() => streams.follow(actor, credentials, { types, after: after ?? null, signal, renewed }), serverFull);
}

/** The item's event, or the error that ended the stream (its last payload). Each event is a new answer. */
function eventOf(item: StreamItem, context: GraphQLContext): LoggedEvent {
  if ('ended' in item) throw requestError(item.ended);
  freshLoadersForNextPayload(context);
  return item.event;
}

const CURSOR = { description: 'Pass it as `after` to resume from this event.', resolve: eventCursor };

const InvitationsChanged = builder.objectRef<LoggedEvent>('InvitationsChanged').implement({
  fields: (t) => ({
    cursor: t.string(CURSOR),
    invitations: t.field({
      type: [Invitation],
      description: "The caller's invitations as they stand when the event is delivered (as Query.invitations).",
      args: { includeInactive: t.arg.boolean({ defaultValue: false }) },
      resolve: (_event, args, context, info) => invitationsOf(context, args.includeInactive ?? false, info),
    }),
  }),
});

const CustomEmojiChange = builder.enumType('CustomEmojiChange', { values: ['ADDED', 'DEACTIVATED'] as const });

const emojiChangeOf = (event: LoggedEvent) => event.payload as unknown as RealmEmojiPayload;

const CustomEmojiChanged = builder.objectRef<LoggedEvent>('CustomEmojiChanged').implement({
  fields: (t) => ({
    cursor: t.string(CURSOR),
    change: t.field({ type: CustomEmojiChange, resolve: (event) => (emojiChangeOf(event).change === 'added' ? 'ADDED' : 'DEACTIVATED') }),
    emoji: t.field({ type: CustomEmoji, resolve: (event): CustomEmojiRecord => emojiChangeOf(event).emoji }),
  }),
});

const AttachmentChange = builder.enumType('AttachmentChange', { values: ['ADDED', 'UPDATED', 'REMOVED'] as const });

interface AttachmentEventPayload {
  op: 'add' | 'update' | 'remove';
  attachment: { id: number };
  upload_space_used: number;
}

const attachmentChangeOf = (event: LoggedEvent) => event.payload as unknown as AttachmentEventPayload;
const CHANGES = { add: 'ADDED', update: 'UPDATED', remove: 'REMOVED' } as const;

const AttachmentChanged = builder.objectRef<LoggedEvent>('AttachmentChanged').implement({
  fields: (t) => ({
    cursor: t.string(CURSOR),
    change: t.field({ type: AttachmentChange, resolve: (event) => CHANGES[attachmentChangeOf(event).op] }),
    attachmentId: t.int({ description: "The file's id (also for REMOVED).", resolve: (event) => attachmentChangeOf(event).attachment.id }),
    attachment: t.field({
      type: Attachment,
      nullable: true,
      description: 'The file as Query.attachments lists it; null when it was REMOVED.',
      resolve: (event, _args, context) => {
        const { op, attachment } = attachmentChangeOf(event);
        return op === 'remove' ? null : ownAttachmentWithMessages(context.app, actorOf(context), attachment.id);
      },
    }),
    uploadSpaceUsed: t.field({
      type: 'SafeInt',
      description: "The organization's upload space used after the change.",
      resolve: (event) => attachmentChangeOf(event).upload_space_used,
    }),
  }),
});

builder.subscriptionFields((t) => ({
  invitationsChanged: t.field({
    type: InvitationsChanged,
    description:
      "Fires after each committed change to the invitations the caller may list (the same events and\nrecipients as the REST `invites_changed`: administrators and owners, and the invitation's inviter).\nThe payload's fields are resolved when it is delivered, so `invitations` is the list as it stands.\n`after`: a cursor from an earlier payload; events since then are delivered first.",
    args: { after: t.arg.string() },
    subscribe: (_root, args, context) => follow(context, ['invites_changed'], args.after),
    resolve: (item: StreamItem, _args, context) => eventOf(item, context),
  }),
  customEmojiChanged: t.field({
    type: CustomEmojiChanged,
    description: "Fires after a custom emoji of the caller's organization is added or deactivated (every active user\nreceives it).",
    args: { after: t.arg.string() },
    subscribe: (_root, args, context) => follow(context, ['realm_emoji'], args.after),
    resolve: (item: StreamItem, _args, context) => eventOf(item, context),
  }),
  attachmentsChanged: t.field({
    type: AttachmentChanged,
    description: "Fires after one of the caller's own files is stored, deleted or newly linked from a message.",
    args: { after: t.arg.string() },
    subscribe: (_root, args, context) => follow(context, ['attachment'], args.after),
    resolve: (item: StreamItem, _args, context) => eventOf(item, context),
  }),
}));
