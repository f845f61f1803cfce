// Makes concurrent requests really contend, and proves that they did: a connection of the test's own
// holds the organization's row lock (or the one row the requests change) while the requests are
// fired, and lets go only once PostgreSQL shows (pg_locks joined with pg_stat_activity) that the
// expected number of them wait for it. Requests that finish, or never queue, before that fail the
// test instead of passing unraced.
import type pg from 'pg';
import { connectToTestDatabase } from './server.js';

const WAIT_LIMIT_MS = 20_000;

/** The tables whose rows the tests hold: an organization's, or the one row a request changes. */
export type LockedTable = 'organization' | 'custom_emoji' | 'attachment';

/**
 * Backends of the test database blocked on a row that `$1` (the holder's pid) holds in table `$3`
 * (id `$2`): the first waits on the holder's transaction id, the next ones on the row's tuple lock,
 * which the first holds.
 */
const waitersOf = (table: LockedTable) => `
  WITH held AS (
    SELECT transactionid FROM pg_locks WHERE pid = $1 AND locktype = 'transactionid' AND granted
  ), row_position AS (
    SELECT (ctid::text::point)[0]::int AS page, (ctid::text::point)[1]::int AS tuple FROM "${table}" WHERE id = $2
  )
  SELECT count(DISTINCT a.pid)::int AS n
    FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
   WHERE NOT l.granted AND a.datname = current_database() AND a.wait_event_type = 'Lock'
     AND ((l.locktype = 'transactionid' AND l.transactionid IN (SELECT transactionid FROM held))
       OR (l.locktype = 'tuple' AND l.relation = '"${table}"'::regclass
           AND (l.page, l.tuple) = (SELECT page, tuple FROM row_position)))`;

export interface RowHold {
  /** The connection that holds the lock (in its open transaction). */
  holder: pg.Client;
  /** How many backends wait for the row now. */
  waiters(): Promise<number>;
  /**
   * Resolves once `count` backends wait for the row; throws when `finished()` turns true first (the
   * requests did not wait) or after 20 s.
   */
  untilWaiting(count: number, finished?: () => boolean): Promise<void>;
  /** Rolls the holder's transaction back (the waiters go on) and closes both connections. */
  release(): Promise<void>;
}

/** A transaction of the test's own that holds the row `id` of `table` (FOR UPDATE) until released. */
export async function holdRow(table: LockedTable, id: number): Promise<RowHold> {
  const [holder, observer] = await Promise.all([connectToTestDatabase(), connectToTestDatabase()]);
  await holder.query('BEGIN');
  await holder.query(`SELECT id FROM "${table}" WHERE id = $1 FOR UPDATE`, [id]);
  const { pid } = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!;
  const query = waitersOf(table);
  const waiters = async () => (await observer.query<{ n: number }>(query, [pid, id])).rows[0]!.n;
  return {
    holder,
    waiters,
    async untilWaiting(count, finished = () => false) {
      const deadline = Date.now() + WAIT_LIMIT_MS;
      let most = 0;
      for (;;) {
        const now = await waiters();
        most = Math.max(most, now);
        if (now >= count) return;
        const why = finished() ? 'the requests finished' : Date.now() > deadline ? `${WAIT_LIMIT_MS / 1000} s passed` : undefined;
        if (why) throw new Error(`No race: ${why} before ${count} backends waited for the lock of ${table} ${id} (at most ${most} did)`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    async release() {
      try {
        await holder.query('ROLLBACK');
      } finally {
        await Promise.all([holder.end(), observer.end()]);
      }
    },
  };
}

export const holdOrganizationRow = (organizationId: number) => holdRow('organization', organizationId);

interface Contention {
  /** How many requests must wait for the row before it is let go (default 5). */
  waiters?: number;
  /** Run while they wait. */
  whileBlocked?: () => Promise<void>;
}

/**
 * `fire()`'s result, started while the row is locked and released once `waiters` requests wait for
 * it (and `whileBlocked()`, if given, has finished meanwhile).
 */
export async function whileRowLocked<T>(
  table: LockedTable,
  id: number,
  fire: () => Promise<T>,
  { waiters = 5, whileBlocked }: Contention = {},
): Promise<T> {
  const hold = await holdRow(table, id);
  let finished = false;
  const result = fire().finally(() => (finished = true));
  try {
    await hold.untilWaiting(waiters, () => finished);
    await whileBlocked?.();
  } catch (error) {
    result.catch(() => {});
    throw error;
  } finally {
    await hold.release();
  }
  return result;
}

export const whileOrganizationLocked = <T>(organizationId: number, fire: () => Promise<T>, contention?: Contention) =>
  whileRowLocked('organization', organizationId, fire, contention);

/**
 * The answers of `requests`, each started only once the previous ones wait for the organization's
 * row lock, so that PostgreSQL grants it to them in this order when the test lets go.
 */
export async function inLockOrder<T>(organizationId: number, requests: (() => Promise<T>)[]): Promise<T[]> {
  const hold = await holdOrganizationRow(organizationId);
  const answers: Promise<T>[] = [];
  let finished = 0;
  try {
    for (const request of requests) {
      answers.push(request().finally(() => finished++));
      await hold.untilWaiting(answers.length, () => finished > 0);
    }
  } catch (error) {
    for (const answer of answers) answer.catch(() => {});
    throw error;
  } finally {
    await hold.release();
  }
  return Promise.all(answers);
}

/** Whether another transaction holds the organization's row lock now (asked with NOWAIT, nothing kept). */
export async function organizationRowLocked(client: pg.Client, organizationId: number): Promise<boolean> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT id FROM organization WHERE id = $1 FOR UPDATE NOWAIT', [organizationId]);
    return false;
  } catch (error) {
    if ((error as { code?: string }).code === '55P03') return true;
    throw error;
  } finally {
    await client.query('ROLLBACK');
  }
}

/**
 * The backends waiting for a lock `holder` holds, with their statements. Read afresh each time: inside
 * the holder's transaction pg_stat_activity would answer its first snapshot again (a backend that
 * connected or began its statement afterwards would never show).
 */
export async function lockWaitersOf(holder: pg.Client): Promise<{ pid: number; query: string }[]> {
  await holder.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await holder.query<{ pid: number; query: string }>(
    'SELECT pid, query FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))',
  );
  return rows;
}

/** Terminates the backend that waits on a lock (the request a test held up), once there is one; `admin` holds the lock. */
export async function terminateLockWaiter(admin: pg.Client): Promise<void> {
  for (;;) {
    const [waiter] = await lockWaitersOf(admin);
    if (waiter) {
      await admin.query('SELECT pg_terminate_backend($1)', [waiter.pid]);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
