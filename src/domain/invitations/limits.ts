// Limits checked under the organization's row lock (behaviour.md 3.8, Decisions 3, 4 and 8), so
// concurrent requests cannot pass them together. What they count is read in one statement
// (`lockedCountsSql`), together with the existing accounts an invitation needs to know about.
import type { Config } from '../../config.js';
import { INVITATION_EMAIL } from '../email/outbox.js';
import type { Transaction } from '../transaction.js';
import { InvitationFailedError } from '../errors.js';
import { Prisma } from '../../generated/prisma/client.js';
import { DAY_MS } from '../time.js';
import { ROLE, isAdministrator } from '../users/roles.js';
import type { Actor } from '../auth/authenticate.js';

const INVITES_MIN_USER_AGE_DAYS = 3;

export interface LimitedOrganization {
  id: number;
  maxInvites: number | null;
  licenseLimit: number | null;
  inviteRequired: boolean;
}

/**
 * Locks the organization's row until the transaction ends. A statement without parameters, so that a
 * driver transaction can open with it (db/sql.ts), a round trip fewer: the id is written into the
 * text, so it must be an integer.
 */
export function lockOrganizationStatement(organizationId: number): string {
  if (!Number.isSafeInteger(organizationId)) throw new Error(`not an organization id: ${organizationId}`);
  return `SELECT id FROM organization WHERE id = ${organizationId} FOR UPDATE`;
}

export async function lockOrganization(tx: Transaction, organizationId: number): Promise<void> {
  await tx.$queryRaw(Prisma.raw(lockOrganizationStatement(organizationId)));
}

/** What the limits count (null where not asked) and which of the asked addresses have accounts. */
export interface LockedCounts {
  sentToday: number | null;
  guests: number | null;
  nonGuests: number | null;
  /** Lower-cased addresses of active and of deactivated accounts. */
  activeKeys: string[];
  deactivatedKeys: string[];
}

const dailyMaximum = (config: Config, org: LimitedOrganization) => org.maxInvites ?? config.invitesDefaultRealmDailyMax;

/** The counts the organization's limits need: only those of the limits that apply. */
export const countsForLimits = (config: Config, org: LimitedOrganization) => ({
  daily: dailyMaximum(config, org) !== undefined,
  seats: org.licenseLimit !== null,
});

interface LockedReads {
  daily: boolean;
  seats: boolean;
  emailKeys?: string[];
}

/**
 * The select list of what the limits count (only what `reads` asks) and which of `emailKeys` have
 * accounts. Run after the lock, in a statement of its own: only a later statement's snapshot sees
 * what the previous holder of the lock committed.
 */
export function lockedCountsSql(organizationId: number, now: Date, reads: LockedReads): Prisma.Sql {
  const since = new Date(now.getTime() - DAY_MS);
  const emailKeys = reads.emailKeys ?? [];
  return Prisma.sql`
      CASE WHEN ${reads.daily} THEN (
        SELECT count(*)::int FROM outbox_email
        WHERE "organizationId" = ${organizationId} AND kind = ${INVITATION_EMAIL} AND "createdAt" > ${since}::timestamp(3)) END AS "sentToday",
      CASE WHEN ${reads.seats} THEN (
        SELECT count(*)::int FROM user_account
        WHERE "organizationId" = ${organizationId} AND "isActive" AND NOT "isBot" AND role = ${ROLE.GUEST}) END AS guests,
      CASE WHEN ${reads.seats} THEN (
        SELECT count(*)::int FROM user_account
        WHERE "organizationId" = ${organizationId} AND "isActive" AND NOT "isBot" AND role <> ${ROLE.GUEST}) END AS "nonGuests",
      ARRAY(SELECT "emailKey" FROM user_account
        WHERE "organizationId" = ${organizationId} AND "emailKey" = ANY(${emailKeys}::text[]) AND "isActive") AS "activeKeys",
      ARRAY(SELECT "emailKey" FROM user_account
        WHERE "organizationId" = ${organizationId} AND "emailKey" = ANY(${emailKeys}::text[]) AND NOT "isActive") AS "deactivatedKeys"`;
}

async function readUnderLock(tx: Transaction, organizationId: number, now: Date, reads: LockedReads): Promise<LockedCounts> {
  const [counts] = await tx.$queryRaw<LockedCounts[]>`SELECT ${lockedCountsSql(organizationId, now, reads)}`;
  return counts!;
}

export function assertDailyLimitKept(config: Config, org: LimitedOrganization, counts: LockedCounts, count: number): void {
  const max = dailyMaximum(config, org);
  if (max === undefined || counts.sentToday! + count <= max) return;
  throw new InvitationFailedError(
    'To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.',
    { dailyLimitReached: true },
  );
}

/**
 * Whether `count` more accounts of role `role` need more seats than the organization's licenses:
 * non-guests take one seat each, guests one seat per five (behaviour.md 3.8).
 */
function exceedsLicenses(org: { licenseLimit: number | null }, counts: LockedCounts, count: number, role: number): boolean {
  if (org.licenseLimit === null) return false;
  const addingGuests = role === ROLE.GUEST;
  const seats = Math.max(counts.nonGuests! + (addingGuests ? 0 : count), Math.ceil((counts.guests! + (addingGuests ? count : 0)) / 5));
  return seats > org.licenseLimit;
}

export function assertLicensesSuffice(org: LimitedOrganization, counts: LockedCounts, count: number, inviteAs: number): void {
  if (exceedsLicenses(org, counts, count, inviteAs)) {
    throw new InvitationFailedError('Your organization does not have enough Zulip licenses. Invitations were not sent.', {
      licenseLimitReached: true,
    });
  }
}

/** For a transaction that needs only the daily limit (resending). */
export async function assertDailyLimit(tx: Transaction, config: Config, org: LimitedOrganization, count: number, now: Date) {
  const daily = countsForLimits(config, org).daily;
  if (daily) assertDailyLimitKept(config, org, await readUnderLock(tx, org.id, now, { daily, seats: false }), count);
}

/** For a transaction that needs only the license limit (accepting). */
export async function exceedsLicenseLimit(tx: Transaction, org: { id: number; licenseLimit: number | null }, count: number, role: number) {
  if (org.licenseLimit === null) return false;
  return exceedsLicenses(org, await readUnderLock(tx, org.id, new Date(), { daily: false, seats: true }), count, role);
}

export function assertAccountOldEnough(actor: Actor, org: LimitedOrganization, now: Date) {
  if (org.inviteRequired || isAdministrator(actor.role)) return;
  if (now.getTime() - actor.dateJoined.getTime() < INVITES_MIN_USER_AGE_DAYS * DAY_MS) {
    throw new InvitationFailedError(
      'Your account is too new to send invites for this organization. Ask an organization admin, or a more experienced user.',
    );
  }
}
