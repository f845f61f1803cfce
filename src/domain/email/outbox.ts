// E-mail is queued in the database inside the transaction that decides to send it, so it is never
// lost and never sent for a refused request; a background worker (worker.ts) delivers it after commit.
// Queued invitation e-mails are also what the daily invitation limit counts. Other e-mails (password
// resets) are queued one by one with queueEmail.
import type { Config } from '../../config.js';
import { Prisma as PrismaNamespace } from '../../generated/prisma/client.js';
import type { Prisma } from '../../db/database.js';
import { renderInvitationEmail, type RenderedEmail } from './invitation-email.js';

export type Transaction = PrismaNamespace.TransactionClient;

export const INVITATION_EMAIL = 'invitation';
export const PASSWORD_RESET_EMAIL = 'password_reset';

export interface InvitationForEmail {
  email: string;
  confirmationKey: string;
  expiresAt: Date | null;
  referrer: { fullName: string; email: string };
  organization: { name: string };
}

/** An invitation e-mail rendered ahead of its transaction; it finds its invitation by confirmation key. */
export interface PreparedInvitationEmail {
  confirmationKey: string;
  toAddress: string;
  subject: string;
  text: string;
  html: string;
}

export function acceptanceLink(config: Config, confirmationKey: string): string {
  return `${config.serverUrl}/accounts/do_confirm/${confirmationKey}`;
}

export interface QueuedEmail extends RenderedEmail {
  kind: string;
  toAddress: string;
  /** Null for mail to an address of no organization; the worker gives such mail its own turn. */
  organizationId: number | null;
}

/** Queues one e-mail (not an invitation's); call app.notifyOutbox() after its transaction commits. */
export async function queueEmail(db: Transaction | Prisma, email: QueuedEmail): Promise<void> {
  const now = new Date();
  await db.outboxEmail.create({
    data: {
      organizationId: email.organizationId,
      kind: email.kind,
      toAddress: email.toAddress,
      subject: email.subject,
      textBody: email.text,
      htmlBody: email.html,
      createdAt: now,
      nextAttemptAt: now,
    },
  });
}

export function prepareInvitationEmail(config: Config, invitation: InvitationForEmail): PreparedInvitationEmail {
  const rendered = renderInvitationEmail({
    referrerName: invitation.referrer.fullName,
    referrerEmail: invitation.referrer.email,
    organizationName: invitation.organization.name,
    link: acceptanceLink(config, invitation.confirmationKey),
    expiresAt: invitation.expiresAt,
  });
  return { confirmationKey: invitation.confirmationKey, toAddress: invitation.email, ...rendered };
}

/**
 * The INSERT queueing `emails`, each for the row of `invitations` (the invitation table, or a CTE of
 * new invitations) with its confirmation key: one statement however many e-mails (each column
 * travels as one array parameter).
 */
export function insertInvitationEmails(invitations: PrismaNamespace.Sql, emails: PreparedInvitationEmail[]): PrismaNamespace.Sql {
  // Explicit times: the limit and the worker compare them with JavaScript dates, whatever the database's time zone.
  const now = new Date();
  return PrismaNamespace.sql`
    INSERT INTO outbox_email ("organizationId", "invitationId", kind, "toAddress", subject, "textBody", "htmlBody", "createdAt", "nextAttemptAt")
    SELECT invitation."organizationId", invitation.id, ${INVITATION_EMAIL}, mail.address, mail.subject, mail.text, mail.html, ${now}::timestamp(3), ${now}::timestamp(3)
    FROM unnest(
      ${emails.map((e) => e.confirmationKey)}::text[], ${emails.map((e) => e.toAddress)}::text[],
      ${emails.map((e) => e.subject)}::text[], ${emails.map((e) => e.text)}::text[], ${emails.map((e) => e.html)}::text[]
    ) AS mail(key, address, subject, text, html)
    JOIN ${invitations} AS invitation ON invitation."confirmationKey" = mail.key
    ORDER BY invitation.id`;
}

/** Queues one invitation e-mail per (stored) invitation; call app.notifyOutbox() after the transaction commits. */
export async function queueInvitationEmails(tx: Transaction, config: Config, invitations: InvitationForEmail[]): Promise<void> {
  if (invitations.length === 0) return;
  const emails = invitations.map((invitation) => prepareInvitationEmail(config, invitation));
  await tx.$executeRaw(insertInvitationEmails(PrismaNamespace.sql`invitation`, emails));
}
