// The metrics of one server instance, on a prom-client registry of its own (never prom-client's
// global one: tests run several servers in one process). The doors, the database, the outbox and the
// rate limits record into it; GET /metrics renders it (src/metrics/endpoint.ts).
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import type { RefusalKind } from '../domain/auth/rate-limit.js';

/** Where a request came in (src/metrics/http.ts). */
export type Door = 'graphql' | 'rest' | 'files' | 'pages' | 'other';

/** What became of one delivery attempt of a queued e-mail. */
export type DeliveryOutcome = 'sent' | 'failed';

/** From 1 ms to 10 s: requests and statements alike. */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const STATEMENT_BUCKETS = [0.0005, ...LATENCY_BUCKETS];

/** Values read at scrape time (the outbox's counts, say); a failing one is logged and skipped. */
type ScrapeHook = () => Promise<void>;

/**
 * Default metrics left out: each scrape would walk every open handle of the process, the event loop
 * blocked meanwhile (with 6,000 open sockets, a scrape took 25 ms with them and 8 ms without).
 * Subscriptions and waiting polls have gauges of their own, and process_open_fds counts the rest.
 */
const PER_HANDLE_METRICS = [
  'nodejs_active_handles',
  'nodejs_active_handles_total',
  'nodejs_active_requests',
  'nodejs_active_requests_total',
  'nodejs_active_resources',
  'nodejs_active_resources_total',
];

export class ServerMetrics {
  readonly registry = new Registry();

  readonly httpRequests = new Histogram({
    name: 'teamchat_http_request_duration_seconds',
    help: 'HTTP requests by door (graphql, rest, files, pages, other), route template, method and status, until the response starts',
    labelNames: ['door', 'route', 'method', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly statements = new Histogram({
    name: 'teamchat_db_statement_duration_seconds',
    help: 'SQL statements sent through the connection pool (Prisma and hand-written alike), from sending to the answer',
    buckets: STATEMENT_BUCKETS,
    registers: [this.registry],
  });

  readonly outboxDeliveries = new Counter({
    name: 'teamchat_outbox_deliveries_total',
    help: 'Delivery attempts of queued e-mail by outcome (sent, or failed: retried later or given up)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly rateLimitRefusals = new Counter({
    name: 'teamchat_rate_limit_refusals_total',
    help:
      'Requests refused with 429 by kind: per_user (API_RATE_LIMIT), per_address (API_IP_RATE_LIMIT),' +
      ' failed_login (AUTH_FAILURE_LIMIT lockout) or sign_in (SIGNIN_RATE_LIMIT)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly filesSwept = new Counter({
    name: 'teamchat_file_sweep_removed_total',
    help:
      "Stored upload files this process's file sweep removed: bytes no file row names " +
      "(a crash before an upload's commit, a deletion whose storage step failed)",
    registers: [this.registry],
  });

  private readonly scrapeHooks: ScrapeHook[] = [];

  constructor(private readonly onScrapeError: (error: unknown) => void) {
    // Process memory, CPU, event-loop delay, GC, open file descriptors: prom-client's default metrics,
    // on this registry.
    collectDefaultMetrics({ register: this.registry });
    for (const name of PER_HANDLE_METRICS) this.registry.removeSingleMetric(name);
    // Every label value known in advance starts at 0, so that rate() sees the first increase.
    for (const outcome of ['sent', 'failed'] satisfies DeliveryOutcome[]) this.outboxDeliveries.inc({ outcome }, 0);
    const refusalKinds = ['per_user', 'per_address', 'failed_login', 'sign_in'] satisfies RefusalKind[];
    for (const kind of refusalKinds) this.rateLimitRefusals.inc({ kind }, 0);
  }

  onScrape(hook: ScrapeHook): void {
    this.scrapeHooks.push(hook);
  }

  /** The Prometheus text format, after the values read at scrape time are refreshed. */
  async scrape(): Promise<string> {
    await Promise.all(this.scrapeHooks.map((hook) => hook().catch(this.onScrapeError)));
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
