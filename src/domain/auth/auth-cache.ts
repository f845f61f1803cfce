// Authenticated users by API key hash, so a request authenticates without a query. Safe only while
// this process hears every change (src/db/listening-cache.ts): entries are dropped when PostgreSQL
// notifies a change of the user's row (key reset, deactivation, role change) or of any
// organization's deactivation (the triggers of migration auth_change_notifications). A key reset
// answers once its own process has heard its notification (changeHeard).
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

/** How long a key reset waits for its own notification before answering anyway (a listener that slow is failing). */
const NOTIFICATION_WAIT_MS = 2_000;

export class AuthCache extends ListeningCache<CachedCredentials> implements NotificationSubscriber {
  readonly channel = AUTH_CHANGED_CHANNEL;
  /** Emits 'invalidated' with the key hash (or '*') after each notification is applied. */
  readonly events = new EventEmitter();
  /** Emits 'heard' with the key hash (or '*') for each notification, and '*' when listening starts or stops. */
  private readonly heard = new EventEmitter();

  constructor() {
    super();
    this.heard.setMaxListeners(0);
  }

  override set(apiKeyHash: string, credentials: CachedCredentials, ticket: number): void {
    super.set(apiKeyHash, { emailKey: credentials.emailKey, actor: Object.freeze({ ...credentials.actor }) }, ticket);
  }

  invalidate(apiKeyHash: string): void {
    this.drop(apiKeyHash === ALL ? undefined : apiKeyHash);
    this.events.emit('invalidated', apiKeyHash);
  }

  notified(apiKeyHash: string): void {
    this.invalidate(apiKeyHash);
    this.heard.emit('heard', apiKeyHash);
  }

  override listening(on: boolean): void {
    super.listening(on);
    // Changes made while nobody listened were not heard: long-lived requests check theirs again.
    if (on) this.events.emit('invalidated', ALL);
    this.heard.emit('heard', ALL);
  }

  /**
   * Resolves once this process has heard the notification of a change to the key whose hash is
   * `apiKeyHash` (or of every key), or at once while it hears none (it caches nothing then). Taken
   * before the change commits; the other processes hear the same notification about as soon
   * (signin.md section 6). Answering anyway after NOTIFICATION_WAIT_MS keeps a failing listener
   * from holding the request.
   */
  changeHeard(apiKeyHash: string): Promise<void> {
    if (!this.enabled) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.heard.off('heard', onHeard);
        resolve();
      };
      const onHeard = (heardHash: string) => (heardHash === apiKeyHash || heardHash === ALL) && done();
      const timer = setTimeout(done, NOTIFICATION_WAIT_MS).unref();
      this.heard.on('heard', onHeard);
    });
  }
}
