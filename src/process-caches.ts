// What every process caches from the database, each cache kept true by the notifications it hears
// (src/db/listening-cache.ts). Made here once for the server and for whatever runs the app the same
// way (the tests' statement-counting app), so that a new cache is wired everywhere or nowhere.
import type { NotificationSubscriber } from './db/notifications.js';
import { AuthCache } from './domain/auth/auth-cache.js';
import { PermissionCache } from './domain/permissions/permission-cache.js';

export interface ProcessCaches {
  authCache: AuthCache;
  permissionCache: PermissionCache;
}

/** Spread into the AppContext; `cacheSubscribers` of it go to listenForNotifications. */
export const createProcessCaches = (): ProcessCaches => ({ authCache: new AuthCache(), permissionCache: new PermissionCache() });

export const cacheSubscribers = (caches: ProcessCaches): NotificationSubscriber[] => [caches.authCache, caches.permissionCache];
