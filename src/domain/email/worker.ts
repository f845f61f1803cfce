// Delivers queued e-mail after commit. Several server processes may share one PostgreSQL database:
// each claims a batch with one UPDATE over `FOR UPDATE SKIP LOCKED` rows that pushes their
// nextAttemptAt past a lease, so no two workers hold the same e-mail. The lease is short (40 s) and
// every attempt ends before it does, so mail claimed by a process that died is claimed again by any
// worker when the lease ends (each worker sleeps at most until the next lease end). A failed attempt
// is retried with growing delays, and marked FAILED after maxAttempts.
// Delivery is background work beside the requests: a batch waits while requests keep the process
// busy (so a busy server also delivers many e-mails per batch, with one statement of bookkeeping per
// batch), and the worker lets waiting requests run between two e-mails.
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import type { Prisma } from '../../db/database.js';
import { logger } from '../../logging.js';
import { countDeliveries } from '../../metrics/outbox.js';
import type { MailTransport } from './transport.js';

export interface OutboxOptions {
  /** Longest sleep between passes when nothing wakes the worker (ms). */
  pollMs: number;
  batchSize: number;
  maxAttempts: number;
  /** How long a claim lasts; an attempt is abandoned (as failed) when half of it has passed. */
  leaseMs: number;
  /** Delay before attempt `attempt + 1` after attempt `attempt` failed (ms). */
  retryDelayMs(attempt: number): number;
}

export const DEFAULT_OUTBOX_OPTIONS: OutboxOptions = {
  pollMs: 30_000,
  batchSize: 100,
  maxAttempts: 6,
  leaseMs: 40_000,
  retryDelayMs: (attempt) => Math.min(60_000 * 2 ** (attempt - 1), 3_600_000),
};

interface ClaimedEmail {
  id: number;
  toAddress: string;
  subject: string;
  textBody: string;
  htmlBody: string;
  attempts: number;
}

const MIN_SLEEP_MS = 50;
const OBSERVATION_MS = 100;
const BUSY_UTILIZATION = 0.5;
const MAX_DEFERRAL_MS = 10_000;

export class OutboxWorker {
  private readonly options: OutboxOptions;
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<void> | null = null;
  private wakeAgain = false;
  private stopped = false;

  constructor(
    private readonly prisma: Prisma,
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
    this.pass = this.runPass().finally(() => {
      this.pass = null;
      if (this.wakeAgain) {
        this.wakeAgain = false;
        this.wake();
      }
    });
  }

  /** Stops waking up, lets the pass in progress finish, then delivers what is due once more. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.pass;
    await this.deliverDue().catch((error) => logger.error({ err: error }, 'e-mail outbox: final delivery pass failed'));
    this.transport.close();
  }

  /** Claims one batch of due e-mails and attempts each; returns how many were claimed. */
  async deliverDue(now = new Date()): Promise<number> {
    const claimed = await this.claim(now);
    const sent: ClaimedEmail[] = [];
    for (const email of claimed) {
      if (await this.attempt(email)) sent.push(email);
      await nextTurn();
    }
    await this.markSent(sent);
    countDeliveries(this, sent.length, claimed.length - sent.length);
    return claimed.length;
  }

  private async runPass(): Promise<void> {
    let nextPassIn = this.options.pollMs;
    try {
      await this.deliverEverythingDue();
      nextPassIn = await this.timeUntilNextDue();
    } catch (error) {
      logger.error({ err: error }, 'e-mail outbox: delivery pass failed');
    }
    if (!this.stopped) this.timer = setTimeout(() => this.wake(), nextPassIn).unref();
  }

  private async deliverEverythingDue(): Promise<void> {
    while (!this.stopped) {
      await this.untilRequestsQuiet();
      // A batch that was not full took everything due.
      if ((await this.deliverDue()) < this.options.batchSize) return;
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

  private async claim(now: Date): Promise<ClaimedEmail[]> {
    const leaseEnd = new Date(now.getTime() + this.options.leaseMs);
    return this.prisma.$queryRaw<ClaimedEmail[]>`
      UPDATE outbox_email SET attempts = attempts + 1, "nextAttemptAt" = ${leaseEnd}
      WHERE id IN (
        SELECT id FROM outbox_email
        WHERE status = 'PENDING' AND "nextAttemptAt" <= ${now}
        ORDER BY "nextAttemptAt", id
        LIMIT ${this.options.batchSize}
        FOR UPDATE SKIP LOCKED)
      RETURNING id, "toAddress", subject, "textBody", "htmlBody", attempts`;
  }

  /** Whether the e-mail went out (a failure is recorded at once). */
  private async attempt(email: ClaimedEmail): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('delivery took longer than half the claim lease')), this.options.leaseMs / 2);
    });
    try {
      const delivery = this.transport.deliver({ id: email.id, to: email.toAddress, subject: email.subject, text: email.textBody, html: email.htmlBody });
      await Promise.race([delivery, deadline]);
      return true;
    } catch (error) {
      await this.recordFailure(email, error);
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  /** One statement for the batch; each row only while this worker's claim stands (the attempt count is the claim's). */
  private async markSent(emails: ClaimedEmail[]): Promise<void> {
    if (emails.length === 0) return;
    await this.prisma.$executeRaw`
      UPDATE outbox_email SET status = 'SENT', "sentAt" = ${new Date()}::timestamp(3), "lastError" = NULL
      FROM unnest(${emails.map((e) => e.id)}::int[], ${emails.map((e) => e.attempts)}::int[]) AS sent(id, attempts)
      WHERE outbox_email.id = sent.id AND outbox_email.attempts = sent.attempts AND outbox_email.status = 'PENDING'`;
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
