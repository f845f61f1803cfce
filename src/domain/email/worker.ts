// Delivers queued e-mail after commit. Several server processes may share one PostgreSQL database:
// each claims a batch with one UPDATE over `FOR UPDATE SKIP LOCKED` rows that pushes their
// nextAttemptAt past a lease, so no two workers hold the same e-mail. The lease is short (40 s) and
// every attempt ends before it does, so mail claimed by a process that died is claimed again by any
// worker when the lease ends (each worker sleeps at most until the next lease end). A failed attempt
// is retried with growing delays, and marked FAILED after maxAttempts.
// Delivery is background work beside the requests: passes are at least PASS_GAP_MS apart (so a busy
// server delivers many e-mails per pass, with one statement of bookkeeping per batch), and the worker
// lets waiting requests run between two e-mails.
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Prisma } from '../../db/database.js';
import { logger } from '../../logging.js';
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
const PASS_GAP_MS = 100;

export class OutboxWorker {
  private readonly options: OutboxOptions;
  private timer: NodeJS.Timeout | undefined;
  private timerDue = Infinity;
  private lastPassEnd = -Infinity;
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

  /** Runs a pass soon: now, or PASS_GAP_MS after the previous one (or right after the one in progress). */
  wake(): void {
    if (this.stopped) return;
    if (this.pass) {
      this.wakeAgain = true;
      return;
    }
    const wait = this.lastPassEnd + PASS_GAP_MS - Date.now();
    if (wait > 0) return this.planPass(wait);
    this.planPass(Infinity);
    this.pass = this.runPass().finally(() => {
      this.pass = null;
      this.lastPassEnd = Date.now();
      if (this.wakeAgain) {
        this.wakeAgain = false;
        this.wake();
      }
    });
  }

  /** Sets the next pass at most `ms` from now (Infinity: no pass planned). */
  private planPass(ms: number): void {
    const due = Date.now() + ms;
    if (ms !== Infinity && due >= this.timerDue) return;
    clearTimeout(this.timer);
    this.timerDue = due;
    if (ms !== Infinity) this.timer = setTimeout(() => ((this.timerDue = Infinity), this.wake()), ms).unref();
  }

  /** Stops waking up, lets the pass in progress finish, then delivers what is due once more. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.planPass(Infinity);
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
    return claimed.length;
  }

  private async runPass(): Promise<void> {
    let sleep = this.options.pollMs;
    try {
      // A batch that was not full took everything due.
      while (!this.stopped && (await this.deliverDue()) === this.options.batchSize);
      sleep = await this.timeUntilNextDue();
    } catch (error) {
      logger.error({ err: error }, 'e-mail outbox: delivery pass failed');
    }
    if (!this.stopped) this.planPass(sleep);
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
