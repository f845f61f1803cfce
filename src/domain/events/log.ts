// Writing the durable event log (docs/reference/events.md section 4): each event is one row written
// in the transaction of the change it reports, so a refused request or a rollback leaves none. The
// statements are Prisma.sql fragments, so that a hot path can fold one into a statement it already
// runs (a CTE) instead of paying a statement more.
import { Prisma } from '../../generated/prisma/client.js';
import type { Sql } from '../../db/sql.js';
import { namedStatementFamily, statementRows } from '../../db/sql.js';
import type { Transaction } from '../transaction.js';
import { ROLE } from '../users/roles.js';

export const EVENT_TYPES = ['invites_changed', 'realm_emoji', 'attachment', 'heartbeat'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Who receives an event: named users, or (for an empty list) every user of the organization. */
export type Recipients = { users: number[] } | 'organization';

export interface NewEvent {
  organizationId: number;
  type: EventType;
  /** The event's fields besides `type` and `id`. */
  payload: Record<string, unknown> | null;
  recipients: Recipients;
  /** A heartbeat's queue: the only one that holds it. */
  queueId?: string;
}

const recipientArray = (recipients: Recipients) => (recipients === 'organization' ? [] : [...new Set(recipients.users)]);

/** The INSERT of one event, to run alone or as a CTE of a larger statement. */
export function insertEventSql(event: NewEvent): Prisma.Sql {
  return Prisma.sql`
    INSERT INTO event ("organizationId", type, payload, "recipientIds", "queueId")
    VALUES (${event.organizationId}, ${event.type}, ${event.payload === null ? null : JSON.stringify(event.payload)}::jsonb,
            ${recipientArray(event.recipients)}::int[], ${event.queueId ?? null}::uuid)`;
}

/**
 * invites_changed (section 4): every active owner and administrator of the organization, bots
 * included, and the invitation's inviter, read in the same statement as the insert.
 */
export function insertInvitesChangedSql(organizationId: number, inviterId: number, when: Prisma.Sql = Prisma.sql`true`): Prisma.Sql {
  return Prisma.sql`
    INSERT INTO event ("organizationId", type, payload, "recipientIds")
    SELECT ${organizationId}, 'invites_changed', NULL,
           array(SELECT DISTINCT id FROM (
                   SELECT id FROM user_account
                    WHERE "organizationId" = ${organizationId} AND "isActive" AND role IN (${ROLE.OWNER}, ${ROLE.ADMINISTRATOR})
                   UNION SELECT ${inviterId}::int) recipient ORDER BY id)
     WHERE ${when}`;
}

/** Writes an event in a Prisma transaction. */
export async function recordEvent(tx: Transaction, statement: Prisma.Sql): Promise<void> {
  await tx.$executeRaw(statement);
}

/** The event writes' statements: one text per kind of event (its values are parameters). */
const EVENT_WRITES = namedStatementFamily('events.record');

/** Writes an event in a transaction of the driver (db/sql.ts). */
export async function recordEventSql(tx: Sql, statement: Prisma.Sql): Promise<void> {
  await statementRows(tx, statement, EVENT_WRITES);
}
