// Whether the database answers, for the whole process. The first failure that shows it unusable
// (src/db/outage-errors.ts: unreachable, refusing the role or its password, TLS, too many connections,
// a terminated backend) turns the status to down: one log line with the cause. From then on the API
// answers 503 with Retry-After at once instead of waiting on connections, background work (the event
// reader, the e-mail worker) fails quietly and is counted, and a probe every second turns it back up:
// one log line with how long it lasted and how much failed meanwhile. Clients and anonymous probes
// learn the state only; the cause (host, port, driver message) is for the log.
import { POOL_SIZE } from '../db/database.js';
import type { Sql } from '../db/sql.js';
import type { LineWriter, Logger } from '../logging.js';
import { classifyDatabaseError, describeDatabaseError } from '../db/outage-errors.js';
import { jsonResponse } from '../rest/envelope.js';

export const RETRY_AFTER_SECONDS = 5;
export const UNAVAILABLE_MESSAGE = 'The database is unavailable; try again shortly.';
export const BUSY_MESSAGE = 'The database is busy; try again shortly.';
/** What /health and /readyz tell anyone while the database is down. */
export const DATABASE_UNAVAILABLE_STATE = 'database unavailable';

const retryAfter = { 'Retry-After': String(RETRY_AFTER_SECONDS) };

/** The REST door's 503. */
export const unavailableResponse = (message = UNAVAILABLE_MESSAGE) =>
  jsonResponse({ result: 'error', msg: message, code: 'BAD_REQUEST' }, 503, retryAfter);

/** The probes' 503: the state, nothing about where the database is or what the driver said. */
export const unavailableStateResponse = () => jsonResponse({ status: DATABASE_UNAVAILABLE_STATE }, 503, retryAfter);

/** A request's logger, or lines held until it is known (src/graphql/replaced-errors.ts). */
type RequestLines = Pick<LineWriter, 'info' | 'warn'>;

const PROBE_INTERVAL_MS = 1000;
/** Every pooled connection may have broken at once (all backends terminated): one more try than the pool holds. */
const PROBE_ATTEMPTS = POOL_SIZE + 1;

interface Outage {
  since: number;
  /** Requests and background passes that failed (or were refused at once) while it lasted. */
  failed: number;
}

export class DatabaseStatus {
  private outage: Outage | null = null;
  private probeTimer: NodeJS.Timeout | undefined;
  private checking: Promise<boolean> | undefined;
  private stopped = false;
  private readonly availableAgain: (() => void)[] = [];

  constructor(
    /** The driver's own pool (Prisma's): its errors carry PostgreSQL's and Node's codes unwrapped. */
    private readonly sql: Sql,
    private readonly log: Logger,
  ) {}

  /** Whether the database is known to be unusable (until a probe finds it back). */
  get down(): boolean {
    return this.outage !== null;
  }

  /**
   * Call with any error a request or a background pass met; returns the message of the 503 the
   * request answers, or null for other errors (bugs: the caller logs them). An outage is recorded
   * until a probe finds the database back; a lock wait that ran out is this request's only.
   * `requestLog`: where what concerns this request alone goes (the outage's lines are the process's).
   */
  noteFailure(error: unknown, requestLog: RequestLines = this.log): string | null {
    const trouble = classifyDatabaseError(error);
    if (trouble === 'busy') {
      requestLog.warn(describeDatabaseError(error), 'database lock not granted in time: answering 503');
      return BUSY_MESSAGE;
    }
    if (trouble === null) return null;
    if (this.outage) this.outage.failed++;
    else if (trouble === 'unavailable') this.begin(error);
    else this.connectionLost(error, requestLog);
    return UNAVAILABLE_MESSAGE;
  }

  /** How many requests and background passes failed in the outage under way (0 when there is none). */
  get failuresSoFar(): number {
    return this.outage?.failed ?? 0;
  }

  /** A request answered 503 at once because the database is known down. */
  noteRefused(): void {
    if (this.outage) this.outage.failed++;
  }

  /**
   * An idle pooled connection was lost (its backend terminated, the path cut): not yet an outage,
   * since the pool opens a new one for the next statement. Asks the database now; an outage begins
   * only if it does not answer.
   */
  noteIdleConnectionLost(error: unknown): void {
    if (!this.outage && classifyDatabaseError(error) !== null) void this.check().catch(() => {});
  }

  /** A statement's connection broke: this request answers 503; the outage (if any) begins when a probe fails. */
  private connectionLost(error: unknown, requestLog: RequestLines): void {
    requestLog.info(describeDatabaseError(error), 'a database connection was lost under a statement: answering 503');
    void this.check().catch(() => {});
  }

  /** Asks the database now; returns whether it answered (and records the change either way). Concurrent calls share one question. */
  check(): Promise<boolean> {
    this.checking ??= this.ask().finally(() => (this.checking = undefined));
    return this.checking;
  }

  /** `listener` runs each time an outage ends. */
  onAvailableAgain(listener: () => void): void {
    this.availableAgain.push(listener);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.probeTimer);
  }

  private async ask(): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.sql.rows('SELECT 1', []);
        break;
      } catch (error) {
        const trouble = classifyDatabaseError(error);
        if (trouble === null) throw error;
        // A pooled connection that broke before the pool knew it: a fresh one tells more.
        if (trouble === 'lost' && attempt < PROBE_ATTEMPTS) continue;
        // A failed probe is not a failure of anyone's work: it is not counted.
        if (!this.outage) this.begin(error);
        return false;
      }
    }
    if (this.outage) this.end(this.outage);
    return true;
  }

  private begin(error: unknown): void {
    this.outage = { since: Date.now(), failed: 1 };
    this.log.error(describeDatabaseError(error), 'database unavailable: answering 503 until it is back');
    this.scheduleProbe();
  }

  private end(outage: Outage): void {
    this.outage = null;
    clearTimeout(this.probeTimer);
    const seconds = Math.round((Date.now() - outage.since) / 100) / 10;
    this.log.info(
      { seconds, failed: outage.failed },
      `database available again after ${seconds} s; ${outage.failed} requests or background passes failed meanwhile`,
    );
    for (const listener of this.availableAgain) listener();
  }

  private scheduleProbe(): void {
    if (this.stopped) return;
    this.probeTimer = setTimeout(async () => {
      if (!(await this.check().catch(() => false)) && this.outage) this.scheduleProbe();
    }, PROBE_INTERVAL_MS).unref();
  }
}
