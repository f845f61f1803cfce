// One measured round: autocannon at a fixed concurrency for a fixed time against one server, the
// server's SQL statements counted around it. Every answer is compared with the one floor and
// server agreed on before the load; the rows the round wrote are summarized for comparison.
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import type pg from 'pg';
import { processIds, procStat, type BenchProcess } from './processes.js';
import { violation } from './violations.js';

export interface Request {
  path: string;
  body?: string;
  headers: Record<string, string>;
}

/** An answer: the status and the body as text. */
export interface Answer {
  status: number;
  body: string;
}

/**
 * The rows a round's requests wrote, normalized so that equivalent requests give equal shapes
 * (compared between floor and server), how many requests wrote them, and what is wrong in them
 * whatever the other side wrote.
 */
export interface WrittenRows {
  requests: number;
  shapes: string[];
  problems: string[];
}

export interface Scenario {
  name: string;
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** A fresh path, body or caller per request (emoji names, invited addresses, many users). */
  vary?: (request: Request) => Request;
  /** Call before a round; the function it returns summarizes what the round wrote. */
  recordWrites?: () => Promise<() => Promise<WrittenRows>>;
  /** Run against a pair started with the default rate limits (API_RATE_LIMIT unset) instead of without limits. */
  rateLimited?: boolean;
  /** Seconds per round when longer than the run's (requests that take seconds each). */
  minimumSeconds?: number;
  /** Another user's request, sent every 50 ms during the round: its worst latency shows who waits behind this load. */
  probe?: { path: string; headers: Record<string, string> };
  /** A list's one statement as the server sends it: run alone beside each round pair, its rate is the database-bound limit. */
  databaseStatement?: { text: string; values: unknown[] };
  /** Runs before each round (e.g. reactivates the emoji the previous round deactivated). */
  reset?: () => Promise<void>;
}

export interface Round {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  sqlPerRequest: number;
  /**
   * The process's CPU time (user and system, from /proc) per answered request over the round: less
   * sensitive than the rates to other work on a shared machine.
   */
  cpuMsPerRequest: number;
  /** PostgreSQL's CPU time (the cluster's processes, postgresCpuSince) per answered request over the round. */
  postgresCpuMsPerRequest: number;
  /** Non-2xx answers, connection errors and timeouts (not counted in requests): reported, never hidden. */
  failed: number;
  /** Worst latency of the probe request during the round, when the scenario has one. */
  probeMaxMs?: number;
  /** Answers that differed from the expected one (status or body). */
  mismatches: number;
  /** The first few of them, where they differ. */
  mismatchSamples: string[];
  writes?: WrittenRows;
}

/** The request as the scenario sends it, varied when it varies. */
export const firstRequest = (scenario: Scenario): Request =>
  scenario.vary?.({ path: scenario.path, body: scenario.body, headers: scenario.headers }) ?? scenario;

const MISMATCH_SAMPLES = 3;

/** CPU time (user + system) a process has used so far, in milliseconds; 0 once it has gone. */
export const cpuMsOf = (pid: number): number => procStat(pid)?.cpuMs ?? 0;

/**
 * CPU time each PostgreSQL process has used so far, in milliseconds: the processes of one cluster (its
 * postmaster and the postmaster's children) when `postmaster` is given, else every postgres process of
 * the machine (other clusters' too, such as the embedded databases of tests run beside the bench).
 */
function postgresCpuByProcess(postmaster?: number): Map<string, number> {
  const used = new Map<string, number>();
  for (const pid of processIds()) {
    const stat = procStat(pid);
    const inCluster = postmaster === undefined || Number(pid) === postmaster || stat?.parent === postmaster;
    if (stat?.command === 'postgres' && inCluster) used.set(pid, stat.cpuMs);
  }
  return used;
}

/**
 * The postmaster of the cluster `db` is connected to: the parent of its backend. Undefined when the
 * backend is not a process of this machine (a remote server), whose CPU the bench cannot read.
 */
export async function postmasterOf(db: pg.Pool | pg.Client): Promise<number | undefined> {
  const { rows } = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const backend = procStat(rows[0]!.pid);
  return backend?.command === 'postgres' ? backend.parent : undefined;
}

/**
 * A reader of the CPU time PostgreSQL's processes have used since this call, in milliseconds. Summed
 * process by process: a backend that ends meanwhile (a pool closing an idle connection) would take
 * all its CPU time out of a plain total, which made figures negative; one that starts counts whole.
 */
export function postgresCpuSince(postmaster?: number): () => number {
  const before = postgresCpuByProcess(postmaster);
  return () => {
    let ms = 0;
    for (const [pid, used] of postgresCpuByProcess(postmaster)) ms += used - (before.get(pid) ?? 0);
    return ms;
  };
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

/** Where two texts part, with some context around it in each. */
function difference(expected: string, actual: string): string {
  let at = 0;
  while (at < expected.length && expected[at] === actual[at]) at++;
  const around = (text: string) => JSON.stringify(text.slice(Math.max(0, at - 40), at + 60));
  return `at character ${at}: ${around(actual)} instead of ${around(expected)}`;
}

/**
 * Autocannon collects every body as text anyway, so each answer is compared at no cost to the
 * servers. (It decodes each chunk separately: the benchmark's bodies are ASCII.)
 */
function answerChecker(expected: Answer) {
  const samples: string[] = [];
  let count = 0;
  const onResponse = (status: number, body: string) => {
    if (status === expected.status && body === expected.body) return;
    count++;
    if (samples.length < MISMATCH_SAMPLES)
      samples.push(status === expected.status ? difference(expected.body, body) : `${status} ${body.slice(0, 200)}`);
  };
  return { onResponse, result: () => ({ mismatches: count, mismatchSamples: samples }) };
}

export async function runRound(
  scenario: Scenario,
  server: BenchProcess,
  expected: Answer,
  options: { connections: number; seconds: number; postmaster?: number },
): Promise<Round> {
  await scenario.reset?.();
  const writes = await scenario.recordWrites?.();
  const checker = answerChecker(expected);
  const before = await server.statements();
  const cpuBefore = cpuMsOf(server.child.pid!);
  const postgresCpu = postgresCpuSince(options.postmaster);
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
        onResponse: checker.onResponse,
        ...(scenario.vary && {
          setupRequest: (request) => ({
            ...request,
            ...scenario.vary!({ path: request.path!, body: request.body as string | undefined, headers: scenario.headers }),
          }),
        }),
      },
    ],
  });
  const probeMaxMs = await stopProbe?.();
  const cpuMs = cpuMsOf(server.child.pid!) - cpuBefore;
  const postgresCpuMs = postgresCpu();
  const after = await server.statements();
  const failed = result.non2xx + result.errors + result.timeouts;
  if (failed > 0) {
    const statuses = Object.entries(result.statusCodeStats ?? {}).filter(([code]) => !code.startsWith('2'));
    console.error(
      `${scenario.name} on ${server.name}: ${failed} failed (statuses ${JSON.stringify(statuses)}, ${result.errors} errors, ${result.timeouts} timeouts)`,
    );
  }
  // A status that differs from the agreed answer is a mismatch (compare.ts); these are broken whatever was agreed.
  const serverErrors = Object.entries(result.statusCodeStats ?? {}).filter(([code]) => code.startsWith('5'));
  if (serverErrors.length > 0)
    violation(
      scenario.name,
      `${server.name} answered ${serverErrors.map(([code, { count }]) => `${count ?? 'some'} x ${code}`).join(', ')}`,
    );
  if (result.errors + result.timeouts > 0)
    violation(scenario.name, `${server.name}: ${result.errors} connection errors and ${result.timeouts} timeouts of the load's clients`);
  const requests = result['2xx'];
  return {
    requestsPerSecond: requests / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    requests,
    sqlPerRequest: (after - before) / requests,
    cpuMsPerRequest: cpuMs / requests,
    postgresCpuMsPerRequest: postgresCpuMs / requests,
    failed,
    probeMaxMs,
    ...checker.result(),
    writes: await writes?.(),
  };
}

/** The round in the middle by throughput (of an even number, the lower of the two middle ones). */
export function median(rounds: Round[]): Round {
  const sorted = [...rounds].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}
