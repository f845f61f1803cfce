// The database's metrics: the connection pool read at scrape time, the time of every statement sent
// through the pool, and the outbox's counts read with one statement at scrape time.
import type pg from 'pg';
import { Gauge } from 'prom-client';
import type { Sql } from '../db/sql.js';
import type { ServerMetrics } from './metrics.js';

/** node-postgres's counts: connections open, idle among them, and requests waiting for one. */
export function observePool(metrics: ServerMetrics, pool: pg.Pool): void {
  const registers = [metrics.registry];
  new Gauge({
    name: 'teamchat_db_pool_connections',
    help: 'Connections of the pool by state: in_use (lent to a statement or transaction) or idle',
    labelNames: ['state'] as const,
    registers,
    collect() {
      this.set({ state: 'in_use' }, pool.totalCount - pool.idleCount);
      this.set({ state: 'idle' }, pool.idleCount);
    },
  });
  new Gauge({
    name: 'teamchat_db_pool_waiting',
    help: 'Requests waiting for a connection of the pool (all of them in use)',
    registers,
    collect() {
      this.set(pool.waitingCount);
    },
  });
  new Gauge({
    name: 'teamchat_db_pool_max_connections',
    help: 'The size of the pool',
    registers,
    collect() {
      this.set(pool.options.max);
    },
  });
  pool.on('connect', (client) => timeStatements(metrics, client));
}

type Query = (...args: unknown[]) => unknown;

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof (value as PromiseLike<unknown> | undefined)?.then === 'function';

/**
 * Times each statement of `client` (a connection of the pool, wrapped once when it opens). The pool's
 * own query() calls it with a callback, Prisma's adapter and sql.ts without; submittables (cursors,
 * streams), which answer over a long time, are left untimed.
 */
function timeStatements(metrics: ServerMetrics, client: pg.PoolClient): void {
  const query = client.query.bind(client) as Query;
  const observe = (started: number) => metrics.statements.observe((performance.now() - started) / 1000);
  (client as unknown as { query: Query }).query = (...args: unknown[]) => {
    const started = performance.now();
    const last = args.length - 1;
    const callback = args[last];
    if (typeof callback === 'function') {
      args[last] = (...results: unknown[]) => {
        observe(started);
        return (callback as Query)(...results);
      };
      return query(...args);
    }
    const result = query(...args);
    if (isThenable(result))
      result.then(
        () => observe(started),
        () => observe(started),
      );
    return result;
  };
}

interface OutboxCounts {
  pending: number;
  failed: number;
  /** Seconds since the oldest pending e-mail was queued; null when none is. */
  oldestPendingAge: number | null;
}

/** One statement, over the (status, nextAttemptAt) index: sent mail, the bulk of the table, is not read. */
const OUTBOX_COUNTS = `
  SELECT count(*) FILTER (WHERE status = 'PENDING')::int AS pending,
         count(*) FILTER (WHERE status = 'FAILED')::int AS failed,
         extract(epoch FROM (now() AT TIME ZONE 'UTC') - min("createdAt") FILTER (WHERE status = 'PENDING'))::float8 AS "oldestPendingAge"
    FROM outbox_email
   WHERE status IN ('PENDING', 'FAILED')`;

/** The outbox as the database holds it (every process's mail, not only this one's). */
export function observeOutbox(metrics: ServerMetrics, sql: Sql): void {
  const registers = [metrics.registry];
  const emails = new Gauge({
    name: 'teamchat_outbox_emails',
    help: 'Queued e-mail by status: pending (to be delivered or retried) or failed (given up)',
    labelNames: ['status'] as const,
    registers,
  });
  const oldestPendingAge = new Gauge({
    name: 'teamchat_outbox_oldest_pending_age_seconds',
    help: 'How long the oldest pending e-mail has waited since it was queued (0: none pending)',
    registers,
  });
  metrics.onScrape(async () => {
    const [counts] = await sql.rows<OutboxCounts>(OUTBOX_COUNTS, []);
    emails.set({ status: 'pending' }, counts!.pending);
    emails.set({ status: 'failed' }, counts!.failed);
    oldestPendingAge.set(Math.max(0, counts!.oldestPendingAge ?? 0));
  });
}
