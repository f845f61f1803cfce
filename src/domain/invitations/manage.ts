// Listing, revoking and resending invitations (the reference's access_invite_by_id rules): the
// referrer manages their own; administrators manage everyone's, except that invitations as
// owner need an owner. Anything else, and other organizations' ids, are "No such invitation".
import type { AppContext } from '../../app-context.js';
import { namedStatementFamily, Parameters, type Sql } from '../../db/sql.js';
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
import type { UserSummary } from '../users/user-summary.js';
import type { Paged } from '../paging.js';
import { idColumn, keysetPages, millisecondsColumn, seekSql, type KeysetList, type KeysetOrder, type Seek } from '../connections.js';

const noSuchInvitation = () => new DomainError('No such invitation', { notFound: true });

/** Invitations per statement when listing: a few MiB of rows at most. */
export const INVITATION_PAGE_SIZE = 5000;

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

/** What Query.invitations' lists read: inactive invitations too, and each invitation's referrer in the same statement. */
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
  const list = await keysetPages(invitationList(app.sql, actor, { ...options, order: NEWEST_FIRST }, now), INVITATION_PAGE_SIZE);
  const view = (page: ListedRow[]) => viewsOf(page, now);
  return {
    firstPage: view(list.firstPage),
    morePages: list.morePages,
    expectedCount: list.expectedCount,
    async *pages() {
      for await (const page of list.pages()) yield view(page);
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
  const list = invitationList(app.sql, actor, { ...options, order: NEWEST_FIRST }, now);
  return {
    order: NEWEST_FIRST,
    keyOf: (view) => [view.invitedAtMs, view.id],
    read: async (seek) => viewsOf(await list.read(seek), now),
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
  const list = invitationList(app.sql, actor, { includeInactive: true, withReferrers: true, order: NEWEST_FIRST, ids: rowIds }, now);
  return viewsOf(await list.read({ backward: false, limit: rowIds.length }), now);
}

/** The referrer's columns of a row read withReferrers. */
interface ReferrerColumns {
  referrerEmail: string;
  referrerFullName: string;
  referrerRole: number;
  referrerIsBot: boolean;
}

/** A row of the views' lists: its status is read only where inactive invitations are listed too. */
type ListedRow = ListedColumns & { status?: StoredInvitationStatus } & Partial<ReferrerColumns>;

/** A page's views; rows read with their referrer give it to their view, one object per referrer. */
function viewsOf(page: ListedRow[], now: Date): InvitationView[] {
  const nowMs = now.getTime();
  const referrers = new Map<number, UserSummary>();
  return page.map((row) =>
    invitationViewOfMs(
      row,
      nowMs,
      row.referrerEmail === undefined ? undefined : referrerOf(row as ListedColumns & ReferrerColumns, referrers),
    ),
  );
}

function referrerOf(row: ListedColumns & ReferrerColumns, seen: Map<number, UserSummary>): UserSummary {
  let referrer = seen.get(row.referrerId);
  if (!referrer) {
    referrer = {
      id: row.referrerId,
      email: row.referrerEmail,
      fullName: row.referrerFullName,
      role: row.referrerRole,
      isBot: row.referrerIsBot,
    };
    seen.set(row.referrerId, referrer);
  }
  return referrer;
}

const NEWEST_FIRST: KeysetOrder = { name: 'invitation', columns: [millisecondsColumn('"invitedAt"'), idColumn()], descending: true };
const OLDEST_FIRST: KeysetOrder = { name: 'pending invitation', columns: [idColumn()], descending: false };

type ListOptions = { includeInactive: boolean; withReferrers?: boolean; withNotifyFlags?: boolean; order: KeysetOrder; ids?: number[] };

/** The lists' statements: their texts vary only with the filter's kind (role, inactive ones, ids) and the page's bounds. */
const INVITATION_PAGES = namedStatementFamily('invitations.page');
const INVITATION_COUNTS = namedStatementFamily('invitations.count');

/** The invitations the actor may list, in one of the two orders, read by keyset. */
function invitationList<Row extends ListedColumns = ListedRow>(sql: Sql, actor: Actor, options: ListOptions, now: Date): KeysetList<Row> {
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

/**
 * Administrators see the organization's invitations; others their own. Inactive ones only when asked
 * for; with `ids`, only those among them.
 */
function listFilter(
  actor: Pick<Actor, 'id' | 'organizationId' | 'role'>,
  options: Pick<ListOptions, 'includeInactive' | 'ids'>,
  now: Date,
) {
  const parameters = new Parameters();
  const where = `"organizationId" = ${parameters.add(actor.organizationId)}
    ${isAdministrator(actor.role) ? '' : `AND "referrerId" = ${parameters.add(actor.id)}`}
    ${options.includeInactive ? '' : `AND status = 'PENDING' AND ("expiresAt" IS NULL OR "expiresAt" > ${parameters.add(now.toISOString())}::timestamp(3))`}
    ${options.ids ? `AND id = ANY(${parameters.add(options.ids)}::int[])` : ''}`;
  return { where, parameters };
}

/** A column of the listed rows: its name, and what selects it from `invitation`. */
const listedColumn = (name: string, expression?: string) => ({
  name,
  select: expression === undefined ? name : `${expression} AS ${name}`,
});
const msOf = (column: string) => `round(date_part('epoch', ${column}) * 1000)`;
const ALWAYS_LISTED = [
  listedColumn('id'),
  listedColumn('email'),
  listedColumn('"referrerId"'),
  listedColumn('"invitedAs"'),
  listedColumn('"invitedAtMs"', msOf('"invitedAt"')),
  listedColumn('"expiresAtMs"', msOf('"expiresAt"')),
];
const STATUS = listedColumn('status');
const NOTIFY_FLAG = listedColumn('"notifyReferrerOnJoin"');

/**
 * What a list reads, and no more (each column costs PostgreSQL and the driver per row): the status
 * only where inactive invitations are listed too, the notification flag only for REST.
 */
const listedColumns = (options: Pick<ListOptions, 'includeInactive' | 'withNotifyFlags'>) => [
  ...ALWAYS_LISTED,
  ...(options.includeInactive ? [STATUS] : []),
  ...(options.withNotifyFlags ? [NOTIFY_FLAG] : []),
];

/**
 * One statement for a page, each row with its referrer's columns when asked for: a second statement
 * for the referrers cost the server and PostgreSQL more than the join does.
 */
function invitationListStatement({ where, parameters: filterParameters }: ReturnType<typeof listFilter>, seek: Seek, options: ListOptions) {
  const parameters = filterParameters.copy();
  const keyset = seekSql(options.order, seek, parameters);
  const columns = listedColumns(options);
  const page = (selected: string[]) =>
    `SELECT ${selected.join(', ')} FROM invitation WHERE ${where} ${keyset.where} ORDER BY ${keyset.orderBy()} LIMIT ${keyset.limit}`;
  if (!options.withReferrers) return { text: page(columns.map(({ select }) => select)), values: parameters.values };
  // A join keeps no order: the page also selects its sort columns, for the outer ORDER BY.
  const names = columns.map(({ name }) => name);
  const sortColumns = options.order.columns.map(({ column }) => column).filter((column) => !names.includes(column));
  const text = `SELECT ${names.map((name) => `listed.${name}`).join(', ')},
           r.email AS "referrerEmail", r."fullName" AS "referrerFullName", r.role AS "referrerRole", r."isBot" AS "referrerIsBot"
      FROM (${page([...columns.map(({ select }) => select), ...sortColumns])}) listed JOIN user_account r ON r.id = listed."referrerId"
     ORDER BY ${keyset.orderBy('listed.')}`;
  return { text, values: parameters.values };
}

/** The one statement of Query.invitations' first page with referrers (newest first, pending only): the bench runs it alone (scripts/bench/database-limit.ts). */
export function pendingInvitationsStatement(actor: Pick<Actor, 'id' | 'organizationId' | 'role'>, now = new Date()) {
  const options: ListOptions = { includeInactive: false, withReferrers: true, order: NEWEST_FIRST };
  return invitationListStatement(listFilter(actor, options, now), { backward: false, limit: INVITATION_PAGE_SIZE }, options);
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
