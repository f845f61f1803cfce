// What every service call needs from the running application. What only the doors and the server
// use besides (metrics, the memory budget, the event queues) is the ServerContext (server-context.ts).
import type { Config } from './config.js';
import type { DatabaseClient } from './db/database.js';
import type { Sql } from './db/sql.js';
import type { AuthCache } from './domain/auth/auth-cache.js';
import type { PermissionCache } from './domain/permissions/permission-cache.js';
import type { RateLimiter } from './domain/auth/rate-limit.js';
import type { FileStorage } from './storage/storage.js';
import type { Logger } from './logging.js';
import type { EndedSessions } from './domain/auth/ended-sessions.js';

export interface AppContext {
  prisma: DatabaseClient;
  /** The hot paths' hand-written statements, on Prisma's connection pool. */
  sql: Sql;
  config: Config;
  rateLimiter: RateLimiter;
  /** Authenticated users by key hash; absent or off when this process cannot hear changes (auth-cache.ts). */
  authCache?: AuthCache;
  /** Organizations' invitation settings and group reach; absent or off when this process cannot hear changes (permission-cache.ts). */
  permissionCache?: PermissionCache;
  /** Wakes the background e-mail worker after new mail was queued (no-op when none runs). */
  notifyOutbox(): void;
  /** Where uploaded files and emoji images are stored. */
  storage: FileStorage;
  /** Where this application logs; default: the process's logger (src/logging.ts). */
  log?: Logger;
  /** Sign-outs kept on disk until the database records them; absent: a sign-out needs the database. */
  endedSessions?: EndedSessions;
}
