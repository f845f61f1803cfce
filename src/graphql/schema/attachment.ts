import { connectionPage } from '../../domain/connections.js';
import {
  attachmentUrl,
  listOwnAttachmentsWithMessages,
  ownAttachmentsWithMessagesList,
  type LinkedMessage,
  type OwnAttachmentWithMessages,
} from '../../domain/attachments/attachments.js';
import { maxFileUploadBytes } from '../../domain/uploads/upload-file.js';
import { wholeListWithinBudget } from '../../http/memory-budget.js';
import { builder } from '../builder.js';
import { actorOf } from '../context.js';
import { connectionType, pageArguments } from './connection.js';
import { domainQuery } from './errors.js';
import { Viewer } from './user.js';

/**
 * What one file costs while the answer is built (rows, result tree, JSON): a 60,000-file list raised
 * the process's RSS by 70-100 MiB, about 1.2-1.7 KiB a file.
 */
const ANSWER_BYTES_PER_FILE = 2048;

export interface AttachmentListShape {
  attachments: OwnAttachmentWithMessages[];
  uploadSpaceUsed: bigint;
  uploadQuota: bigint | null;
}

export const AttachmentMessage = builder.objectRef<LinkedMessage>('AttachmentMessage').implement({
  fields: (t) => ({
    id: t.exposeInt('id'),
    dateSent: t.expose('dateSent', { type: 'SafeInt', description: 'UNIX time in seconds.' }),
  }),
});

export const Attachment = builder.objectRef<OwnAttachmentWithMessages>('Attachment').implement({
  fields: (t) => ({
    id: t.exposeInt('id'),
    name: t.exposeString('name'),
    pathId: t.exposeString('pathId', { description: '<realm_id>/<2 chars>/<rest>/<file_name>' }),
    url: t.string({
      description: '{server_url}/user_uploads/<path_id>',
      resolve: (a, _args, context) => attachmentUrl(context.app.config.serverUrl, a.pathId),
    }),
    // Exposed rather than resolved: compiled execution reads a property where it would call a
    // resolver with an info object of its own, for every file of a list.
    size: t.expose('size', { type: 'SafeInt', description: 'Bytes.' }),
    createTime: t.expose('createTime', { type: 'SafeInt', description: 'UNIX time in seconds.' }),
    messageIds: t.field({
      type: ['Int'],
      description: 'Messages, by any user of the organization, that reference the file.',
      resolve: (a) => a.messages.map((m) => m.id),
    }),
    messages: t.expose('messages', {
      type: [AttachmentMessage],
      description: 'The same messages with their send times, loaded in one batch for all attachments.',
    }),
  }),
});

export const AttachmentList = builder.objectRef<AttachmentListShape>('AttachmentList').implement({
  fields: (t) => ({
    attachments: t.field({ type: [Attachment], resolve: (l) => l.attachments }),
    uploadSpaceUsed: t.field({
      type: 'SafeInt',
      description: 'Total size in bytes of every file uploaded by any user of the organization.',
      resolve: (l) => l.uploadSpaceUsed,
    }),
    uploadQuota: t.field({
      type: 'SafeInt',
      nullable: true,
      description: "The organization's upload quota in bytes; null when there is none.",
      resolve: (l) => l.uploadQuota,
    }),
    maxFileUploadSize: t.field({
      type: 'SafeInt',
      description: 'The largest file, in bytes, this server accepts.',
      resolve: (_l, _args, context) => maxFileUploadBytes(context.app.config),
    }),
  }),
});

builder.queryField('attachments', (t) =>
  t.field({
    type: AttachmentList,
    description: "Files uploaded by the authenticated user, and the whole organization's upload usage.",
    resolve: async (_root, _args, context) => {
      const listing = await listOwnAttachmentsWithMessages(context.app, actorOf(context));
      return { ...listing, attachments: await wholeListWithinBudget(context, listing, ANSWER_BYTES_PER_FILE) };
    },
  }),
);

const AttachmentConnection = connectionType('Attachment', Attachment, 'Every file of the caller, whatever the page.');

builder.objectField(Viewer, 'attachmentPage', (t) =>
  t.field({
    type: AttachmentConnection,
    description:
      "The caller's own files, oldest first, a page at a time. Exactly one of `first` and `last`, between 1\nand 100. A cursor stays valid when its file is deleted.",
    args: pageArguments(t.arg),
    resolve: (viewer, args, context) => domainQuery(() => connectionPage(ownAttachmentsWithMessagesList(context.app, viewer), args)),
  }),
);
