// Ties a server's parts to its metrics: created when METRICS_TOKEN or METRICS_PORT is set.
import type pg from 'pg';
import type { Config } from '../config.js';
import type { Sql } from '../db/sql.js';
import type { RateLimiter } from '../domain/auth/rate-limit.js';
import type { OutboxWorker } from '../domain/email/worker.js';
import type { FileSweeper } from '../domain/uploads/file-sweeper.js';
import type { Logger } from '../logging.js';
import { observeOutbox, observePool } from './database.js';
import { observeEvents } from './events.js';
import { ServerMetrics } from './metrics.js';
import { reportDeliveries } from './outbox.js';

export const metricsEnabled = (config: Config) => config.metrics.token !== undefined || config.metrics.port !== undefined;

/** The server's metrics, or undefined when they are off. */
export function createServerMetrics(config: Config, log: Logger): ServerMetrics | undefined {
  if (!metricsEnabled(config)) return undefined;
  return new ServerMetrics((error) => log.warn({ err: error }, 'metrics: a value read at scrape time failed'));
}

interface InstrumentedParts {
  pool: pg.Pool;
  sql: Sql;
  rateLimiter: RateLimiter;
  outbox: OutboxWorker | null;
  fileSweeper: FileSweeper | null;
  /** Open subscriptions and waiting long polls (their `size`). */
  events: Parameters<typeof observeEvents>[1];
}

export function instrumentServer(metrics: ServerMetrics, parts: InstrumentedParts): void {
  observePool(metrics, parts.pool);
  observeOutbox(metrics, parts.sql);
  observeEvents(metrics, parts.events);
  parts.rateLimiter.onRefusal = (kind) => metrics.rateLimitRefusals.inc({ kind });
  if (parts.outbox) reportDeliveries(parts.outbox, metrics);
  if (parts.fileSweeper) parts.fileSweeper.onRemoved = (count) => metrics.filesSwept.inc(count);
}
