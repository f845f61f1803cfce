// Whether the database answers. The first failure that shows it unreachable turns the status to
// down (one log line), and from then on the API answers 503 with Retry-After at once instead of
// waiting on connections; a probe every second turns it back up (one log line) when it answers.
import type { Prisma } from '../db/database.js';
import type { Logger } from '../logging.js';
import { hasErrorCode, someErrorInChain } from '../db/error-chain.js';
import { jsonResponse } from '../rest/envelope.js';

/** Connection-level failures: PostgreSQL gone, refusing, restarting or out of connections. */
const UNAVAILABLE_CODES = new Set([
  'P1001', 'P1002', 'P1008', 'P1017',
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'ENOENT',
  '57P01', '57P02', '57P03', '53300',
  'DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections', 'DatabaseDoesNotExist',
]);
const UNAVAILABLE_TEXT = /Connection terminated|connection (?:is )?closed|ECONNREFUSED|ECONNRESET|Can't reach database/i;

/** Whether the error (or any error it wraps) says the database cannot be reached. */
export const isDatabaseUnavailable = (error: unknown) =>
  someErrorInChain(
    error,
    ({ code, kind, originalCode, message }) =>
      [code, kind, originalCode].some((value) => UNAVAILABLE_CODES.has(String(value))) || (typeof message === 'string' && UNAVAILABLE_TEXT.test(message)),
  );

/** A lock not granted within the lock timeout (DATABASE_LOCK_WAIT_SECONDS): the database is busy, not down. */
const BUSY_CODES = new Set(['55P03']);

export const RETRY_AFTER_SECONDS = 5;
export const UNAVAILABLE_MESSAGE = 'The database is unavailable; try again shortly.';
export const BUSY_MESSAGE = 'The database is busy; try again shortly.';

/** The REST door's 503 (and /health's, with its cause). */
export const unavailableResponse = (message = UNAVAILABLE_MESSAGE, extra: Record<string, unknown> = {}) =>
  jsonResponse({ result: 'error', msg: message, ...extra, code: 'BAD_REQUEST' }, 503, { 'Retry-After': String(RETRY_AFTER_SECONDS) });
const PROBE_INTERVAL_MS = 1000;

export class DatabaseStatus {
  private downCause: string | null = null;
  private probeTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly prisma: Prisma,
    private readonly log: Logger,
  ) {}

  /** Why the database is unavailable, or null while it answers. */
  get cause(): string | null {
    return this.downCause;
  }

  /**
   * Call with any error a request met; returns the message of the 503 the request answers, or null
   * for other errors: the database is unreachable (recorded until a probe finds it back) or did not
   * grant a lock in time (busy: this request only).
   */
  noteFailure(error: unknown): string | null {
    if (hasErrorCode(error, BUSY_CODES)) {
      this.log.warn({ cause: describe(error) }, 'database lock not granted in time: answering 503');
      return BUSY_MESSAGE;
    }
    if (!isDatabaseUnavailable(error)) return null;
    if (this.downCause === null) {
      this.downCause = `database unreachable: ${describe(error)}`;
      this.log.error({ cause: this.downCause }, 'database unavailable: answering 503 until it is back');
      this.scheduleProbe();
    }
    return UNAVAILABLE_MESSAGE;
  }

  /** Asks the database now; returns whether it answered (and records the change either way). */
  async check(): Promise<boolean> {
    try {
      await this.prisma.$queryRaw`SELECT 1`;
    } catch (error) {
      if (this.noteFailure(error) === null) throw error;
      return false;
    }
    if (this.downCause !== null) {
      this.downCause = null;
      clearTimeout(this.probeTimer);
      this.log.info('database available again');
    }
    return true;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.probeTimer);
  }

  private scheduleProbe(): void {
    if (this.stopped) return;
    this.probeTimer = setTimeout(async () => {
      if (!(await this.check().catch(() => false)) && this.downCause !== null) this.scheduleProbe();
    }, PROBE_INTERVAL_MS).unref();
  }
}

function describe(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  // Prisma's messages start with the invocation site; the reason is the last line.
  return text.trim().split('\n').filter(Boolean).pop()!.slice(0, 200);
}
