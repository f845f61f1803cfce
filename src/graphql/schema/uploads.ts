// uploadFile and deleteAttachment: the upload and attachment services behind the GraphQL door.
import { Readable } from 'node:stream';
import { deleteOwnAttachment, listedAttachment } from '../../domain/attachments/attachments.js';
import { uploadFile, type IncomingFile } from '../../domain/uploads/upload-file.js';
import { builder } from '../builder.js';
import { actorOf } from '../context.js';
import type { OwnAttachmentWithMessages } from '../../domain/attachments/attachments.js';
import { Attachment } from './attachment.js';
import { BadRequestError, asResult, type ErrorShape } from './errors.js';

/** A multipart request's file as the services take it. */
export const incomingFile = (file: File): IncomingFile => ({
  fileName: file.name,
  contentType: file.type,
  data: Readable.from(chunksOf(file.stream()), { objectMode: false }),
});

/** Yoga's fetch implementation hands out its own ReadableStream class, which Readable.fromWeb refuses. */
async function* chunksOf(stream: ReadableStream<Uint8Array>) {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

interface UploadFileSuccessShape {
  attachment: OwnAttachmentWithMessages;
  filename: string;
}

const UploadFileSuccess = builder.objectRef<UploadFileSuccessShape>('UploadFileSuccess').implement({
  isTypeOf: (value) => 'filename' in (value as object),
  fields: (t) => ({
    attachment: t.field({
      type: Attachment,
      description: 'The stored file (not yet linked from any message).',
      resolve: (r) => r.attachment,
    }),
    filename: t.exposeString('filename', { description: "The file's name as stored (sanitized); the REST `filename`." }),
  }),
});

const UploadFileResult = builder.unionType('UploadFileResult', { types: [UploadFileSuccess, BadRequestError] });

builder.mutationField('uploadFile', (t) =>
  t.field({
    type: UploadFileResult,
    description: 'Store a file. Same rules, limits and messages as POST /api/v1/user_uploads.',
    args: { file: t.arg({ type: 'File', required: true }) },
    resolve: (_root, args, context): Promise<UploadFileSuccessShape | ErrorShape> =>
      asResult(async () => {
        const { attachment, filename } = await uploadFile(context.app, actorOf(context), incomingFile(args.file));
        // A new upload is linked from no message yet.
        return { attachment: { ...listedAttachment(attachment), messages: [] }, filename };
      }),
  }),
);

interface DeleteAttachmentSuccessShape {
  id: number;
  uploadSpaceUsed: bigint;
}

const DeleteAttachmentSuccess = builder.objectRef<DeleteAttachmentSuccessShape>('DeleteAttachmentSuccess').implement({
  isTypeOf: (value) => 'uploadSpaceUsed' in (value as object),
  fields: (t) => ({
    id: t.exposeInt('id'),
    uploadSpaceUsed: t.field({
      type: 'SafeInt',
      description: "The organization's total after the deletion.",
      resolve: (r) => r.uploadSpaceUsed,
    }),
  }),
});

const DeleteAttachmentResult = builder.unionType('DeleteAttachmentResult', { types: [DeleteAttachmentSuccess, BadRequestError] });

builder.mutationField('deleteAttachment', (t) =>
  t.field({
    type: DeleteAttachmentResult,
    description: 'Delete one of your own files. Same rules as DELETE /api/v1/attachments/{attachment_id}.',
    args: { id: t.arg.int({ required: true }) },
    resolve: (_root, args, context): Promise<DeleteAttachmentSuccessShape | ErrorShape> =>
      asResult(async () => ({ id: args.id, ...(await deleteOwnAttachment(context.app, actorOf(context), args.id, context.log)) })),
  }),
);
