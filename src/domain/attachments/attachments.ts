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

/** A file as the statement below writes it: JSON, parsed natively in one pass. */
interface AttachmentJson {
  id: number;
  name: string;
  pathId: string;
  /** Text: a JSON number would lose bytes past 2^53. */
  size: string;
  /** Epoch milliseconds, as the messages' times. */
  createTime: number;
  /** [id, dateSent] pairs. */
  messages: [number, number][];
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
  const [row] = await sql.rows<{ uploadSpaceUsed: string; uploadQuotaGb: number | null; attachments: AttachmentJson[] }>(OWN_ATTACHMENTS, [
    actor.id,
    actor.organizationId,
  ]);
  if (!row) throw new Error(`organization ${actor.organizationId} of user ${actor.id} is gone`);
  const attachments = row.attachments.map((a) => ({
    id: a.id,
    name: a.name,
    pathId: a.pathId,
    size: BigInt(a.size),
    createTime: new Date(a.createTime),
    messages: a.messages.map(([id, dateSent]) => ({ id, dateSent: new Date(dateSent) })),
  }));
  return { attachments, uploadSpaceUsed: BigInt(row.uploadSpaceUsed), uploadQuota: quotaInBytes(row.uploadQuotaGb) };
}

// Joined and grouped rather than a subquery per file: PostgreSQL's share of the request is a few
// milliseconds for 500 files instead of a thousand index probes. One JSON value rather than rows:
// the driver parses it natively instead of array literals in JavaScript.
const OWN_ATTACHMENTS = `
  SELECT o."uploadSpaceUsed"::text AS "uploadSpaceUsed", o."uploadQuotaGb",
         (SELECT coalesce(json_agg(own ORDER BY own.id), '[]') FROM (
            SELECT a.id, a.name, a."pathId", a.size::text AS size, (extract(epoch FROM a."createTime") * 1000)::int8 AS "createTime",
                   coalesce(json_agg(json_build_array(m.id, (extract(epoch FROM m."dateSent") * 1000)::int8) ORDER BY m.id)
                            FILTER (WHERE m.id IS NOT NULL), '[]') AS messages
              FROM attachment a
              LEFT JOIN message_attachment ma ON ma."attachmentId" = a.id
              LEFT JOIN message m ON m.id = ma."messageId"
             WHERE a."ownerId" = $1 AND a."organizationId" = o.id
             GROUP BY a.id) own) AS attachments
    FROM organization o
   WHERE o.id = $2`;

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
