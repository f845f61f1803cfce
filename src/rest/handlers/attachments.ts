// GET /attachments and DELETE /attachments/{attachment_id}: the reference's shapes over the
// attachments service.
import { ATTACHMENT_PAGE_SIZE, attachmentListItem, deleteOwnAttachment, jsonInteger, listOwnAttachments } from '../../domain/attachments/attachments.js';
import { memoryBudgetOf, refusedAsBusy } from '../../http/memory-budget.js';
import { successResponse } from '../envelope.js';
import { undeclaredParameters } from '../params.js';
import type { RestHandler } from '../request.js';
import { mapPages, streamedSuccessResponse } from '../streamed-list.js';

/** A page's rows, answer objects and JSON together, per file: an upper estimate (4 MiB a page). */
const PAGE_BYTES_PER_FILE = 2048;


/**
 * A list of one page is answered whole (with its length); a longer one is streamed a page at a time,
 * with one page's worth of memory reserved for it.
 */
export const listAttachments: RestHandler = async ({ actor, params, app }) => {
  const listing = await listOwnAttachments(app.sql, actor);
  // The endpoint takes no parameters: every one sent is reported (Decision 5).
  const ignored = undeclaredParameters(params);
  const after = { upload_space_used: jsonInteger(listing.uploadSpaceUsed) };
  if (!listing.morePages) return successResponse({ attachments: listing.firstPage.map(attachmentListItem), ...after }, ignored);
  const reservation = await memoryBudgetOf(app).reserve(ATTACHMENT_PAGE_SIZE * PAGE_BYTES_PER_FILE).catch(refusedAsBusy);
  if (reservation instanceof Response) return reservation;
  return streamedSuccessResponse({
    key: 'attachments',
    pages: mapPages(listing.pages(), attachmentListItem),
    after: ignored.length > 0 ? { ...after, ignored_parameters_unsupported: ignored } : after,
    reservation,
  });
};

export const deleteAttachment: RestHandler = async ({ actor, path, app }) => {
  await deleteOwnAttachment(app, actor, Number(path.attachmentId));
  return successResponse();
};
