// Send invitations: the whole check order of behaviour.md 3.2 (with its Decisions), then one
// short transaction under the organization's lock that stores the invitations and queues their e-mails.
import { setImmediate } from 'node:timers/promises';
import type { AppContext } from '../../app-context.js';
import type { Actor } from '../auth/authenticate.js';
import type { Config } from '../../config.js';
import { insertInvitationEmails, prepareInvitationEmail, type PreparedInvitationEmail } from '../email/outbox.js';
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
import {
  assertAccountOldEnough,
  assertDailyLimitKept,
  assertLicensesSuffice,
  countsForLimits,
  invitationFailed,
  lockOrganizationSql,
  lockedCountsSql,
  type LimitedOrganization,
  type LockedCounts,
} from './limits.js';
import { queuedForOrganization } from './lock-queue.js';
import { distinctRowIds } from '../ids.js';
import { inSqlTransaction } from '../transaction.js';
import { insertInvitesChangedSql } from '../events/log.js';
import { statementRows, type Sql } from '../../db/sql.js';
import { Prisma } from '../../generated/prisma/client.js';
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
  const permissions = await loadInvitePermissions(app, actor, { channelIds: request.streamIds, groupIds: request.groupIds });
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
  const org = permissions.organization;
  const expiresAt = expiryFor(request, app.config.invitationLinkValidityMinutes, now);
  const { created, skipped } = await queuedForOrganization(org.id, async () => {
    // What needs no lock happens before the transaction, which stays a few statements long.
    const addresses = await prepareAddresses(app.config, actor, org, emails, expiresAt);
    // A hot path: the transaction goes straight through the driver (db/sql.ts).
    return inSqlTransaction(app.sql, (tx) => storeInvitations(tx, app.config, actor, { ...request, addresses, expiresAt, now, org }));
  });
  app.notifyOutbox();
  if (skipped.length > 0) {
    throw invitationFailed(
      "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!",
      { errors: skipped, sentInvitations: true },
    );
  }
  return created;
}

type InvitingOrganization = AddressPolicy & LimitedOrganization & { name: string };

/** A valid address with its confirmation key and rendered e-mail. */
interface Invitee {
  email: string;
  emailKey: string;
  mail: PreparedInvitationEmail;
}

/** Step 18's validation, and the valid addresses with their keys and e-mails. */
interface PreparedAddresses {
  all: string[];
  invalid: InviteeError[];
  valid: Invitee[];
}

/** Addresses prepared between two turns of the event loop: 10,000 at once held it for half a second. */
const ADDRESSES_PER_TURN = 500;

async function prepareAddresses(config: Config, actor: Actor, org: InvitingOrganization, emails: string[], expiresAt: Date | null): Promise<PreparedAddresses> {
  const invalid: InviteeError[] = [];
  const valid: Invitee[] = [];
  for (let i = 0; i < emails.length; i++) {
    if (i > 0 && i % ADDRESSES_PER_TURN === 0) await setImmediate();
    const email = emails[i]!;
    const problem = addressProblem(email, org);
    if (problem) {
      invalid.push([email, problem, false]);
      continue;
    }
    const invitation = { email, confirmationKey: generateConfirmationKey(), expiresAt, referrer: actor, organization: org };
    valid.push({ email, emailKey: email.toLowerCase(), mail: prepareInvitationEmail(config, invitation) });
  }
  return { all: emails, invalid, valid };
}

interface StoreRequest extends SendInvitationsRequest {
  addresses: PreparedAddresses;
  expiresAt: Date | null;
  now: Date;
  org: InvitingOrganization;
}

/**
 * Steps 14-20: the lock, then one statement that reads what the checks need and stores the
 * invitations of addresses without accounts; a refusal of the checks rolls the rows back.
 */
async function storeInvitations(tx: Sql, config: Config, actor: Actor, request: StoreRequest) {
  const { org, addresses, now } = request;
  const count = addresses.all.length;
  await statementRows(tx, lockOrganizationSql(org.id));
  const { locked, created } = await readAndInsert(tx, config, actor, request);
  assertDailyLimitKept(config, org, locked, count);
  assertLicensesSuffice(org, locked, count, request.inviteAs);
  assertAccountOldEnough(actor, org, now);
  const skipped = skippedAddresses(addresses, locked);
  if (skipped.length === count) {
    throw invitationFailed("We weren't able to invite anyone.", { errors: skipped });
  }
  return { created: created.map((row) => toInvitationView(row, now)), skipped };
}

const isSystemBot = (emailKey: string) => SYSTEM_BOT_ADDRESSES.has(emailKey);

/** Steps 18-19: invalid addresses refuse the whole request; existing accounts are skipped. */
function skippedAddresses(addresses: PreparedAddresses, locked: LockedCounts): InviteeError[] {
  const active = new Set(locked.activeKeys);
  const deactivated = new Set(locked.deactivatedKeys);
  const skipped: InviteeError[] = [];
  for (const { email, emailKey } of addresses.valid) {
    if (isSystemBot(emailKey)) skipped.push([email, 'Reserved for system bots.', false]);
    else if (active.has(emailKey)) skipped.push([email, 'Already has an account.', false]);
    else if (deactivated.has(emailKey)) skipped.push([email, 'Account has been deactivated.', true]);
  }
  if (addresses.invalid.length > 0) {
    throw invitationFailed("Some emails did not validate, so we didn't send any invitations.", { errors: [...addresses.invalid, ...skipped] });
  }
  return skipped;
}

/**
 * One statement whatever the number of addresses (every list travels as one array parameter): the
 * limits' counts and the accounts among the addresses (`lockedCountsSql`), and the invitations of the
 * others, with their channels, groups and e-mails. With an invalid address nothing is stored.
 */
type CreatedInvitation = Pick<InvitationView, 'id' | 'email' | 'invitedAs' | 'referrerId'> & { status: 'PENDING' };

async function readAndInsert(tx: Sql, config: Config, actor: Actor, request: StoreRequest) {
  const { org, addresses, now } = request;
  const reads = { ...countsForLimits(config, org), emailKeys: addresses.valid.map((a) => a.emailKey) };
  const candidates = addresses.invalid.length > 0 ? [] : addresses.valid.filter((a) => !isSystemBot(a.emailKey));
  const rows = await statementRows<LockedCounts & (CreatedInvitation | { [key in keyof CreatedInvitation]: null })>(tx, Prisma.sql`
    WITH locked AS (
      SELECT ${lockedCountsSql(org.id, now, reads)}
    ), created AS (
      INSERT INTO invitation ("organizationId", email, "referrerId", "invitedAs", "invitedAt", "expiresAt",
        "includeRealmDefaultSubscriptions", "notifyReferrerOnJoin", "welcomeMessageCustomText", "confirmationKey")
      SELECT ${org.id}, address.email, ${actor.id}, ${request.inviteAs}, ${now}::timestamp(3), ${request.expiresAt}::timestamp(3),
        ${request.includeRealmDefaultSubscriptions}, ${request.notifyReferrerOnJoin}, ${request.welcomeMessageCustomText ?? null}::text, address.key
      FROM unnest(${candidates.map((a) => a.email)}::text[], ${candidates.map((a) => a.emailKey)}::text[], ${candidates.map((a) => a.mail.confirmationKey)}::text[])
        WITH ORDINALITY AS address(email, "emailKey", key, position), locked
      WHERE address."emailKey" <> ALL(locked."activeKeys" || locked."deactivatedKeys")
      ORDER BY address.position
      RETURNING *
    ), channels AS (
      INSERT INTO invitation_channel ("invitationId", "channelId")
      SELECT created.id, channel FROM created CROSS JOIN unnest(${distinctRowIds(request.streamIds)}::int[]) AS channel
    ), groups AS (
      INSERT INTO invitation_group ("invitationId", "groupId")
      SELECT created.id, "group" FROM created CROSS JOIN unnest(${distinctRowIds(request.groupIds)}::int[]) AS "group"
    ), emails AS (
      ${insertInvitationEmails(Prisma.sql`created`, candidates.map((a) => a.mail))}
    ), event AS (
      ${insertInvitesChangedSql(org.id, actor.id, Prisma.sql`EXISTS (SELECT FROM created)`)}
    )
    SELECT locked.*, created.id, created.email, created."invitedAs", created."referrerId", created.status
    FROM locked LEFT JOIN created ON true ORDER BY created.id`);
  // The times are the request's own (the rows hold them as sent).
  const created = rows
    .filter((row): row is LockedCounts & CreatedInvitation => row.id !== null)
    .map(({ id, email, invitedAs, referrerId, status }) => ({ id, email, invitedAs, referrerId, status, invitedAt: now, expiresAt: request.expiresAt }));
  return { locked: rows[0]!, created };
}
