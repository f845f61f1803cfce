import { builder } from '../builder.js';
import { BadRequestError, InvitationFailedError, NotFoundError } from './errors.js';
import { notImplemented } from './not-implemented.js';
import { Role, User } from './user.js';

export interface InvitationShape {
  id: number;
  email: string;
  invitedAs: number;
  invitedAt: Date;
  expiresAt: Date | null;
  referrerId: number;
  status: 'PENDING' | 'ACCEPTED' | 'REVOKED' | 'EXPIRED';
}

export const InvitationStatus = builder.enumType('InvitationStatus', {
  values: ['PENDING', 'ACCEPTED', 'REVOKED', 'EXPIRED'] as const,
});

export const Invitation = builder.objectRef<InvitationShape>('Invitation').implement({
  fields: (t) => ({
    id: t.exposeInt('id'),
    email: t.exposeString('email'),
    invitedAs: t.field({ type: Role, resolve: (i) => i.invitedAs as 100 }),
    invitedAt: t.field({ type: 'SafeInt', description: 'UNIX time in seconds.', resolve: notImplemented }),
    expiresAt: t.field({
      type: 'SafeInt',
      nullable: true,
      description: 'UNIX time in seconds; null when the invitation never expires.',
      resolve: notImplemented,
    }),
    referrer: t.field({ type: User, resolve: notImplemented }),
    status: t.field({ type: InvitationStatus, resolve: (i) => i.status }),
  }),
});

export const SendInvitationsInput = builder.inputType('SendInvitationsInput', {
  fields: (t) => ({
    inviteeEmails: t.stringList({
      required: true,
      description:
        'E-mail addresses. Each entry may itself hold several, separated by commas or newlines, as the\nREST parameter does.',
    }),
    inviteExpiresInMinutes: t.int({
      description:
        'Minutes until the invitations expire. Omitted: the server default (10 days unless configured).\nnull: they never expire.',
    }),
    inviteAs: t.field({ type: Role, defaultValue: 400 }),
    streamIds: t.intList({ required: true, description: 'Channels to subscribe the new user to on acceptance. May be empty.' }),
    groupIds: t.intList({ defaultValue: [] }),
    includeRealmDefaultSubscriptions: t.boolean({ defaultValue: false }),
    notifyReferrerOnJoin: t.boolean({ defaultValue: true }),
    welcomeMessageCustomText: t.string({
      description: `Administrators only. null: the organization's default text; "": no custom welcome message.`,
    }),
  }),
});

const SendInvitationsSuccess = builder.objectRef<{ invitations: InvitationShape[] }>('SendInvitationsSuccess').implement({
  isTypeOf: (value) => 'invitations' in (value as object),
  fields: (t) => ({
    invitations: t.field({
      type: [Invitation],
      description: 'The invitations created by this request, one per invited address.',
      resolve: (r) => r.invitations,
    }),
  }),
});

export const SendInvitationsResult = builder.unionType('SendInvitationsResult', {
  types: [SendInvitationsSuccess, InvitationFailedError, BadRequestError],
});

const InvitationActionSuccess = builder.objectRef<{ invitation: InvitationShape }>('InvitationActionSuccess').implement({
  isTypeOf: (value) => 'invitation' in (value as object),
  fields: (t) => ({ invitation: t.field({ type: Invitation, resolve: (r) => r.invitation }) }),
});

export const InvitationActionResult = builder.unionType('InvitationActionResult', {
  types: [InvitationActionSuccess, NotFoundError, BadRequestError],
});

builder.queryField('invitations', (t) =>
  t.field({
    type: [Invitation],
    description:
      "Invitations that the authenticated user sent (administrators: all of the organization's),\nnewest first. Accepted, revoked and expired ones only when asked for.",
    args: { includeInactive: t.arg.boolean({ defaultValue: false }) },
    resolve: notImplemented,
  }),
);

builder.mutationFields((t) => ({
  sendInvitations: t.field({
    type: SendInvitationsResult,
    description: 'Invite people by e-mail address. Same rules, limits and messages as POST /api/v1/invites.',
    args: { input: t.arg({ type: SendInvitationsInput, required: true }) },
    resolve: notImplemented,
  }),
  revokeInvitation: t.field({
    type: InvitationActionResult,
    description: 'Revoke a pending invitation (its referrer or an administrator). Same rules as\nDELETE /api/v1/invites/{id}.',
    args: { id: t.arg.int({ required: true }) },
    resolve: notImplemented,
  }),
  resendInvitation: t.field({
    type: InvitationActionResult,
    description: "Send a pending invitation's e-mail again. Same rules as POST /api/v1/invites/{id}/resend.",
    args: { id: t.arg.int({ required: true }) },
    resolve: notImplemented,
  }),
}));
