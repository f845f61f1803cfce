// What permission checks read and rarely changes, held per process: an organization's invitation
// settings with its allowed domains, and which groups (through their subgroups) hold a user. Every
// invitation asked PostgreSQL for both first (two statements of its seven). Safe only while this
// process hears every change: the triggers of migration permission_change_notifications announce any
// change to those tables at commit, and everything held is dropped; while the listening connection
// is down the cache is off and empty. As with the authentication cache, a change made by another
// process reaches this one when its notification does (a few milliseconds after the commit).
import { EventEmitter } from 'node:events';
import type { NotificationSubscriber } from '../../db/notifications.js';

export const PERMISSIONS_CHANGED_CHANNEL = 'permissions_changed';
const MAX_ENTRIES = 10_000;

export class PermissionCache implements NotificationSubscriber {
  readonly channel = PERMISSIONS_CHANGED_CHANNEL;
  private readonly entries = new Map<string, unknown>();
  private on = false;
  /** Bumped by every change heard: a value read before one must not be kept after it. */
  private generation = 0;
  /** Emits 'heard' with each notification's payload, after it was applied. */
  readonly events = new EventEmitter();

  /**
   * The value held under `key`, or the one `load` reads (kept unless a change was heard meanwhile).
   * Undefined (nothing found) is never kept. Values are shared: callers must not change them.
   */
  async read<T>(key: string, load: () => Promise<T>): Promise<T> {
    const held = this.on ? (this.entries.get(key) as T | undefined) : undefined;
    if (held !== undefined) return held;
    const ticket = this.generation;
    const value = await load();
    if (value !== undefined && this.on && ticket === this.generation) this.keep(key, value);
    return value;
  }

  private keep(key: string, value: unknown): void {
    // Oldest first out: Map keeps insertion order.
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, value);
  }

  notified(payload: string): void {
    this.dropAll();
    this.events.emit('heard', payload);
  }

  /** Called by the listener: on while notifications arrive, off (and empty) otherwise. */
  listening(on: boolean): void {
    this.dropAll();
    this.on = on;
  }

  private dropAll(): void {
    this.generation++;
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

/** Reads through the cache when there is one (a server), straight from the database otherwise. */
export const readThrough = <T>(cache: PermissionCache | undefined, key: string, load: () => Promise<T>): Promise<T> =>
  cache ? cache.read(key, load) : load();
