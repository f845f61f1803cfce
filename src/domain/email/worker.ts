// Delivers queued e-mail after commit. Several server processes may share one PostgreSQL database:
// each claims a batch with one UPDATE over `FOR UPDATE SKIP LOCKED` rows that pushes their
// nextAttemptAt past a lease, so no two workers hold the same e-mail. The lease is short (40 s) and
// every attempt ends before it does, so mail claimed by a process that died is claimed again by any
// worker when the lease ends (each worker sleeps at most until the next lease end). A failed attempt
// is retried with growing delays, and marked FAILED after maxAttempts.
// Organizations take turns: a batch holds each organization's first due e-mail, then each one's
// second, and so on, and holds about a second of delivery, so one organization's bulk invitation
// does not hold back another's mail by more than about a batch. A stopping worker finishes the
// e-mail in flight and releases the rest of its batch for other processes.
// Delivery is background work beside the requests: a batch waits while requests keep the process
// busy (so a busy server also delivers many e-mails per batch, with one statement of bookkeeping per
// batch), and the worker lets waiting requests run between two e-mails.
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import type { DatabaseClient } from '../../db/database.js';
import { classifyDatabaseError } from '../../db/outage-errors.js';
import { logger } from '../../logging.js';
import { detached, inSpan, tracing } from '../../tracing/spans.js';
import type { MailTransport } from './transport.js';

export interface OutboxOptions {
  /** Longest sleep between passes when nothing wakes the worker (ms). */
  pollMs: number;
  /** Most e-mails per batch. */
  batchSize: number;
  /**
   * How much delivery time a batch holds, as measured (ms): mail queued while a batch is delivered
   * waits about this long for its organization's turn, however slow the mail server.
   */
  batchDeliveryMs: number;
  maxAttempts: number;
  /** How long a claim lasts; an attempt is abandoned (as failed) when half of it has passed. */
  leaseMs: number;
  /** Delay before attempt `attempt + 1` after attempt `attempt` failed (ms). */
  retryDelayMs(attempt: number): number;
  /** A pass failed (the database away: src/server.ts counts it in the outage instead of logging it). */
  passFailed(error: unknown): void;
}

export const DEFAULT_OUTBOX_OPTIONS: OutboxOptions = {
  pollMs: 30_000,
  batchSize: 100,
  batchDeliveryMs: 1_000,
  maxAttempts: 6,
  leaseMs: 40_000,
  retryDelayMs: (attempt) => Math.min(60_000 * 2 ** (attempt - 1), 3_600_000),
  passFailed: (error) => logger.error({ err: error }, 'e-mail outbox: delivery pass failed'),
};

interface ClaimedEmail {
  id: number;
  organizationId: number;
  toAddress: string;
  subject: string;
  textBody: string;
  htmlBody: string;
  attempts: number;
  /** When it was due before the claim: a release puts it back there. */
  dueAt: Date;
  /** Its place in its organization's queue within the batch (1 for each organization's first); mail of no organization queues as organization 0. */
  turn: number;
}

type Outcome = 'sent' | 'failed' | 'abandoned';

const MIN_SLEEP_MS = 50;
const OBSERVATION_MS = 100;
const BUSY_UTILIZATION = 0.5;
const MAX_DEFERRAL_MS = 10_000;
/** What a delivery is assumed to take until deliveries have been timed (the first batch of a process holds 10). */
const ASSUMED_DELIVERY_MS = 100;
/** After stop(), how long the e-mail in flight may take before it is abandoned (process managers kill at 10 s). */
const STOP_GRACE_MS = 5_000;
/** Marking delivered e-mails SENT through a lost connection: 6 tries over 7.5 s (a cut path, terminated backends), inside the 40 s lease. */
const MARK_SENT_ATTEMPTS = 6;
const MARK_SENT_RETRY_MS = 500;

export class OutboxWorker {
  private readonly options: OutboxOptions;
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<void> | null = null;
  private wakeAgain = false;
  private stopped = false;
  private stopping: Promise<void> | undefined;
  private readonly abandon = new AbortController();
  private averageDeliveryMs = ASSUMED_DELIVERY_MS;
  /** The organization served last: the next batch starts with the organizations after it. */
  private lastOrganization = 0;
  /** Told after each batch how many e-mails went out and how many attempts failed (the server's metrics). */
  onDeliveries: ((sent: number, failed: number) => void) | undefined;

  constructor(
    private readonly prisma: DatabaseClient,
    private readonly transport: MailTransport,
    options: Partial<OutboxOptions> = {},
  ) {
    this.options = { ...DEFAULT_OUTBOX_OPTIONS, ...options };
  }

  start(): void {
    this.wake();
  }

  /** Where delivered mail goes, for the start-up banner. */
  get destination(): string {
    return this.transport.description;
  }

  /** Runs a pass now (or right after the one in progress). */
  wake(): void {
    if (this.stopped) return;
    if (this.pass) {
      this.wakeAgain = true;
      return;
    }
    clearTimeout(this.timer);
    // A request that queued mail wakes the worker: the pass is not part of that request's trace.
    this.pass = detached(() => this.runPass()).finally(() => {
      this.pass = null;
      if (this.wakeAgain) {
        this.wakeAgain = false;
        this.wake();
      }
    });
  }

  /**
   * Stops delivering: the e-mail in flight completes (after STOP_GRACE_MS it is abandoned to its
   * lease, since whether the mail server took it is unknown), the rest of the batch is released for
   * any worker to claim at once, and everything else stays queued.
   */
  stop(): Promise<void> {
    this.stopping ??= this.finishInFlight();
    return this.stopping;
  }

  /**
   * Claims one batch of due e-mails, organizations taking turns, and attempts each in turn order;
   * stops early (releasing the unattempted) once the worker stops.
   */
  async deliverDue(now = new Date()): Promise<{ claimed: number; sent: number; failed: number; full: boolean }> {
    const limit = this.batchLimit();
    const claimed = await this.claim(now, limit);
    const sent: ClaimedEmail[] = [];
    let attempted = 0;
    let failed = 0;
    for (const email of claimed) {
      if (this.stopped) break;
      attempted++;
      const outcome = await this.attempt(email);
      if (outcome === 'sent') sent.push(email);
      if (outcome === 'failed') failed++;
      if (outcome === 'abandoned') break;
      await nextTurn();
    }
    await this.markSent(sent);
    this.onDeliveries?.(sent.length, failed);
    await this.release(claimed.slice(attempted));
    return { claimed: claimed.length, sent: sent.length, failed, full: claimed.length === limit };
  }

  /**
   * Every batch due now, one after another, without waiting for the process to be quiet (the CLI's
   * deliver-emails); `afterBatch` hears the running totals.
   */
  async deliverAllDue(afterBatch: (total: { sent: number; failed: number }) => void = () => {}): Promise<{ sent: number; failed: number }> {
    const total = { sent: 0, failed: 0 };
    for (let full = true; full && !this.stopped; ) {
      const batch = await this.deliverDue();
      total.sent += batch.sent;
      total.failed += batch.failed;
      full = batch.full;
      afterBatch(total);
    }
    return total;
  }

  private async finishInFlight(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    const grace = setTimeout(() => this.abandon.abort(), STOP_GRACE_MS);
    await this.pass;
    clearTimeout(grace);
    this.transport.close();
  }

  private async runPass(): Promise<void> {
    let nextPassIn = this.options.pollMs;
    try {
      await this.deliverEverythingDue();
      if (this.stopped) return;
      nextPassIn = await this.timeUntilNextDue();
    } catch (error) {
      this.options.passFailed(error);
    }
    if (!this.stopped) this.timer = setTimeout(() => this.wake(), nextPassIn).unref();
  }

  private async deliverEverythingDue(): Promise<void> {
    while (!this.stopped) {
      await this.untilRequestsQuiet();
      if (this.stopped) return;
      // A batch that was not full took everything due.
      if (!(await this.deliverDue()).full) return;
    }
  }

  /**
   * Waits while requests keep the event loop busy (at most MAX_DEFERRAL_MS): mail can wait a moment,
   * people should not. Also spaces batches, so a busy server delivers many e-mails per batch.
   */
  private async untilRequestsQuiet(): Promise<void> {
    for (let waited = 0; waited < MAX_DEFERRAL_MS && !this.stopped; waited += OBSERVATION_MS) {
      const before = performance.eventLoopUtilization();
      await sleep(OBSERVATION_MS);
      if (performance.eventLoopUtilization(before).utilization < BUSY_UTILIZATION) return;
    }
  }

  private batchLimit(): number {
    return Math.max(1, Math.min(this.options.batchSize, Math.floor(this.options.batchDeliveryMs / this.averageDeliveryMs)));
  }

  /**
   * One statement: the organizations with pending mail (one index probe each), starting after the
   * one served last; up to `limit` due e-mails of each, locked with SKIP LOCKED so that no two
   * workers claim the same; of those, each organization's first, then each one's second, and so on
   * (turns), `limit` in all. A bulk invitation thus takes one place per turn, not the whole batch.
   * Mail of no organization (a password reset's notice to an unknown address) takes turns as organization 0.
   * (The probes order by "nextAttemptAt" too only so that the planner takes the claim's index: by
   * organization alone it chose the (organizationId, kind, createdAt) one and filtered the sent rows.)
   */
  private async claim(now: Date, limit: number): Promise<ClaimedEmail[]> {
    const leaseEnd = new Date(now.getTime() + this.options.leaseMs);
    const after = this.lastOrganization;
    const claimed = await this.prisma.$queryRaw<ClaimedEmail[]>`
      WITH RECURSIVE waiting AS (
        (SELECT "organizationId" AS org FROM outbox_email WHERE status = 'PENDING' ORDER BY "organizationId", "nextAttemptAt" LIMIT 1)
        UNION ALL
        SELECT (SELECT "organizationId" FROM outbox_email WHERE status = 'PENDING' AND "organizationId" > waiting.org ORDER BY "organizationId", "nextAttemptAt" LIMIT 1)
        FROM waiting WHERE waiting.org IS NOT NULL
      ), organizations AS (
        SELECT org FROM waiting WHERE org IS NOT NULL ORDER BY org <= ${after}, org LIMIT ${limit}
      ), unattached AS (
        SELECT id, "nextAttemptAt" FROM outbox_email
        WHERE "organizationId" IS NULL AND status = 'PENDING' AND "nextAttemptAt" <= ${now}
        ORDER BY "nextAttemptAt", id
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      ), turns AS (
        SELECT due.id, due."nextAttemptAt" AS "dueAt", organizations.org,
          row_number() OVER (PARTITION BY organizations.org ORDER BY due."nextAttemptAt", due.id)::int AS turn
        FROM organizations CROSS JOIN LATERAL (
          SELECT id, "nextAttemptAt" FROM outbox_email
          WHERE "organizationId" = organizations.org AND status = 'PENDING' AND "nextAttemptAt" <= ${now}
          ORDER BY "nextAttemptAt", id
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED) AS due
        UNION ALL
        SELECT id, "nextAttemptAt", 0, row_number() OVER (ORDER BY "nextAttemptAt", id)::int FROM unattached
      ), chosen AS (
        SELECT * FROM turns ORDER BY turn, org <= ${after}, org LIMIT ${limit}
      )
      UPDATE outbox_email SET attempts = outbox_email.attempts + 1, "nextAttemptAt" = ${leaseEnd}
      FROM chosen WHERE outbox_email.id = chosen.id
      RETURNING outbox_email.id, coalesce(outbox_email."organizationId", 0) AS "organizationId", "toAddress", subject, "textBody", "htmlBody", attempts, chosen."dueAt", chosen.turn`;
    const inTurns = claimed.sort((a, b) => a.turn - b.turn || this.rotation(a.organizationId) - this.rotation(b.organizationId));
    if (inTurns.length > 0) this.lastOrganization = inTurns.at(-1)!.organizationId;
    return inTurns;
  }

  /** Organizations after the one served last come first. */
  private rotation(organizationId: number): number {
    return organizationId <= this.lastOrganization ? organizationId + 2 ** 31 : organizationId;
  }

  /**
   * Attempts one e-mail, in a trace of its own (its id and attempt, never its address or content); a
   * failure is recorded at once, an abandoned attempt (stop) not at all.
   */
  private attempt(email: ClaimedEmail): Promise<Outcome> {
    const attributes = { 'email.id': email.id, 'email.attempt': email.attempts };
    return inSpan(
      'email.send',
      attributes,
      async (span) => {
        const started = performance.now();
        try {
          const message = { id: email.id, to: email.toAddress, subject: email.subject, text: email.textBody, html: email.htmlBody };
          const delivery = this.transport.deliver(message);
          const outcome = await settled(delivery, this.options.leaseMs / 2, this.abandon.signal);
          if (outcome === 'sent') this.recordDeliveryTime(performance.now() - started);
          span?.setAttribute('email.outcome', outcome);
          return outcome;
        } catch (error) {
          if (span) tracing?.fail(span, 'EmailDeliveryFailed');
          this.recordDeliveryTime(performance.now() - started);
          await this.recordFailure(email, error);
          return 'failed';
        }
      },
      { root: true },
    );
  }

  private recordDeliveryTime(ms: number): void {
    this.averageDeliveryMs = 0.8 * this.averageDeliveryMs + 0.2 * Math.max(ms, 0.1);
  }

  /**
   * One statement for the batch; each row only while this worker's claim stands (the attempt count is
   * the claim's). The mail server has taken these: a lost connection is retried (bounded, well inside
   * the lease), since once the lease ends another worker sends them again (at least once: each copy
   * carries the same Message-ID, transport.ts).
   */
  private async markSent(emails: ClaimedEmail[]): Promise<void> {
    if (emails.length === 0) return;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.markSentOnce(emails);
      } catch (error) {
        if (attempt >= MARK_SENT_ATTEMPTS || classifyDatabaseError(error) === null || this.abandon.signal.aborted) throw error;
        await sleep(MARK_SENT_RETRY_MS * attempt);
      }
    }
  }

  private async markSentOnce(emails: ClaimedEmail[]): Promise<void> {
    await this.prisma.$executeRaw`
      UPDATE outbox_email SET status = 'SENT', "sentAt" = ${new Date()}::timestamp(3), "lastError" = NULL
      FROM unnest(${emails.map((e) => e.id)}::int[], ${emails.map((e) => e.attempts)}::int[]) AS sent(id, attempts)
      WHERE outbox_email.id = sent.id AND outbox_email.attempts = sent.attempts AND outbox_email.status = 'PENDING'`;
  }

  /** Gives claimed e-mails that were not attempted back, as they were before the claim: due at once for any worker. */
  private async release(emails: ClaimedEmail[]): Promise<void> {
    if (emails.length === 0) return;
    // (timestamp columns hold UTC; a cast to timestamp ignores the ISO string's Z.)
    await this.prisma.$executeRaw`
      UPDATE outbox_email SET attempts = held.attempts - 1, "nextAttemptAt" = held.due
      FROM unnest(${emails.map((e) => e.id)}::int[], ${emails.map((e) => e.attempts)}::int[], ${emails.map((e) => e.dueAt.toISOString())}::timestamp(3)[]) AS held(id, attempts, due)
      WHERE outbox_email.id = held.id AND outbox_email.attempts = held.attempts AND outbox_email.status = 'PENDING'`;
  }

  private async recordFailure(email: ClaimedEmail, error: unknown): Promise<void> {
    const lastError = (error instanceof Error ? error.message : String(error)).slice(0, 2000);
    const givingUp = email.attempts >= this.options.maxAttempts;
    logger.warn({ emailId: email.id, attempt: email.attempts, givingUp, error: lastError }, 'e-mail delivery failed');
    await this.prisma.outboxEmail.update({
      where: { id: email.id },
      data: givingUp
        ? { status: 'FAILED', lastError }
        : { lastError, nextAttemptAt: new Date(Date.now() + this.options.retryDelayMs(email.attempts)) },
    });
  }

  private async timeUntilNextDue(): Promise<number> {
    const next = await this.prisma.outboxEmail.findFirst({
      where: { status: 'PENDING' },
      orderBy: { nextAttemptAt: 'asc' },
      select: { nextAttemptAt: true },
    });
    if (!next) return this.options.pollMs;
    return Math.min(this.options.pollMs, Math.max(MIN_SLEEP_MS, next.nextAttemptAt.getTime() - Date.now()));
  }
}

/**
 * 'sent' once the delivery resolves; 'abandoned' if `abandon` aborts first (the delivery's own
 * outcome is then ignored); rejects with the delivery's error, or when `timeoutMs` passes.
 */
function settled(delivery: Promise<void>, timeoutMs: number, abandon: AbortSignal): Promise<'sent' | 'abandoned'> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(() => reject(new Error('delivery took longer than half the claim lease'))), timeoutMs);
    const onAbandon = () => finish(() => resolve('abandoned'));
    function finish(settle: () => void) {
      clearTimeout(timer);
      abandon.removeEventListener('abort', onAbandon);
      settle();
    }
    abandon.addEventListener('abort', onAbandon);
    if (abandon.aborted) onAbandon();
    delivery.then(
      () => finish(() => resolve('sent')),
      (error: unknown) => finish(() => reject(error)),
    );
  });
}
