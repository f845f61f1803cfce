// Authenticated users by API key hash, so a request authenticates without a query. Safe only while
// this process hears every change: entries are dropped when PostgreSQL notifies a change of the
// user's row (key reset, deactivation, role change) or of any organization's deactivation (the
// triggers of migration auth_change_notifications), and the cache is off and empty while the
// listening connection is down, so a missed notification can never leave a stale entry behind.
import { EventEmitter } from 'node:events';
import type { NotificationSubscriber } from '../../db/notifications.js';
import type { Actor } from './authenticate.js';

export const AUTH_CHANGED_CHANNEL = 'auth_changed';
const ALL = '*';
const MAX_ENTRIES = 10_000;

export interface CachedCredentials {
  /** The lower-cased e-mail the key belongs to (the username must match it). */
  emailKey: string;
  actor: Readonly<Actor>;
}

export class AuthCache implements NotificationSubscriber {
  readonly channel = AUTH_CHANGED_CHANNEL;
  private readonly entries = new Map<string, CachedCredentials>();
  private on = false;
  /** Bumped by every invalidation: an entry read from the database before one must not be stored after it. */
  private generation = 0;
  /** Emits 'invalidated' with the key hash (or '*') after each notification is applied. */
  readonly events = new EventEmitter();

  get(apiKeyHash: string): CachedCredentials | undefined {
    return this.on ? this.entries.get(apiKeyHash) : undefined;
  }

  /** Take before reading the user from the database; hand to set() afterwards. */
  ticket(): number {
    return this.generation;
  }

  set(apiKeyHash: string, credentials: CachedCredentials, ticket: number): void {
    if (!this.on || ticket !== this.generation) return;
    // Oldest first out: Map keeps insertion order.
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(apiKeyHash, { emailKey: credentials.emailKey, actor: Object.freeze({ ...credentials.actor }) });
  }

  invalidate(apiKeyHash: string): void {
    this.generation++;
    if (apiKeyHash === ALL) this.entries.clear();
    else this.entries.delete(apiKeyHash);
    this.events.emit('invalidated', apiKeyHash);
  }

  notified(apiKeyHash: string): void {
    this.invalidate(apiKeyHash);
  }

  /** Called by the listener: on while notifications arrive, off (and empty) otherwise. */
  listening(on: boolean): void {
    this.generation++;
    this.entries.clear();
    this.on = on;
    // Changes made while nobody listened were not heard: long-lived requests check theirs again.
    if (on) this.events.emit('invalidated', ALL);
  }

  get enabled(): boolean {
    return this.on;
  }
}
