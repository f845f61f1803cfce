// Uploaded files: the caller's own list, the organization's upload space used, the messages that
// link to files, and deleting one's own file (behaviour.md section 5).
import type { AppContext } from '../../app-context.js';
import type { Sql } from '../../db/sql.js';
import { fileKey } from '../uploads/paths.js';
import { isRowId } from '../ids.js';
import type { Actor } from '../auth/authenticate.js';
import { badRequest } from '../errors.js';
import { removeAttachmentRow } from './upload-space.js';

export interface AttachmentRecord {
  id: number;
  name: string;
  pathId: string;
  /** Bytes; bigint because one file, and surely an organization's total, passes 2^31. */
  size: bigint;
  createTime: Date;
}

/** The seed's file URL: {server_url}/user_uploads/<path_id>. */
export const attachmentUrl = (serverUrl: string, pathId: string) => `${serverUrl}/user_uploads/${pathId}`;

export interface LinkedMessage {
  id: number;
  dateSent: Date;
}

export interface OwnAttachment extends AttachmentRecord {
  /** The messages (any sender's) that link to the file, by ascending id. */
  messages: LinkedMessage[];
}

/** One row per own file (or a single row without a file), each carrying the organization's figures. */
interface OwnAttachmentRow {
  uploadSpaceUsed: string;
  uploadQuotaGb: number | null;
  id: number | null;
  name: string;
  pathId: string;
  /** int8 as text: exact past 2^53. */
  size: string;
  /** Epoch milliseconds, as every time below. */
  createTime: number;
  messageIds: number[] | null;
  messageDates: number[] | null;
}

/**
 * Every file the caller uploaded, claimed by a message or not, by ascending id, each with the
 * messages linking to it, and the total size of all files of the caller's organization (every
 * owner's, from its counter). Any authenticated user may ask. One statement whatever the number of
 * files: this is the settings page's hot path, so it is hand-written, and both doors use it.
 */
export async function listOwnAttachments(
  sql: Sql,
  actor: Actor,
): Promise<{ attachments: OwnAttachment[]; uploadSpaceUsed: bigint; uploadQuota: bigint | null }> {
  const rows = await sql.rows<OwnAttachmentRow>(OWN_ATTACHMENTS, [actor.id, actor.organizationId]);
  if (rows.length === 0) throw new Error(`organization ${actor.organizationId} of user ${actor.id} is gone`);
  const attachments = rows[0]!.id === null ? [] : rows.map(toOwnAttachment);
  return { attachments, uploadSpaceUsed: BigInt(rows[0]!.uploadSpaceUsed), uploadQuota: quotaInBytes(rows[0]!.uploadQuotaGb) };
}

function toOwnAttachment(row: OwnAttachmentRow): OwnAttachment {
  const ids = row.messageIds ?? [];
  return {
    id: row.id!,
    name: row.name,
    pathId: row.pathId,
    size: BigInt(row.size),
    createTime: new Date(row.createTime),
    messages: ids.map((id, i) => ({ id, dateSent: new Date(row.messageDates![i]!) })),
  };
}

// Joined and grouped rather than a subquery per file: PostgreSQL's share of the request is a few
// milliseconds for 500 files instead of a thousand index probes.
const OWN_ATTACHMENTS = `
  SELECT o."uploadSpaceUsed"::text AS "uploadSpaceUsed", o."uploadQuotaGb", own.*
    FROM organization o
    LEFT JOIN (
      SELECT a.id, a.name, a."pathId", a.size::text AS size, (extract(epoch FROM a."createTime") * 1000)::float8 AS "createTime",
             array_agg(m.id ORDER BY m.id) FILTER (WHERE m.id IS NOT NULL) AS "messageIds",
             array_agg((extract(epoch FROM m."dateSent") * 1000)::float8 ORDER BY m.id) FILTER (WHERE m.id IS NOT NULL) AS "messageDates"
        FROM attachment a
        LEFT JOIN message_attachment ma ON ma."attachmentId" = a.id
        LEFT JOIN message m ON m.id = ma."messageId"
       WHERE a."ownerId" = $1 AND a."organizationId" = $2
       GROUP BY a.id) own ON true
   WHERE o.id = $2
   ORDER BY own.id`;

/** upload_quota_gb is applied as GiB (uploads.md 1.2). */
export const quotaInBytes = (gb: number | null) => (gb === null ? null : BigInt(gb) << 30n);

/**
 * Deletes one of the caller's own files: its stored bytes first (uploads.md section 4; bytes
 * already missing are only logged), then its row, links and counted bytes. Unknown ids, other
 * users' and other organizations' files all get the same answer, so nobody learns which ids exist.
 * Messages keep their (now dead) links.
 */
export async function deleteOwnAttachment(app: AppContext, actor: Actor, attachmentId: number): Promise<{ uploadSpaceUsed: bigint }> {
  const invalid = () => badRequest('Invalid attachment');
  if (!isRowId(attachmentId)) throw invalid();
  const where = { id: attachmentId, ownerId: actor.id, organizationId: actor.organizationId };
  const row = await app.prisma.attachment.findFirst({ where, select: { id: true, size: true, pathId: true } });
  if (!row) throw invalid();
  await removeStoredBytes(app, row.pathId);
  const uploadSpaceUsed = await app.prisma.$transaction((tx) => removeAttachmentRow(tx, actor.organizationId, row));
  // A concurrent deletion of the same file won the race.
  if (uploadSpaceUsed === null) throw invalid();
  return { uploadSpaceUsed };
}

async function removeStoredBytes(app: AppContext, pathId: string) {
  let removed: boolean;
  try {
    removed = await app.storage.delete(fileKey(pathId));
  } catch (error) {
    console.error(`Deleting the stored file ${pathId} failed:`, error);
    throw badRequest('An error occurred while deleting the attachment. Please try again later.');
  }
  if (!removed) console.warn(`${pathId} does not exist. Its entry in the database will be removed.`);
}
