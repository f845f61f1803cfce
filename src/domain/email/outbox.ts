// E-mail is queued in the database inside the transaction that decides to send it, so it is never
// lost and never sent for a refused request; a background worker (worker.ts) delivers it after commit.
// Queued invitation e-mails are also what the daily invitation limit counts. Other e-mails (password
// resets) are queued one by one with queueEmail.
import type { Config } from '../../config.js';
import { Prisma as PrismaNamespace } from '../../generated/prisma/client.js';
import type { DatabaseClient } from '../../db/database.js';
import type { Transaction } from '../transaction.js';
import { escapeHtml } from './html.js';
import { invitationEmailTemplate, type InvitationEmailTemplate, type RenderedEmail } from './invitation-email.js';

export const INVITATION_EMAIL = 'invitation';
export const PASSWORD_RESET_EMAIL = 'password_reset';

export interface InvitationForEmail {
  email: string;
  confirmationKey: string;
  expiresAt: Date | null;
  referrer: { fullName: string; email: string };
  organization: { name: string };
}

/**
 * What the invitation e-mails of one send share (the sender, the organization, the expiry), rendered
 * once ahead of its transaction. The database writes each body from the template's parts and the
 * invitation's link: a hundred e-mails of a few KB each are not built, escaped into an array literal
 * and sent as parameters, only the keys are (a quarter of the server's CPU for 100 addresses).
 */
export interface InvitationEmailParts {
  template: InvitationEmailTemplate;
  /** The acceptance link without its key. */
  linkPrefix: string;
}

/** An e-mail's address and its invitation's confirmation key (which finds the invitation, and ends the link). */
export interface InvitationEmailRecipient {
  toAddress: string;
  confirmationKey: string;
}

/** Who invites, to which organization, until when: the same for every e-mail of a send. */
export type InvitationEmailSender = Pick<InvitationForEmail, 'expiresAt' | 'referrer' | 'organization'>;

export function invitationEmailParts(config: Config, sender: InvitationEmailSender): InvitationEmailParts {
  const template = invitationEmailTemplate({
    referrerName: sender.referrer.fullName,
    referrerEmail: sender.referrer.email,
    organizationName: sender.organization.name,
    expiresAt: sender.expiresAt,
  });
  return { template, linkPrefix: acceptanceLink(config, '') };
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
export async function queueEmail(db: Transaction | DatabaseClient, email: QueuedEmail): Promise<void> {
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

/**
 * The INSERT queueing an e-mail to each of `recipients`, for the row of `invitations` (the invitation
 * table, or a CTE of new invitations) with its confirmation key: one statement however many e-mails
 * (addresses and keys travel as array parameters, the template's parts once). Each body is the
 * template's parts joined by the link, escaped in the HTML (renderInvitationEmail's, character for character).
 */
export function insertInvitationEmails(
  invitations: PrismaNamespace.Sql,
  parts: InvitationEmailParts,
  recipients: InvitationEmailRecipient[],
): PrismaNamespace.Sql {
  const { template, linkPrefix } = parts;
  const keys = recipients.map((r) => r.confirmationKey);
  // Explicit times: the limit and the worker compare them with JavaScript dates, whatever the database's time zone.
  const now = new Date();
  const text = PrismaNamespace.sql`${template.text[0]}::text || ${linkPrefix}::text || mail.key || ${template.text[1]}::text`;
  const markupLink = PrismaNamespace.sql`${escapeHtml(linkPrefix)}::text || mail."markupKey"`;
  const html = PrismaNamespace.sql`${template.html[0]}::text || ${markupLink} || ${template.html[1]}::text || ${markupLink} || ${template.html[2]}::text`;
  return PrismaNamespace.sql`
    INSERT INTO outbox_email ("organizationId", "invitationId", kind, "toAddress", subject, "textBody", "htmlBody", "createdAt", "nextAttemptAt")
    SELECT invitation."organizationId", invitation.id, ${INVITATION_EMAIL}, mail.address, ${template.subject}::text, ${text}, ${html}, ${now}::timestamp(3), ${now}::timestamp(3)
    FROM unnest(${keys}::text[], ${keys.map(escapeHtml)}::text[], ${recipients.map((r) => r.toAddress)}::text[]) AS mail(key, "markupKey", address)
    JOIN ${invitations} AS invitation ON invitation."confirmationKey" = mail.key
    ORDER BY invitation.id`;
}

/** Queues the e-mail of one (stored) invitation; call app.notifyOutbox() after the transaction commits. */
export async function queueInvitationEmail(tx: Transaction, config: Config, invitation: InvitationForEmail): Promise<void> {
  const recipient = { toAddress: invitation.email, confirmationKey: invitation.confirmationKey };
  await tx.$executeRaw(insertInvitationEmails(PrismaNamespace.sql`invitation`, invitationEmailParts(config, invitation), [recipient]));
}
