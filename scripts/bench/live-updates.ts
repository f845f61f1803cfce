// Live updates under load, on the benchmark's main organization, with two server
// processes of their own (A and B, started as `npm start` starts them) on the bench's database and
// the clients in a process of their own (live-clients.ts):
// - memory: B's RSS idle, then with N SSE subscriptions, N WebSocket subscriptions and N waiting long
//   polls open (target: at most +120 MiB for 1,000 of each); the throughput of emoji deactivations
//   on B with those connections idle, and without them;
// - a closed SSE subscription leaves the server's count (teamchat_event_streams) at once: within 1 s
//   of its client's close (the clients' own time to close them all is shown beside it);
// - fan-out: emoji deactivations through A, received by every customEmojiChanged subscriber on B
//   (target: the last of 1,000 within 500 ms, p99), and B's SQL statements per event with 10 and
//   with 1,000 subscribers (must not grow);
// - the reader's trade: commits per second of the deactivation statement at 8 clients, as it is and
//   with a pg_notify in it (one client LISTENing).
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { Round } from './load.js';
import { emojiName } from './organization.js';
import { realServerCommand, rssOf, sampleRss, startProcess, type BenchProcess } from './processes.js';
import type { ClientKind, Command, Receipts } from './live-clients.js';
import { now } from './live-clients.js';
import { expectHolds, violation } from './violations.js';

export const LIVE_SCENARIO =
  'live updates: subscriptions and long polls open, fan-out across processes, statements per event, poll vs NOTIFY';

export interface LiveSizes {
  /** SSE subscriptions, WebSocket subscriptions and long polls each, for the memory figure. */
  connections: number;
  /** customEmojiChanged subscribers on B for the fan-out (half SSE, half WebSocket), and the few to compare statements with. */
  subscribers: number;
  few: number;
  events: number;
  notifySeconds: number;
  notifyRounds: number;
}

export const LIVE_FULL: LiveSizes = { connections: 1_000, subscribers: 1_000, few: 10, events: 20, notifySeconds: 5, notifyRounds: 3 };
export const LIVE_QUICK: LiveSizes = { connections: 200, subscribers: 200, few: 10, events: 10, notifySeconds: 2, notifyRounds: 1 };

const TARGETS = { addedMiB: 120, freedMs: 1_000, fanOutP99Ms: 500 };
const METRICS_TOKEN = 'bench-live-metrics';
const IDLE_SSE = 'subscription { attachmentsChanged { cursor } }';
const IDLE_WS = 'subscription { invitationsChanged { cursor } }';
/** Only fields that need no query per subscriber. */
const EMOJI_SUBSCRIPTION = 'subscription { customEmojiChanged { cursor change emoji { name } } }';

export interface LiveOrganization {
  id: number;
  /** Every user's Authorization header; the first is an administrator's. */
  authorizations: string[];
  emoji: number;
}

interface FanOut {
  subscribers: number;
  /** From A's answer to the receipt at the last subscriber, per event (ms). */
  latenciesMs: number[];
  /** Subscription requests B never answered (counted by openOnB); the others are the ones measured. */
  notOpened: number;
  /** Events not received by every subscriber within 10 s. */
  incomplete: number;
  statementsPerEvent: number;
  /** B's statements per second meanwhile without events (the reader's polling), subtracted above. */
  idleStatementsPerSecond: number;
}

export interface LiveResult {
  sizes: LiveSizes;
  users: number;
  rss: { idle: number; withSse: number; withWs: number; open: number; peak: number; afterSseClosed: number };
  /** From the last SSE client's close to the count of open streams dropping to the WebSocket ones. */
  sseFreedMs: number | null;
  /** The clients' own time to close their SSE subscriptions, the first close to the last. */
  sseClosingMs: number;
  throughput: { withIdle: Round; without: Round };
  fanOut: FanOut[];
  notify: { pollCommitsPerSecond: number[]; notifyCommitsPerSecond: number[]; notificationsReceived: number };
  clientFailures: number;
  clientFailureSamples: string[];
}

/** The clients' process, driven over IPC. */
function startClients() {
  const child: ChildProcess = fork(join(import.meta.dirname, 'live-clients.ts'), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let next = 0;
  const pending = new Map<number, (reply: { result?: unknown; error?: string; failures: number; failureSamples: string[] }) => void>();
  let failures = { count: 0, samples: [] as string[] };
  child.on('message', (reply: { id: number; result?: unknown; error?: string; failures: number; failureSamples: string[] }) => {
    failures = { count: reply.failures, samples: reply.failureSamples };
    pending.get(reply.id)?.(reply);
    pending.delete(reply.id);
  });
  const send = <T>(command: Command) =>
    new Promise<T>((resolve, reject) => {
      const id = next++;
      pending.set(id, (reply) => (reply.error ? reject(new Error(reply.error)) : resolve(reply.result as T)));
      child.send({ id, command });
    });
  return {
    open: (
      group: string,
      kind: ClientKind,
      url: string,
      authorizations: string[],
      count: number,
      extra: { query?: string; eventTypes?: string[] },
    ) => send<void>({ op: 'open', group, kind, url, authorizations, count, ...extra }),
    /** Resolves with the time (`now()`, the clock every process shares) the group's last client closed. */
    close: (group: string) => send<number>({ op: 'close', group }),
    receipts: (name: string, count: number, timeoutMs: number) => send<Receipts | undefined>({ op: 'receipts', name, count, timeoutMs }),
    failures: () => failures,
    stop: () =>
      new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : (child.once('exit', () => resolve()), child.disconnect()))),
  };
}

type Clients = ReturnType<typeof startClients>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** B's counts of open subscriptions and waiting long polls (its /metrics gauges). */
async function openCounts(server: BenchProcess, attempts = 3): Promise<{ streams: number; polls: number }> {
  let text: string;
  try {
    text = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  } catch (error) {
    // A kept-alive connection the server closed as it was reused (ECONNRESET): once more.
    if (attempts <= 1) throw error;
    return openCounts(server, attempts - 1);
  }
  const gauge = (name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
  return { streams: gauge('teamchat_event_streams'), polls: gauge('teamchat_event_polls_waiting') };
}

/**
 * Waits until B's counts are these (polls left out: not looked at); the time it took (ms), or null
 * when they were not reached within `ms`.
 */
async function countsReach(
  server: BenchProcess,
  expected: { streams: number; polls?: number },
  ms: number,
  everyMs = 25,
): Promise<number | null> {
  const started = performance.now();
  for (let last = await openCounts(server); ; last = await openCounts(server)) {
    if (last.streams === expected.streams && (expected.polls === undefined || last.polls === expected.polls))
      return performance.now() - started;
    if (performance.now() - started > ms) {
      console.error(`live: B holds ${JSON.stringify(last)}, expected ${JSON.stringify(expected)}`);
      return null;
    }
    await sleep(everyMs);
  }
}

const RAMP = 100;

/**
 * Opens `count` clients of one kind on B, RAMP at a time, each batch once B counts the previous
 * (thousands of handshakes at once overflow the listening socket's backlog, not what is measured).
 */
/**
 * A subscription request that B never answered within the wait, or a client's failure, is a
 * violation (the run fails); the run goes on without the missing ones to report the rest.
 */
async function openOnB(
  clients: Clients,
  b: BenchProcess,
  group: string,
  kind: ClientKind,
  count: number,
  extra: { query?: string; eventTypes?: string[] },
  authorizations: string[],
): Promise<number> {
  const start = await openCounts(b);
  let missing = 0;
  for (let opened = 0; opened < count; ) {
    const batch = Math.min(RAMP, count - opened);
    // Each batch starts at the next user, so that the clients spread over all of them.
    const users = authorizations.map((_, i) => authorizations[(opened + i) % authorizations.length]!);
    await clients.open(group, kind, b.url, users, batch, extra);
    opened += batch;
    const held = (counts: { streams: number; polls: number }) =>
      kind === 'poll' ? counts.polls - start.polls : counts.streams - start.streams;
    const expected =
      kind === 'poll' ? { ...start, polls: start.polls + opened - missing } : { ...start, streams: start.streams + opened - missing };
    if ((await countsReach(b, expected, 30_000)) !== null) continue;
    missing = opened - held(await openCounts(b));
    const failures = clients.failures();
    violation(
      LIVE_SCENARIO,
      `${missing} of ${opened} ${kind} clients not answered by B within 30 s (${failures.count} client failures: ${failures.samples.join(' | ')})`,
    );
  }
  return missing;
}

async function deactivate(server: BenchProcess, administrator: string, name: string): Promise<number> {
  const response = await fetch(`${server.url}/api/v1/realm/emoji/${name}`, { method: 'DELETE', headers: { authorization: administrator } });
  const body = await response.text();
  const answered = now();
  if (response.status !== 200) throw new Error(`DELETE /api/v1/realm/emoji/${name} through A: ${response.status} ${body}`);
  return answered;
}

/**
 * `subscribers` customEmojiChanged subscribers on B (half SSE, half WebSocket); `events` emoji
 * deactivated through A one after another, each once every subscriber has received the previous one.
 */
async function fanOut(
  clients: Clients,
  a: BenchProcess,
  b: BenchProcess,
  org: LiveOrganization,
  subscribers: number,
  events: number,
  firstEmoji: number,
): Promise<FanOut> {
  const group = `fan-out-${subscribers}`;
  const sse = Math.ceil(subscribers / 2);
  const notOpened =
    (await openOnB(clients, b, group, 'sse', sse, { query: EMOJI_SUBSCRIPTION }, org.authorizations)) +
    (await openOnB(clients, b, group, 'ws', subscribers - sse, { query: EMOJI_SUBSCRIPTION }, org.authorizations));
  await sleep(1_000);
  const idleStarted = performance.now();
  const idleBefore = await b.statements();
  await sleep(5_000);
  const idleStatementsPerSecond = ((await b.statements()) - idleBefore) / ((performance.now() - idleStarted) / 1000);

  const latenciesMs: number[] = [];
  let incomplete = 0;
  const started = performance.now();
  const before = await b.statements();
  for (let k = 0; k < events; k++) {
    const name = emojiName(firstEmoji + k);
    const answered = await deactivate(a, org.authorizations[0]!, name);
    const receipts = await clients.receipts(name, subscribers - notOpened, 10_000);
    if (!receipts || receipts.count < subscribers - notOpened) {
      incomplete++;
      violation(
        LIVE_SCENARIO,
        `fan-out: the deactivation of ${name} reached ${receipts?.count ?? 0} of ${subscribers - notOpened} subscribers within 10 s`,
      );
    } else latenciesMs.push(receipts.last - answered);
    // Not in step with the reader's 80 ms ticks.
    await sleep(100 + Math.random() * 80);
  }
  const statements = (await b.statements()) - before;
  const seconds = (performance.now() - started) / 1000;
  await clients.close(group);
  expectHolds(
    LIVE_SCENARIO,
    (await countsReach(b, { streams: 0, polls: 0 }, 10_000)) !== null,
    `fan-out: B's streams of ${subscribers} closed subscribers not freed within 10 s`,
  );
  const result = {
    subscribers,
    notOpened,
    latenciesMs,
    incomplete,
    statementsPerEvent: (statements - idleStatementsPerSecond * seconds) / events,
    idleStatementsPerSecond,
  };
  console.error(`live fan-out, ${subscribers} subscribers: ${JSON.stringify({ ...result, latenciesMs: latenciesMs.map(Math.round) })}`);
  return result;
}

/**
 * Commits per second of the deactivation statement (the floor's, without the audit row's variance)
 * at 8 clients for `seconds`, with or without a pg_notify in it; emoji reactivated before.
 */
async function commitRate(
  databaseUrl: string,
  db: pg.Pool,
  org: LiveOrganization,
  seconds: number,
  notify: boolean,
): Promise<{ perSecond: number; notified: number }> {
  await db.query('UPDATE custom_emoji SET deactivated = false WHERE "organizationId" = $1 AND deactivated', [org.id]);
  const { rows } = await db.query<{ id: number }>('SELECT id FROM custom_emoji WHERE "organizationId" = $1 ORDER BY id', [org.id]);
  const ids = rows.map((row) => row.id);
  const listener = new pg.Client({ connectionString: databaseUrl });
  await listener.connect();
  let notified = 0;
  listener.on('notification', () => notified++);
  await listener.query('LISTEN bench_events');
  const [{ last }] = (await db.query<{ last: string }>('SELECT coalesce(max(id), 0)::text AS last FROM event')).rows;
  const statement = `
    WITH updated AS (UPDATE custom_emoji SET deactivated = true WHERE id = $1 AND NOT deactivated
                     RETURNING id, "organizationId", name, deactivated, "authorId", "fileName", "isAnimated")
    INSERT INTO event ("organizationId", type, payload, "recipientIds")
    SELECT $2, 'realm_emoji', jsonb_build_object('change', 'deactivated', 'emoji', to_jsonb(updated)), '{}'
      FROM updated${notify ? ", LATERAL (SELECT pg_notify('bench_events', '')) notified" : ''}`;
  const clients = await Promise.all(
    Array.from({ length: 8 }, async () => {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      return client;
    }),
  );
  let next = 0;
  let commits = 0;
  const until = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    clients.map(async (client) => {
      while (performance.now() < until) {
        await client.query(statement, [ids[next++ % ids.length], org.id]);
        commits++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  await Promise.all(clients.map((client) => client.end()));
  await sleep(200);
  await listener.end();
  // The log stays as the server left it: these events were no one's.
  await db.query('DELETE FROM event WHERE id > $1', [last]);
  return { perSecond: commits / elapsed, notified };
}

export interface LiveSetting {
  databaseUrl: string;
  env: Record<string, string>;
  workDir: string;
  db: pg.Pool;
  org: LiveOrganization;
  sizes: LiveSizes;
  /** The emoji deactivation scenario's rounds against one server (its median round). */
  throughput(server: BenchProcess): Promise<Round>;
}

export async function runLive({ databaseUrl, env, workDir, db, org, sizes, throughput }: LiveSetting): Promise<LiveResult> {
  const serverEnv = { ...env, DATABASE_URL: databaseUrl, METRICS_TOKEN };
  const started: BenchProcess[] = [];
  const clients = startClients();
  try {
    const b = await startProcess('live server B', realServerCommand(), serverEnv, join(workDir, 'live-b'));
    started.push(b);
    const a = await startProcess('live server A', realServerCommand(), serverEnv, join(workDir, 'live-a'));
    started.push(a);
    await db.query('UPDATE custom_emoji SET deactivated = false WHERE "organizationId" = $1 AND deactivated', [org.id]);
    await sleep(1_000);
    const n = sizes.connections;
    const pid = b.child.pid!;
    const idle = rssOf(pid);
    const peak = sampleRss(pid);
    // Each user's queues stay within the limit of 50 (users share the subscriptions).
    if (n / org.authorizations.length > 50) throw new Error(`live: ${n} long polls need more than ${org.authorizations.length} users`);
    // RSS after each kind, once its openings have settled: which kind costs what.
    const settledRss = async () => (await sleep(2_000), rssOf(pid));
    await openOnB(clients, b, 'sse', 'sse', n, { query: IDLE_SSE }, org.authorizations);
    const withSse = await settledRss();
    const wsMissing = await openOnB(clients, b, 'ws', 'ws', n, { query: IDLE_WS }, org.authorizations);
    const withWs = await settledRss();
    await openOnB(clients, b, 'polls', 'poll', n, { eventTypes: ['attachment'] }, org.authorizations);
    const open = await settledRss();
    const peakRss = peak.stop().serverPeak;
    console.error(
      `live: B's RSS ${mib(idle)} idle, ${mib(open)} with ${n} SSE + ${n} WebSocket subscriptions + ${n} long polls (peak ${mib(peakRss)})`,
    );

    const withIdle = await throughput(b);
    // The clients close their subscriptions one after another, which on two shared cores takes about a
    // second for 1,000: B is timed from the last close, as a subscriber's stream is freed after it leaves.
    const closingStarted = now();
    const closed = clients.close('sse');
    // The streams alone: a long poll answered by its heartbeat (45-55 s after it began, which a slow
    // run reaches about here) is not waiting until its client asks again, and counting the polls
    // measured those re-polls (7 s with every heartbeat due at the closing) rather than the freeing.
    const reachedMs = await countsReach(b, { streams: n - wsMissing }, 10_000, 10);
    const lastClose = await closed;
    const sseClosingMs = lastClose - closingStarted;
    // The last close is stamped once the clients' loop has returned: a reading may come in just before the stamp (0 then).
    const sseFreedMs = reachedMs === null ? null : Math.max(0, closingStarted + reachedMs - lastClose);
    await sleep(1_000);
    const afterSseClosed = rssOf(pid);
    expectHolds(LIVE_SCENARIO, sseFreedMs !== null, `B's streams of ${n} closed SSE subscriptions not freed within 10 s`);
    await clients.close('ws');
    await clients.close('polls');
    expectHolds(
      LIVE_SCENARIO,
      (await countsReach(b, { streams: 0, polls: 0 }, 10_000)) !== null,
      "B's WebSocket streams and waiting polls not freed within 10 s of their clients' closing",
    );
    const without = await throughput(b);
    console.error(
      `live: emoji deactivations on B ${withIdle.requestsPerSecond.toFixed(0)} req/s with the connections idle, ${without.requestsPerSecond.toFixed(0)} without; SSE closed by the clients in ${sseClosingMs.toFixed(0)} ms, freed ${sseFreedMs?.toFixed(0)} ms after the last close`,
    );

    await db.query('UPDATE custom_emoji SET deactivated = false WHERE "organizationId" = $1 AND deactivated', [org.id]);
    const fanOuts = [
      await fanOut(clients, a, b, org, sizes.subscribers, sizes.events, org.emoji - 2 * sizes.events),
      await fanOut(clients, a, b, org, sizes.few, sizes.events, org.emoji - sizes.events),
    ];

    const pollCommitsPerSecond: number[] = [];
    const notifyCommitsPerSecond: number[] = [];
    let notificationsReceived = 0;
    for (let round = 0; round < sizes.notifyRounds; round++) {
      pollCommitsPerSecond.push((await commitRate(databaseUrl, db, org, sizes.notifySeconds, false)).perSecond);
      const notified = await commitRate(databaseUrl, db, org, sizes.notifySeconds, true);
      notifyCommitsPerSecond.push(notified.perSecond);
      notificationsReceived += notified.notified;
    }
    console.error(
      `live: commits/s without NOTIFY ${pollCommitsPerSecond.map(Math.round).join(', ')}, with ${notifyCommitsPerSecond.map(Math.round).join(', ')}`,
    );
    const failures = clients.failures();
    expectHolds(LIVE_SCENARIO, failures.count === 0, `the clients saw ${failures.count} failures: ${failures.samples.join(' | ')}`);
    return {
      sizes,
      users: org.authorizations.length,
      rss: { idle, withSse, withWs, open, peak: peakRss, afterSseClosed },
      sseFreedMs,
      sseClosingMs,
      throughput: { withIdle, without },
      fanOut: fanOuts,
      notify: { pollCommitsPerSecond, notifyCommitsPerSecond, notificationsReceived },
      clientFailures: failures.count,
      clientFailureSamples: failures.samples,
    };
  } finally {
    await clients.stop();
    for (const server of started.reverse()) await server.stop();
    await db.query('UPDATE custom_emoji SET deactivated = false WHERE "organizationId" = $1 AND deactivated', [org.id]);
  }
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;
const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor((values.length - 1) / 2)] ?? NaN;
/** The value at quantile q (nearest rank). */
const quantile = (values: number[], q: number) => [...values].sort((x, y) => x - y)[Math.max(0, Math.ceil(q * values.length) - 1)] ?? NaN;
const met = (ok: boolean) => (ok ? 'met' : '**not met**');

export function liveMarkdown(modes: { mode: string; live?: LiveResult }[]): string {
  const lines: string[] = [];
  for (const { mode, live: l } of modes) {
    if (!l) continue;
    const n = l.sizes.connections;
    const added = l.rss.open - l.rss.idle;
    // The target is for 1,000 of each; a smaller run is held to its share.
    const allowed = (TARGETS.addedMiB * n) / 1_000;
    lines.push(
      '',
      `### Live updates (${mode}): two server processes (A, B) on the bench's database, the clients in a process of their own`,
      '',
      `- **Memory:** B's RSS ${mib(l.rss.idle)} idle, ${mib(l.rss.open)} with ${n} SSE subscriptions (attachmentsChanged), ${n} WebSocket subscriptions ` +
        `(invitationsChanged, one connection each) and ${n} waiting long polls (queues of \`attachment\` events), spread over the organization's ${l.users} users, open: ` +
        `+${mib(added)} (${(added / 3 / n / 1024).toFixed(1)} KiB per connection; by kind, as they opened: SSE +${mib(l.rss.withSse - l.rss.idle)}, ` +
        `WebSocket +${mib(l.rss.withWs - l.rss.withSse)}, long polls +${mib(l.rss.open - l.rss.withWs)}; peak ${mib(l.rss.peak)}); target at most +${allowed.toFixed(0)} MiB: ${met(added <= allowed * 2 ** 20)}.`,
      `- **Closed connections:** the ${n} SSE subscriptions closed by their clients (which took ${l.sseClosingMs.toFixed(0)} ms to close them all) left B's count of open streams (\`teamchat_event_streams\`) ` +
        (l.sseFreedMs === null ? '**not within 10 s**' : `within ${l.sseFreedMs.toFixed(0)} ms of the last close`) +
        ` (target 1 s: ${met(l.sseFreedMs !== null && l.sseFreedMs <= TARGETS.freedMs)}); RSS then ${mib(l.rss.afterSseClosed)}.`,
      `- **Throughput with idle connections:** DELETE /api/v1/realm/emoji/{name} on B, ${l.throughput.withIdle.requestsPerSecond.toFixed(1)} req/s (p50 ${l.throughput.withIdle.p50Ms} ms, ${l.throughput.withIdle.sqlPerRequest.toFixed(1)} SQL per request) ` +
        `with the ${3 * n} connections open and idle, ${l.throughput.without.requestsPerSecond.toFixed(1)} req/s (p50 ${l.throughput.without.p50Ms} ms, ${l.throughput.without.sqlPerRequest.toFixed(1)} SQL per request) without them (measured after them) ` +
        `(ratio ${(l.throughput.withIdle.requestsPerSecond / l.throughput.without.requestsPerSecond).toFixed(2)}).`,
      '',
      `| customEmojiChanged subscribers on B (half SSE, half WebSocket) | events through A | from A's answer to the last subscriber's receipt: p50 / p99 / worst | events not received by all | B's SQL statements per event (its idle polling, per second, subtracted) |`,
      '|---:|---:|---:|---:|---:|',
      ...l.fanOut.map(
        (f) =>
          `| ${f.subscribers}${f.notOpened ? ` (${f.notOpened} not answered)` : ''} | ${f.latenciesMs.length + f.incomplete} | ${median(f.latenciesMs).toFixed(0)} / ${quantile(f.latenciesMs, 0.99).toFixed(0)} / ${Math.max(...f.latenciesMs).toFixed(0)} ms | ${f.incomplete} | ${f.statementsPerEvent.toFixed(1)} (${f.idleStatementsPerSecond.toFixed(1)}) |`,
      ),
      '',
    );
    const [many, few] = l.fanOut;
    if (many && few) {
      const p99 = quantile(many.latenciesMs, 0.99);
      lines.push(
        `Fan-out to the last of ${many.subscribers} within ${TARGETS.fanOutP99Ms} ms (p99): ${met(many.incomplete === 0 && p99 <= TARGETS.fanOutP99Ms)}. ` +
          `Statements per event do not grow with the subscribers (${few.subscribers}: ${few.statementsPerEvent.toFixed(1)}, ${many.subscribers}: ${many.statementsPerEvent.toFixed(1)}): ` +
          `${met(many.statementsPerEvent <= few.statementsPerEvent + 1)}.`,
        '',
      );
    }
    const poll = median(l.notify.pollCommitsPerSecond);
    const notify = median(l.notify.notifyCommitsPerSecond);
    lines.push(
      `**Poll or NOTIFY:** the deactivation statement (UPDATE custom_emoji and INSERT INTO event in one statement) from 8 clients for ${l.sizes.notifySeconds} s, ` +
        `${l.sizes.notifyRounds} round${l.sizes.notifyRounds > 1 ? 's' : ''} each, alternately (median): ${poll.toFixed(0)} commits/s as it is (no NOTIFY: readers learn of events by polling), ` +
        `${notify.toFixed(0)} commits/s with a \`pg_notify\` in it and one client LISTENing (${((notify / poll) * 100).toFixed(0)}%; ` +
        `rounds ${l.notify.pollCommitsPerSecond.map(Math.round).join(', ')} / ${l.notify.notifyCommitsPerSecond.map(Math.round).join(', ')}; ${l.notify.notificationsReceived} notifications received).`,
    );
    if (l.clientFailures > 0)
      lines.push('', `**The clients saw ${l.clientFailures} failures**, e.g. ${l.clientFailureSamples.join(' | ')}`);
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}
