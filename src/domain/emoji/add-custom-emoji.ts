// Adding a custom emoji (uploads.md section 3). The reference's checks in its order: who may add
// (1, 4), the name (2, 3, 5), one file (6), built-in names (7), the size (8, enforced while the
// file arrives), the type (9), then the image is resized and stored with the row, in one
// transaction that a failure undoes, files included.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { recordEvent } from '../events/log.js';
import type { AppContext } from '../../app-context.js';
import type { DatabaseClient } from '../../db/database.js';
import type { Actor } from '../auth/authenticate.js';
import { badRequest } from '../errors.js';
import { holdsSetting } from '../permissions/group-membership.js';
import { isAdministrator, isGuest } from '../users/roles.js';
import { bareContentType, contentTypeFor } from '../uploads/file-names.js';
import { avatarKey, emojiImagePath, emojiStillPath } from '../uploads/paths.js';
import { serverSecret } from '../server-secrets.js';
import { byteLimit, limited, singleFile, type IncomingFile, type ReceivedFile } from '../uploads/upload-file.js';
import { assertEmojiContentType, EMOJI_FORMATS, resizeEmoji } from './emoji-image.js';
import { isBuiltInEmojiName } from './built-in-emoji.js';
import { emojiDict, EMOJI_RECORD, realmEmojiEvent, type CustomEmojiRecord } from './custom-emoji.js';

export const REALM_EMOJI_ADDED = 'REALM_EMOJI_ADDED';

const nameTaken = () => badRequest('A custom emoji with this name already exists.');

/** check_valid_emoji_name, after the view's trimming and spaces-to-underscores. */
export function normalizeEmojiName(raw: string): string {
  const name = raw.trim().replace(/ /g, '_');
  if (name === '') throw badRequest('Emoji name is missing');
  if (/^[0-9a-z\-_]+(?<![-_])$/.test(name)) return name;
  if (/^[0-9a-z\-_]+$/.test(name)) throw badRequest('Emoji names must end with either a letter or digit.');
  throw badRequest('Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.');
}

/** Steps 1-5: everything that needs no file. Returns the normalized name. */
export async function assertMayAddEmoji(app: AppContext, actor: Actor, rawName: string): Promise<string> {
  if (isGuest(actor.role)) throw badRequest('Not allowed for guest users');
  if (actor.isBot) throw badRequest('This endpoint does not accept bot requests.');
  const name = normalizeEmojiName(rawName);
  const organization = await app.prisma.organization.findUniqueOrThrow({
    where: { id: actor.organizationId },
    select: { waitingPeriodThreshold: true, canAddCustomEmojiGroupId: true },
  });
  if (!(await holdsSetting(app, actor, organization, organization.canAddCustomEmojiGroupId))) throw badRequest('Insufficient permission');
  if (await isNameTaken(app.prisma, actor.organizationId, name)) throw nameTaken();
  return name;
}

const isNameTaken = async (db: Pick<DatabaseClient, 'customEmoji'>, organizationId: number, name: string) =>
  (await db.customEmoji.count({ where: { organizationId, name, deactivated: false } })) > 0;

/** Step 6. */
function assertOneEmojiFile(count: number): void {
  if (count !== 1) throw badRequest('You must upload exactly one file.');
}

/** Step 7: built-in names may be shadowed by administrators only. */
function assertMayUseName(actor: Actor, name: string): void {
  if (isBuiltInEmojiName(name) && !isAdministrator(actor.role)) throw badRequest('Only administrators can override default emoji.');
}

export interface ReceivedEmojiFile {
  data: Buffer;
  contentType: string;
}

/** Step 8 while the bytes arrive (at most MAX_EMOJI_FILE_SIZE_MIB are held), and step 9's type. */
export async function receiveEmojiFile(app: AppContext, file: IncomingFile): Promise<ReceivedEmojiFile> {
  const maxMib = app.config.uploads.maxEmojiFileSizeMib;
  const limiter = byteLimit(maxMib * 1024 * 1024, () => badRequest(`Uploaded file is larger than the allowed limit of ${maxMib} MiB`));
  const data = await buffer(limited(file.data, limiter));
  return { data, contentType: contentTypeFor(file.fileName, file.contentType) };
}

/** Step 10: the image resized, stored and recorded, with the audit log entry. */
async function storeCustomEmoji(app: AppContext, actor: Actor, name: string, file: ReceivedEmojiFile): Promise<CustomEmojiRecord> {
  const contentType = bareContentType(file.contentType);
  assertEmojiContentType(contentType);
  const resized = await resizeEmoji(file.data, contentType);
  const salt = (await serverSecret(app.prisma, 'emoji-file-names')).toString('hex');
  const written: string[] = [];
  const write = async (key: string, data: Buffer, type: string) => {
    written.push(key);
    await app.storage.write(key, Readable.from([data]), type);
  };
  try {
    return await app.prisma.$transaction(
      async (tx) => {
        // Serializes additions per organization, so two requests cannot both take one name.
        await tx.$queryRaw`SELECT id FROM organization WHERE id = ${actor.organizationId} FOR UPDATE`;
        if (await isNameTaken(tx, actor.organizationId, name)) throw nameTaken();
        const row = await tx.customEmoji.create({
          data: { organizationId: actor.organizationId, name, authorId: actor.id, fileName: '', isAnimated: resized.still !== null },
          select: { id: true },
        });
        const fileName = createHash('sha256').update(`${salt}:${row.id}`).digest('hex').slice(0, 8) + EMOJI_FORMATS[contentType].extension;
        const path = emojiImagePath(actor.organizationId, fileName);
        await write(avatarKey(`${path}.original`), file.data, contentType);
        await write(avatarKey(path), resized.image, contentType);
        if (resized.still) await write(avatarKey(emojiStillPath(actor.organizationId, fileName)), resized.still, 'image/png');
        const emoji = await tx.customEmoji.update({ where: { id: row.id }, data: { fileName }, select: EMOJI_RECORD });
        await tx.auditLogEntry.create({
          data: {
            organizationId: actor.organizationId,
            actorId: actor.id,
            eventType: REALM_EMOJI_ADDED,
            extraData: { added_emoji: emojiDict(emoji) },
          },
        });
        await recordEvent(tx, realmEmojiEvent(emoji, 'added'));
        return emoji;
      },
      { timeout: 60_000 },
    );
  } catch (error) {
    await Promise.all(written.map((key) => app.storage.delete(key).catch(() => false)));
    throw error;
  }
}

/**
 * Both doors, once the request's file parts were read: steps 6 and 7, then the first file's own
 * refusal (its size), then step 9 on and the row. `name` comes from assertMayAddEmoji (steps 1-5).
 */
export async function addReceivedCustomEmoji(
  app: AppContext,
  actor: Actor,
  { name, received }: { name: string; received: ReceivedFile<ReceivedEmojiFile> },
): Promise<CustomEmojiRecord> {
  assertOneEmojiFile(received.count);
  assertMayUseName(actor, name);
  if (!received.first!.ok) throw received.first!.error;
  return storeCustomEmoji(app, actor, name, received.first!.value);
}

/** All of it for one file (the GraphQL door, where exactly one file comes by type). */
export async function addCustomEmoji(
  app: AppContext,
  actor: Actor,
  input: { name: string; file: IncomingFile },
): Promise<CustomEmojiRecord> {
  const name = await assertMayAddEmoji(app, actor, input.name);
  return addReceivedCustomEmoji(app, actor, { name, received: await singleFile(receiveEmojiFile(app, input.file)) });
}
