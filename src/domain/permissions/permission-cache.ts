// What permission checks read and rarely changes, held per process: an organization's invitation
// settings with its allowed domains, and which groups (through their subgroups) hold a user. Every
// invitation asked PostgreSQL for both first (two statements of its six). Safe only while this
// process hears every change (src/db/listening-cache.ts): the triggers of migration
// permission_change_notifications announce any change to those tables at commit, and everything held
// is dropped. As with the authentication cache, a change made by another process reaches this one
// when its notification does (a few milliseconds after the commit).
import { EventEmitter } from 'node:events';
import { ListeningCache } from '../../db/listening-cache.js';
import type { NotificationSubscriber } from '../../db/notifications.js';

export const PERMISSIONS_CHANGED_CHANNEL = 'permissions_changed';

export class PermissionCache extends ListeningCache<unknown> implements NotificationSubscriber {
  readonly channel = PERMISSIONS_CHANGED_CHANNEL;
  /** Emits 'heard' with each notification's payload, after it was applied. */
  readonly events = new EventEmitter();

  /**
   * The value held under `key`, or the one `load` reads (kept unless a change was heard meanwhile).
   * Undefined (nothing found) is never kept. Values are shared: callers must not change them.
   */
  async read<T>(key: string, load: () => Promise<T>): Promise<T> {
    const held = this.get(key) as T | undefined;
    if (held !== undefined) return held;
    const ticket = this.ticket();
    const value = await load();
    if (value !== undefined) this.set(key, value, ticket);
    return value;
  }

  notified(payload: string): void {
    this.drop();
    this.events.emit('heard', payload);
  }
}

/** Reads through the cache when there is one (a server), straight from the database otherwise. */
export const readThrough = <T>(cache: PermissionCache | undefined, key: string, load: () => Promise<T>): Promise<T> =>
  cache ? cache.read(key, load) : load();
