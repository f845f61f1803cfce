// One measured round: autocannon at a fixed concurrency for a fixed time against one server, the
// server's SQL statements counted around it. Every response must be a 2xx.
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
  /** Runs before each round (e.g. reactivates the emoji the previous round deactivated). */
  reset?: () => Promise<void>;
}

export interface Round {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  sqlPerRequest: number;
}

export async function runRound(scenario: Scenario, server: BenchProcess, options: { connections: number; seconds: number }): Promise<Round> {
  await scenario.reset?.();
  const before = await server.statements();
  const result = await autocannon({
    url: server.url,
    connections: options.connections,
    duration: options.seconds,
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
  const after = await server.statements();
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(`${scenario.name} on ${server.name}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
  }
  const requests = result['2xx'];
  return {
    requestsPerSecond: requests / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests,
    sqlPerRequest: (after - before) / requests,
  };
}

/** The round with the higher throughput. */
export const best = (a: Round | undefined, b: Round) => (a && a.requestsPerSecond >= b.requestsPerSecond ? a : b);
