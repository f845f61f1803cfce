// An invitation's status as people see it: expiry is derived from the time, so nothing needs a cron job.
export type InvitationStatusName = 'PENDING' | 'ACCEPTED' | 'REVOKED' | 'EXPIRED';

export function invitationStatus(row: { status: 'PENDING' | 'ACCEPTED' | 'REVOKED'; expiresAt: Date | null }, now = new Date()): InvitationStatusName {
  if (row.status === 'PENDING' && row.expiresAt !== null && row.expiresAt <= now) return 'EXPIRED';
  return row.status;
}

/** Prisma filter for what invitationStatus calls PENDING: not used, not revoked, not expired. */
export const activeInvitationWhere = (now: Date) => ({
  status: 'PENDING' as const,
  OR: [{ expiresAt: null }, { expiresAt: { gt: now } }],
});

export interface InvitationView {
  id: number;
  email: string;
  invitedAs: number;
  invitedAt: Date;
  expiresAt: Date | null;
  referrerId: number;
  status: InvitationStatusName;
}

export function toInvitationView(
  row: { id: number; email: string; invitedAs: number; invitedAt: Date; expiresAt: Date | null; referrerId: number; status: 'PENDING' | 'ACCEPTED' | 'REVOKED' },
  now = new Date(),
): InvitationView {
  const { id, email, invitedAs, invitedAt, expiresAt, referrerId } = row;
  return { id, email, invitedAs, invitedAt, expiresAt, referrerId, status: invitationStatus(row, now) };
}
