// Progress of long CLI work, on standard error: at a terminal, a bar per stage redrawn in place (count,
// rate, time left); elsewhere (a log file, a pipe), plain lines: one when a stage ends and one every
// few seconds while it runs. `quiet` work (a sweep, a delivery) shows nothing unless it lasts.
import { performance } from 'node:perf_hooks';

export interface ProgressOutput {
  write(text: string): unknown;
  isTTY?: boolean;
}

export interface ProgressOptions {
  /** Milliseconds since some origin (tests give their own clock). */
  now?: () => number;
  /** Plain output: a line every this many milliseconds while a stage runs. */
  plainEveryMs?: number;
  /** Show nothing for a stage that ends within its first plainEveryMs (terminal: within a second). */
  quiet?: boolean;
}

/** Where a stage stands: `total` undefined when unknown (no bar, no time left). */
export interface StageState {
  name: string;
  unit: string;
  done: number;
  total?: number;
  /** Extra counts shown after the main one (`3 removed`). */
  detail?: string;
  elapsedMs: number;
}

const REDRAW_MS = 100;
const TERMINAL_QUIET_MS = 1_000;
const BAR_WIDTH = 24;
const count = (n: number) => n.toLocaleString('en-US');

export const formatDuration = (ms: number) =>
  ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;

/** `4,000/s, about 12 s left`: the rate, and the time left when the total is known. */
function pace(state: StageState): string {
  const perSecond = state.elapsedMs > 0 ? (state.done * 1000) / state.elapsedMs : 0;
  const rate = `${count(Math.round(perSecond))}/s`;
  if (state.total === undefined || perSecond === 0 || state.done >= state.total) return rate;
  return `${rate}, about ${formatDuration(((state.total - state.done) / perSecond) * 1000)} left`;
}

const withDetail = (state: StageState) => `${state.unit}${state.detail ? `, ${state.detail}` : ''}`;
const ofTotal = (state: StageState) => (state.total === undefined ? '' : `/${count(state.total)}`);
const amount = (state: StageState) => `${count(state.done)}${ofTotal(state)} ${withDetail(state)}`;

/** The terminal's line: `messages [##########--------------]  12,000/50,000 rows  4,000/s, about 10 s left`. */
export function renderBar(state: StageState): string {
  const filled = state.total ? Math.min(BAR_WIDTH, Math.floor((state.done / state.total) * BAR_WIDTH)) : 0;
  const bar = state.total === undefined ? '' : ` [${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}]`;
  return `${state.name}${bar}  ${amount(state)}  ${pace(state)}`;
}

/** A plain line while a stage runs: `messages: 12,000/50,000 rows, 4,000/s, about 10 s left`. */
export const renderRunning = (state: StageState) => `${state.name}: ${amount(state)}, ${pace(state)}`;

/** A plain line when a stage ends: `messages: 50,000 rows in 12.5 s`. */
export const renderDone = (state: StageState) =>
  `${state.name}: ${count(state.done)} ${withDetail(state)} in ${formatDuration(state.elapsedMs)}`;

export class Progress {
  private readonly now: () => number;
  private readonly plainEveryMs: number;
  private readonly quiet: boolean;
  private readonly terminal: boolean;
  private stage: { name: string; unit: string; startedAt: number; state: StageState; lastShown: number; shown: boolean } | undefined;

  constructor(
    private readonly out: ProgressOutput = process.stderr,
    options: ProgressOptions = {},
  ) {
    this.now = options.now ?? (() => performance.now());
    this.plainEveryMs = options.plainEveryMs ?? 5_000;
    this.quiet = options.quiet ?? false;
    this.terminal = out.isTTY === true;
  }

  /** Where stage `name` stands; a new name ends the stage before it. */
  update(name: string, done: number, total?: number, { unit = 'rows', detail }: { unit?: string; detail?: string } = {}): void {
    const now = this.now();
    if (this.stage?.name !== name) {
      this.end();
      this.stage = { name, unit, startedAt: now, state: { name, unit, done: 0, elapsedMs: 0 }, lastShown: now, shown: false };
    }
    const stage = this.stage;
    stage.state = { name, unit, done, total, detail, elapsedMs: now - stage.startedAt };
    if (this.terminal) {
      if (this.quiet && stage.state.elapsedMs < TERMINAL_QUIET_MS) return;
      if (stage.shown && now - stage.lastShown < REDRAW_MS) return;
      this.out.write(`\r\x1b[2K${renderBar(stage.state)}`);
    } else {
      if (now - stage.lastShown < this.plainEveryMs) return;
      this.out.write(`${renderRunning(stage.state)}\n`);
    }
    stage.lastShown = now;
    stage.shown = true;
  }

  /** Ends the stage in progress with its final count (`quiet`: only if it was shown). */
  end(): void {
    const stage = this.stage;
    this.stage = undefined;
    if (!stage || (this.quiet && !stage.shown)) return;
    const final = { ...stage.state, elapsedMs: this.now() - stage.startedAt };
    this.out.write(this.terminal ? `\r\x1b[2K${renderBar(final)}  in ${formatDuration(final.elapsedMs)}\n` : `${renderDone(final)}\n`);
  }

  /** The work failed: a bar drawn at a terminal keeps its line, and what follows (the error) starts on a line of its own. */
  abandon(): void {
    if (this.terminal && this.stage?.shown) this.out.write('\n');
    this.stage = undefined;
  }

  /** A line of its own (the summary), after the stage in progress ends. */
  line(text: string): void {
    this.end();
    this.out.write(`${text}\n`);
  }
}
