// Direct messages: the system bots' messages to people, and the messages a user received.
import type { AppContext } from '../../app-context.js';
import type { Actor } from '../auth/authenticate.js';
import type { Transaction } from '../transaction.js';
import { badRequest } from '../errors.js';

export type SystemBot = 'notification' | 'welcome';

export interface DirectMessageView {
  id: number;
  senderId: number;
  content: string;
  dateSent: Date;
}

/** The organization's system bot's user id, or null when the organization has none. */
export async function systemBotId(tx: Transaction, organizationId: number, bot: SystemBot): Promise<number | null> {
  const row = await tx.user.findFirst({ where: { organizationId, systemBot: bot }, select: { id: true } });
  return row?.id ?? null;
}

/** Sends one direct message per content, in order, from the sender to the recipient. */
export async function sendDirectMessages(
  tx: Transaction,
  message: { organizationId: number; senderId: number; recipientId: number; contents: string[]; dateSent: Date },
): Promise<void> {
  for (const content of message.contents) {
    await tx.message.create({
      data: {
        organizationId: message.organizationId,
        senderId: message.senderId,
        content,
        dateSent: message.dateSent,
        recipients: { create: { userId: message.recipientId } },
      },
    });
  }
}

export const MAX_DIRECT_MESSAGES_LIMIT = 100;
export const DEFAULT_DIRECT_MESSAGES_LIMIT = 20;

/** Direct messages the actor received, newest first. */
export async function receivedDirectMessages(
  app: AppContext,
  actor: Actor,
  limit: number | null = DEFAULT_DIRECT_MESSAGES_LIMIT,
): Promise<DirectMessageView[]> {
  limit ??= DEFAULT_DIRECT_MESSAGES_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_DIRECT_MESSAGES_LIMIT) {
    throw badRequest(`limit must be between 1 and ${MAX_DIRECT_MESSAGES_LIMIT}`);
  }
  return app.prisma.message.findMany({
    where: { organizationId: actor.organizationId, channelId: null, recipients: { some: { userId: actor.id } } },
    orderBy: [{ dateSent: 'desc' }, { id: 'desc' }],
    take: limit,
    select: { id: true, senderId: true, content: true, dateSent: true },
  });
}
