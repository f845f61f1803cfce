// An invitation's status as people see it: expiry is derived from the time, so nothing needs a cron job.
import type { RoleCode } from '../users/roles.js';
import type { UserSummary } from '../users/user-summary.js';

export type InvitationStatusName = 'PENDING' | 'ACCEPTED' | 'REVOKED' | 'EXPIRED';

/** The status a row stores; EXPIRED is derived. */
export type StoredInvitationStatus = 'PENDING' | 'ACCEPTED' | 'REVOKED';

export function invitationStatus(row: { status: StoredInvitationStatus; expiresAt: Date | null }, now = new Date()): InvitationStatusName {
  return statusAt(row.status, row.expiresAt === null ? null : row.expiresAt.getTime(), now.getTime());
}

/** invitationStatus with times in milliseconds since the epoch. */
function statusAt(stored: StoredInvitationStatus, expiresAtMs: number | null, nowMs: number): InvitationStatusName {
  return stored === 'PENDING' && expiresAtMs !== null && expiresAtMs <= nowMs ? 'EXPIRED' : stored;
}

/** An invitation as both doors show it; times in milliseconds since the epoch (lists build no date per row). */
export interface InvitationView {
  id: number;
  email: string;
  invitedAs: RoleCode;
  invitedAtMs: number;
  expiresAtMs: number | null;
  referrerId: number;
  /** Read with the invitation when a list was asked for referrers; undefined otherwise. */
  referrer?: UserSummary;
  status: InvitationStatusName;
}

export function toInvitationView(
  row: {
    id: number;
    email: string;
    invitedAs: number;
    invitedAt: Date;
    expiresAt: Date | null;
    referrerId: number;
    status: StoredInvitationStatus;
  },
  now = new Date(),
): InvitationView {
  const { invitedAt, expiresAt, ...rest } = row;
  return invitationViewOfMs(
    { ...rest, invitedAtMs: invitedAt.getTime(), expiresAtMs: expiresAt === null ? null : expiresAt.getTime() },
    now.getTime(),
  );
}

/**
 * The view of a row whose times are already milliseconds (the lists' rows). A row without a status
 * is pending: lists of pending invitations only do not read it.
 */
export function invitationViewOfMs(
  row: {
    id: number;
    email: string;
    invitedAs: number;
    invitedAtMs: number;
    expiresAtMs: number | null;
    referrerId: number;
    status?: StoredInvitationStatus;
  },
  nowMs: number,
  referrer?: UserSummary,
): InvitationView {
  return {
    id: row.id,
    email: row.email,
    invitedAs: row.invitedAs as RoleCode,
    invitedAtMs: row.invitedAtMs,
    expiresAtMs: row.expiresAtMs,
    referrerId: row.referrerId,
    referrer,
    status: statusAt(row.status ?? 'PENDING', row.expiresAtMs, nowMs),
  };
}
