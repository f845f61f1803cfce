// The soak's history (as Jepsen and etcd's robustness tests keep one): every request the workload
// sent and what became of it. A change answered with success was acknowledged ("ok"); one answered
// with a client error was refused ("refused"); one whose answer never came, or came as 503, has an
// unknown outcome ("unknown"): it may or may not have happened (checks.ts judges whether a fault was
// there to cause it). Beside the requests, the faults the soak injected, each with its span and the
// process it struck (or every process).

export type Outcome = 'ok' | 'refused' | 'unknown';

export type FaultKind = 'sigkill' | 'sigterm-burst' | 'terminate-backends' | 'cut-database' | 'smtp-refuses';

/** One injected fault; times are Date.now() values. */
export interface FaultSpan {
  kind: FaultKind;
  /** The server process it struck (a slot's name), or null: every process (the database, the mail server). */
  target: string | null;
  start: number;
  /** A killed or stopped process: when it had exited (its restart came at `end`). */
  exited?: number;
  /** When it was over: the process serving again, the path restored, the statement done. */
  end: number;
  detail: string;
}

export interface Operation {
  id: number;
  kind: string;
  server: string;
  /** What the checks need to find the change in the database (addresses, names, ids). */
  subject: Record<string, unknown>;
  status: number | null;
  outcome: Outcome;
  /** When it was sent and when its answer (or failure) came (Date.now()). */
  sentAt: number;
  answeredAt?: number;
  /** The error's message when there was no answer; the body's start on a failure. */
  detail?: string;
  body?: unknown;
}

/** What the checks read of a run: its requests and its faults (plain data). */
export interface RecordedHistory {
  /** When the workload began (Date.now()): the report counts time from it. */
  startedAt: number;
  operations: readonly Operation[];
  faults: readonly FaultSpan[];
}

export class History implements RecordedHistory {
  readonly operations: Operation[] = [];
  readonly faults: FaultSpan[] = [];
  startedAt = Date.now();
  /** Broken invariants seen while running (a 500, a read refused); the checks add theirs. */
  readonly violations: string[] = [];
  private next = 0;
  /** Requests sent and not yet answered (or failed), with when each was sent. */
  readonly inFlight = new Map<Operation, number>();

  violation(reason: string) {
    this.violations.push(reason);
    console.error(`VIOLATION ${reason}`);
  }

  /**
   * Sends one request and records it; the parsed JSON body (or text) when answered. 5xx other than
   * 503 is a violation whatever the request; so is a client error on a read (`change: false`).
   */
  async send(
    kind: string,
    server: { name: string; url: string },
    path: string,
    init: RequestInit & { change: boolean; subject?: Record<string, unknown>; timeoutMs?: number },
  ): Promise<Operation> {
    const operation: Operation = {
      id: this.next++,
      kind,
      server: server.name,
      subject: init.subject ?? {},
      status: null,
      outcome: 'unknown',
      sentAt: Date.now(),
    };
    this.operations.push(operation);
    this.inFlight.set(operation, Date.now());
    try {
      const response = await fetch(server.url + path, { ...init, signal: AbortSignal.timeout(init.timeoutMs ?? 30_000) });
      const text = await response.text();
      operation.status = response.status;
      operation.body = parsed(text);
      if (response.ok) operation.outcome = 'ok';
      else if (response.status >= 400 && response.status < 500) operation.outcome = 'refused';
      if (!response.ok) operation.detail = text.slice(0, 300);
    } catch (error) {
      operation.detail = `no answer: ${(error as Error).message}${(error as { cause?: Error }).cause ? ` (${(error as { cause: Error }).cause.message})` : ''}`;
    } finally {
      operation.answeredAt = Date.now();
      this.inFlight.delete(operation);
    }
    if (operation.status !== null && operation.status >= 500 && operation.status !== 503) {
      this.violation(`${kind} on ${server.name} answered ${operation.status}: ${operation.detail}`);
    }
    if (!init.change && operation.outcome === 'refused')
      this.violation(`${kind} (a read) on ${server.name} was refused: ${operation.status} ${operation.detail}`);
    return operation;
  }

  /** One line on the run so far: requests by status, and the oldest still waiting. */
  progress(): string {
    const statuses = new Map<string, number>();
    for (const op of this.operations)
      statuses.set(
        String(op.status ?? (this.inFlight.has(op) ? 'waiting' : 'no answer')),
        (statuses.get(String(op.status ?? (this.inFlight.has(op) ? 'waiting' : 'no answer'))) ?? 0) + 1,
      );
    const oldest = [...this.inFlight].sort((a, b) => a[1] - b[1])[0];
    return `${this.operations.length} requests (${[...statuses].map(([status, n]) => `${status}: ${n}`).join(', ')})${oldest ? `; oldest waiting: ${oldest[0].kind} on ${oldest[0].server} for ${((Date.now() - oldest[1]) / 1000).toFixed(0)} s` : ''}`;
  }

  /** Operations by kind and outcome, for the report. */
  counts(): Record<string, Record<Outcome | 'total', number>> {
    const counts: Record<string, Record<Outcome | 'total', number>> = {};
    for (const op of this.operations) {
      const entry = (counts[op.kind] ??= { total: 0, ok: 0, refused: 0, unknown: 0 });
      entry.total++;
      entry[op.outcome]++;
    }
    return counts;
  }
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
