// POST /user_uploads and the GraphQL uploadFile (uploads.md section 1): any authenticated user
// stores one file; its bytes are streamed to storage with the size limit enforced while they
// arrive, then the row is written under the organization's quota. Nothing is left behind on failure.
import { Transform, type Readable } from 'node:stream';
import type { AppContext } from '../../app-context.js';
import type { Actor } from '../auth/authenticate.js';
import { DomainError, badRequest } from '../errors.js';
import { insertAttachments } from '../attachments/upload-space.js';
import { attachmentEvent, attachmentListItem, listedAttachment, quotaInBytes, type AttachmentRecord } from '../attachments/attachments.js';
import { recordEvent } from '../events/log.js';
import { clientBasename, contentTypeFor, fitName, sanitizeName, unquote } from './file-names.js';
import { fileKey, newPathId } from './paths.js';

export interface IncomingFile {
  /** The file name the client sent (a path is reduced to its last segment). */
  fileName: string;
  /** The part's declared type; undefined or empty when none was given. */
  contentType: string | undefined;
  data: Readable;
}

/** How handling a request's first file part went: its result, or the error to report in turn. */
export type FileOutcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** What a request brought: its number of file parts and the outcome of the first (none: no file). */
export interface ReceivedFile<T> {
  count: number;
  first?: FileOutcome<T>;
}

/** The outcome of handling the single file of a request that holds exactly one (GraphQL's File). */
export async function singleFile<T>(handling: Promise<T>): Promise<ReceivedFile<T>> {
  return {
    count: 1,
    first: await handling.then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    ),
  };
}

export interface StagedUpload {
  pathId: string;
  /** The name as uploaded (unquoted): the stored `name` and the response's `filename`. */
  name: string;
  contentType: string;
  size: bigint;
}

export interface UploadedFile {
  attachment: AttachmentRecord;
  /** `/user_uploads/<path_id>` */
  url: string;
  filename: string;
}

const MIB = 1024 * 1024;

/**
 * The longest a request may take to arrive whole (the HTTP server's requestTimeout, src/server.ts;
 * Node checks it every 30 s). An upload's bytes are stored while its request arrives, so this bounds
 * how long its first stored byte can wait for the rest of the request.
 */
export const REQUEST_ARRIVAL_LIMIT_MS = 300_000;
const REQUEST_TIMEOUT_CHECK_MS = 30_000;
/** The commit's transaction: its wait for a connection, then its whole run (Prisma's defaults, stated). */
const COMMIT_TRANSACTION = { maxWait: 2_000, timeout: 5_000 };
/**
 * The import writes its files' bytes inside its one transaction, which lasts at most this long: room
 * for hundreds of thousands of files on a busy machine (the bench's 200,000-file organization took
 * over 5 minutes on two shared cores). The sweep's grace grows with it.
 */
export const IMPORT_TRANSACTION_MS = 30 * 60_000;

/**
 * The longest stored bytes can wait for the row that names them: an upload's request arriving, then
 * its commit; or an import's transaction. The file sweep never removes younger bytes.
 */
export const LONGEST_UNCOMMITTED_BYTES_MS = Math.max(
  REQUEST_ARRIVAL_LIMIT_MS + REQUEST_TIMEOUT_CHECK_MS + COMMIT_TRANSACTION.maxWait + COMMIT_TRANSACTION.timeout,
  IMPORT_TRANSACTION_MS,
);

/** The largest file POST /user_uploads accepts, in bytes. */
export const maxFileUploadBytes = (config: { uploads: { maxFileUploadSizeMib: number } }) => config.uploads.maxFileUploadSizeMib * MIB;

/** Checks 1 and 2 of the reference: exactly one file part. */
function assertOneFile(count: number): void {
  if (count === 0) throw badRequest('You must specify a file to upload');
  if (count !== 1) throw badRequest('You may only upload one file at a time');
}

/** A file part without a usable name is not a file (as in the reference's multipart parser). */
export const isFileName = (fileName: string) => clientBasename(fileName) !== null;

/** Passes bytes through until more than `maxBytes` went by, then fails with `tooLarge()`. */
export function byteLimit(maxBytes: number, tooLarge: () => Error): Transform & { bytes: number } {
  const limiter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      limiter.bytes += chunk.length;
      if (limiter.bytes > maxBytes) done(tooLarge());
      else done(null, chunk);
    },
  }) as Transform & { bytes: number };
  limiter.bytes = 0;
  return limiter;
}

/**
 * `source` through the limit. Once the limit fails, the rest of `source` is read and dropped: the
 * multipart parser feeding it must keep going to count the request's other file parts.
 */
export function limited(source: Readable, limiter: Transform): Transform {
  source.on('error', (error) => limiter.destroy(error));
  limiter.on('error', () => {
    source.unpipe(limiter);
    source.resume();
  });
  return source.pipe(limiter);
}

const fileTooLarge = (maxMib: number) => () =>
  badRequest(`File is larger than this server's configured maximum upload size (${maxMib} MiB).`);

/** Step 3 while streaming, then into storage. The caller owns the staged bytes (commit or discard). */
export async function stageUpload(app: AppContext, actor: Actor, file: IncomingFile): Promise<StagedUpload> {
  void actor; // Any authenticated user may upload (guests and bots included).
  const basename = clientBasename(file.fileName);
  if (basename === null) throw badRequest('You must specify a file to upload');
  const name = unquote(basename);
  const contentType = contentTypeFor(name, file.contentType);
  const pathId = newPathId(actor.organizationId, fitName(sanitizeName(name)));
  const maxMib = app.config.uploads.maxFileUploadSizeMib;
  const limiter = byteLimit(maxMib * MIB, fileTooLarge(maxMib));
  await app.storage.write(fileKey(pathId), limited(file.data, limiter), contentType);
  return { pathId, name, contentType, size: BigInt(limiter.bytes) };
}

export async function discardUpload(app: AppContext, staged: StagedUpload): Promise<void> {
  await app.storage.delete(fileKey(staged.pathId));
}

export const quotaExceeded = () => new DomainError("Upload would exceed your organization's upload quota.", { code: 'REALM_UPLOAD_QUOTA' });

/**
 * Step 4 and the row: under a lock on the organization's row (concurrent uploads cannot overshoot
 * the quota together), then the row and the organization's counter in the same transaction. A
 * refusal, or a failure that surely stored no row, removes the staged bytes.
 */
async function commitUpload(app: AppContext, actor: Actor, staged: StagedUpload): Promise<UploadedFile> {
  try {
    const attachment = await app.prisma.$transaction(async (tx) => {
      const [organization] = await tx.$queryRaw<{ uploadQuotaGb: number | null; uploadSpaceUsed: bigint }[]>`
        SELECT "uploadQuotaGb", "uploadSpaceUsed" FROM organization WHERE id = ${actor.organizationId} FOR UPDATE`;
      const quota = quotaInBytes(organization!.uploadQuotaGb);
      if (quota !== null && organization!.uploadSpaceUsed + staged.size > quota) throw quotaExceeded();
      const [row] = await insertAttachments(tx, actor.organizationId, [
        {
          organizationId: actor.organizationId,
          ownerId: actor.id,
          name: staged.name,
          pathId: staged.pathId,
          size: staged.size,
          contentType: staged.contentType,
        },
      ]);
      const stored = await tx.attachment.findUniqueOrThrow({
        where: { id: row!.id },
        select: { id: true, name: true, pathId: true, size: true, createTime: true },
      });
      const listed = { ...listedAttachment(stored), messageIds: [] };
      await recordEvent(
        tx,
        attachmentEvent(actor, { op: 'add', attachment: attachmentListItem(listed) }, organization!.uploadSpaceUsed + staged.size),
      );
      return stored;
    }, COMMIT_TRANSACTION);
    return { attachment, url: `/user_uploads/${staged.pathId}`, filename: staged.name };
  } catch (error) {
    if (await surelyNotStored(app, staged, error)) await discardUpload(app, staged);
    throw error;
  }
}

/**
 * Whether a failed commit surely left no row for the staged file. A refusal did; but a connection
 * cut while committing leaves the outcome unknown, and the transaction may have committed (the fault
 * soak found a row whose bytes this had removed). Then the row is looked for; when even that fails,
 * the bytes stay, and the file sweep removes them later if no row names them.
 */
async function surelyNotStored(app: AppContext, staged: StagedUpload, error: unknown): Promise<boolean> {
  if (error instanceof DomainError) return true;
  return app.prisma.attachment.count({ where: { pathId: staged.pathId } }).then(
    (rows) => rows === 0,
    () => false,
  );
}

/**
 * Both doors, once the request's file parts were staged: checks 1-2 on their count, then the first
 * file's own refusal (its size), then step 4 and the row. Staged bytes never outlive a refusal.
 */
export async function uploadReceivedFile(app: AppContext, actor: Actor, received: ReceivedFile<StagedUpload>): Promise<UploadedFile> {
  const staged = received.first?.ok ? received.first.value : undefined;
  try {
    assertOneFile(received.count);
  } catch (error) {
    if (staged) await discardUpload(app, staged);
    throw error;
  }
  if (!received.first!.ok) throw received.first!.error;
  return commitUpload(app, actor, staged!);
}

/** One file, start to end (the GraphQL door, where the request holds exactly one file by type). */
export async function uploadFile(app: AppContext, actor: Actor, file: IncomingFile): Promise<UploadedFile> {
  return uploadReceivedFile(app, actor, await singleFile(stageUpload(app, actor, file)));
}
