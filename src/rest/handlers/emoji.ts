// GET /realm/emoji and DELETE /realm/emoji/{emoji_name}: the reference's shapes over the emoji service.
import { deactivateCustomEmoji, emojiDict, listCustomEmoji } from '../../domain/emoji/custom-emoji.js';
import { successResponse } from '../envelope.js';
import { undeclaredParameters } from '../params.js';
import type { RestHandler } from '../request.js';

/** Every custom emoji of the organization, deactivated ones included, keyed by id string. */
export const listEmoji: RestHandler = async ({ actor, params, app }) => {
  const emoji = await listCustomEmoji(app.prisma, actor, { includeDeactivated: true });
  return successResponse({ emoji: Object.fromEntries(emoji.map((e) => [String(e.id), emojiDict(e)])) }, undeclaredParameters(params));
};

/** The path parameter arrives percent-decoded (the dispatcher decodes it; `/` is allowed in it). */
export const deactivateEmoji: RestHandler = async ({ actor, params, path, app }) => {
  await deactivateCustomEmoji(app.prisma, actor, path.emojiName!);
  return successResponse({}, undeclaredParameters(params));
};

