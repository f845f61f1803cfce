// One measured round: autocannon at a fixed concurrency for a fixed time against one server, the
// server's SQL statements counted around it. Every response must be a 2xx.
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import type { BenchProcess } from './processes.js';

export interface Scenario {
  name: string;
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** A fresh path or body per request (emoji names, invited addresses). */
  vary?: (request: { path: string; body?: string }) => { path: string; body?: string };
  /** Seconds per round when longer than the run's (requests that take seconds each). */
  minimumSeconds?: number;
  /** Another user's request, sent every 50 ms during the round: its worst latency shows who waits behind this load. */
  probe?: { path: string; headers: Record<string, string> };
  /** Runs before each round (e.g. reactivates the emoji the previous round deactivated). */
  reset?: () => Promise<void>;
}

export interface Round {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  sqlPerRequest: number;
  /** Non-2xx answers, connection errors and timeouts (not counted in requests): reported, never hidden. */
  failed: number;
  /** Worst latency of the probe request during the round, when the scenario has one. */
  probeMaxMs?: number;
}

/** Sends the probe request every 50 ms until stopped; resolves to its worst latency. */
function startProbe(url: string, probe: NonNullable<Scenario['probe']>) {
  let running = true;
  const done = (async () => {
    let worst = 0;
    while (running) {
      const started = performance.now();
      const response = await fetch(url + probe.path, { headers: probe.headers });
      await response.arrayBuffer();
      if (!response.ok) throw new Error(`probe ${probe.path}: HTTP ${response.status}`);
      worst = Math.max(worst, performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return worst;
  })();
  return () => ((running = false), done);
}

export async function runRound(scenario: Scenario, server: BenchProcess, options: { connections: number; seconds: number }): Promise<Round> {
  await scenario.reset?.();
  const before = await server.statements();
  const stopProbe = scenario.probe && startProbe(server.url, scenario.probe);
  const result = await autocannon({
    url: server.url,
    connections: options.connections,
    duration: Math.max(options.seconds, scenario.minimumSeconds ?? 0),
    requests: [
      {
        method: scenario.method,
        path: scenario.path,
        headers: scenario.headers,
        body: scenario.body,
        ...(scenario.vary && {
          setupRequest: (request) => ({ ...request, ...scenario.vary!({ path: request.path!, body: request.body as string | undefined }) }),
        }),
      },
    ],
  });
  const probeMaxMs = await stopProbe?.();
  const after = await server.statements();
  const failed = result.non2xx + result.errors + result.timeouts;
  if (failed > 0) {
    const statuses = Object.entries(result.statusCodeStats ?? {}).filter(([code]) => !code.startsWith('2'));
    console.error(`${scenario.name} on ${server.name}: ${failed} failed (statuses ${JSON.stringify(statuses)}, ${result.errors} errors, ${result.timeouts} timeouts)`);
  }
  const requests = result['2xx'];
  return {
    requestsPerSecond: requests / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests,
    sqlPerRequest: (after - before) / requests,
    failed,
    probeMaxMs,
  };
}

/** The round with the higher throughput. */
export const best = (a: Round | undefined, b: Round) => (a && a.requestsPerSecond >= b.requestsPerSecond ? a : b);
