// E-mail is queued in the database inside the transaction that decides to send it, so it is never
// lost and never sent for a refused request; a background worker (worker.ts) delivers it after commit.
// Queued invitation e-mails are also what the daily invitation limit counts.
import type { Config } from '../../config.js';
import type { Prisma as PrismaNamespace } from '../../generated/prisma/client.js';
import { DAY_MS } from '../time.js';
import { renderInvitationEmail } from './invitation-email.js';

export type Transaction = PrismaNamespace.TransactionClient;

export const INVITATION_EMAIL = 'invitation';

export interface InvitationForEmail {
  id: number;
  organizationId: number;
  email: string;
  confirmationKey: string;
  expiresAt: Date | null;
  referrer: { fullName: string; email: string };
  organization: { name: string };
}

export function acceptanceLink(config: Config, confirmationKey: string): string {
  return `${config.serverUrl}/accounts/do_confirm/${confirmationKey}`;
}

/** Queues one invitation e-mail per invitation; call app.notifyOutbox() after the transaction commits. */
export async function queueInvitationEmails(tx: Transaction, config: Config, invitations: InvitationForEmail[]): Promise<void> {
  if (invitations.length === 0) return;
  // Explicit times: the limit and the worker compare them with JavaScript dates, whatever the database's time zone.
  const now = new Date();
  const emails = invitations.map((invitation) =>
    renderInvitationEmail({
      referrerName: invitation.referrer.fullName,
      referrerEmail: invitation.referrer.email,
      organizationName: invitation.organization.name,
      link: acceptanceLink(config, invitation.confirmationKey),
      expiresAt: invitation.expiresAt,
    }),
  );
  // One statement however many e-mails: each column travels as one array parameter.
  await tx.$executeRaw`
    INSERT INTO outbox_email ("organizationId", "invitationId", kind, "toAddress", subject, "textBody", "htmlBody", "createdAt", "nextAttemptAt")
    SELECT mail.organization, mail.invitation, ${INVITATION_EMAIL}, mail.address, mail.subject, mail.text, mail.html, ${now}::timestamp(3), ${now}::timestamp(3)
    FROM unnest(
      ${invitations.map((i) => i.organizationId)}::int[], ${invitations.map((i) => i.id)}::int[], ${invitations.map((i) => i.email)}::text[],
      ${emails.map((e) => e.subject)}::text[], ${emails.map((e) => e.text)}::text[], ${emails.map((e) => e.html)}::text[]
    ) AS mail(organization, invitation, address, subject, text, html)`;
}

/** Invitation e-mails the organization queued in the last 24 hours (the daily limit's count). */
export async function invitationEmailsSentToday(tx: Transaction, organizationId: number, now: Date): Promise<number> {
  return tx.outboxEmail.count({
    where: { organizationId, kind: INVITATION_EMAIL, createdAt: { gt: new Date(now.getTime() - DAY_MS) } },
  });
}
