// Who may read an uploaded file (uploads.md 2.3, Decision 4), with this project's data: the owner;
// members of the organization when a message in a public channel links it; the sender and
// recipients of a direct message that links it; subscribers of a channel whose message links it,
// and members of the groups that may subscribe to it (channel history counts as public to
// subscribers here: there is no per-user message history). Spectators (no credentials) only files
// linked from web-public channels. Unclaimed files: the owner only.
import type { AppContext } from '../../app-context.js';
import type { Actor } from '../auth/authenticate.js';
import { settingsHeldBy } from '../permissions/group-membership.js';
import { isGuest } from '../users/roles.js';
import { isValidPathId } from './paths.js';

export interface ServableFile {
  id: number;
  organizationId: number;
  ownerId: number;
  name: string;
  pathId: string;
  contentType: string | null;
  size: bigint;
}

export type FileAccess = { kind: 'missing' } | { kind: 'forbidden'; file: ServableFile } | { kind: 'allowed'; file: ServableFile };

const FILE = { id: true, organizationId: true, ownerId: true, name: true, pathId: true, contentType: true, size: true } as const;

/** Null for path ids no stored file can have (NUL, `..`, empty segments ...), without asking the database. */
export async function findFile(app: AppContext, pathId: string): Promise<ServableFile | null> {
  if (!isValidPathId(pathId)) return null;
  return app.prisma.attachment.findUnique({ where: { pathId }, select: FILE });
}

/** `viewer` null: a spectator without credentials. */
export async function accessFile(app: AppContext, viewer: Actor | null, pathId: string): Promise<FileAccess> {
  const file = await findFile(app, pathId);
  if (!file) return { kind: 'missing' };
  const allowed = await mayRead(app, viewer, file);
  return { kind: allowed ? 'allowed' : 'forbidden', file };
}

async function mayRead(app: AppContext, viewer: Actor | null, file: ServableFile): Promise<boolean> {
  if (viewer?.id === file.ownerId) return true;
  const links = await app.prisma.messageAttachment.findMany({
    where: { attachmentId: file.id },
    select: {
      message: {
        select: {
          organizationId: true,
          senderId: true,
          channel: { select: { id: true, inviteOnly: true, isWebPublic: true, canSubscribeGroupId: true, canAddSubscribersGroupId: true } },
          recipients: viewer ? { where: { userId: viewer.id }, select: { userId: true } } : false,
        },
      },
    },
  });
  const messages = links.map((l) => l.message).filter((m) => m.organizationId === file.organizationId);
  const channels = messages.flatMap((m) => (m.channel ? [m.channel] : []));
  if (!viewer) return channels.some((c) => !c.inviteOnly && c.isWebPublic);

  const sameOrganization = viewer.organizationId === file.organizationId;
  if (sameOrganization && !isGuest(viewer.role) && channels.some((c) => !c.inviteOnly)) return true;
  const inDirectMessage = messages.some((m) => !m.channel && (m.senderId === viewer.id || (m.recipients?.length ?? 0) > 0));
  if (inDirectMessage) return true;
  if (channels.length === 0 || !sameOrganization) return false;

  const channelIds = channels.map((c) => c.id);
  const subscribed = await app.prisma.subscription.count({ where: { userId: viewer.id, channelId: { in: channelIds } } });
  if (subscribed > 0) return true;
  const organization = await app.prisma.organization.findUniqueOrThrow({
    where: { id: viewer.organizationId },
    select: { waitingPeriodThreshold: true },
  });
  const contentGroups = channels.flatMap((c) => [c.canSubscribeGroupId, c.canAddSubscribersGroupId]);
  const held = await settingsHeldBy(app, viewer, organization, contentGroups);
  return held.size > 0;
}
