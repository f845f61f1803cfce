// The file sweep the server runs itself (uploads.md Decision 7): every FILE_SWEEP_MINUTES, stored
// bytes that no row names and that are older than SWEEP_GRACE_MS are removed. One process of the
// fleet sweeps at a time: each turn tries a session advisory lock, and a process that finds it held
// skips its turn. The first turn comes one interval after the start.
import { FILE_SWEEP_LOCK_KEY, ifAdvisoryLockFree, type DatabaseClient } from '../../db/database.js';
import type { FileStorage } from '../../storage/storage.js';
import { SWEEP_GRACE_MS, sweepOrphanFiles, type SweepResult } from './sweep-files.js';

export interface FileSweeperOptions {
  intervalMs: number;
  /** PostgreSQL itself (the database's direct URL): the advisory lock's session. */
  directUrl: string;
  /** A turn failed (storage or database away); the next turn comes as usual. */
  sweepFailed(error: unknown): void;
}

export class FileSweeper {
  /** Told how many stored objects each sweep of this process removed (the server's metrics). */
  onRemoved: (count: number) => void = () => {};
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly stopping = new AbortController();

  constructor(
    private readonly app: { prisma: DatabaseClient; storage: FileStorage },
    private readonly options: FileSweeperOptions,
  ) {}

  start(): void {
    this.schedule();
  }

  /** Whether a turn is waiting for its time. */
  get scheduled(): boolean {
    return this.timer !== undefined;
  }

  /**
   * One sweep now, unless another process is sweeping: what it removed, or null when another
   * process held the turn. `now` stands for the time of the sweep (the grace counts back from it).
   */
  sweepNow(now = new Date()): Promise<SweepResult | null> {
    const sweep = ifAdvisoryLockFree(this.options.directUrl, FILE_SWEEP_LOCK_KEY, () =>
      sweepOrphanFiles(this.app, { graceMs: SWEEP_GRACE_MS, now, signal: this.stopping.signal }),
    ).then((outcome) => {
      if (!outcome.ran) return null;
      if (outcome.value.removed.length > 0) this.onRemoved(outcome.value.removed.length);
      return outcome.value;
    });
    this.inFlight.add(sweep);
    void sweep.finally(() => this.inFlight.delete(sweep)).catch(() => {});
    return sweep;
  }

  /** No more turns; a sweep in progress stops before its next batch, and is waited for. */
  async stop(): Promise<void> {
    this.stopping.abort();
    clearTimeout(this.timer);
    this.timer = undefined;
    await Promise.allSettled([...this.inFlight]);
  }

  private schedule(): void {
    if (this.stopping.signal.aborted) return;
    this.timer = setTimeout(() => void this.turn(), this.options.intervalMs).unref();
  }

  private async turn(): Promise<void> {
    this.timer = undefined;
    try {
      await this.sweepNow();
    } catch (error) {
      this.options.sweepFailed(error);
    }
    this.schedule();
  }
}
