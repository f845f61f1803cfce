// Limits checked under the organization's row lock (behaviour.md 3.8, Decisions 3, 4 and 8), so
// concurrent requests cannot pass them together.
import type { Config } from '../../config.js';
import { invitationEmailsSentToday, type Transaction } from '../email/outbox.js';
import { DomainError } from '../errors.js';
import { DAY_MS } from '../time.js';
import { ROLE, isAdministrator } from '../users/roles.js';
import type { Actor } from '../auth/authenticate.js';

const INVITES_MIN_USER_AGE_DAYS = 3;

export interface InvitationFailure {
  errors?: [string, string, boolean][];
  sentInvitations?: boolean;
  licenseLimitReached?: boolean;
  dailyLimitReached?: boolean;
}

/** The reference's INVITATION_FAILED error, with its data keys in the reference's order. */
export function invitationFailed(message: string, failure: InvitationFailure = {}): DomainError {
  return new DomainError(message, {
    code: 'INVITATION_FAILED',
    data: {
      errors: failure.errors ?? [],
      sent_invitations: failure.sentInvitations ?? false,
      license_limit_reached: failure.licenseLimitReached ?? false,
      daily_limit_reached: failure.dailyLimitReached ?? false,
    },
  });
}

interface LimitedOrganization {
  id: number;
  maxInvites: number | null;
  licenseLimit: number | null;
  inviteRequired: boolean;
}

/** Locks the organization's row until the transaction ends. */
export async function lockOrganization(tx: Transaction, organizationId: number): Promise<void> {
  await tx.$queryRaw`SELECT id FROM organization WHERE id = ${organizationId} FOR UPDATE`;
}

export async function assertDailyLimit(tx: Transaction, config: Config, org: LimitedOrganization, count: number, now: Date) {
  const max = org.maxInvites ?? config.invitesDefaultRealmDailyMax;
  if (max === undefined) return;
  const sentToday = await invitationEmailsSentToday(tx, org.id, now);
  if (sentToday + count > max) {
    throw invitationFailed(
      'To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.',
      { dailyLimitReached: true },
    );
  }
}

/**
 * Whether `count` more accounts of role `role` need more seats than the organization's licenses:
 * non-guests take one seat each, guests one seat per five (behaviour.md 3.8).
 */
export async function exceedsLicenseLimit(tx: Transaction, org: { id: number; licenseLimit: number | null }, count: number, role: number) {
  if (org.licenseLimit === null) return false;
  const humans = { organizationId: org.id, isActive: true, isBot: false };
  const [guests, nonGuests] = await Promise.all([
    tx.user.count({ where: { ...humans, role: ROLE.GUEST } }),
    tx.user.count({ where: { ...humans, role: { not: ROLE.GUEST } } }),
  ]);
  const addingGuests = role === ROLE.GUEST;
  const seats = Math.max(nonGuests + (addingGuests ? 0 : count), Math.ceil((guests + (addingGuests ? count : 0)) / 5));
  return seats > org.licenseLimit;
}

export async function assertLicenseLimit(tx: Transaction, org: LimitedOrganization, count: number, inviteAs: number) {
  if (await exceedsLicenseLimit(tx, org, count, inviteAs)) {
    throw invitationFailed('Your organization does not have enough Zulip licenses. Invitations were not sent.', {
      licenseLimitReached: true,
    });
  }
}

export function assertAccountOldEnough(actor: Actor, org: LimitedOrganization, now: Date) {
  if (org.inviteRequired || isAdministrator(actor.role)) return;
  if (now.getTime() - actor.dateJoined.getTime() < INVITES_MIN_USER_AGE_DAYS * DAY_MS) {
    throw invitationFailed(
      'Your account is too new to send invites for this organization. Ask an organization admin, or a more experienced user.',
    );
  }
}
