// One reader of the event log per process: while anyone listens, it polls the log for
// positions past the last it saw, a cheap index scan (positioning what committed since: positions.ts),
// and tells the subscribers concerned; with no subscriber it sends no statement at all. A NOTIFY in
// every committing transaction would have told it sooner but cut commits by more than half (the
// issue's measurement), so the hot transactions stay as they were. Waiting long polls (and later
// subscriptions) learn of events here, not by each querying the log. After a failed read it reads on
// from where it was, so an outage loses nothing.
import { namedStatement, type Sql } from '../../db/sql.js';
import { positionCommittedEvents, positionEventsUnlessBusy } from './positions.js';

export const READ_INTERVAL_MS = 80;
const ROWS_PER_READ = 1_000;

/** What a subscriber learns: which organization and users an event is for (none: all of them). */
export interface LoggedEvent {
  /** Its position (the id clients see). */
  id: number;
  organizationId: number;
  type: string;
  /** Empty: every user of the organization. */
  recipientIds: number[];
  /** The event's fields besides type and id (log.ts), read once for every subscriber. */
  payload: Record<string, unknown> | null;
}

export interface EventInterest {
  organizationId: number;
  userId: number;
  /** The event types it takes; null: every type. */
  types: readonly string[] | null;
}

export interface LoggedEventRow {
  position: string;
  organizationId: number;
  type: string;
  recipientIds: number[];
  payload: Record<string, unknown> | null;
}

export const LOGGED_EVENT_COLUMNS = 'position::text, "organizationId", type, "recipientIds", payload';

const READ_AFTER = namedStatement(
  'events.read-after',
  `SELECT ${LOGGED_EVENT_COLUMNS} FROM event WHERE position > $1 ORDER BY event.position LIMIT ${ROWS_PER_READ}`,
);

export const loggedEvent = ({ position, ...row }: LoggedEventRow): LoggedEvent => ({ id: Number(position), ...row });

export type EventListener = (event: LoggedEvent) => void;

interface Subscription extends EventInterest {
  listener: EventListener;
}

export class EventReader {
  /**
   * Subscriptions by organization and type (EVERY_TYPE: those that take every type), then by user: an
   * event visits only those that take it, however many others wait (idle ones cost nothing).
   */
  private readonly subscriptions = new Map<string, Map<number, Set<Subscription>>>();
  private lastSeen: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private startingPoint: Promise<void> | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.readOnce(), READ_INTERVAL_MS).unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.reading;
  }

  /**
   * Resolves once the reader knows where the log ends, so that every event committed from now on
   * reaches the subscribers. Subscribe first, then await this, then read what is there already.
   */
  async ready(): Promise<void> {
    while (this.lastSeen === undefined) {
      // Positioned first: what committed before the subscriber came (while no reader ran) is not new to it.
      this.startingPoint ??= positionCommittedEvents(this.sql)
        .then(() => this.sql.rows<{ id: string | null }>('SELECT max(position)::text AS id FROM event', []))
        .then(([row]) => void (this.lastSeen ??= Number(row?.id ?? 0)))
        .finally(() => (this.startingPoint = undefined));
      await this.startingPoint;
    }
  }

  /** Tell `listener` about each new event for this user of this organization; returns the unsubscribe. */
  subscribe(interest: EventInterest, listener: EventListener): () => void {
    const subscription: Subscription = { ...interest, listener };
    const keys = (interest.types ?? [EVERY_TYPE]).map((type) => bucketKey(interest.organizationId, type));
    for (const key of keys) {
      let byUser = this.subscriptions.get(key);
      if (!byUser) this.subscriptions.set(key, (byUser = new Map()));
      let own = byUser.get(interest.userId);
      if (!own) byUser.set(interest.userId, (own = new Set()));
      own.add(subscription);
    }
    return () => {
      for (const key of keys) {
        const byUser = this.subscriptions.get(key);
        const own = byUser?.get(interest.userId);
        if (!own?.delete(subscription) || own.size > 0) continue;
        byUser!.delete(interest.userId);
        if (byUser!.size === 0) this.subscriptions.delete(key);
      }
    };
  }

  /** One read of what is new (exposed for tests); concurrent calls share one read. */
  readOnce(): Promise<void> {
    this.reading ??= this.read()
      .catch(this.onError)
      .finally(() => (this.reading = undefined));
    return this.reading;
  }

  private async read(): Promise<void> {
    if (this.subscriptions.size === 0) {
      // Nobody listens: the next subscriber starts from the log's end again (ready()).
      this.lastSeen = undefined;
      return;
    }
    if (this.lastSeen === undefined) return;
    await positionEventsUnlessBusy(this.sql);
    // A full page means more is there: read on at once rather than a tick later.
    let rows: LoggedEventRow[];
    do {
      rows = await this.sql.rows<LoggedEventRow>(READ_AFTER, [this.lastSeen]);
      for (const row of rows) {
        const event = loggedEvent(row);
        this.lastSeen = Math.max(this.lastSeen ?? 0, event.id);
        this.dispatch(event);
      }
    } while (rows.length === ROWS_PER_READ && this.subscriptions.size > 0);
  }

  private dispatch(event: LoggedEvent): void {
    for (const type of [event.type, EVERY_TYPE]) {
      const byUser = this.subscriptions.get(bucketKey(event.organizationId, type));
      if (!byUser) continue;
      // An empty recipient list is every user of the organization.
      const recipients = event.recipientIds.length === 0 ? byUser.values() : event.recipientIds.map((id) => byUser.get(id));
      for (const own of recipients) for (const subscription of own ?? []) subscription.listener(event);
    }
  }
}

const EVERY_TYPE = '*';
const bucketKey = (organizationId: number, type: string) => `${organizationId}:${type}`;
