// The event log's subscriptions (GraphQL's invitationsChanged, customEmojiChanged and
// attachmentsChanged): a stream per subscription, fed by the process's one EventReader, with the
// recipients of the REST events. Given a cursor, a stream first reads from the log what its
// subscriber missed, a page at a time as the subscriber takes it, then goes on with new events. A
// stream ends when its credentials are refused, at shutdown, or when its subscriber falls too far
// behind; a subscriber that goes away frees it at once.
import { namedStatement } from '../../db/sql.js';
import type { AppContext } from '../../app-context.js';
import type { Actor } from '../auth/authenticate.js';
import { CredentialWatch, type HeldCredentials } from '../auth/held-credentials.js';
import { DomainError, badRequest } from '../errors.js';
import type { EventType } from './log.js';
import { positionCommittedEvents } from './positions.js';
import { LOGGED_EVENT_COLUMNS, loggedEvent, type EventReader, type LoggedEvent, type LoggedEventRow } from './reader.js';

/** New events a stream holds for a subscriber that does not take them; one more ends it. */
export const MAX_HELD_EVENTS = 1_000;
/** One user's subscriptions in one process. */
export const MAX_SUBSCRIPTIONS_PER_USER = 100;
const RETRY_AFTER_SECONDS = 5;
const REPLAY_PAGE = 200;
const CURSOR_PREFIX = 'event:';

/** What a stream yields: an event, or (last) the error that ended it. */
export type StreamItem = { event: LoggedEvent } | { ended: DomainError };

export interface StreamRequest {
  types: readonly EventType[];
  /** A cursor of an earlier event: what came after it is delivered first. */
  after: string | null;
  /** Aborted when the subscriber goes away (an HTTP request's): the stream is freed then, even before it is taken. */
  signal?: AbortSignal;
  /** Told the subscriber as they now are, after a change of their row was heard (a new role, a new name). */
  renewed?: (actor: Actor) => void;
}

/** The cursor of an event: opaque to clients (it only names a place in the log). */
export const eventCursor = (event: LoggedEvent) => Buffer.from(`${CURSOR_PREFIX}${event.id}`).toString('base64url');

const invalidCursor = () => badRequest('Invalid cursor: pass the cursor of an earlier event of this subscription.');

function cursorPosition(cursor: string): number {
  const text = Buffer.from(cursor, 'base64url').toString();
  const position = Number(text.slice(CURSOR_PREFIX.length));
  if (
    !text.startsWith(CURSOR_PREFIX) ||
    !/^\d{1,15}$/.test(text.slice(CURSOR_PREFIX.length)) ||
    eventCursor({ id: position } as LoggedEvent) !== cursor
  ) {
    throw invalidCursor();
  }
  return position;
}

export const eventsPruned = () =>
  new DomainError('Events after this cursor have been removed from the log: load the data again, then subscribe without `after`.', {
    code: 'EVENTS_PRUNED',
  });

const tooFarBehind = () =>
  new DomainError(
    `The subscriber fell more than ${MAX_HELD_EVENTS} events behind: subscribe again with \`after\` set to the last cursor received.`,
    {
      code: 'TOO_FAR_BEHIND',
    },
  );

const processFull = () =>
  new DomainError('This server holds as many subscriptions as it may: try again later (or another server).', {
    code: 'SERVICE_UNAVAILABLE',
    status: 503,
    headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
  });

const tooManyOfUser = () =>
  badRequest(`A user may hold at most ${MAX_SUBSCRIPTIONS_PER_USER} subscriptions on one server: close some first.`);

/** The subscriber's events of these types after `position`, oldest first. */
const LOG_STATE = namedStatement(
  'events.log-state',
  'SELECT "prunedThrough"::text, (SELECT max(position) FROM event)::text AS end FROM event_log_horizon',
);

const FOLLOWED_EVENTS = namedStatement(
  'events.followed',
  `
  SELECT ${LOGGED_EVENT_COLUMNS} FROM event
   WHERE "organizationId" = $1 AND position > $2 AND ("recipientIds" = '{}' OR $3 = ANY("recipientIds")) AND type = ANY($4::text[])
   ORDER BY event.position LIMIT ${REPLAY_PAGE}`,
);

class EventStream implements AsyncIterableIterator<StreamItem> {
  private readonly held: LoggedEvent[] = [];
  private replayed: LoggedEvent[] = [];
  private waiting: ((result: IteratorResult<StreamItem>) => void) | undefined;
  /** Undefined while open; null: ended quietly; an error: ended by it (delivered last). */
  private ending: DomainError | null | undefined;
  private done = false;
  private readonly stops: (() => void)[] = [];
  private credentialsSettled: () => Promise<void> | undefined = () => undefined;

  /** Delivered (or, while replaying, read) up to this position: the stream holds only later events. */
  private delivered = 0;
  /** Until the start is known (startAfter), every event heard is held; nextHeld skips those before it. */
  private started = false;
  /**
   * More than MAX_HELD_EVENTS heard before the start (the reader dispatching a backlog while the
   * stream learns where the log ends): those were dropped, so the stream starts by reading the log.
   */
  private droppedBeforeStart = false;
  private replaying = false;

  constructor(
    private readonly app: AppContext,
    private readonly actor: Actor,
    private readonly types: readonly string[],
  ) {}

  /** Where the stream starts: after `position`, reading what the log holds since first when `replay`. */
  startAfter(position: number, replay: boolean): void {
    this.delivered = position;
    this.replaying = replay || this.droppedBeforeStart;
    this.started = true;
  }

  onEnd(stop: () => void): void {
    this.stops.push(stop);
  }

  /** While a check of the subscriber's credentials is in flight, the next event waits for its outcome. */
  deliverAfter(settled: () => Promise<void> | undefined): void {
    this.credentialsSettled = settled;
  }

  /** Positioned in the log (its start known): what commits from now on reaches it. */
  get following(): boolean {
    return this.started;
  }

  /** A new event of the log for this user: held until the subscriber takes it. */
  offer(event: LoggedEvent): void {
    // Read or replayed already, or before the stream's start: not held (nextHeld skips the rest).
    if (this.ending !== undefined || !this.types.includes(event.type) || (this.started && event.id <= this.delivered)) return;
    if (this.held.length >= MAX_HELD_EVENTS) {
      if (this.started) {
        this.end(tooFarBehind());
        return;
      }
      this.held.length = 0;
      this.droppedBeforeStart = true;
    }
    this.held.push(event);
    this.wake();
  }

  /** Ends the stream at once, with the error delivered next, if any (the subscriber resumes from its last cursor). */
  end(error: DomainError | null = null): void {
    if (this.ending !== undefined) return;
    this.ending = error;
    this.held.length = 0;
    this.replayed = [];
    this.replaying = false;
    this.wake();
  }

  async next(): Promise<IteratorResult<StreamItem>> {
    const settled = this.credentialsSettled();
    if (settled) await settled;
    if (this.done) return { value: undefined, done: true };
    if (this.replaying) await this.replayPage();
    const event = this.replayed.shift() ?? this.nextHeld();
    if (event) return { value: { event }, done: false };
    if (this.ending !== undefined) {
      const error = this.ending;
      this.finish();
      return error ? { value: { ended: error }, done: false } : { value: undefined, done: true };
    }
    return new Promise((resolve) => (this.waiting = resolve));
  }

  async return(): Promise<IteratorResult<StreamItem>> {
    this.finish();
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  /** Events already delivered by the replay are skipped. */
  private nextHeld(): LoggedEvent | undefined {
    let event = this.held.shift();
    while (event && event.id <= this.delivered) event = this.held.shift();
    if (event) this.delivered = event.id;
    return event;
  }

  private async replayPage(): Promise<void> {
    if (this.replayed.length > 0) return;
    const rows = await this.app.sql.rows<LoggedEventRow>(FOLLOWED_EVENTS, [
      this.actor.organizationId,
      this.delivered,
      this.actor.id,
      this.types,
    ]);
    this.replayed = rows.map(loggedEvent);
    if (this.replayed.length > 0) this.delivered = this.replayed[this.replayed.length - 1]!.id;
    if (rows.length < REPLAY_PAGE) this.replaying = false;
  }

  private wake(): void {
    const waiting = this.waiting;
    if (!waiting) return;
    this.waiting = undefined;
    void this.next().then(waiting);
  }

  private finish(): void {
    if (this.done) return;
    this.done = true;
    this.held.length = 0;
    this.replayed = [];
    for (const stop of this.stops) stop();
    this.waiting?.({ value: undefined, done: true });
    this.waiting = undefined;
  }
}

export class EventStreams {
  private readonly open = new Set<EventStream>();
  private readonly openByUser = new Map<number, number>();
  private closing = false;

  private readonly credentialWatch: CredentialWatch;

  constructor(
    private readonly app: AppContext,
    private readonly reader: EventReader,
  ) {
    this.credentialWatch = new CredentialWatch(app);
  }

  /**
   * A stream of the actor's events of these types. Refused at once for an invalid cursor, or one
   * whose following events were pruned (EVENTS_PRUNED).
   */
  async follow(actor: Actor, credentials: HeldCredentials, request: StreamRequest): Promise<AsyncIterableIterator<StreamItem>> {
    const after = request.after === null ? null : cursorPosition(request.after);
    const stream = this.admit(actor, request.types);
    freedOnAbort(stream, request.signal);
    // Listening before the log is read: an event committed in between is read or heard of (or both: skipped once).
    stream.onEnd(
      this.reader.subscribe({ organizationId: actor.organizationId, userId: actor.id, types: request.types }, (event) =>
        stream.offer(event),
      ),
    );
    const refused = (error: unknown) => stream.end(error instanceof DomainError ? error : null);
    const watching = this.credentialWatch.watch(credentials, { refused, renewed: request.renewed });
    stream.onEnd(watching.stop);
    stream.deliverAfter(watching.settled);
    try {
      await this.reader.ready();
      const log = await this.logState();
      if (after !== null) checkResumable(after, log);
      // Without a cursor, what committed before the subscription is not its (the reader may not have read it yet).
      stream.startAfter(after ?? log.end, after !== null);
    } catch (error) {
      await stream.return();
      throw error;
    }
    if (this.closing) stream.end();
    return stream;
  }

  /**
   * A new stream, counted against both caps in the step that checks them (before any await: requests
   * that arrive together cannot all pass the check), and uncounted however it ends.
   */
  private admit(actor: Actor, types: readonly EventType[]): EventStream {
    if (this.open.size >= this.app.config.maxSubscriptions) throw processFull();
    if ((this.openByUser.get(actor.id) ?? 0) >= MAX_SUBSCRIPTIONS_PER_USER) throw tooManyOfUser();
    const stream = new EventStream(this.app, actor, types);
    this.count(stream, actor.id, +1);
    stream.onEnd(() => this.count(stream, actor.id, -1));
    return stream;
  }

  /** SIGTERM: every stream ends at once (clients reconnect to another process, with their cursor). */
  close(): void {
    this.closing = true;
    for (const stream of this.open) stream.end();
  }

  /** Streams counted against the caps: admitted, whether or not they follow the log yet. */
  get admitted(): number {
    return this.open.size;
  }

  /** Streams open and following the log (positioned: what commits from now on reaches them). */
  get size(): number {
    let following = 0;
    for (const stream of this.open) if (stream.following) following++;
    return following;
  }

  private count(stream: EventStream, userId: number, change: 1 | -1): void {
    if (change > 0) this.open.add(stream);
    else this.open.delete(stream);
    const count = (this.openByUser.get(userId) ?? 0) + change;
    if (count > 0) this.openByUser.set(userId, count);
    else this.openByUser.delete(userId);
  }

  /** Where the log ends (everything committed positioned first) and how far it has been pruned. */
  private async logState(): Promise<LogState> {
    await positionCommittedEvents(this.app.sql);
    const [log] = await this.app.sql.rows<{ prunedThrough: string; end: string | null }>(LOG_STATE, []);
    const prunedThrough = Number(log?.prunedThrough ?? 0);
    return { end: Math.max(Number(log?.end ?? 0), prunedThrough), prunedThrough };
  }
}

interface LogState {
  end: number;
  prunedThrough: number;
}

/**
 * A subscriber that goes away while its stream is being admitted never takes it, so nothing would
 * return it: the abort frees it (the SSE transport's; graphql-ws returns what arrives for a closed socket).
 */
function freedOnAbort(stream: EventStream, signal: AbortSignal | undefined): void {
  if (!signal) return;
  const free = () => void stream.return();
  if (signal.aborted) {
    free();
    return;
  }
  signal.addEventListener('abort', free, { once: true });
  stream.onEnd(() => signal.removeEventListener('abort', free));
}

function checkResumable(after: number, log: LogState): void {
  if (after > log.end) throw invalidCursor();
  if (after < log.prunedThrough) throw eventsPruned();
}
