import { builder } from '../builder.js';
import { notImplemented } from './not-implemented.js';

export interface AttachmentShape {
  id: number;
  name: string;
  pathId: string;
  size: bigint;
  createTime: Date;
}

export interface AttachmentListShape {
  attachments: AttachmentShape[];
  uploadSpaceUsed: bigint;
}

export const AttachmentMessage = builder.objectRef<{ id: number; dateSent: Date }>('AttachmentMessage').implement({
  fields: (t) => ({
    id: t.exposeInt('id'),
    dateSent: t.field({ type: 'SafeInt', description: 'UNIX time in seconds.', resolve: notImplemented }),
  }),
});

export const Attachment = builder.objectRef<AttachmentShape>('Attachment').implement({
  fields: (t) => ({
    id: t.exposeInt('id'),
    name: t.exposeString('name'),
    pathId: t.exposeString('pathId', { description: '<realm_id>/<2 chars>/<rest>/<file_name>' }),
    url: t.string({ description: '{server_url}/user_uploads/<path_id>', resolve: notImplemented }),
    size: t.field({ type: 'SafeInt', description: 'Bytes.', resolve: (a) => a.size }),
    createTime: t.field({ type: 'SafeInt', description: 'UNIX time in seconds.', resolve: notImplemented }),
    messageIds: t.field({ type: ['Int'], description: 'Messages, by any user of the organization, that reference the file.', resolve: notImplemented }),
    messages: t.field({ type: [AttachmentMessage], description: 'The same messages with their send times, loaded in one batch for all attachments.', resolve: notImplemented }),
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
  }),
});

builder.queryField('attachments', (t) =>
  t.field({
    type: AttachmentList,
    description: "Files uploaded by the authenticated user, and the whole organization's upload usage.",
    resolve: notImplemented,
  }),
);
