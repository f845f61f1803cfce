// E-mail is queued in the database inside the transaction that decides to send it, so it is never
// lost and never sent for a refused request; a background worker delivers it after commit.
// Queued invitation e-mails are also what the daily invitation limit counts.
import type { Config } from '../../config.js';
import type { Prisma as PrismaNamespace } from '../../generated/prisma/client.js';

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

export async function queueInvitationEmails(tx: Transaction, config: Config, invitations: InvitationForEmail[]): Promise<void> {
  if (invitations.length === 0) return;
  await tx.outboxEmail.createMany({
    data: invitations.map((invitation) => {
      const link = acceptanceLink(config, invitation.confirmationKey);
      const subject = `${invitation.referrer.fullName} has invited you to join ${invitation.organization.name}`;
      const text = `${invitation.referrer.fullName} (${invitation.referrer.email}) wants you to join them on Zulip.\n\n${link}\n`;
      return {
        organizationId: invitation.organizationId,
        invitationId: invitation.id,
        kind: INVITATION_EMAIL,
        toAddress: invitation.email,
        subject,
        textBody: text,
        htmlBody: `<p>${text}</p>`,
      };
    }),
  });
}

/** Invitation e-mails the organization queued in the last 24 hours (the daily limit's count). */
export async function invitationEmailsSentToday(tx: Transaction, organizationId: number, now: Date): Promise<number> {
  return tx.outboxEmail.count({
    where: { organizationId, kind: INVITATION_EMAIL, createdAt: { gt: new Date(now.getTime() - 24 * 3600 * 1000) } },
  });
}
