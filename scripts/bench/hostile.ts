// The hostile scenario: one user who owns 60,000 files asks for their whole list
// 10 times at once through each door, again and again, while 3 invitations of 10,000 addresses each
// run, and another user's small requests go on. Every answer must be 200 or 503, the process must
// live, the other user's p99 stay under 1 s and the server's peak RSS under 512 MiB.
import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import { ATTACHMENTS_QUERY } from './organization.js';
import { rssOf, sampleRss, type BenchProcess } from './processes.js';
import { expectHolds } from './violations.js';

export const HOSTILE_SCENARIO = 'hostile: 60,000 files listed 10 times at once per door, 3 x 10,000-address invitations';

const FILES = 60_000;
const PARALLEL_PER_DOOR = 10;
const INVITATIONS = 3;
const ADDRESSES = 10_000;
const SECONDS = 20;

export interface HostileOrganization {
  id: number;
  /** The hoarder: an administrator, who also sends the invitations. */
  authorization: string;
  /** Another member, whose small requests must keep flowing. */
  otherUser: string;
}

interface Tally {
  ok: number;
  busy: number;
  /** Anything but 200 and 503, or no answer at all: must stay 0. */
  failed: number;
  failures: string[];
}

export interface HostileResult {
  files: number;
  seconds: number;
  rest: Tally;
  graphql: Tally;
  invitations: Tally;
  other: Tally & { p50Ms: number; p99Ms: number; maxMs: number };
  alive: boolean;
  serverPeakRss: number;
}

const tally = (): Tally => ({ ok: 0, busy: 0, failed: 0, failures: [] });

function count(into: Tally, status: number | string) {
  if (status === 200) into.ok++;
  else if (status === 503) into.busy++;
  else {
    into.failed++;
    if (into.failures.length < 5) into.failures.push(String(status));
  }
}

/** Sends one request and reads its whole body; the status, or the error's text when there was none. */
async function send(url: string, init: RequestInit): Promise<number | string> {
  try {
    const response = await fetch(url, init);
    await response.arrayBuffer();
    return response.status;
  } catch (error) {
    return `no answer: ${(error as Error).message}`;
  }
}

/** Gives the user `count` more files (rows only, counted in the organization's total as uploads are). */
export async function addFiles(db: pg.Pool, organizationId: number, authorization: string, count: number) {
  const email = Buffer.from(authorization.slice('Basic '.length), 'base64').toString().split(':')[0];
  const { rows } = await db.query('SELECT id FROM user_account WHERE email = $1 AND "organizationId" = $2', [email, organizationId]);
  const ownerId = rows[0].id;
  await db.query(
    `WITH added AS (
       INSERT INTO attachment ("organizationId", "ownerId", name, "pathId", size, "createTime")
       SELECT $1::int, $2::int, 'hoard-' || n || '.pdf', $1::int::text || '/ho/' || md5(random()::text || n) || '/hoard-' || n || '.pdf', 1000 + n, now() - n * interval '1 second'
         FROM generate_series(1, $3::int) n
       RETURNING size)
     UPDATE organization SET "uploadSpaceUsed" = "uploadSpaceUsed" + (SELECT sum(size) FROM added) WHERE id = $1::int`,
    [organizationId, ownerId, count],
  );
  await db.query('ANALYZE attachment');
}

/** Repeats `request` until `until`, counting statuses. */
async function repeat(until: number, into: Tally, request: () => Promise<number | string>) {
  while (performance.now() < until) count(into, await request());
}

export async function runHostile(real: BenchProcess, db: pg.Pool, org: HostileOrganization): Promise<HostileResult> {
  await addFiles(db, org.id, org.authorization, FILES);
  const url = real.url;
  const hoarder = { authorization: org.authorization };
  const result: HostileResult = {
    files: FILES,
    seconds: SECONDS,
    rest: tally(),
    graphql: tally(),
    invitations: tally(),
    other: { ...tally(), p50Ms: 0, p99Ms: 0, maxMs: 0 },
    alive: false,
    serverPeakRss: 0,
  };
  const rss = sampleRss(real.child.pid!);
  const until = performance.now() + SECONDS * 1000;
  const runId = Date.now().toString(36);
  const restList = () => send(`${url}/api/v1/attachments`, { headers: hoarder });
  const graphqlList = () =>
    send(`${url}/graphql`, {
      method: 'POST',
      headers: { ...hoarder, 'content-type': 'application/json' },
      body: JSON.stringify({ query: ATTACHMENTS_QUERY }),
    });
  const invite = (batch: number) => () => {
    const emails = Array.from({ length: ADDRESSES }, (_, k) => `hostile-${runId}-${batch}-${k}@invitees.example`);
    const body = new URLSearchParams({ invitee_emails: emails.join(','), stream_ids: '[]', invite_as: '400' }).toString();
    return send(`${url}/api/v1/invites`, {
      method: 'POST',
      headers: { ...hoarder, 'content-type': 'application/x-www-form-urlencoded' },
      body,
    });
  };
  const latencies: number[] = [];
  const otherUser = async () => {
    while (performance.now() < until) {
      const started = performance.now();
      count(result.other, await send(`${url}/api/v1/users/me`, { headers: { authorization: org.otherUser } }));
      latencies.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  await Promise.all([
    ...Array.from({ length: PARALLEL_PER_DOOR }, () => repeat(until, result.rest, restList)),
    ...Array.from({ length: PARALLEL_PER_DOOR }, () => repeat(until, result.graphql, graphqlList)),
    ...Array.from({ length: INVITATIONS }, (_, batch) => invite(batch)().then((status) => count(result.invitations, status))),
    otherUser(),
  ]);
  result.serverPeakRss = rss.stop().serverPeak;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0);
  Object.assign(result.other, { p50Ms: at(0.5), p99Ms: at(0.99), maxMs: Math.round(latencies.at(-1) ?? 0) });
  result.alive = real.child.exitCode === null && rssOf(real.child.pid!) > 0 && (await send(`${url}/health`, {})) === 200;
  console.error(`${HOSTILE_SCENARIO}: ${JSON.stringify(result)}`);
  for (const [requests, t] of [
    ['lists (REST)', result.rest],
    ['lists (GraphQL)', result.graphql],
    ['invitations', result.invitations],
    ["the other user's requests", result.other],
  ] as const) {
    expectHolds(HOSTILE_SCENARIO, t.failed === 0, `${requests}: ${t.failed} answers neither 200 nor 503 (${t.failures.join(', ')})`);
  }
  expectHolds(HOSTILE_SCENARIO, result.alive, 'the server did not live through it (no process, or /health not 200)');
  return result;
}

const line = (name: string, t: Tally) =>
  `| ${name} | ${t.ok} | ${t.busy} | ${t.failed}${t.failures.length ? ` (${t.failures.join(', ')})` : ''} |`;

/** The scenario's section of the report, for each database mode that ran it. */
export function hostileMarkdown(modes: { mode: string; hostile?: HostileResult }[]): string {
  const lines: string[] = [];
  for (const { mode, hostile: h } of modes) {
    if (!h) continue;
    const met = (ok: boolean) => (ok ? 'met' : '**not met**');
    const allAnswered = h.rest.failed + h.graphql.failed + h.invitations.failed + h.other.failed === 0;
    lines.push(
      '',
      `### Hostile load (${mode}): ${h.files.toLocaleString('en')} files of one user, ${PARALLEL_PER_DOOR} parallel lists per door for ${h.seconds} s, ${INVITATIONS} x ${ADDRESSES.toLocaleString('en')}-address invitations`,
      '',
      '| requests | 200 | 503 | other |',
      '|---|---:|---:|---:|',
      line('GET /api/v1/attachments (60,000 files)', h.rest),
      line('GraphQL attachments (60,000 files)', h.graphql),
      line(`POST /api/v1/invites, ${ADDRESSES} addresses`, h.invitations),
      line("another user's GET /api/v1/users/me", h.other),
      '',
      `Every answer 200 or 503: ${met(allAnswered)}. The process lives: ${met(h.alive)}. ` +
        `The other user's p99 ${h.other.p99Ms} ms (p50 ${h.other.p50Ms}, worst ${h.other.maxMs}) under 1 s: ${met(h.other.p99Ms < 1000)}. ` +
        `Server peak RSS ${(h.serverPeakRss / 2 ** 20).toFixed(0)} MiB under 512 MiB: ${met(h.serverPeakRss < 512 * 2 ** 20)}.`,
    );
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}
