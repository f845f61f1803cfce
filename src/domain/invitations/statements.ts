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

const msOf = (column: string) => `round(date_part('epoch', ${column}) * 1000)`;
const ALWAYS_LISTED = [
  'id',
  'email',
  '"referrerId"',
  '"invitedAs"',
  `${msOf('"invitedAt"')} AS "invitedAtMs"`,
  `${msOf('"expiresAt"')} AS "expiresAtMs"`,
];

/**
 * What a list reads, and no more (each column costs PostgreSQL and the driver per row): the status
 * only where inactive invitations are listed too, the notification flag only for REST.
 */
const listedColumns = (options: Pick<ListOptions, 'includeInactive' | 'withNotifyFlags'>) => [
  ...ALWAYS_LISTED,
  ...(options.includeInactive ? ['status'] : []),
  ...(options.withNotifyFlags ? ['"notifyReferrerOnJoin"'] : []),
];

/** One page's statement; the rows' referrers are read apart (manage.ts), once per referrer rather than per row. */
export function invitationListStatement(
  { where, parameters: filterParameters }: ReturnType<typeof listFilter>,
  seek: Seek,
  options: ListOptions,
) {
  const parameters = filterParameters.copy();
  const keyset = seekSql(options.order, seek, parameters);
  const text = `SELECT ${listedColumns(options).join(', ')} FROM invitation WHERE ${where} ${keyset.where} ORDER BY ${keyset.orderBy()} LIMIT ${keyset.limit}`;
  return { text, values: parameters.values };
}

/**
 * The one statement of Query.invitations' first page (newest first, pending only) when the actor
 * referred them all: the bench runs it alone (scripts/bench/database-limit.ts).
 */
export function pendingInvitationsStatement(actor: Pick<Actor, 'id' | 'organizationId' | 'role'>, now = new Date()) {
  const options: ListOptions = { includeInactive: false, order: NEWEST_FIRST };
  return invitationListStatement(listFilter(actor, options, now), chunkSeek(INVITATION_PAGE_SIZE), options);
}
