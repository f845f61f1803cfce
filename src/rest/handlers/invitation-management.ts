// GET /invites, DELETE /invites/{id}, POST /invites/{id}/resend in the reference's shapes.
import { INVITATION_PAGE_SIZE } from '../../domain/invitations/statements.js';
import {
  listPendingInvitations,
  type ListedInvitation,
  resendInvitation as resend,
  revokeInvitation as revoke,
} from '../../domain/invitations/manage.js';
import { successResponse } from '../envelope.js';
import { undeclaredParameters } from '../params.js';
import type { RestHandler } from '../request.js';
import { pagedListResponse } from '../streamed-list.js';
import { unixSecondsOfMs } from '../../domain/time.js';

const restShape = (i: ListedInvitation) => ({
  id: i.id,
  invited_by_user_id: i.referrerId,
  invited: unixSecondsOfMs(i.invitedAtMs),
  expiry_date: i.expiresAtMs === null ? null : unixSecondsOfMs(i.expiresAtMs),
  email: i.email,
  invited_as: i.invitedAs,
  notify_referrer_on_join: i.notifyReferrerOnJoin,
  is_multiuse: false,
});

/** A page's rows, answer objects and JSON together, per invitation: an upper estimate (5 MiB a page). */
const PAGE_BYTES_PER_INVITATION = 1024;

export const listInvitations: RestHandler = async ({ actor, app, log }) =>
  pagedListResponse({ app, log }, await listPendingInvitations(app, actor), {
    key: 'invites',
    item: restShape,
    pageBytes: INVITATION_PAGE_SIZE * PAGE_BYTES_PER_INVITATION,
  });

/** The route only matches digits; ids past any stored one simply name nothing. */
const invitationId = (path: Record<string, string>) => Number(path.invitationId);

export const revokeInvitation: RestHandler = async ({ actor, params, path, app }) => {
  await revoke(app, actor, invitationId(path));
  return successResponse({}, undeclaredParameters(params));
};

export const resendInvitation: RestHandler = async ({ actor, params, path, app }) => {
  await resend(app, actor, invitationId(path));
  return successResponse({}, undeclaredParameters(params));
};
