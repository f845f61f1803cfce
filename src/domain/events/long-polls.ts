// The waiting side of GET /events (docs/reference/events.md section 2), in each process: at most one
// waiting request per queue across every process (a second poll answers the first, here directly,
// elsewhere through a NOTIFY sent by the poll, never by a hot transaction), woken by the process's
// one EventReader, answered by a heartbeat, when its user's credentials change, and at shutdown.
import type { AppContext } from '../../app-context.js';
import type { NotificationSubscriber } from '../../db/notifications.js';
import type { Actor } from '../auth/authenticate.js';
import { CredentialWatch, type CredentialWatching, type HeldCredentials } from '../auth/held-credentials.js';
import { removeExpiredSessions } from '../auth/sessions.js';
import { activeTraceContext, inSpan, type Span } from '../../tracing/spans.js';
import type { EventReader } from './reader.js';
import { positionCommittedEvents } from './positions.js';
import {
  acknowledgeEvents,
  addHeartbeat,
  deleteQueue,
  endWaiting,
  type DeliveredEvent,
  type EventQueue,
  LONGEST_WAIT_SECS,
  markWaiting,
  queuedEvents,
  type RealmEmojiReads,
  realmEmojiReads,
  removeExpired,
} from './queues.js';

export const QUEUE_TAKEN_CHANNEL = 'event_queue_taken';
const HOUSEKEEPING_MS = 60_000;

export interface PollRequest {
  queueId: string;
  lastEventId: number;
  dontBlock: boolean;
}

export interface PollAnswer {
  events: DeliveredEvent[];
  /** Set when the request waited (the reference answers waited requests with their queue's id). */
  queueId?: string;
}

/** The request's credentials, checked again when they may have changed. */
export interface PollCredentials extends HeldCredentials {
  /** Aborted when the client goes away: its wait ends then. */
  signal?: AbortSignal;
}

class WaitingPoll {
  private done = false;
  private checking: Promise<void> | undefined;
  private checkAgain = false;
  private heartbeat: NodeJS.Timeout | undefined;
  private unsubscribe: () => void = () => {};
  private watching: CredentialWatching | undefined;
  readonly until = Date.now() + LONGEST_WAIT_SECS * 1000;
  /** The waiting request's trace: an answer the event reader or a takeover starts belongs there. */
  private readonly trace = activeTraceContext();

  constructor(
    private readonly polls: EventPolls,
    readonly queue: EventQueue,
    readonly credentials: PollCredentials,
    private readonly resolve: (answer: PollAnswer) => void,
    private readonly reject: (error: unknown) => void,
  ) {}

  async begin(reader: EventReader, heartbeatMs: number): Promise<void> {
    // Listening before the first read: an event committed in between is either read or heard of.
    // Only events the queue takes: the others would cost a read of the queue each, for nothing.
    const types = this.queue.everyType ? null : this.queue.eventTypes;
    this.unsubscribe = reader.subscribe({ organizationId: this.queue.organizationId, userId: this.queue.userId, types }, () =>
      this.check(),
    );
    this.watching = this.polls.credentialWatch.watch(this.credentials, { refused: (error) => this.fail(error) });
    this.heartbeat = setTimeout(() => void this.beat(), heartbeatMs);
    try {
      await reader.ready();
      await markWaiting(this.polls.app.sql, this.queue.id, this.until);
      this.check();
    } catch (error) {
      this.fail(error);
    }
  }

  /** Answers with the queue's events if it has any; one read at a time, another after it if asked meanwhile. */
  check(): void {
    if (this.done) return;
    if (this.checking) {
      this.checkAgain = true;
      return;
    }
    this.checking = this.delivering(async (span) => {
      do {
        this.checkAgain = false;
        const events = await queuedEvents(this.polls.app, this.queue, this.polls.realmEmoji);
        if (events.length > 0) return this.finish(events, span);
      } while (this.checkAgain && !this.done);
    })
      .catch((error) => this.fail(error))
      .finally(() => (this.checking = undefined));
  }

  private async beat(): Promise<void> {
    try {
      await addHeartbeat(this.polls.app.sql, this.queue);
      await this.answerNow();
    } catch (error) {
      this.fail(error);
    }
  }

  /** Answers at once with what the queue holds (often nothing). */
  async answerNow(): Promise<void> {
    if (this.done) return;
    await this.delivering(async (span) => {
      const events = await queuedEvents(this.polls.app, this.queue, this.polls.realmEmoji).catch(() => []);
      await this.finish(events, span);
    });
  }

  /** A delivery's span (reading the queue, answering) in the waiting request's trace. */
  private delivering<T>(work: (span: Span | undefined) => Promise<T>): Promise<T> {
    return inSpan('events.deliver', {}, work, { parent: this.trace });
  }

  private stop(): boolean {
    if (this.done) return false;
    this.done = true;
    clearTimeout(this.heartbeat);
    this.unsubscribe();
    this.watching?.stop();
    this.polls.forget(this);
    return true;
  }

  private async finish(events: DeliveredEvent[], span?: Span): Promise<void> {
    // A check of the credentials in flight: the answer waits for it (a refusal answers instead).
    const settled = this.watching?.settled();
    if (settled) await settled;
    if (!this.stop()) return;
    span?.setAttribute('events.count', events.length);
    await endWaiting(this.polls.app.sql, this.queue.id, this.until).catch(() => {});
    this.resolve({ events, queueId: this.queue.id });
  }

  fail(error: unknown): void {
    if (this.stop()) this.reject(error);
  }
}

export class EventPolls implements NotificationSubscriber {
  readonly channel = QUEUE_TAKEN_CHANNEL;
  private readonly waiting = new Map<string, WaitingPoll>();
  private closing = false;
  private housekeeping: NodeJS.Timeout | undefined;
  readonly credentialWatch: CredentialWatch;
  readonly realmEmoji: RealmEmojiReads;

  constructor(
    readonly app: AppContext,
    private readonly reader: EventReader,
  ) {
    this.credentialWatch = new CredentialWatch(app);
    this.realmEmoji = realmEmojiReads(app);
  }

  /**
   * The reader, and the removal of expired queues, old events, expired browser sessions and those
   * signed out while the database could not record it, every minute, in every process (the log grows
   * whether or not anyone reads it). A few statements a minute; none of a request's.
   */
  start(): void {
    this.reader.start();
    const removeOld = () => {
      removeExpired(this.app.sql).catch((error) => this.app.log?.warn({ err: error }, 'removing expired event queues failed'));
      removeExpiredSessions(this.app.sql).catch((error) => this.app.log?.warn({ err: error }, 'removing expired sessions failed'));
      this.app.endedSessions?.flush(this.app.sql).catch((error) => this.app.log?.warn({ err: error }, 'ending signed-out sessions failed'));
    };
    this.housekeeping = setInterval(removeOld, HOUSEKEEPING_MS).unref();
  }

  /** Answers every waiting request at once (SIGTERM: a drain never waits for a long poll); later polls do not wait. */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.housekeeping);
    await Promise.all([...this.waiting.values()].map((poll) => poll.answerNow()));
    await this.reader.stop();
  }

  /** GET /events: acknowledges, then answers at once or waits. */
  async poll(actor: Actor, request: PollRequest, credentials: PollCredentials): Promise<PollAnswer> {
    const queue = await acknowledgeEvents(this.app, actor, request.queueId, request.lastEventId);
    await this.answerWaiting(queue);
    await positionCommittedEvents(this.app.sql);
    const events = await queuedEvents(this.app, queue, this.realmEmoji);
    // A client that left while the queue was read has nobody waiting: its abort, already past, would
    // never be heard, and the request would wait for its heartbeat.
    if (events.length > 0 || request.dontBlock || this.closing || credentials.signal?.aborted) return { events };
    return new Promise<PollAnswer>((resolve, reject) => {
      const poll = new WaitingPoll(this, queue, credentials, resolve, reject);
      // Two polls of one queue that arrived together: the earlier is answered, as a takeover.
      void this.waiting.get(queue.id)?.answerNow();
      this.waiting.set(queue.id, poll);
      credentials.signal?.addEventListener('abort', () => void poll.answerNow(), { once: true });
      void poll.begin(this.reader, this.heartbeatMs());
    });
  }

  /** DELETE /events: the queue is gone and its waiting request answered. */
  async delete(actor: Actor, queueId: string): Promise<void> {
    const queue = await deleteQueue(this.app, actor, queueId);
    await this.answerWaiting(queue);
  }

  /** A request waiting on the queue, here or in another process, is answered. */
  private async answerWaiting(queue: EventQueue): Promise<void> {
    const here = this.waiting.get(queue.id);
    if (here) await here.answerNow();
    else if (queue.waitingUntil !== null && queue.waitingUntil > Date.now()) {
      await this.app.sql.rows('SELECT pg_notify($1, $2)', [QUEUE_TAKEN_CHANNEL, queue.id]);
    }
  }

  /** Requests waiting in this process. */
  get size(): number {
    return this.waiting.size;
  }

  forget(poll: WaitingPoll): void {
    if (this.waiting.get(poll.queue.id) === poll) this.waiting.delete(poll.queue.id);
  }

  /** Another process took over or deleted a queue whose request waits here. */
  notified(queueId: string): void {
    void this.waiting.get(queueId)?.answerNow();
  }

  /**
   * After the listening connection came back, a takeover or a DELETE notified meanwhile was missed:
   * every waiting request is answered with what its queue holds (its client polls again at once).
   */
  listening(on: boolean): void {
    if (!on) return;
    for (const poll of this.waiting.values()) void poll.answerNow();
  }

  private heartbeatMs(): number {
    const seconds = this.app.config.eventHeartbeatSeconds ?? 45 + Math.random() * 10;
    return seconds * 1000;
  }
}
