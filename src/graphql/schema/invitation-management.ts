// Invitation lifecycle fields: listing, revoking and resending invitations.
import type { GraphQLResolveInfo } from 'graphql';
import { connectionPage } from '../../domain/connections.js';
import { invitationViewList, listInvitations, resendInvitation, revokeInvitation } from '../../domain/invitations/manage.js';
import { wholeListWithinBudget } from '../../http/memory-budget.js';
import { builder } from '../builder.js';
import { actorOf, type GraphQLContext } from '../context.js';
import { selectsField } from '../selection.js';
import { BadRequestError, NotFoundError, asResult, domainQuery } from './errors.js';
import type { InvitationView } from '../../domain/invitations/status.js';
import { Invitation } from './invitation.js';
import { connectionSelects, connectionType, pageArguments } from './connection.js';
import { Viewer } from './user.js';

const InvitationActionSuccess = builder.objectRef<{ invitation: InvitationView }>('InvitationActionSuccess').implement({
  isTypeOf: (value) => 'invitation' in (value as object),
  fields: (t) => ({ invitation: t.field({ type: Invitation, resolve: (r) => r.invitation }) }),
});

export const InvitationActionResult = builder.unionType('InvitationActionResult', {
  types: [InvitationActionSuccess, NotFoundError, BadRequestError],
});

/** What one invitation costs while the answer is built (rows, views, result tree, JSON): an upper estimate, as for files. */
const ANSWER_BYTES_PER_INVITATION = 2048;

builder.queryField('invitations', (t) =>
  t.field({
    type: [Invitation],
    description:
      "Invitations that the authenticated user sent (administrators: all of the organization's),\nnewest first. Accepted, revoked and expired ones only when asked for.",
    args: { includeInactive: t.arg.boolean({ defaultValue: false }) },
    resolve: (_root, args, context, info) => invitationsOf(context, args.includeInactive ?? false, info),
  }),
);

/** Query.invitations' list (also what invitationsChanged delivers), with its referrers when asked for. */
export const invitationsOf = (context: GraphQLContext, includeInactive: boolean, info: GraphQLResolveInfo) =>
  domainQuery(async () => {
    const invitations = await listInvitations(context.app, actorOf(context), {
      includeInactive,
      withReferrers: selectsField(info, 'referrer'),
    });
    return wholeListWithinBudget(context, invitations, ANSWER_BYTES_PER_INVITATION);
  });

builder.mutationFields((t) => ({
  revokeInvitation: t.field({
    type: InvitationActionResult,
    description: 'Revoke a pending invitation (its referrer or an administrator). Same rules as\nDELETE /api/v1/invites/{id}.',
    args: { id: t.arg.int({ required: true }) },
    resolve: (_root, args, context) =>
      asResult(async () => ({ invitation: await revokeInvitation(context.app, actorOf(context), args.id) })),
  }),
  resendInvitation: t.field({
    type: InvitationActionResult,
    description: "Send a pending invitation's e-mail again. Same rules as POST /api/v1/invites/{id}/resend.",
    args: { id: t.arg.int({ required: true }) },
    resolve: (_root, args, context) =>
      asResult(async () => ({ invitation: await resendInvitation(context.app, actorOf(context), args.id) })),
  }),
}));

const InvitationConnection = connectionType('Invitation', Invitation);

builder.objectField(Viewer, 'invitationPage', (t) =>
  t.field({
    type: InvitationConnection,
    description:
      "The invitations the caller may list (administrators: the organization's), newest first, a page at\na time; same rules as attachmentPage.",
    args: { ...pageArguments(t.arg), includeInactive: t.arg.boolean({ defaultValue: false }) },
    resolve: (viewer, { includeInactive, ...page }, context, info) =>
      domainQuery(() =>
        connectionPage(
          invitationViewList(context.app, viewer, {
            includeInactive: includeInactive ?? false,
            withReferrers: connectionSelects(info, 'referrer'),
          }),
          page,
        ),
      ),
  }),
);
