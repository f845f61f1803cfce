// GET /attachments and DELETE /attachments/{attachment_id}: the reference's shapes over the
// attachments service.
import { deleteOwnAttachment, jsonInteger, listOwnAttachments } from '../../domain/attachments/attachments.js';
import { ATTACHMENT_PAGE_SIZE } from '../../domain/attachments/statements.js';
import { successResponse } from '../envelope.js';
import { undeclaredParameters } from '../params.js';
import type { RestHandler } from '../request.js';
import { pagedListResponse } from '../streamed-list.js';

/** A page's rows, answer objects and JSON together, per file: an upper estimate (4 MiB a page). */
const PAGE_BYTES_PER_FILE = 2048;

export const listAttachments: RestHandler = async ({ actor, params, app, log }) => {
  const listing = await listOwnAttachments(app, actor);
  return pagedListResponse({ app, log }, listing, {
    // The list's items are already in their answer's shape.
    key: 'attachments',
    pageBytes: ATTACHMENT_PAGE_SIZE * PAGE_BYTES_PER_FILE,
    after: { upload_space_used: jsonInteger(listing.uploadSpaceUsed) },
    // The endpoint takes no parameters: every one sent is reported (Decision 5).
    ignored: undeclaredParameters(params),
  });
};

export const deleteAttachment: RestHandler = async ({ actor, path, app, log }) => {
  await deleteOwnAttachment(app, actor, Number(path.attachmentId), log);
  return successResponse();
};
