// Whether the database answers. The first failure that shows it unreachable turns the status to
// down (one log line), and from then on the API answers 503 with Retry-After at once instead of
// waiting on connections; a probe every second turns it back up (one log line) when it answers.
import type { Prisma } from '../db/database.js';
import type { Logger } from '../logging.js';
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
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 6) return false;
  const { code, kind, originalCode, meta, cause, message } = error as Record<string, unknown>;
  if ([code, kind, originalCode].some((value) => UNAVAILABLE_CODES.has(String(value)))) return true;
  if (typeof message === 'string' && UNAVAILABLE_TEXT.test(message)) return true;
  const adapterError = (meta as { driverAdapterError?: unknown } | undefined)?.driverAdapterError;
  return isDatabaseUnavailable(adapterError, depth + 1) || isDatabaseUnavailable(cause, depth + 1);
}

export const RETRY_AFTER_SECONDS = 5;
export const UNAVAILABLE_MESSAGE = 'The database is unavailable; try again shortly.';

/** The REST door's 503 (and /health's, with its cause). */
export const unavailableResponse = (extra: Record<string, unknown> = {}) =>
  jsonResponse({ result: 'error', msg: UNAVAILABLE_MESSAGE, ...extra, code: 'BAD_REQUEST' }, 503, { 'Retry-After': String(RETRY_AFTER_SECONDS) });
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

  /** Call with any error a request met; returns whether it was the database being unreachable. */
  noteFailure(error: unknown): boolean {
    if (!isDatabaseUnavailable(error)) return false;
    if (this.downCause === null) {
      this.downCause = `database unreachable: ${describe(error)}`;
      this.log.error({ cause: this.downCause }, 'database unavailable: answering 503 until it is back');
      this.scheduleProbe();
    }
    return true;
  }

  /** Asks the database now; returns whether it answered (and records the change either way). */
  async check(): Promise<boolean> {
    try {
      await this.prisma.$queryRaw`SELECT 1`;
    } catch (error) {
      if (!this.noteFailure(error)) throw error;
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
