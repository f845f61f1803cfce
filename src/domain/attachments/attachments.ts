// Uploaded files: the caller's own list, the organization's upload space used, the messages that
// link to files, and deleting one's own file (behaviour.md section 5).
import type { Prisma } from '../../db/database.js';
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

/**
 * Every file the caller uploaded, claimed by a message or not, by ascending id, each with the
 * messages linking to it, and the total size of all files of the caller's organization (every
 * owner's). Any authenticated user may ask. Two statements whatever the number of files: this is
 * the settings page's hot path, so the files and their links come in one hand-written query.
 */
export async function listOwnAttachments(prisma: Prisma, actor: Actor): Promise<{ attachments: OwnAttachment[]; uploadSpaceUsed: bigint }> {
  const [rows, uploadSpaceUsed] = await Promise.all([
    prisma.$queryRaw<(AttachmentRecord & { messages: { id: number; dateSent: number }[] })[]>`
      SELECT a.id, a.name, a."pathId", a.size, a."createTime",
             coalesce(json_agg(json_build_object('id', m.id, 'dateSent', (extract(epoch FROM m."dateSent") * 1000)::int8) ORDER BY m.id)
                        FILTER (WHERE m.id IS NOT NULL), '[]') AS messages
        FROM attachment a
        LEFT JOIN message_attachment ma ON ma."attachmentId" = a.id
        LEFT JOIN message m ON m.id = ma."messageId"
       WHERE a."ownerId" = ${actor.id} AND a."organizationId" = ${actor.organizationId}
       GROUP BY a.id
       ORDER BY a.id`,
    organizationUploadSpaceUsed(prisma, actor.organizationId),
  ]);
  const attachments = rows.map((row) => ({ ...row, messages: row.messages.map((m) => ({ id: m.id, dateSent: new Date(m.dateSent) })) }));
  return { attachments, uploadSpaceUsed };
}

/** The organization's counter of bytes stored (upload-space.ts keeps it exact). */
export async function organizationUploadSpaceUsed(prisma: Prisma, organizationId: number): Promise<bigint> {
  const { uploadSpaceUsed } = await prisma.organization.findUniqueOrThrow({ where: { id: organizationId }, select: { uploadSpaceUsed: true } });
  return uploadSpaceUsed;
}

/**
 * Deletes one of the caller's own files. Unknown ids, other users' and other organizations' files
 * all get the same answer, so nobody learns which ids exist. Messages keep their (now dead) links.
 */
export async function deleteOwnAttachment(prisma: Prisma, actor: Actor, attachmentId: number): Promise<{ uploadSpaceUsed: bigint }> {
  const invalid = () => badRequest('Invalid attachment');
  if (!isRowId(attachmentId)) throw invalid();
  return prisma.$transaction(async (tx) => {
    const row = await tx.attachment.findFirst({
      where: { id: attachmentId, ownerId: actor.id, organizationId: actor.organizationId },
      select: { id: true, size: true },
    });
    if (!row) throw invalid();
    const uploadSpaceUsed = await removeAttachmentRow(tx, actor.organizationId, row);
    if (uploadSpaceUsed === null) throw invalid();
    return { uploadSpaceUsed };
  });
}
