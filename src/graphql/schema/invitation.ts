import type { InvitationView } from '../../domain/invitations/status.js';
import { builder } from '../builder.js';
import { mayViewEmailDelivery, type EmailDelivery } from '../../domain/email/delivery.js';
import {
  previewInvitations,
  type AddressVerdict as AddressVerdictShape,
  type InvitationPreview as InvitationPreviewShape,
} from '../../domain/invitations/preview-invitations.js';
import { sendInvitations, type SendInvitationsInput as InvitationsToSend } from '../../domain/invitations/send-invitations.js';
import { actorOf } from '../context.js';
import { asResult, BadRequestError, InvitationFailedError } from './errors.js';
import { unixSeconds, unixSecondsOfMs } from '../../domain/time.js';
import { Role, User } from './user.js';
import type { UserSummary } from '../../domain/users/user-summary.js';

export const InvitationStatus = builder.enumType('InvitationStatus', {
  values: ['PENDING', 'ACCEPTED', 'REVOKED', 'EXPIRED'] as const,
});

const EmailDeliveryStatus = builder.enumType('EmailDeliveryStatus', { values: ['PENDING', 'SENT', 'FAILED'] as const });

const InvitationEmailDelivery = builder.objectRef<EmailDelivery>('InvitationEmailDelivery').implement({
  fields: (t) => ({
    status: t.field({ type: EmailDeliveryStatus, resolve: (d) => d.status }),
    attempts: t.exposeInt('attempts', { description: 'Delivery attempts so far; failed ones are retried with growing delays.' }),
    lastError: t.exposeString('lastError', { nullable: true, description: 'Why the last attempt failed; null after success.' }),
    queuedAt: t.field({ type: 'SafeInt', description: 'UNIX time in seconds.', resolve: (d) => unixSeconds(d.queuedAt) }),
    sentAt: t.field({
      type: 'SafeInt',
      nullable: true,
      description: 'UNIX time in seconds.',
      resolve: (d) => (d.sentAt ? unixSeconds(d.sentAt) : null),
    }),
  }),
});

export const Invitation = builder.objectRef<InvitationView>('Invitation').implement({
  fields: (t) => ({
    id: t.exposeInt('id'),
    email: t.exposeString('email'),
    invitedAs: t.expose('invitedAs', { type: Role }),
    invitedAt: t.field({ type: 'SafeInt', description: 'UNIX time in seconds.', resolve: (i) => unixSecondsOfMs(i.invitedAtMs) }),
    expiresAt: t.field({
      type: 'SafeInt',
      nullable: true,
      description: 'UNIX time in seconds; null when the invitation never expires.',
      resolve: (i) => (i.expiresAtMs === null ? null : unixSecondsOfMs(i.expiresAtMs)),
    }),
    referrer: t.field({
      type: User,
      // The lists give each invitation its referrer, so it is a value, not a promise; a referrer that
      // is gone is null, which the non-null field reports as an error.
      resolve: (i, _args, context) => i.referrer ?? (context.loaders.userById.load(i.referrerId) as Promise<UserSummary>),
    }),
    status: t.expose('status', { type: InvitationStatus }),
    emailDelivery: t.field({
      type: InvitationEmailDelivery,
      nullable: true,
      description: 'How the latest e-mail of the invitation fared. Administrators only: null for others.',
      resolve: (i, _args, context) => (mayViewEmailDelivery(actorOf(context)) ? context.loaders.latestInvitationEmail.load(i.id) : null),
    }),
  }),
});

export const SendInvitationsInput = builder.inputType('SendInvitationsInput', {
  fields: (t) => ({
    inviteeEmails: t.stringList({
      required: true,
      description: 'E-mail addresses. Each entry may itself hold several, separated by commas or newlines, as the\nREST parameter does.',
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

const SendInvitationsSuccess = builder.objectRef<{ invitations: InvitationView[] }>('SendInvitationsSuccess').implement({
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

type SendInvitationsInputShape = typeof SendInvitationsInput.$inferInput;

/** The service's input for sendInvitations (and its preview): the addresses as the REST parameter's text. */
const sendInput = (input: SendInvitationsInputShape): InvitationsToSend => ({ ...input, inviteeEmails: input.inviteeEmails.join('\n') });

builder.mutationField('sendInvitations', (t) =>
  t.field({
    type: SendInvitationsResult,
    description: 'Invite people by e-mail address. Same rules, limits and messages as POST /api/v1/invites.',
    args: { input: t.arg({ type: SendInvitationsInput, required: true }) },
    resolve: (_root, { input }, context) =>
      asResult(async () => ({ invitations: await sendInvitations(context.app, actorOf(context), sendInput(input)) })),
  }),
);

const AddressVerdict = builder.objectRef<AddressVerdictShape>('AddressVerdict').implement({
  fields: (t) => ({
    email: t.exposeString('email', { description: 'One address as parsed from the input (an entry may hold several).' }),
    willInvite: t.exposeBoolean('willInvite'),
    reason: t.exposeString('reason', {
      nullable: true,
      description: 'When it would not be invited: the reason InviteeError.reason would give.',
    }),
    deactivated: t.exposeBoolean('deactivated', {
      description: 'True when the address is refused only because of a deactivated account, as InviteeError.deactivated.',
    }),
  }),
});

const InvitationPreview = builder.objectRef<InvitationPreviewShape>('InvitationPreview').implement({
  isTypeOf: (value) => 'wouldInvite' in (value as object),
  fields: (t) => ({
    addresses: t.field({ type: [AddressVerdict], resolve: (p) => p.addresses }),
    wouldInvite: t.exposeInt('wouldInvite', { description: 'How many invitations sendInvitations would store.' }),
  }),
});

const PreviewInvitationsResult = builder.unionType('PreviewInvitationsResult', {
  types: [BadRequestError, InvitationFailedError, InvitationPreview],
});

builder.queryField('previewInvitations', (t) =>
  t.field({
    type: PreviewInvitationsResult,
    description:
      'What sendInvitations would do with this input now, without writing or sending anything: the same\nchecks in the same order. When sendInvitations would invite nobody, the answer is the error it would\ngive (BadRequestError, or InvitationFailedError with the same flags and per-address errors);\notherwise one verdict per address, in the order given.',
    args: { input: t.arg({ type: SendInvitationsInput, required: true }) },
    resolve: (_root, { input }, context) => asResult(() => previewInvitations(context.app, actorOf(context), sendInput(input))),
  }),
);
