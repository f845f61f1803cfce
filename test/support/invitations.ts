// Inserts invitations directly (rows + their queued e-mail, in one transaction), so these tests do
// not depend on POST /api/v1/invites; and submits the acceptance form as a browser does.
import { randomBytes } from 'node:crypto';
import type { RunningServer } from '../../src/server.js';
import { queueInvitationEmail } from '../../src/domain/email/outbox.js';
import { generateConfirmationKey } from '../../src/domain/invitations/confirmation-key.js';
import type { World, WorldUserName } from './world.js';

export interface InvitationInput {
  email: string;
  referrer?: WorldUserName;
  invitedAs?: number;
  channelIds?: number[];
  groupIds?: number[];
  includeRealmDefaultSubscriptions?: boolean;
  notifyReferrerOnJoin?: boolean;
  welcomeMessageCustomText?: string | null;
  /** Default: 10 days from now; null: never. */
  expiresAt?: Date | null;
  invitedAt?: Date;
  status?: 'PENDING' | 'ACCEPTED' | 'REVOKED';
  /** Default: true (wakes the worker afterwards). */
  queueEmail?: boolean;
}

export interface CreatedInvitation {
  id: number;
  email: string;
  confirmationKey: string;
}

export async function createInvitations(server: RunningServer, world: World, inputs: InvitationInput[]): Promise<CreatedInvitation[]> {
  const { prisma, config } = server.app;
  const created = await prisma.$transaction(async (tx) => {
    const organization = await tx.organization.findUniqueOrThrow({ where: { id: world.org.id } });
    const rows = [];
    for (const input of inputs) {
      const referrer = await tx.user.findUniqueOrThrow({ where: { id: world.users[input.referrer ?? 'admin'].id } });
      const row = await tx.invitation.create({
        data: {
          organizationId: world.org.id,
          email: input.email,
          referrerId: referrer.id,
          invitedAs: input.invitedAs ?? 400,
          invitedAt: input.invitedAt ?? new Date(),
          expiresAt: input.expiresAt === undefined ? new Date(Date.now() + 10 * 24 * 3600 * 1000) : input.expiresAt,
          status: input.status ?? 'PENDING',
          includeRealmDefaultSubscriptions: input.includeRealmDefaultSubscriptions ?? false,
          notifyReferrerOnJoin: input.notifyReferrerOnJoin ?? true,
          welcomeMessageCustomText: input.welcomeMessageCustomText ?? null,
          confirmationKey: generateConfirmationKey(),
          channels: { create: (input.channelIds ?? []).map((channelId) => ({ channelId })) },
          groups: { create: (input.groupIds ?? []).map((groupId) => ({ groupId })) },
        },
      });
      if (input.queueEmail ?? true) await queueInvitationEmail(tx, config, { ...row, referrer, organization });
      rows.push(row);
    }
    return rows;
  });
  server.app.notifyOutbox();
  return created.map(({ id, email, confirmationKey }) => ({ id, email, confirmationKey }));
}

export async function createInvitation(server: RunningServer, world: World, input: InvitationInput): Promise<CreatedInvitation> {
  return (await createInvitations(server, world, [input]))[0]!;
}

/** A unique address for this run (tests share one PostgreSQL database). */
export const uniqueEmail = (name: string) => `${name}-${Math.random().toString(36).slice(2, 10)}@example.org`;

/**
 * POSTs the acceptance form as a browser does: urlencoded, from the server's own origin, with a CSRF
 * token in its field and in the CSRF cookie (double submit, as the form page would have set it).
 */
export function submitAcceptance(serverUrl: string, key: string, fields: Record<string, string>): Promise<Response> {
  const token = randomBytes(32).toString('base64url');
  return fetch(`${serverUrl}/accounts/do_confirm/${key}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `csrftoken=${token}`, origin: new URL(serverUrl).origin },
    body: new URLSearchParams({ csrfmiddlewaretoken: token, ...fields }),
  });
}
