// Authenticated users by API key hash, so a request authenticates without a query. Safe only while
// this process hears every change (src/db/listening-cache.ts): entries are dropped when PostgreSQL
// notifies a change of the user's row (key reset, deactivation, role change) or of any
// organization's deactivation (the triggers of migration auth_change_notifications).
import { EventEmitter } from 'node:events';
import { ListeningCache } from '../../db/listening-cache.js';
import type { NotificationSubscriber } from '../../db/notifications.js';
import type { Actor } from './actor.js';

export const AUTH_CHANGED_CHANNEL = 'auth_changed';
const ALL = '*';

export interface CachedCredentials {
  /** The lower-cased e-mail the key belongs to (the username must match it). */
  emailKey: string;
  actor: Readonly<Actor>;
}

export class AuthCache extends ListeningCache<CachedCredentials> implements NotificationSubscriber {
  readonly channel = AUTH_CHANGED_CHANNEL;
  /** Emits 'invalidated' with the key hash (or '*') after each notification is applied. */
  readonly events = new EventEmitter();

  override set(apiKeyHash: string, credentials: CachedCredentials, ticket: number): void {
    super.set(apiKeyHash, { emailKey: credentials.emailKey, actor: Object.freeze({ ...credentials.actor }) }, ticket);
  }

  invalidate(apiKeyHash: string): void {
    this.drop(apiKeyHash === ALL ? undefined : apiKeyHash);
    this.events.emit('invalidated', apiKeyHash);
  }

  notified(apiKeyHash: string): void {
    this.invalidate(apiKeyHash);
  }

  override listening(on: boolean): void {
    super.listening(on);
    // Changes made while nobody listened were not heard: long-lived requests check theirs again.
    if (on) this.events.emit('invalidated', ALL);
  }
}
