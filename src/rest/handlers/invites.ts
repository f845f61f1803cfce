// POST /api/v1/invites: the reference's parameters, parsed in its declaration order (alphabetical).
import { assertMayUseInvitations } from '../../domain/invitations/invite-permissions.js';
import { MAX_WELCOME_MESSAGE_LENGTH, sendInvitations as send } from '../../domain/invitations/send-invitations.js';
import { ROLE_CODES } from '../../domain/users/roles.js';
import { successResponse } from '../envelope.js';
import { json, jsonBool, jsonInt, jsonList, jsonNullable, jsonOneOf, optional, parseParams, required, text } from '../params.js';
import type { RestHandler } from '../request.js';

const SEND_INVITATIONS_PARAMS = {
  group_ids: optional(json(jsonList(jsonInt))),
  include_realm_default_subscriptions: optional(json(jsonBool)),
  invite_as: optional(json(jsonOneOf<number>(jsonInt, ROLE_CODES))),
  invite_expires_in_minutes: optional(json(jsonNullable(jsonInt))),
  // Decision 10: an address with NUL is an invalid address, reported in `errors` like any other.
  invitee_emails: required(text({ allowNul: true })),
  notify_referrer_on_join: optional(json(jsonBool)),
  stream_ids: required(json(jsonList(jsonInt))),
  welcome_message_custom_text: optional(text({ maxLength: MAX_WELCOME_MESSAGE_LENGTH })),
};

export const sendInvitations: RestHandler = async ({ actor, params, app }) => {
  // The reference's guest and bot decorators run before its parameter parser.
  assertMayUseInvitations(actor);
  const { values, ignored } = parseParams(params, SEND_INVITATIONS_PARAMS);
  await send(app, actor, {
    inviteeEmails: values.invitee_emails,
    streamIds: values.stream_ids,
    groupIds: values.group_ids,
    inviteAs: values.invite_as,
    inviteExpiresInMinutes: values.invite_expires_in_minutes,
    includeRealmDefaultSubscriptions: values.include_realm_default_subscriptions,
    notifyReferrerOnJoin: values.notify_referrer_on_join,
    welcomeMessageCustomText: values.welcome_message_custom_text,
  });
  return successResponse({}, ignored);
};
