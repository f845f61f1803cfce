// GET /attachments and DELETE /attachments/{attachment_id}: the reference's shapes over the
// attachments service.
import { deleteOwnAttachment, listOwnAttachments } from '../../domain/attachments/attachments.js';
import { successResponse } from '../envelope.js';
import { undeclaredParameters } from '../params.js';
import type { RestHandler } from '../request.js';

/**
 * JSON.stringify cannot write a bigint. Byte counts are bigints in the database (one file, and an
 * organization's total, pass 2^31), and every integer up to 2^53 - 1 (8 PiB) converts to a JSON
 * number exactly. Past that a number would silently round (and clients' JSON parsers, JavaScript's
 * among them, would round it again), so we fail loudly instead of answering a wrong total.
 */
export function jsonInteger(value: bigint): number {
  const number = Number(value);
  if (!Number.isSafeInteger(number)) throw new RangeError(`${value} is beyond what a JSON number holds exactly`);
  return number;
}

export const listAttachments: RestHandler = async ({ actor, params, app }) => {
  const { attachments, uploadSpaceUsed } = await listOwnAttachments(app.sql, actor);
  return successResponse(
    {
      attachments: attachments.map((a) => ({
        id: a.id,
        name: a.name,
        path_id: a.pathId,
        size: jsonInteger(a.size),
        create_time: a.createTime,
        message_ids: a.messageIds,
      })),
      upload_space_used: jsonInteger(uploadSpaceUsed),
    },
    // The endpoint takes no parameters: every one sent is reported (Decision 5).
    undeclaredParameters(params),
  );
};

export const deleteAttachment: RestHandler = async ({ actor, path, app }) => {
  await deleteOwnAttachment(app, actor, Number(path.attachmentId));
  return successResponse();
};
