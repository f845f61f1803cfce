// A small closed-loop load generator: N requests, C in flight at a time, latency of each, and the
// process's resident memory sampled while they run.
import { performance } from 'node:perf_hooks';

export interface Scenario {
  name: string;
  requests: number;
  /** Sends request number i and returns its response (the body is read by the runner). */
  send(i: number): Promise<Response>;
  /** The status a successful request answers with. */
  expectedStatus?: number;
  /** Checks a successful body; returns a problem description or undefined. */
  check?(body: string): string | undefined;
  /** Why the endpoint cannot be measured yet (default: it answers 501), or undefined. */
  notAvailable?(status: number, body: string): string | undefined;
}

export type Outcome =
  | { name: string; kind: 'measured'; requests: number; seconds: number; latenciesMs: number[]; peakRssBytes: number }
  | { name: string; kind: 'not-available'; reason: string };

export class UnexpectedResponse extends Error {}

const NOT_IMPLEMENTED = 501;
const notImplemented = (status: number, body: string) => (status === NOT_IMPLEMENTED ? body : undefined);

export async function runScenario(scenario: Scenario, concurrency: number, warmup: number): Promise<Outcome> {
  const first = await scenario.send(-1);
  const firstBody = await first.text();
  const unavailable = (scenario.notAvailable ?? notImplemented)(first.status, firstBody);
  if (unavailable !== undefined) return { name: scenario.name, kind: 'not-available', reason: unavailable };
  verify(scenario, first.status, firstBody);
  for (let i = 0; i < warmup; i++) await sendAndVerify(scenario, -2 - i);

  let peakRssBytes = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRssBytes = Math.max(peakRssBytes, process.memoryUsage().rss)), 20);
  const latenciesMs: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < scenario.requests) {
      const i = next++;
      const started = performance.now();
      await sendAndVerify(scenario, i);
      latenciesMs.push(performance.now() - started);
    }
  };
  const started = performance.now();
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    clearInterval(sampler);
  }
  const seconds = (performance.now() - started) / 1000;
  peakRssBytes = Math.max(peakRssBytes, process.memoryUsage().rss);
  return { name: scenario.name, kind: 'measured', requests: scenario.requests, seconds, latenciesMs, peakRssBytes };
}

async function sendAndVerify(scenario: Scenario, i: number) {
  const response = await scenario.send(i);
  verify(scenario, response.status, await response.text());
}

function verify(scenario: Scenario, status: number, body: string) {
  const problem = status !== (scenario.expectedStatus ?? 200) ? `HTTP ${status}` : scenario.check?.(body);
  if (problem) throw new UnexpectedResponse(`${scenario.name}: ${problem}: ${body.slice(0, 300)}`);
}

/** Nearest-rank percentile. */
export function percentile(sortedMs: number[], p: number): number {
  return sortedMs[Math.max(0, Math.ceil((p / 100) * sortedMs.length) - 1)]!;
}

export function markdownTable(outcomes: Outcome[], concurrency: number): string {
  const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
  const ms = (value: number) => value.toFixed(1);
  const rows = outcomes.map((o) => {
    if (o.kind === 'not-available') return `| ${o.name} | n/a | n/a | n/a | n/a | n/a | n/a |`;
    const sorted = [...o.latenciesMs].sort((a, b) => a - b);
    const rate = (o.requests / o.seconds).toFixed(1);
    return `| ${o.name} | ${o.requests} | ${rate} | ${ms(percentile(sorted, 50))} | ${ms(percentile(sorted, 95))} | ${ms(percentile(sorted, 99))} | ${mib(o.peakRssBytes)} |`;
  });
  return [
    `| Scenario (concurrency ${concurrency}) | Requests | Requests/s | p50 ms | p95 ms | p99 ms | Peak RSS |`,
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows,
  ].join('\n');
}
