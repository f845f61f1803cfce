// Send invitations: the whole check order of behaviour.md 3.2 (with its Decisions), then one
// transaction under the organization's lock that stores the invitations and queues their e-mails.
import type { AppContext } from '../../app-context.js';
import type { Actor } from '../auth/authenticate.js';
import { queueInvitationEmails, type Transaction } from '../email/outbox.js';
import { badRequest } from '../errors.js';
import { ROLE_CODES, isAdministrator } from '../users/roles.js';
import { addressProblem, parseInviteeEmails, type AddressPolicy } from './addresses.js';
import { generateConfirmationKey } from './confirmation-key.js';
import {
  assertChannelsInvitable,
  assertGroupsInvitable,
  assertMayInvite,
  assertMayInviteAs,
  assertMayUseInvitations,
  loadInvitePermissions,
} from './invite-permissions.js';
import { assertAccountOldEnough, assertDailyLimit, assertLicenseLimit, invitationFailed, lockOrganization } from './limits.js';
import { inTransaction } from '../transaction.js';
import type { Invitation } from '../../generated/prisma/client.js';
import { toInvitationView, type InvitationView } from './status.js';

export const MAX_WELCOME_MESSAGE_LENGTH = 8000;
const SYSTEM_BOT_ADDRESSES = new Set(['notification-bot@zulip.com', 'welcome-bot@zulip.com', 'emailgateway@zulip.com']);
/** Latest expiry PostgreSQL and JavaScript dates both hold comfortably (year 9999). */
const LATEST_EXPIRY_MS = Date.UTC(9999, 11, 31);

export interface SendInvitationsRequest {
  /** The raw address list: commas and newlines separate addresses. */
  inviteeEmails: string;
  streamIds: number[];
  groupIds: number[];
  inviteAs: number;
  /** undefined: the server default; null: never expires. */
  inviteExpiresInMinutes: number | null | undefined;
  includeRealmDefaultSubscriptions: boolean;
  notifyReferrerOnJoin: boolean;
  /** undefined when not supplied (the organization's default applies at acceptance). */
  welcomeMessageCustomText: string | undefined;
}

type InviteeError = [email: string, reason: string, deactivated: boolean];

/** The checks a typed REST parser makes before the view runs; repeated here for GraphQL callers. */
function assertWellFormed(request: SendInvitationsRequest): void {
  if (!ROLE_CODES.includes(request.inviteAs as never)) {
    throw badRequest('Invalid invite_as: Value error, Not in the list of possible values');
  }
  const text = request.welcomeMessageCustomText;
  if (text?.includes('\0')) throw badRequest('welcome_message_custom_text contains NULL (0x00) characters.');
  if (text !== undefined && [...text].length > MAX_WELCOME_MESSAGE_LENGTH) {
    throw badRequest(`welcome_message_custom_text is too long (limit: ${MAX_WELCOME_MESSAGE_LENGTH} characters)`);
  }
}

function expiryFor(request: SendInvitationsRequest, defaultMinutes: number, now: Date): Date | null {
  const minutes = request.inviteExpiresInMinutes === undefined ? defaultMinutes : request.inviteExpiresInMinutes;
  if (minutes === null) return null;
  const expiresAt = now.getTime() + minutes * 60_000;
  if (!Number.isSafeInteger(expiresAt) || expiresAt < 0 || expiresAt > LATEST_EXPIRY_MS) {
    throw badRequest('Invalid invite_expires_in_minutes: Value error, Out of range');
  }
  return new Date(expiresAt);
}

/**
 * Invites every address of the request, or throws the first refusal. When some addresses already
 * have accounts, the others are invited and committed, and INVITATION_FAILED is thrown afterwards
 * with `sent_invitations: true`, as the reference does.
 */
export async function sendInvitations(app: AppContext, actor: Actor, request: SendInvitationsRequest): Promise<InvitationView[]> {
  assertMayUseInvitations(actor);
  assertWellFormed(request);
  const permissions = await loadInvitePermissions(app.prisma, actor, { channelIds: request.streamIds, groupIds: request.groupIds });
  assertMayInvite(permissions);
  assertMayInviteAs(actor, request.inviteAs);
  const emails = parseInviteeEmails(request.inviteeEmails);
  if (emails.length === 0) throw badRequest('You must specify at least one email address.');
  assertChannelsInvitable(permissions, request.streamIds);
  assertGroupsInvitable(permissions, request.groupIds);
  if (request.welcomeMessageCustomText !== undefined && !isAdministrator(actor.role)) {
    throw badRequest('Must be an organization administrator');
  }
  const now = new Date();
  const expiresAt = expiryFor(request, app.config.invitationLinkValidityMinutes, now);
  const { created, skipped } = await inTransaction(app.prisma, (tx) =>
    storeInvitations(tx, app, actor, { ...request, emails, expiresAt, now, policy: permissions.organization }),
  );
  app.notifyOutbox();
  if (skipped.length > 0) {
    throw invitationFailed(
      "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!",
      { errors: skipped, sentInvitations: true },
    );
  }
  return created;
}

interface StoreRequest extends SendInvitationsRequest {
  emails: string[];
  expiresAt: Date | null;
  now: Date;
  policy: AddressPolicy & { id: number; name: string; maxInvites: number | null; licenseLimit: number | null; inviteRequired: boolean };
}

async function storeInvitations(tx: Transaction, app: AppContext, actor: Actor, request: StoreRequest) {
  const org = request.policy;
  await lockOrganization(tx, org.id);
  await assertDailyLimit(tx, app.config, org, request.emails.length, request.now);
  await assertLicenseLimit(tx, org, request.emails.length, request.inviteAs);
  assertAccountOldEnough(actor, org, request.now);
  const { invitable, skipped } = await sortAddresses(tx, org, request.emails);
  if (skipped.length === request.emails.length) {
    throw invitationFailed("We weren't able to invite anyone.", { errors: skipped });
  }
  const created = await createInvitations(tx, actor, request, invitable);
  await queueInvitationEmails(
    tx,
    app.config,
    created.map((row) => ({ ...row, referrer: actor, organization: org })),
  );
  return { created: created.map((row) => toInvitationView(row, request.now)), skipped };
}

/** Steps 18-19: invalid addresses refuse the whole request; existing accounts are skipped. */
async function sortAddresses(tx: Transaction, org: AddressPolicy & { id: number }, emails: string[]) {
  const invalid: InviteeError[] = [];
  const valid: string[] = [];
  for (const email of emails) {
    const problem = addressProblem(email, org);
    if (problem) invalid.push([email, problem, false]);
    else valid.push(email);
  }
  // One array parameter, however many addresses the request names.
  const existing = await tx.$queryRaw<{ emailKey: string; isActive: boolean }[]>`
    SELECT "emailKey", "isActive" FROM user_account
    WHERE "organizationId" = ${org.id} AND "emailKey" = ANY(${valid.map((e) => e.toLowerCase())}::text[])`;
  const accountByKey = new Map(existing.map((u) => [u.emailKey, u]));
  const skipped: InviteeError[] = [];
  const invitable: string[] = [];
  for (const email of valid) {
    const key = email.toLowerCase();
    const account = accountByKey.get(key);
    if (SYSTEM_BOT_ADDRESSES.has(key)) skipped.push([email, 'Reserved for system bots.', false]);
    else if (account?.isActive) skipped.push([email, 'Already has an account.', false]);
    else if (account) skipped.push([email, 'Account has been deactivated.', true]);
    else invitable.push(email);
  }
  if (invalid.length > 0) {
    throw invitationFailed("Some emails did not validate, so we didn't send any invitations.", { errors: [...invalid, ...skipped] });
  }
  return { invitable, skipped };
}

/**
 * The invitations, their channels and groups: one statement each, whatever the number of addresses
 * (every list travels as one array parameter).
 */
async function createInvitations(tx: Transaction, actor: Actor, request: StoreRequest, emails: string[]): Promise<Invitation[]> {
  const keys = emails.map(() => generateConfirmationKey());
  const created = await tx.$queryRaw<Invitation[]>`
    INSERT INTO invitation ("organizationId", email, "referrerId", "invitedAs", "invitedAt", "expiresAt",
      "includeRealmDefaultSubscriptions", "notifyReferrerOnJoin", "welcomeMessageCustomText", "confirmationKey")
    SELECT ${request.policy.id}, address.email, ${actor.id}, ${request.inviteAs}, ${request.now}::timestamp(3), ${request.expiresAt}::timestamp(3),
      ${request.includeRealmDefaultSubscriptions}, ${request.notifyReferrerOnJoin}, ${request.welcomeMessageCustomText ?? null}::text, address.key
    FROM unnest(${emails}::text[], ${keys}::text[]) WITH ORDINALITY AS address(email, key, position)
    ORDER BY address.position
    RETURNING *`;
  const invitationIds = created.map((invitation) => invitation.id);
  const channelIds = [...new Set(request.streamIds)];
  const groupIds = [...new Set(request.groupIds)];
  if (channelIds.length > 0) {
    await tx.$executeRaw`
      INSERT INTO invitation_channel ("invitationId", "channelId")
      SELECT invitation, channel FROM unnest(${invitationIds}::int[]) AS invitation CROSS JOIN unnest(${channelIds}::int[]) AS channel`;
  }
  if (groupIds.length > 0) {
    await tx.$executeRaw`
      INSERT INTO invitation_group ("invitationId", "groupId")
      SELECT invitation, "group" FROM unnest(${invitationIds}::int[]) AS invitation CROSS JOIN unnest(${groupIds}::int[]) AS "group"`;
  }
  return created.sort((a, b) => a.id - b.id);
}
