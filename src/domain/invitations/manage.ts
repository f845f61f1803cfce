// Listing, revoking and resending invitations (the reference's access_invite_by_id rules): the
// referrer manages their own; administrators manage everyone's, except that invitations as
// owner need an owner. Anything else, and other organizations' ids, are "No such invitation".
import type { AppContext } from '../../app-context.js';
import type { Prisma as Database } from '../../db/database.js';
import type { Actor } from '../auth/authenticate.js';
import { queueInvitationEmails, type Transaction } from '../email/outbox.js';
import { DomainError } from '../errors.js';
import { isRowId } from '../ids.js';
import { ROLE, isAdministrator } from '../users/roles.js';
import { assertMayUseInvitations } from './invite-permissions.js';
import { assertDailyLimit, lockOrganization } from './limits.js';
import { inTransaction } from '../transaction.js';
import { activeInvitationWhere, toInvitationView, type InvitationView } from './status.js';

const noSuchInvitation = () => new DomainError('No such invitation', { notFound: true });

/** Whose invitations the actor sees and manages. */
const visibleTo = (actor: Actor) =>
  isAdministrator(actor.role) ? { organizationId: actor.organizationId } : { organizationId: actor.organizationId, referrerId: actor.id };

/** Pending invitations that have not expired, oldest first (REST's GET /invites). */
export async function listPendingInvitations(prisma: Database, actor: Actor, now = new Date()) {
  assertMayUseInvitations(actor);
  return prisma.invitation.findMany({
    where: { ...visibleTo(actor), ...activeInvitationWhere(now) },
    orderBy: { id: 'asc' },
  });
}

/** Invitations newest first; accepted, revoked and expired ones only when asked for. */
export async function listInvitations(prisma: Database, actor: Actor, options: { includeInactive: boolean }, now = new Date()): Promise<InvitationView[]> {
  assertMayUseInvitations(actor);
  const rows = await prisma.invitation.findMany({
    where: { ...visibleTo(actor), ...(options.includeInactive ? {} : activeInvitationWhere(now)) },
    orderBy: [{ invitedAt: 'desc' }, { id: 'desc' }],
  });
  return rows.map((row) => toInvitationView(row, now));
}

/** The pending invitation the actor may manage; the caller holds the organization's row lock. */
async function accessPendingInvitation(tx: Transaction, actor: Actor, invitationId: number) {
  if (!isRowId(invitationId)) throw noSuchInvitation();
  const invitation = await tx.invitation.findFirst({
    where: { id: invitationId, organizationId: actor.organizationId, status: 'PENDING' },
    include: { organization: true, referrer: { select: { fullName: true, email: true } } },
  });
  if (!invitation) throw noSuchInvitation();
  if (invitation.referrerId !== actor.id) {
    if (invitation.invitedAs === ROLE.OWNER && actor.role !== ROLE.OWNER) {
      throw new DomainError('Must be an organization owner', { code: 'UNAUTHORIZED_PRINCIPAL' });
    }
    if (!isAdministrator(actor.role)) throw noSuchInvitation();
  }
  return invitation;
}

export async function revokeInvitation(app: AppContext, actor: Actor, invitationId: number, now = new Date()): Promise<InvitationView> {
  assertMayUseInvitations(actor);
  return inTransaction(app.prisma, async (tx) => {
    await lockOrganization(tx, actor.organizationId);
    await accessPendingInvitation(tx, actor, invitationId);
    const revoked = await tx.invitation.update({ where: { id: invitationId }, data: { status: 'REVOKED' } });
    return toInvitationView(revoked, now);
  });
}

/**
 * Queues the invitation e-mail again (it counts towards the daily limit). As the reference does, the
 * invitation is re-dated to now and keeps its original validity, so an expired one comes back to life.
 */
export async function resendInvitation(app: AppContext, actor: Actor, invitationId: number, now = new Date()): Promise<InvitationView> {
  assertMayUseInvitations(actor);
  const resent = await inTransaction(app.prisma, async (tx) => {
    await lockOrganization(tx, actor.organizationId);
    const invitation = await accessPendingInvitation(tx, actor, invitationId);
    await assertDailyLimit(tx, app.config, invitation.organization, 1, now);
    const validityMs = invitation.expiresAt && invitation.expiresAt.getTime() - invitation.invitedAt.getTime();
    const updated = await tx.invitation.update({
      where: { id: invitation.id },
      data: { invitedAt: now, expiresAt: validityMs === null ? null : new Date(now.getTime() + validityMs) },
    });
    await queueInvitationEmails(tx, app.config, [{ ...updated, referrer: invitation.referrer, organization: invitation.organization }]);
    return updated;
  });
  app.notifyOutbox();
  return toInvitationView(resent, now);
}
