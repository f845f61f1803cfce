// Event ids are taken when a transaction inserts its event but become visible when it commits, so a
// lower id can appear after a higher one was read: a client acknowledging the higher one would lose
// the lower. So clients never see those ids: once committed, events get a position, in commit order,
// from one positioning at a time (an advisory lock), and a reader that sees position p sees every
// lower one. The hot transactions only INSERT, as before; positioning costs nothing until someone
// reads events (a poll, a registration, a process's reader while polls wait).
import { namedStatement, type Sql } from '../../db/sql.js';
import { inSqlTransaction } from '../transaction.js';

const POSITIONING_LOCK = namedStatement('events.positioning-lock', 'SELECT pg_advisory_xact_lock(22, 0)');
const TRY_POSITIONING_LOCK = namedStatement('events.try-positioning-lock', 'SELECT pg_try_advisory_xact_lock(22, 0) AS locked');
/** Positions come from the ids' own sequence: unique, and increasing from one positioning to the next. */
const POSITIONS_AT_ONCE = 10_000;
const POSITION_EVENTS = namedStatement(
  'events.position',
  `
  WITH positioned AS (
    UPDATE event e SET position = numbered.position
      FROM (SELECT id, nextval(pg_get_serial_sequence('event', 'id')) AS position
              FROM (SELECT id FROM event WHERE position IS NULL ORDER BY id LIMIT ${POSITIONS_AT_ONCE}) waiting) numbered
     WHERE e.id = numbered.id
    RETURNING 1)
  SELECT count(*)::int AS count FROM positioned`,
);

const ANY_UNPOSITIONED = namedStatement('events.any-unpositioned', 'SELECT 1 FROM event WHERE position IS NULL LIMIT 1');

/** Positions what is committed, a batch at a time, until nothing is left (a backlog nobody read may be long). */
async function positionAll(tx: Sql): Promise<void> {
  for (;;) {
    const [row] = await tx.rows<{ count: number }>(POSITION_EVENTS, []);
    if ((row?.count ?? 0) < POSITIONS_AT_ONCE) return;
  }
}

async function anyUnpositioned(sql: Sql): Promise<boolean> {
  const rows = await sql.rows(ANY_UNPOSITIONED, []);
  return rows.length > 0;
}

/**
 * Positions every event committed before the call (waiting for a positioning in progress, whose
 * snapshot may predate them): what a request reads next includes them.
 */
export async function positionCommittedEvents(sql: Sql): Promise<void> {
  if (!(await anyUnpositioned(sql))) return;
  await inSqlTransaction(sql, async (tx) => {
    await tx.rows(POSITIONING_LOCK, []);
    // READ COMMITTED: each statement's snapshot is taken after the lock, so it sees the last positioning.
    await positionAll(tx);
  });
}

/** The same when no other process is at it already (a reader's tick: it comes again soon). */
export async function positionEventsUnlessBusy(sql: Sql): Promise<void> {
  if (!(await anyUnpositioned(sql))) return;
  await inSqlTransaction(sql, async (tx) => {
    const [row] = await tx.rows<{ locked: boolean }>(TRY_POSITIONING_LOCK, []);
    if (row?.locked) await positionAll(tx);
  });
}
