// Credentials over REST (signin.md sections 1, 3 and 6): fetching the API key with a password,
// changing the password, regenerating the key. The rules are the domain's (src/domain/auth/).
import { changePassword, regenerateApiKey } from '../../domain/auth/credentials.js';
import { signInWithPassword } from '../../domain/auth/sign-in.js';
import { currentApiKey } from '../../domain/users/api-keys.js';
import { successResponse } from '../envelope.js';
import { optional, parseParams, required, text } from '../params.js';
import type { PublicRestHandler, RestHandler } from '../request.js';

/** POST /fetch_api_key: the account's current key for its e-mail address and password. */
export const fetchApiKey: PublicRestHandler = async ({ app, params, clientAddress, rateLimits }) => {
  const { values, ignored } = parseParams(params, {
    // NUL characters are no address: the address check answers for them.
    username: required(text({ allowNul: true })),
    password: required(text({ allowNul: true })),
    realm: optional(text()),
  });
  const { username, password, realm } = values;
  const actor = await signInWithPassword(app, { username, password, realm, clientAddress, rateLimits });
  const apiKey = await currentApiKey(app, actor);
  return successResponse({ api_key: apiKey, email: actor.email, user_id: actor.id }, ignored);
};

/**
 * PATCH /settings with old_password and new_password; other settings are not offered here. Through
 * a session (/json/settings), that session stays signed in; the user's others end.
 */
export const updateSettings: RestHandler = async ({ app, actor, params, credentials }) => {
  const { values, ignored } = parseParams(params, {
    old_password: optional(text({ allowNul: true })),
    new_password: optional(text({ allowNul: true })),
  });
  // As the reference: an empty (or absent) new password changes nothing.
  if (values.new_password) {
    const keepSessionId = 'sessionId' in credentials ? credentials.sessionId : undefined;
    await changePassword(app, actor, { oldPassword: values.old_password ?? '', newPassword: values.new_password, keepSessionId });
  }
  return successResponse({}, ignored);
};

/** POST /users/me/api_key/regenerate */
export const regenerateOwnApiKey: RestHandler = async ({ app, actor, params }) =>
  successResponse({ api_key: await regenerateApiKey(app, actor) }, parseParams(params, {}).ignored);
