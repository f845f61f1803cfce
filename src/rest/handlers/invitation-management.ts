// GET /invites, DELETE /invites/{id}, POST /invites/{id}/resend in the reference's shapes.
import {
  listPendingInvitations,
  resendInvitation as resend,
  revokeInvitation as revoke,
} from '../../domain/invitations/manage.js';
import { unixSeconds } from '../../domain/time.js';
import { successResponse } from '../envelope.js';
import { undeclaredParameters } from '../params.js';
import type { RestHandler } from '../request.js';

export const listInvitations: RestHandler = async ({ actor, app }) => {
  const invitations = await listPendingInvitations(app.prisma, actor);
  return successResponse({
    invites: invitations.map((i) => ({
      id: i.id,
      invited_by_user_id: i.referrerId,
      invited: unixSeconds(i.invitedAt),
      expiry_date: i.expiresAt ? unixSeconds(i.expiresAt) : null,
      email: i.email,
      invited_as: i.invitedAs,
      notify_referrer_on_join: i.notifyReferrerOnJoin,
      is_multiuse: false,
    })),
  });
};

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
