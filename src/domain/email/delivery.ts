// How an invitation's e-mail fared: administrators see attempts and the last error, so a mistyped
// address or a broken mail server shows up where invitations are managed.
import type { AppContext } from '../../app-context.js';
import type { Actor } from '../auth/authenticate.js';
import { isAdministrator } from '../users/roles.js';
import { INVITATION_EMAIL } from './outbox.js';

export interface EmailDelivery {
  status: 'PENDING' | 'SENT' | 'FAILED';
  attempts: number;
  lastError: string | null;
  queuedAt: Date;
  sentAt: Date | null;
}

export const mayViewEmailDelivery = (actor: Actor) => isAdministrator(actor.role);

/** The latest invitation e-mail of each invitation (resends queue new ones), in one query; the ids are of invitations listed to the caller. */
export async function latestInvitationEmails(app: AppContext, invitationIds: readonly number[]): Promise<Map<number, EmailDelivery>> {
  const rows = await app.prisma.$queryRaw<(EmailDelivery & { invitationId: number })[]>`
    SELECT DISTINCT ON ("invitationId") "invitationId", status::text AS status, attempts, "lastError", "createdAt" AS "queuedAt", "sentAt"
    FROM outbox_email
    WHERE kind = ${INVITATION_EMAIL} AND "invitationId" = ANY(${[...invitationIds]}::int[])
    ORDER BY "invitationId", "createdAt" DESC, id DESC`;
  return new Map(rows.map(({ invitationId, ...delivery }) => [invitationId, delivery]));
}
