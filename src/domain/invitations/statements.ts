// The invitation lists' statements: the filter of what the actor may list, the columns each list
// reads, and one page's text. The bench sends Query.invitations' first page alone (pendingInvitationsStatement).
import { Parameters } from '../../db/sql.js';
import type { Actor } from '../auth/authenticate.js';
import { chunkSeek, idColumn, millisecondsColumn, seekSql, type KeysetOrder, type Seek } from '../connections.js';
import { isAdministrator } from '../users/roles.js';

/** Invitations per statement when listing: a few MiB of rows at most. */
export const INVITATION_PAGE_SIZE = 5000;

export const NEWEST_FIRST: KeysetOrder = { name: 'invitation', columns: [millisecondsColumn('"invitedAt"'), idColumn()], descending: true };
export const OLDEST_FIRST: KeysetOrder = { name: 'pending invitation', columns: [idColumn()], descending: false };

export type ListOptions = {
  includeInactive: boolean;
  withReferrers?: boolean;
  withNotifyFlags?: boolean;
  order: KeysetOrder;
  ids?: number[];
};

/**
 * Administrators see the organization's invitations; others their own. Inactive ones only when asked
 * for; with `ids`, only those among them.
 */
export function listFilter(
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
export function invitationListStatement(
  { where, parameters: filterParameters }: ReturnType<typeof listFilter>,
  seek: Seek,
  options: ListOptions,
) {
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
  return invitationListStatement(listFilter(actor, options, now), chunkSeek(INVITATION_PAGE_SIZE), options);
}
