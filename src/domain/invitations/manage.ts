// Listing, revoking and resending invitations (the reference's access_invite_by_id rules): the
// referrer manages their own; administrators manage everyone's, except that invitations as
// owner need an owner. Anything else, and other organizations' ids, are "No such invitation".
import type { AppContext } from '../../app-context.js';
import { namedStatementFamily, type Sql } from '../../db/sql.js';
import type { Actor } from '../auth/authenticate.js';
import { queueInvitationEmail } from '../email/outbox.js';
import { DomainError } from '../errors.js';
import { distinctRowIds, isRowId } from '../ids.js';
import { ROLE, isAdministrator } from '../users/roles.js';
import { assertMayUseInvitations, mayUseInvitations } from './invite-permissions.js';
import { assertDailyLimit, lockOrganization } from './limits.js';
import { inTransaction, type Transaction } from '../transaction.js';
import { insertInvitesChangedSql, recordEvent } from '../events/log.js';
import { invitationViewOfMs, toInvitationView, type InvitationView, type StoredInvitationStatus } from './status.js';
import { organizationUserSummaries, userSummaryOf, type UserSummary } from '../users/user-summary.js';
import type { Paged } from '../paging.js';
import { keysetPages, type KeysetList } from '../connections.js';
import { INVITATION_PAGE_SIZE, invitationListStatement, listFilter, NEWEST_FIRST, OLDEST_FIRST, type ListOptions } from './statements.js';

const noSuchInvitation = () => new DomainError('No such invitation', { notFound: true });

/** The columns every list reads; times in milliseconds since the epoch, so no row builds a date it may not need. */
interface ListedColumns {
  id: number;
  email: string;
  referrerId: number;
  invitedAs: number;
  invitedAtMs: number;
  expiresAtMs: number | null;
}

/** A pending invitation as REST's GET /invites lists it. */
export interface ListedInvitation extends ListedColumns {
  notifyReferrerOnJoin: boolean;
}

/** Pending invitations that have not expired, oldest first (REST's GET /invites), page by page. */
export function listPendingInvitations(app: AppContext, actor: Actor, now = new Date()): Promise<Paged<ListedInvitation>> {
  const list = invitationList<ListedInvitation>(
    app.sql,
    actor,
    { includeInactive: false, withNotifyFlags: true, order: OLDEST_FIRST },
    now,
  );
  return keysetPages(list, INVITATION_PAGE_SIZE);
}

/** What Query.invitations' lists read: inactive invitations too, and each invitation's referrer. */
export interface InvitationListOptions {
  includeInactive: boolean;
  withReferrers?: boolean;
}

/** Invitations newest first; accepted, revoked and expired ones only when asked for. */
export async function listInvitations(
  app: AppContext,
  actor: Actor,
  options: InvitationListOptions,
  now = new Date(),
): Promise<Paged<InvitationView>> {
  const list = await keysetPages(newestFirst(app, actor, options, now), INVITATION_PAGE_SIZE);
  const viewsOf = pageViews(app, actor, options.withReferrers ?? false, now);
  return {
    firstPage: await viewsOf(list.firstPage),
    morePages: list.morePages,
    expectedCount: list.expectedCount,
    async *pages() {
      for await (const page of list.pages()) yield await viewsOf(page);
    },
  };
}

/** The invitations of listInvitations read from any key on, for cursor connections (src/domain/connections.ts). */
export function invitationViewList(
  app: AppContext,
  actor: Actor,
  options: InvitationListOptions,
  now = new Date(),
): KeysetList<InvitationView> {
  const list = newestFirst(app, actor, options, now);
  const viewsOf = pageViews(app, actor, options.withReferrers ?? false, now);
  return {
    order: NEWEST_FIRST,
    keyOf: (view) => [view.invitedAtMs, view.id],
    read: async (seek) => viewsOf(await list.read(seek)),
    count: list.count,
  };
}

/**
 * Those of `ids` that Query.invitations(includeInactive: true) lists to the actor, with their
 * referrers: the list's own filter and statement, narrowed to the ids. None for those who may list none.
 */
export async function listedInvitationsWithIds(app: AppContext, actor: Actor, ids: number[], now = new Date()): Promise<InvitationView[]> {
  const rowIds = distinctRowIds(ids);
  if (rowIds.length === 0 || !mayUseInvitations(actor)) return [];
  const list = invitationList<ListedRow>(app.sql, actor, { includeInactive: true, order: NEWEST_FIRST, ids: rowIds }, now);
  const viewsOf = pageViews(app, actor, true, now);
  return viewsOf(await list.read({ backward: false, limit: rowIds.length }));
}

const newestFirst = (app: AppContext, actor: Actor, options: InvitationListOptions, now: Date) =>
  invitationList<ListedRow>(app.sql, actor, { includeInactive: options.includeInactive, order: NEWEST_FIRST }, now);

/** A row of the views' lists: its status is read only where inactive invitations are listed too. */
type ListedRow = ListedColumns & { status?: StoredInvitationStatus };

/** A page's views, each with its referrer when asked for. */
function pageViews(app: AppContext, actor: Actor, withReferrers: boolean, now: Date) {
  const nowMs = now.getTime();
  return async (page: ListedRow[]): Promise<InvitationView[]> => {
    const referrers = withReferrers ? await referrersOf(app, actor, page) : undefined;
    return page.map((row) => invitationViewOfMs(row, nowMs, referrers?.get(row.referrerId)));
  };
}

/**
 * The referrers of a page's rows, one object each: the actor as the request authenticated them, and
 * the others in one statement. Joined to the page instead, PostgreSQL would read and send a referrer's
 * columns once per invitation rather than once.
 */
async function referrersOf(app: AppContext, actor: Actor, page: ListedColumns[]): Promise<Map<number, UserSummary>> {
  const referrers = new Map<number, UserSummary>([[actor.id, userSummaryOf(actor)]]);
  const others = page.map((row) => row.referrerId).filter((id) => id !== actor.id);
  for (const user of await organizationUserSummaries(app, actor, others)) referrers.set(user.id, user);
  return referrers;
}

/** The lists' statements: their texts vary only with the filter's kind (role, inactive ones, ids) and the page's bounds. */
const INVITATION_PAGES = namedStatementFamily('invitations.page');
const INVITATION_COUNTS = namedStatementFamily('invitations.count');

/** The invitations the actor may list, in one of the two orders, read by keyset. */
function invitationList<Row extends ListedColumns>(sql: Sql, actor: Actor, options: ListOptions, now: Date): KeysetList<Row> {
  assertMayUseInvitations(actor);
  const filter = listFilter(actor, options, now);
  return {
    order: options.order,
    keyOf: (row) => (options.order === NEWEST_FIRST ? [row.invitedAtMs, row.id] : [row.id]),
    read: (seek) => {
      const { text, values } = invitationListStatement(filter, seek, options);
      return sql.rows<Row>(INVITATION_PAGES(text), values);
    },
    count: async () => {
      const count = INVITATION_COUNTS(`SELECT count(*)::int AS count FROM invitation WHERE ${filter.where}`);
      const [row] = await sql.rows<{ count: number }>(count, filter.parameters.values);
      return row!.count;
    },
  };
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
    const invitation = await accessPendingInvitation(tx, actor, invitationId);
    const revoked = await tx.invitation.update({ where: { id: invitationId }, data: { status: 'REVOKED' } });
    // The inviter of that invitation is told, not the one revoking (unless an administrator).
    await recordEvent(tx, insertInvitesChangedSql(actor.organizationId, invitation.referrerId));
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
    await queueInvitationEmail(tx, app.config, { ...updated, referrer: invitation.referrer, organization: invitation.organization });
    return updated;
  });
  app.notifyOutbox();
  return toInvitationView(resent, now);
}
