// The /api/v1 routes this server answers, in the reference's shapes. Methods are listed in the
// reference's declaration order (it is the order of `allowed_methods` in 405 answers).
// Every route but those marked apiOnly is also served to browser sessions at /json (dispatch.ts).
import type { RestRoute } from './dispatch.js';
import { deleteAttachment, listAttachments } from './handlers/attachments.js';
import { addEmoji, deactivateEmoji, listEmoji } from './handlers/emoji.js';
import { listInvitations, resendInvitation, revokeInvitation } from './handlers/invitation-management.js';
import { sendInvitations } from './handlers/invites.js';
import { deleteEvents, getEvents, register } from './handlers/events.js';
import { serverSettings } from './handlers/server-settings.js';
import { fetchApiKey, regenerateOwnApiKey, updateSettings } from './handlers/sign-in.js';
import { getOwnUser } from './handlers/users.js';
import { getTemporaryUrl, uploadFile } from './handlers/uploads.js';

export const restRoutes: RestRoute[] = [
  { pattern: /^\/invites$/, methods: { GET: listInvitations, POST: sendInvitations } },
  { pattern: /^\/invites\/(?<invitationId>[0-9]+)$/, methods: { DELETE: revokeInvitation } },
  { pattern: /^\/invites\/(?<invitationId>[0-9]+)\/resend$/, methods: { POST: resendInvitation } },
  { pattern: /^\/realm\/emoji$/, methods: { GET: listEmoji } },
  { pattern: /^\/realm\/emoji\/(?<emojiName>[\s\S]+)$/, methods: { POST: addEmoji, DELETE: deactivateEmoji }, streamsBody: ['POST'] },
  { pattern: /^\/attachments$/, methods: { GET: listAttachments } },
  { pattern: /^\/attachments\/(?<attachmentId>[0-9]+)$/, methods: { DELETE: deleteAttachment } },
  { pattern: /^\/user_uploads$/, methods: { POST: uploadFile }, streamsBody: ['POST'] },
  { pattern: /^\/user_uploads\/(?<realmId>[0-9]+)\/(?<filename>.+)$/, methods: { GET: getTemporaryUrl } },
  { pattern: /^\/server_settings$/, methods: {}, publicMethods: { GET: serverSettings }, apiOnly: true },
  { pattern: /^\/fetch_api_key$/, methods: {}, publicMethods: { POST: fetchApiKey }, apiOnly: true },
  { pattern: /^\/settings$/, methods: { PATCH: updateSettings } },
  { pattern: /^\/users\/me\/api_key\/regenerate$/, methods: { POST: regenerateOwnApiKey }, apiOnly: true },
  { pattern: /^\/users\/me$/, methods: { GET: getOwnUser } },
  { pattern: /^\/register$/, methods: { POST: register } },
  { pattern: /^\/events$/, methods: { GET: getEvents, DELETE: deleteEvents } },
];
