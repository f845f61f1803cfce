// Custom emoji of an organization: listing, and deactivation by name (behaviour.md section 4).
// Deactivated rows stay (old messages, reactions and statuses still render them).
import type { AppContext } from '../../app-context.js';
import { namedStatement } from '../../db/sql.js';
import type { Actor } from '../auth/authenticate.js';
import { DomainError, badRequest } from '../errors.js';
import { distinctRowIds } from '../ids.js';
import { isAdministrator } from '../users/roles.js';
import { insertEventSql } from '../events/log.js';
import { emojiImagePath, emojiStillPath } from '../uploads/paths.js';

export interface CustomEmojiRecord {
  id: number;
  organizationId: number;
  name: string;
  deactivated: boolean;
  authorId: number | null;
  fileName: string;
  isAnimated: boolean;
}

export const REALM_EMOJI_REMOVED = 'REALM_EMOJI_REMOVED';

export const EMOJI_RECORD = {
  id: true,
  organizationId: true,
  name: true,
  deactivated: true,
  authorId: true,
  fileName: true,
  isAnimated: true,
} as const;
const RECORD = EMOJI_RECORD;

/** Where the emoji's image is served, as the reference's local storage lays it out. */
export const emojiSourceUrl = (emoji: CustomEmojiRecord) =>
  `/user_avatars/${quotePath(emojiImagePath(emoji.organizationId, emoji.fileName))}`;

/** The still PNG of an animated emoji; null for still images. */
export const emojiStillUrl = (emoji: CustomEmojiRecord) =>
  emoji.isAnimated ? `/user_avatars/${quotePath(emojiStillPath(emoji.organizationId, emoji.fileName))}` : null;

const quotePath = (path: string) => path.split('/').map(encodeURIComponent).join('/');

/** The reference's emoji dictionary (GET /realm/emoji, events, audit log). */
export function emojiDict(emoji: CustomEmojiRecord) {
  return {
    id: String(emoji.id),
    name: emoji.name,
    source_url: emojiSourceUrl(emoji),
    still_url: emojiStillUrl(emoji),
    deactivated: emoji.deactivated,
    author_id: emoji.authorId,
  };
}

export type CustomEmojiChange = 'added' | 'deactivated';

/** What a realm_emoji event stores: the emoji that changed, for GraphQL's customEmojiChanged. */
export interface RealmEmojiPayload {
  change: CustomEmojiChange;
  emoji: CustomEmojiRecord;
}

/**
 * A realm_emoji event for every user of the organization. The REST event's dict (every custom emoji,
 * deactivated ones included) is read when the event is delivered, not stored: the deactivation
 * stays one statement.
 */
export const realmEmojiEvent = (emoji: CustomEmojiRecord, change: CustomEmojiChange) =>
  insertEventSql({
    organizationId: emoji.organizationId,
    type: 'realm_emoji',
    payload: { change, emoji } satisfies RealmEmojiPayload,
    recipients: 'organization',
  });

/** Every custom emoji of the organization as `GET /realm/emoji` and realm_emoji events key them. */
export async function realmEmojiDicts(app: AppContext, actor: Pick<Actor, 'organizationId'>) {
  const where = { organizationId: actor.organizationId };
  const emoji = await app.prisma.customEmoji.findMany({ where, orderBy: { id: 'asc' }, select: RECORD });
  return Object.fromEntries(emoji.map((e) => [String(e.id), emojiDict(e)]));
}

/**
 * The caller's organization's custom emoji, by ascending id; with `ids`, only those among them. Any
 * authenticated user may list them.
 */
export async function listCustomEmoji(
  app: AppContext,
  actor: Actor,
  options: { includeDeactivated: boolean; ids?: number[] },
): Promise<CustomEmojiRecord[]> {
  return app.prisma.customEmoji.findMany({
    where: {
      organizationId: actor.organizationId,
      ...(options.includeDeactivated ? {} : { deactivated: false }),
      ...(options.ids && { id: { in: distinctRowIds(options.ids) } }),
    },
    orderBy: { id: 'asc' },
    select: RECORD,
  });
}

const doesNotExist = (name: string) =>
  // The reference answers 404 with code BAD_REQUEST (feature level 190).
  new DomainError(`Emoji '${name}' does not exist`, { status: 404, notFound: true });

/**
 * Deactivates the caller's organization's active custom emoji named exactly `name` (case-sensitive,
 * no normalisation). Owners and administrators may deactivate any; everyone else (moderators,
 * members, guests, bots) only those they added. Returns the emoji as it is now.
 */
export async function deactivateCustomEmoji(app: AppContext, actor: Actor, name: string): Promise<CustomEmojiRecord> {
  const { sql } = app;
  // Decision 10: no stored name holds NUL (PostgreSQL text cannot), so such a name names nothing.
  if (name.includes('\0')) throw doesNotExist(name);
  const [emoji] = await sql.rows<CustomEmojiRecord>(ACTIVE_EMOJI_NAMED, [actor.organizationId, name]);
  if (!emoji) throw doesNotExist(name);
  if (!isAdministrator(actor.role) && emoji.authorId !== actor.id) {
    throw badRequest('Must be an organization administrator or emoji author');
  }
  const deactivated = { ...emoji, deactivated: true };
  const audit = { before: emojiDict(emoji), after: emojiDict(deactivated) };
  // One statement, so no transaction: conditional on still being active, so of two concurrent
  // requests exactly one wins, and the audit entry is written only by the winner.
  const written = await sql.rows(DEACTIVATE_WITH_AUDIT, [
    emoji.id,
    actor.organizationId,
    actor.id,
    REALM_EMOJI_REMOVED,
    JSON.stringify(audit),
  ]);
  if (written.length === 0) throw doesNotExist(name);
  return deactivated;
}

// Deactivation is a hot path (an administrator cleaning up), so both statements go straight to the driver.
const ACTIVE_EMOJI_NAMED = namedStatement(
  'emoji.active-named',
  `
  SELECT id, "organizationId", name, deactivated, "authorId", "fileName", "isAnimated" FROM custom_emoji
   WHERE "organizationId" = $1 AND name = $2 AND NOT deactivated
   ORDER BY id LIMIT 1`,
);

// The realm_emoji event (every user of the organization: an empty recipient list, the payload of
// realmEmojiEvent) is written by the same statement; its REST dict is read at delivery.
const DEACTIVATE_WITH_AUDIT = namedStatement(
  'emoji.deactivate',
  `
  WITH updated AS (UPDATE custom_emoji SET deactivated = true WHERE id = $1 AND NOT deactivated
                   RETURNING id, "organizationId", name, deactivated, "authorId", "fileName", "isAnimated"),
  event AS (INSERT INTO event ("organizationId", type, payload, "recipientIds")
            SELECT $2, 'realm_emoji', jsonb_build_object('change', 'deactivated', 'emoji', to_jsonb(updated)), '{}' FROM updated)
  INSERT INTO audit_log_entry ("organizationId", "actorId", "eventType", "eventTime", "extraData")
  SELECT $2, $3, $4, now() AT TIME ZONE 'UTC', $5::jsonb FROM updated
  RETURNING id`,
);
