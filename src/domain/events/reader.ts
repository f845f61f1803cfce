// One reader of the event log per process (issue 20): while anyone listens, it polls the log for
// positions past the last it saw, a cheap index scan (positioning what committed since: positions.ts),
// and tells the subscribers concerned; with no subscriber it sends no statement at all. A NOTIFY in
// every committing transaction would have told it sooner but cut commits by more than half (the
// issue's measurement), so the hot transactions stay as they were. Waiting long polls (and later
// subscriptions) learn of events here, not by each querying the log. After a failed read it reads on
// from where it was, so an outage loses nothing.
import type { Sql } from '../../db/sql.js';
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
}

export interface LoggedEventRow {
  position: string;
  organizationId: number;
  type: string;
  recipientIds: number[];
  payload: Record<string, unknown> | null;
}

export const LOGGED_EVENT_COLUMNS = 'position::text, "organizationId", type, "recipientIds", payload';

export const loggedEvent = ({ position, ...row }: LoggedEventRow): LoggedEvent => ({ id: Number(position), ...row });

export type EventListener = (event: LoggedEvent) => void;

interface Subscription extends EventInterest {
  listener: EventListener;
}

export class EventReader {
  private readonly byOrganization = new Map<number, Set<Subscription>>();
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
    let subscriptions = this.byOrganization.get(interest.organizationId);
    if (!subscriptions) this.byOrganization.set(interest.organizationId, (subscriptions = new Set()));
    subscriptions.add(subscription);
    return () => {
      subscriptions.delete(subscription);
      if (subscriptions.size === 0 && this.byOrganization.get(interest.organizationId) === subscriptions) this.byOrganization.delete(interest.organizationId);
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
    if (this.byOrganization.size === 0) {
      // Nobody listens: the next subscriber starts from the log's end again (ready()).
      this.lastSeen = undefined;
      return;
    }
    if (this.lastSeen === undefined) return;
    await positionEventsUnlessBusy(this.sql);
    const rows = await this.sql.rows<LoggedEventRow>(`SELECT ${LOGGED_EVENT_COLUMNS} FROM event WHERE position > $1 ORDER BY position LIMIT ${ROWS_PER_READ}`, [
      this.lastSeen,
    ]);
    for (const row of rows) {
      const event = loggedEvent(row);
      this.lastSeen = Math.max(this.lastSeen ?? 0, event.id);
      this.dispatch(event);
    }
  }

  private dispatch(event: LoggedEvent): void {
    const subscriptions = this.byOrganization.get(event.organizationId);
    if (!subscriptions) return;
    const forAll = event.recipientIds.length === 0;
    const recipients = forAll ? undefined : new Set(event.recipientIds);
    for (const subscription of [...subscriptions]) {
      if (forAll || recipients!.has(subscription.userId)) subscription.listener(event);
    }
  }
}
