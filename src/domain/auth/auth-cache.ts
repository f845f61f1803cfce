// Authenticated users by API key hash, so a request authenticates without a query. Safe only while
// this process hears every change: entries are dropped when PostgreSQL notifies a change of the
// user's row (key reset, deactivation, role change) or of any organization's deactivation (the
// triggers of migration auth_change_notifications), and the cache is off and empty while the
// listening connection is down, so a missed notification can never leave a stale entry behind.
import { EventEmitter } from 'node:events';
import pg from 'pg';
import type { Actor } from './authenticate.js';

export const AUTH_CHANGED_CHANNEL = 'auth_changed';
const ALL = '*';
const MAX_ENTRIES = 10_000;
const RECONNECT_MS = 1_000;

export interface CachedCredentials {
  /** The lower-cased e-mail the key belongs to (the username must match it). */
  emailKey: string;
  actor: Readonly<Actor>;
}

export class AuthCache {
  private readonly entries = new Map<string, CachedCredentials>();
  private listening = false;
  /** Bumped by every invalidation: an entry read from the database before one must not be stored after it. */
  private generation = 0;
  /** Emits 'invalidated' with the key hash (or '*') after each notification is applied. */
  readonly events = new EventEmitter();

  get(apiKeyHash: string): CachedCredentials | undefined {
    return this.listening ? this.entries.get(apiKeyHash) : undefined;
  }

  /** Take before reading the user from the database; hand to set() afterwards. */
  ticket(): number {
    return this.generation;
  }

  set(apiKeyHash: string, credentials: CachedCredentials, ticket: number): void {
    if (!this.listening || ticket !== this.generation) return;
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

  /** Called by the listener: on while notifications arrive, off (and empty) otherwise. */
  setListening(listening: boolean): void {
    this.generation++;
    this.entries.clear();
    this.listening = listening;
  }

  get enabled(): boolean {
    return this.listening;
  }
}

/** Keeps a connection LISTENing for auth changes, reconnecting after failures; returns its stop function. */
export async function listenForAuthChanges(cache: AuthCache, connectionString: string): Promise<() => Promise<void>> {
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  const connect = async () => {
    const next = new pg.Client({ connectionString });
    next.on('notification', (message) => message.payload && cache.invalidate(message.payload));
    next.on('error', () => lost(next));
    next.on('end', () => lost(next));
    client = next;
    await next.connect();
    await next.query(`LISTEN ${AUTH_CHANGED_CHANNEL}`);
    if (!stopped && client === next) cache.setListening(true);
  };
  const lost = (which: pg.Client) => {
    if (client !== which) return;
    cache.setListening(false);
    client = undefined;
    which.end().catch(() => {});
    if (!stopped) retry = setTimeout(() => void connect().catch(() => lost(client!)), RECONNECT_MS).unref();
  };
  try {
    await connect();
  } catch {
    // Not fatal: requests authenticate against the database until the connection comes back.
    if (client) lost(client);
  }
  return async () => {
    stopped = true;
    clearTimeout(retry);
    cache.setListening(false);
    const last = client;
    client = undefined;
    await last?.end().catch(() => {});
  };
}
