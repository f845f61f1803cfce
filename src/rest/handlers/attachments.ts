// GET /attachments and DELETE /attachments/{attachment_id}: the reference's shapes over the
// attachments service.
import { ATTACHMENT_PAGE_SIZE, deleteOwnAttachment, listOwnAttachments, type OwnAttachment } from '../../domain/attachments/attachments.js';
import { memoryBudgetOf, refusedAsBusy } from '../../http/memory-budget.js';
import { successResponse } from '../envelope.js';
import { undeclaredParameters } from '../params.js';
import type { RestHandler } from '../request.js';
import { mapPages, streamedSuccessResponse } from '../streamed-list.js';

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

/** A page's rows, answer objects and JSON together, per file: an upper estimate (4 MiB a page). */
const PAGE_BYTES_PER_FILE = 2048;

const restShape = (a: OwnAttachment) => ({
  id: a.id,
  name: a.name,
  path_id: a.pathId,
  size: jsonInteger(a.size),
  create_time: a.createTime,
  message_ids: a.messageIds,
});

/**
 * A list of one page is answered whole (with its length); a longer one is streamed a page at a time,
 * with one page's worth of memory reserved for it.
 */
export const listAttachments: RestHandler = async ({ actor, params, app }) => {
  const listing = await listOwnAttachments(app.sql, actor);
  // The endpoint takes no parameters: every one sent is reported (Decision 5).
  const ignored = undeclaredParameters(params);
  const after = { upload_space_used: jsonInteger(listing.uploadSpaceUsed) };
  if (!listing.morePages) return successResponse({ attachments: listing.firstPage.map(restShape), ...after }, ignored);
  const reservation = await memoryBudgetOf(app).reserve(ATTACHMENT_PAGE_SIZE * PAGE_BYTES_PER_FILE).catch(refusedAsBusy);
  if (reservation instanceof Response) return reservation;
  return streamedSuccessResponse({
    key: 'attachments',
    pages: mapPages(listing.pages(), restShape),
    after: ignored.length > 0 ? { ...after, ignored_parameters_unsupported: ignored } : after,
    reservation,
  });
};

export const deleteAttachment: RestHandler = async ({ actor, path, app }) => {
  await deleteOwnAttachment(app, actor, Number(path.attachmentId));
  return successResponse();
};
