// What every service call needs from the running application.
import type { Config } from './config.js';
import type { Prisma } from './db/database.js';
import type { RateLimiter } from './domain/auth/rate-limit.js';
import type { FileStorage } from './storage/storage.js';

export interface AppContext {
  prisma: Prisma;
  config: Config;
  rateLimiter: RateLimiter;
  /** Wakes the background e-mail worker after new mail was queued (no-op when none runs). */
  notifyOutbox(): void;
  /** Where uploaded files and emoji images are stored. */
  storage: FileStorage;
}
