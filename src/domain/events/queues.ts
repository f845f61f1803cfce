// Event queues (docs/reference/events.md sections 1-3): rows, so any process answers any queue and
// a killed process loses none. A queue holds the log's events positioned after its registration
// (positions.ts: the ids clients see) that are for its user and pass its filter; where it stands is
// the highest acknowledged event (newest_pruned_id).
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../../app-context.js';
import type { Sql } from '../../db/sql.js';
import type { Actor } from '../auth/authenticate.js';
import { DomainError } from '../errors.js';
import { realmEmojiDicts } from '../emoji/custom-emoji.js';
import { SharedReads } from './shared-reads.js';
import { inSqlTransaction } from '../transaction.js';
import { EVENT_TYPES, insertEventSql, recordEventSql } from './log.js';
import { positionCommittedEvents } from './positions.js';

export const DEFAULT_QUEUE_LIFESPAN_SECS = 600;
export const MAX_QUEUE_LIFESPAN_SECS = 604_800;
export const MAX_QUEUES_PER_USER = 50;
/** A waiting request keeps its queue alive at least this long past its start (longer than any wait). */
export const LONGEST_WAIT_SECS = 60;

export interface EventQueue {
  id: string;
  userId: number;
  organizationId: number;
  eventTypes: string[];
  everyType: boolean;
  lifespanSecs: number;
  /** Events with a higher position are in the queue (the registration's or the last acknowledgement's). */
  floor: number;
  newestPrunedId: number | null;
  /** Epoch ms until which a request (of some process) waits on it; null: none does. */
  waitingUntil: number | null;
}

/** An event as the client receives it. */
export type DeliveredEvent = { type: string; id: number } & Record<string, unknown>;

export function badEventQueueId(queueId: string): DomainError {
  return new DomainError(`Bad event queue ID: ${queueId}`, { code: 'BAD_EVENT_QUEUE_ID', data: { queue_id: queueId } });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface RegisterRequest {
  /** null: every type. */
  eventTypes: string[] | null;
  lifespanSecs: number;
  /** The types whose initial state is answered; null: every type's. */
  fetchEventTypes: string[] | null;
}

export interface Registration {
  queueId: string;
  lastEventId: number;
  /** Present when realm_emoji's state was asked for. */
  realmEmoji?: Record<string, unknown>;
  /** Present when the realm state was asked for: how long a poll may wait (the reference's 90 s). */
  longpollTimeoutSeconds?: number;
}

const LONGPOLL_TIMEOUT_SECONDS = 90;

/** 0 means the default; more than a week is a week (the reference's bounds). */
export function queueLifespan(requested: number): number {
  if (requested < 0) throw new DomainError('Invalid queue_lifespan_secs');
  return requested === 0 ? DEFAULT_QUEUE_LIFESPAN_SECS : Math.min(requested, MAX_QUEUE_LIFESPAN_SECS);
}

const asksFor = (types: string[] | null, type: string) => types === null || types.includes(type);

/**
 * A new queue for the actor, and the initial state it asked for. The user's least recently polled
 * queues beyond the limit go; a lock per user keeps two registrations from both passing it.
 */
export async function registerQueue(app: AppContext, actor: Actor, request: RegisterRequest): Promise<Registration> {
  const queueId = randomUUID();
  const eventTypes = request.eventTypes?.filter((type) => (EVENT_TYPES as readonly string[]).includes(type)) ?? [];
  // What committed before the registration is not the queue's.
  await positionCommittedEvents(app.sql);
  await inSqlTransaction(app.sql, async (tx) => {
    await tx.rows('SELECT pg_advisory_xact_lock(20, $1)', [actor.id]);
    await tx.rows(
      `DELETE FROM event_queue WHERE id IN (
         SELECT id FROM event_queue WHERE "userId" = $1 ORDER BY "lastPolledAt" DESC, id OFFSET $2)`,
      [actor.id, MAX_QUEUES_PER_USER - 1],
    );
    await tx.rows(
      `INSERT INTO event_queue (id, "userId", "organizationId", "eventTypes", "everyType", "lifespanSecs", "startAfter", "lastPolledAt", "expiresAt")
       SELECT $1::uuid, $2::int, $3::int, $4::text[], $5::boolean, $6::int, coalesce((SELECT max(position) FROM event), 0), now(), now() + make_interval(secs => $6::int)`,
      [queueId, actor.id, actor.organizationId, eventTypes, request.eventTypes === null, request.lifespanSecs],
    );
  });
  const registration: Registration = { queueId, lastEventId: -1 };
  if (asksFor(request.fetchEventTypes, 'realm_emoji')) registration.realmEmoji = await realmEmojiDicts(app, actor);
  if (asksFor(request.fetchEventTypes, 'realm')) registration.longpollTimeoutSeconds = LONGPOLL_TIMEOUT_SECONDS;
  return registration;
}

/** The row as read: bigints as text (a position may pass 2^53 in principle), the floor's parts apart. */
type QueueRow = Omit<EventQueue, 'floor' | 'newestPrunedId'> & { startAfter: string; newestPrunedId: string | null };

const QUEUE_COLUMNS = `id, "userId", "organizationId", "eventTypes", "everyType", "lifespanSecs", "startAfter"::text,
  "newestPrunedId"::text, (extract(epoch FROM "waitingUntil") * 1000)::float8 AS "waitingUntil"`;

const toQueue = (row: QueueRow): EventQueue => {
  const newestPrunedId = row.newestPrunedId === null ? null : Number(row.newestPrunedId);
  return {
    id: row.id,
    userId: row.userId,
    organizationId: row.organizationId,
    eventTypes: row.eventTypes,
    everyType: row.everyType,
    lifespanSecs: row.lifespanSecs,
    floor: Math.max(Number(row.startAfter), newestPrunedId ?? 0),
    newestPrunedId,
    waitingUntil: row.waitingUntil,
  };
};

/** The actor's live queue, locked for the transaction; another user's or an expired one does not exist. */
async function lockOwnQueue(tx: Sql, actor: Actor, queueId: string): Promise<EventQueue> {
  if (!UUID.test(queueId)) throw badEventQueueId(queueId);
  const [row] = await tx.rows<QueueRow>(`SELECT ${QUEUE_COLUMNS} FROM event_queue WHERE id = $1 AND "expiresAt" > now() FOR UPDATE`, [
    queueId,
  ]);
  if (!row || row.userId !== actor.id) throw badEventQueueId(queueId);
  return toQueue(row);
}

// The queue's events: its organization's, for its user (an empty list is everyone), heartbeats its own only.
const QUEUE_MATCH = `e."organizationId" = $1 AND e.position > $2 AND (e."recipientIds" = '{}' OR $3 = ANY(e."recipientIds"))
  AND (e."queueId" IS NULL OR e."queueId" = $4) AND ($5 OR e.type = ANY($6::text[]) OR e.type = 'heartbeat')`;

const queueMatchValues = (queue: EventQueue) => [
  queue.organizationId,
  queue.floor,
  queue.userId,
  queue.id,
  queue.everyType,
  queue.eventTypes,
];

/**
 * Section 2's acknowledgement: every event up to `lastEventId` leaves the queue, with the reference's
 * two refusals. The poll also counts as use: the queue lives on past the longest wait.
 */
export async function acknowledgeEvents(app: AppContext, actor: Actor, queueId: string, lastEventId: number): Promise<EventQueue> {
  return inSqlTransaction(app.sql, async (tx) => {
    const queue = await lockOwnQueue(tx, actor, queueId);
    if (queue.newestPrunedId !== null && lastEventId < queue.newestPrunedId) {
      throw new DomainError(`An event newer than ${lastEventId} has already been pruned!`);
    }
    const [acknowledged] = await tx.rows<{ id: string | null }>(
      `SELECT max(e.position)::text AS id FROM event e WHERE ${QUEUE_MATCH} AND e.position <= $7`,
      // Past what a bigint holds (either way) no event exists either.
      [...queueMatchValues(queue), Math.max(-1, Math.min(lastEventId, Number.MAX_SAFE_INTEGER))],
    );
    const newestPrunedId = acknowledged?.id ? Number(acknowledged.id) : queue.newestPrunedId;
    if (newestPrunedId !== null && lastEventId !== newestPrunedId) throw new DomainError(`Event ${lastEventId} was not in this queue`);
    await tx.rows(
      `UPDATE event_queue SET "newestPrunedId" = $2, "lastPolledAt" = now(),
              "expiresAt" = now() + make_interval(secs => "lifespanSecs" + ${LONGEST_WAIT_SECS}) WHERE id = $1`,
      [queue.id, newestPrunedId],
    );
    return { ...queue, newestPrunedId, floor: Math.max(queue.floor, newestPrunedId ?? 0) };
  });
}

/**
 * The events one answer carries at most: the client acknowledges the last and gets the next ones at
 * its next poll (the reference sends all; a queue left unread for days would make an answer of any size).
 */
export const MAX_EVENTS_PER_ANSWER = 1000;

/** The organization's realm_emoji dicts, one read shared by the polls that deliver them at once. */
export const realmEmojiReads = (app: AppContext) => new SharedReads((organizationId) => realmEmojiDicts(app, { organizationId }));

export type RealmEmojiReads = ReturnType<typeof realmEmojiReads>;

/** The events the queue holds, oldest first, as the client receives them; realm_emoji's dict is read once, now. */
export async function queuedEvents(app: AppContext, queue: EventQueue, realmEmojiNow: RealmEmojiReads): Promise<DeliveredEvent[]> {
  const rows = await app.sql.rows<{ id: string; type: string; payload: Record<string, unknown> | null }>(
    `SELECT e.position::text AS id, e.type, e.payload FROM event e WHERE ${QUEUE_MATCH} ORDER BY e.position LIMIT ${MAX_EVENTS_PER_ANSWER}`,
    queueMatchValues(queue),
  );
  let realmEmoji: Record<string, unknown> | undefined;
  const newestEmojiEvent = rows.findLast((row) => row.type === 'realm_emoji');
  if (newestEmojiEvent) realmEmoji = await realmEmojiNow.get(queue.organizationId, Number(newestEmojiEvent.id));
  return rows.map(({ id, type, payload }) => {
    const fields = type === 'realm_emoji' ? { op: 'update', realm_emoji: realmEmoji } : (payload ?? {});
    return { type, ...fields, id: Number(id) };
  });
}

/** Marks the queue as waited on until `until` (epoch ms); returns whether it still exists. */
export async function markWaiting(sql: Sql, queueId: string, until: number): Promise<boolean> {
  const rows = await sql.rows(
    `UPDATE event_queue SET "waitingUntil" = to_timestamp($2 / 1000.0) AT TIME ZONE 'UTC' WHERE id = $1 RETURNING id`,
    [queueId, until],
  );
  return rows.length > 0;
}

/** A wait ended: the queue's lifetime counts from now, unless another request waits on it since. */
export async function endWaiting(sql: Sql, queueId: string, until: number): Promise<void> {
  await sql.rows(
    `UPDATE event_queue SET "waitingUntil" = NULL, "lastPolledAt" = now(), "expiresAt" = now() + make_interval(secs => "lifespanSecs")
      WHERE id = $1 AND "waitingUntil" = to_timestamp($2 / 1000.0) AT TIME ZONE 'UTC'`,
    [queueId, until],
  );
}

/** The heartbeat of section 2: an event of this queue only, acknowledged like any other. */
export async function addHeartbeat(sql: Sql, queue: EventQueue): Promise<void> {
  await recordEventSql(
    sql,
    insertEventSql({
      organizationId: queue.organizationId,
      type: 'heartbeat',
      payload: null,
      recipients: { users: [queue.userId] },
      queueId: queue.id,
    }),
  );
  await positionCommittedEvents(sql);
}

/** Section 3: the actor's queue is gone; returns it (its waiting request, if any, is to be answered). */
export async function deleteQueue(app: AppContext, actor: Actor, queueId: string): Promise<EventQueue> {
  return inSqlTransaction(app.sql, async (tx) => {
    const queue = await lockOwnQueue(tx, actor, queueId);
    await tx.rows('DELETE FROM event_queue WHERE id = $1', [queue.id]);
    return queue;
  });
}

/**
 * What the server removes by itself: expired queues, and events older than the longest lifetime a
 * queue has (at least the default). Idempotent, so every process may run it.
 */
export async function removeExpired(sql: Sql): Promise<void> {
  await sql.rows('DELETE FROM event_queue WHERE "expiresAt" < now()', []);
  // Positioned first, so that the horizon knows how far what goes reached.
  await positionCommittedEvents(sql);
  await sql.rows(
    `WITH removed AS (
       DELETE FROM event WHERE "createdAt" < now() - make_interval(secs =>
         greatest($1, coalesce((SELECT max("lifespanSecs") FROM event_queue), 0)) + ${LONGEST_WAIT_SECS})
       RETURNING position)
     UPDATE event_log_horizon SET "prunedThrough" = greatest("prunedThrough", (SELECT max(position) FROM removed))
      WHERE id = 1 AND (SELECT max(position) FROM removed) IS NOT NULL`,
    [DEFAULT_QUEUE_LIFESPAN_SECS],
  );
}
