// Uploaded files: the caller's own list, the organization's upload space used, the messages that
// link to files, and deleting one's own file (behaviour.md section 5).
import type { AppContext } from '../../app-context.js';
import { namedStatement, namedStatementFamily, Parameters, type Sql } from '../../db/sql.js';
import { fileKey } from '../uploads/paths.js';
import { distinctRowIds, isRowId } from '../ids.js';
import type { Actor } from '../auth/authenticate.js';
import { badRequest } from '../errors.js';
import type { Logger } from '../../logging.js';
import { removeAttachmentRow } from './upload-space.js';
import type { Paged } from '../paging.js';
import { chunkSeek, keysetPages, seekSql, type KeysetList, type Seek } from '../connections.js';
import { ATTACHMENT_PAGE_SIZE, OWN_FILES_ORDER, ownAttachmentsStatement, ownFilesStatement } from './statements.js';
import { insertEventSql, recordEvent } from '../events/log.js';
import { unixSeconds } from '../time.js';

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

/** A message linking to a file: its id and send time in UNIX seconds. */
export interface LinkedMessage {
  id: number;
  dateSent: number;
}

/**
 * One of the caller's files as both doors list it, times already in UNIX seconds (whole seconds,
 * truncated): the list is the settings page's hot path, so PostgreSQL converts them rather than
 * every request building a date per file and per message.
 */
export interface ListedAttachment extends Omit<AttachmentRecord, 'createTime' | 'size'> {
  createTime: number;
  /** Bytes, as a number: checked to be exact (jsonInteger) when read. */
  size: number;
}

export interface OwnAttachment extends ListedAttachment {
  /** The messages (any sender's) that link to the file, by ascending id. */
  messageIds: number[];
}

export interface OwnAttachmentWithMessages extends ListedAttachment {
  /** The messages (any sender's) that link to the file, by ascending id, with their send times. */
  messages: LinkedMessage[];
}

/** The caller's files, page by page (src/domain/paging.ts), and what both doors show beside them. */
export interface OwnAttachments<A extends { id: number }> extends Paged<A> {
  /** Every owner's files of the organization, from its counter. */
  uploadSpaceUsed: bigint;
  uploadQuota: bigint | null;
}

/** One row per file (or one row of nulls when there is none), the organization's columns on each. */
interface OwnAttachmentRow {
  uploadSpaceUsed: string;
  uploadQuotaGb: number | null;
  id: number | null;
  name: string;
  pathId: string;
  /** Text: a number would lose bytes past 2^53. */
  size: string;
  /** UNIX seconds, as the messages' send times. */
  createTime: number;
  messageIds: number[];
  messageTimes?: number[];
}

/**
 * Every file the caller uploaded, claimed by a message or not, by ascending id, with the ids of the
 * messages linking to it, and the organization's upload space used (every owner's files). Any
 * authenticated user may ask. One statement for a list of up to a page: this is the settings page's
 * hot path, so it is hand-written.
 */
export async function listOwnAttachments(
  app: AppContext,
  actor: Actor,
  pageSize = ATTACHMENT_PAGE_SIZE,
): Promise<OwnAttachments<AttachmentListItem>> {
  return ownAttachments(
    ownFiles(app.sql, actor, false, (row) => attachmentListItem(row as OwnAttachmentRow & { id: number })),
    pageSize,
  );
}

/** The same list, each file with its messages' send times. */
export async function listOwnAttachmentsWithMessages(
  app: AppContext,
  actor: Actor,
  pageSize = ATTACHMENT_PAGE_SIZE,
): Promise<OwnAttachments<OwnAttachmentWithMessages>> {
  return ownAttachments(ownFiles(app.sql, actor, true, withMessages), pageSize);
}

/** The files of listOwnAttachmentsWithMessages read from any key on, for cursor connections (src/domain/connections.ts). */
export function ownAttachmentsWithMessagesList(app: AppContext, actor: Actor): KeysetList<OwnAttachmentWithMessages> {
  return ownFiles(app.sql, actor, true, withMessages).list;
}

/** One of the caller's own files as the list with messages has it; null when it is not (or no longer) theirs. */
export async function ownAttachmentWithMessages(
  app: AppContext,
  actor: Actor,
  attachmentId: number,
): Promise<OwnAttachmentWithMessages | null> {
  const [file] = await ownAttachmentsWithMessagesList(app, actor).read({
    after: { key: [attachmentId], inclusive: true },
    backward: false,
    limit: 1,
  });
  return file?.id === attachmentId ? file : null;
}

/**
 * Those of `ids` that are the caller's own files, as the list with messages has them, by ascending id:
 * the list's own statement, its page narrowed to the ids. Any other id (another user's file, another
 * organization's, none at all) names nothing.
 */
export async function ownAttachmentsWithMessagesWithIds(
  app: AppContext,
  actor: Actor,
  ids: number[],
): Promise<OwnAttachmentWithMessages[]> {
  const rowIds = distinctRowIds(ids);
  if (rowIds.length === 0) return [];
  const parameters = new Parameters([actor.id, actor.organizationId]);
  const seek = seekSql(OWN_FILES_ORDER, { backward: false, limit: rowIds.length }, parameters);
  const narrowed = { ...seek, where: `${seek.where} AND id = ANY(${parameters.add(rowIds)}::int[])` };
  const rows = await app.sql.rows<OwnAttachmentRow>(OWN_FILES_STATEMENTS(ownAttachmentsStatement(true, narrowed)), parameters.values);
  return rows.filter((row) => row.id !== null).map(withMessages);
}

/** The lists' statements: their texts vary only with the list's kind and the page's bounds. */
const OWN_FILES_STATEMENTS = namedStatementFamily('attachments.page');

const COUNT_OWN_FILES = namedStatement(
  'attachments.count',
  'SELECT count(*)::int AS count FROM attachment WHERE "ownerId" = $1 AND "organizationId" = $2',
);

/** The caller's files read by keyset; each statement also gives the organization's columns. */
function ownFiles<A extends { id: number }>(sql: Sql, actor: Actor, withMessages: boolean, toAttachment: (row: OwnAttachmentRow) => A) {
  const read = async (seek: Seek) => {
    const { text, values } = ownFilesStatement(actor, withMessages, seek);
    const rows = await sql.rows<OwnAttachmentRow>(OWN_FILES_STATEMENTS(text), values);
    if (!rows[0]) throw new Error(`organization ${actor.organizationId} of user ${actor.id} is gone`);
    return { organization: rows[0], files: rows[0].id === null ? [] : rows.map(toAttachment) };
  };
  const list: KeysetList<A> = {
    order: OWN_FILES_ORDER,
    keyOf: (file) => [file.id],
    read: async (seek) => (await read(seek)).files,
    count: () => countOwnAttachments(sql, actor),
  };
  return { read, list };
}

async function ownAttachments<A extends { id: number }>(
  files: ReturnType<typeof ownFiles<A>>,
  pageSize: number,
): Promise<OwnAttachments<A>> {
  const { organization, files: firstPage } = await files.read(chunkSeek(pageSize));
  const list = await keysetPages(files.list, pageSize, firstPage);
  return { ...list, uploadSpaceUsed: BigInt(organization.uploadSpaceUsed), uploadQuota: quotaInBytes(organization.uploadQuotaGb) };
}

async function countOwnAttachments(sql: Sql, actor: Actor): Promise<number> {
  const [row] = await sql.rows<{ count: number }>(COUNT_OWN_FILES, [actor.id, actor.organizationId]);
  return row!.count;
}

// One object per file, built in one go (no spread of the common fields): the lists' hot path.
const withMessages = (row: OwnAttachmentRow): OwnAttachmentWithMessages => ({
  id: row.id!,
  name: row.name,
  pathId: row.pathId,
  size: jsonInteger(row.size),
  createTime: row.createTime,
  messages: row.messageIds.map((id, i) => ({ id, dateSent: row.messageTimes![i]! })),
});

/**
 * JSON.stringify cannot write a bigint. Byte counts are bigints in the database (one file, and an
 * organization's total, pass 2^31), and every integer up to 2^53 - 1 (8 PiB) converts to a JSON
 * number exactly. Past that a number would silently round (and clients' JSON parsers, JavaScript's
 * among them, would round it again), so we fail loudly instead of answering a wrong total. The lists
 * read sizes as text (no bigint per file).
 */
export function jsonInteger(value: bigint | string | number): number {
  const number = Number(value);
  if (!Number.isSafeInteger(number)) throw new RangeError(`${value} is beyond what a JSON number holds exactly`);
  return number;
}

/** A stored file as the lists show it (a new upload's, before any message links to it). */
export const listedAttachment = ({ id, name, pathId, size, createTime }: AttachmentRecord): ListedAttachment => ({
  id,
  name,
  pathId,
  size: jsonInteger(size),
  createTime: unixSeconds(createTime),
});

/** A file as `GET /api/v1/attachments` lists it, and as `attachment` events carry it (events.md Decision 6). */
export interface AttachmentListItem {
  id: number;
  name: string;
  path_id: string;
  size: number;
  create_time: number;
  message_ids: number[];
}

/** The list item of a file, or of a list statement's row (its size as text): one object per file, no intermediate one. */
export const attachmentListItem = (a: Omit<OwnAttachment, 'size'> & { size: number | string }): AttachmentListItem => ({
  id: a.id,
  name: a.name,
  path_id: a.pathId,
  size: jsonInteger(a.size),
  create_time: a.createTime,
  message_ids: a.messageIds,
});

/** An `attachment` event for the file's owner only (events.md section 4). */
export const attachmentEvent = (owner: Actor, change: { op: 'add' | 'remove' | 'update'; attachment: object }, uploadSpaceUsed: bigint) =>
  insertEventSql({
    organizationId: owner.organizationId,
    type: 'attachment',
    payload: { ...change, upload_space_used: jsonInteger(uploadSpaceUsed) },
    recipients: { users: [owner.id] },
  });

/** upload_quota_gb is applied as GiB (uploads.md 1.2). */
export const quotaInBytes = (gb: number | null) => (gb === null ? null : BigInt(gb) << 30n);

/**
 * Deletes one of the caller's own files: its row, links and counted bytes in one transaction, then
 * (after the commit) its stored bytes. The database is the source of truth: bytes whose removal
 * fails (or whose process dies first) are left to the sweep (sweep-files.ts), never a row without
 * bytes. (The reference removes the bytes first and answers a storage failure with an error; here
 * that failure is logged and the deletion stands.) Unknown ids, other users' and other
 * organizations' files all get the same answer, so nobody learns which ids exist. Messages keep
 * their (now dead) links. `log`: the request's.
 */
export async function deleteOwnAttachment(
  app: AppContext,
  actor: Actor,
  attachmentId: number,
  log: Logger,
): Promise<{ uploadSpaceUsed: bigint }> {
  const invalid = () => badRequest('Invalid attachment');
  if (!isRowId(attachmentId)) throw invalid();
  const where = { id: attachmentId, ownerId: actor.id, organizationId: actor.organizationId };
  const row = await app.prisma.attachment.findFirst({ where, select: { id: true, size: true, pathId: true } });
  if (!row) throw invalid();
  const uploadSpaceUsed = await app.prisma.$transaction(async (tx) => {
    const total = await removeAttachmentRow(tx, actor.organizationId, row);
    if (total !== null) await recordEvent(tx, attachmentEvent(actor, { op: 'remove', attachment: { id: row.id } }, total));
    return total;
  });
  // A concurrent deletion of the same file won the race (and removes the bytes).
  if (uploadSpaceUsed === null) throw invalid();
  await removeStoredBytes(app, row.pathId, log);
  return { uploadSpaceUsed };
}

/** After the row is gone: a failure leaves the bytes to the sweep. */
async function removeStoredBytes(app: AppContext, pathId: string, log: Logger) {
  try {
    const removed = await app.storage.delete(fileKey(pathId));
    if (!removed) log.warn({ pathId }, 'the deleted file had no stored bytes');
  } catch (error) {
    log.warn({ pathId, err: error }, 'removing the stored bytes of a deleted file failed; the file sweep removes them later');
  }
}
