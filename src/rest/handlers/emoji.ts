// GET /realm/emoji, POST and DELETE /realm/emoji/{emoji_name}: the reference's shapes over the emoji service.
import { deactivateCustomEmoji, realmEmojiDicts } from '../../domain/emoji/custom-emoji.js';
import { addReceivedCustomEmoji, assertMayAddEmoji, receiveEmojiFile } from '../../domain/emoji/add-custom-emoji.js';
import { receiveFiles } from '../../http/multipart.js';
import { successResponse } from '../envelope.js';
import { undeclaredParameters } from '../params.js';
import type { RestHandler } from '../request.js';

/** Every custom emoji of the organization, deactivated ones included, keyed by id string. */
export const listEmoji: RestHandler = async ({ actor, params, app }) => {
  return successResponse({ emoji: await realmEmojiDicts(app, actor) }, undeclaredParameters(params));
};

/** The path parameter arrives percent-decoded (the dispatcher decodes it; `/` is allowed in it). */
export const deactivateEmoji: RestHandler = async ({ actor, params, path, app }) => {
  await deactivateCustomEmoji(app, actor, path.emojiName!);
  return successResponse({}, undeclaredParameters(params));
};

/**
 * POST /realm/emoji/{emoji_name} (multipart, one file). The checks that need no file run before the
 * body is read; the size is enforced while the file arrives, and reported after the file count and
 * the built-in name check, as the reference orders them.
 */
export const addEmoji: RestHandler = async ({ actor, path, app, request }) => {
  const name = await assertMayAddEmoji(app, actor, path.emojiName!);
  const received = await receiveFiles(
    request,
    (file) => receiveEmojiFile(app, file),
    async () => {},
  );
  await addReceivedCustomEmoji(app, actor, { name, received });
  return successResponse();
};
