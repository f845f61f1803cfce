// The running application as the doors and the server see it: the services' AppContext, plus what
// only the doors use (metrics, the memory budget, the event queues). Built in one place, complete,
// by the server and by the tests that run the application in-process.
import type { AppContext } from './app-context.js';
import type { Config } from './config.js';
import type { DatabaseClient } from './db/database.js';
import type { NotificationSubscriber } from './db/notifications.js';
import type { Sql } from './db/sql.js';
import type { EndedSessions } from './domain/auth/ended-sessions.js';
import { RateLimiter } from './domain/auth/rate-limit.js';
import { EventPolls } from './domain/events/long-polls.js';
import { EventReader } from './domain/events/reader.js';
import { EventStreams } from './domain/events/streams.js';
import { MemoryBudget } from './http/memory-budget.js';
import type { Logger } from './logging.js';
import type { ServerMetrics } from './metrics/metrics.js';
import { cacheSubscribers, createProcessCaches } from './process-caches.js';
import type { FileStorage } from './storage/storage.js';

export interface ServerContext extends AppContext {
  /** This server's metrics; absent when they are off (METRICS_TOKEN and METRICS_PORT unset). */
  metrics?: ServerMetrics;
  /** Admits the largest answers (src/http/memory-budget.ts). */
  memoryBudget: MemoryBudget;
  /** GET and DELETE /events' waiting requests; they wait for nothing until `eventPolls.start()`. */
  eventPolls: EventPolls;
  /** GraphQL subscriptions' event streams. */
  eventStreams: EventStreams;
}

export interface ContextParts {
  config: Config;
  prisma: DatabaseClient;
  sql: Sql;
  storage: FileStorage;
  log?: Logger;
  metrics?: ServerMetrics;
  /** Wakes this process's e-mail worker; default: nothing (no worker here). */
  notifyOutbox?: () => void;
  /** Sign-outs kept on disk until the database records them (src/domain/auth/ended-sessions.ts). */
  endedSessions?: EndedSessions;
  /** What a failed read of the event log is told to; default: nothing. */
  eventReadFailed?: (error: unknown) => void;
}

export function createServerContext(parts: ContextParts): ServerContext {
  const { config, sql } = parts;
  const rateLimiter = new RateLimiter(sql, {
    perUser: config.rateLimits,
    perAddress: config.addressRateLimits,
    failedLogins: config.failedLoginLimit,
    signIn: config.signInLimit,
  });
  const eventReader = new EventReader(sql, parts.eventReadFailed);
  const services: AppContext = {
    prisma: parts.prisma,
    sql,
    config,
    rateLimiter,
    ...createProcessCaches(),
    notifyOutbox: parts.notifyOutbox ?? (() => {}),
    storage: parts.storage,
    log: parts.log,
    endedSessions: parts.endedSessions,
  };
  return {
    ...services,
    metrics: parts.metrics,
    memoryBudget: new MemoryBudget(config.memoryBudget),
    eventPolls: new EventPolls(services, eventReader),
    eventStreams: new EventStreams(services, eventReader),
  };
}

/** What must hear the database's notifications for this context's caches and queues to stay true. */
export function notificationSubscribers(context: ServerContext): NotificationSubscriber[] {
  const { authCache, permissionCache } = context;
  const caches = authCache && permissionCache ? cacheSubscribers({ authCache, permissionCache }) : [];
  return [...caches, context.rateLimiter.lockouts, context.eventPolls];
}
