// npm run bench [-- --quick]: the real server and the floor (scripts/bench/floor.ts) side by side on
// the same data, alternately, under autocannon; writes bench/results/<stamp>.{json,md}.
// See docs/guide/performance.md.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { embeddedDatabaseUrl } from '../../src/db/embedded-postgres.js';
import { ownAttachmentsListStatement } from '../../src/domain/attachments/statements.js';
import { generateApiKey } from '../../src/domain/users/api-keys.js';
import { pendingInvitationsStatement } from '../../src/domain/invitations/statements.js';
import { agreedAnswer, roundMismatches, type Pair } from './compare.js';
import { freshDatabaseBeside } from './databases.js';
import { freshRounds } from './fresh-processes.js';
import { statementsPerSecond, type StatementAlone } from './database-limit.js';
import { HOSTILE_SCENARIO, hostileMarkdown, runHostile, type HostileResult } from './hostile.js';
import {
  ANONYMOUS_DOCUMENTS_SCENARIO,
  anonymousDocumentsMarkdown,
  runAnonymousDocuments,
  type AnonymousDocumentsResult,
} from './anonymous-documents.js';
import { emojiWrites } from './emoji-rows.js';
import { invitationWrites } from './invitation-rows.js';
import { LIVE_FULL, LIVE_QUICK, LIVE_SCENARIO, liveMarkdown, runLive, type LiveResult } from './live-updates.js';
import { PAGES_SCENARIO, pagesMarkdown, runPages, type PagesResult } from './pages.js';
import { median, postmasterOf, runRound, type Round, type Scenario } from './load.js';
import { benchOutboxFairness, OUTBOX_SCENARIO, outboxMarkdown, type OutboxFairnessResult } from './outbox-fairness.js';
import { benchSignIn, SIGN_IN_SCENARIO, signInMarkdown, type SignInResult } from './sign-in.js';
import {
  ATTACHMENT_PAGE_QUERY,
  ATTACHMENT_PAGE_SIZE,
  ATTACHMENTS_QUERY,
  INVITATIONS_QUERY,
  LISTED_INVITATIONS,
  benchOrganization,
  importedIds,
  insertListedInvitations,
  describeVolume,
  emojiName,
  FULL,
  QUICK,
  type DataSet,
  type Volume,
} from './organization.js';
import {
  cliCommand,
  FLOOR_COMMAND,
  serverDatabasePids,
  realServerCommand,
  removeWorkDir,
  rssOf,
  sampleRss,
  startProcess,
  THROUGHPUT_ENV,
  type BenchProcess,
} from './processes.js';
import {
  COMPARISON_NAMES,
  type Comparison,
  IDLE_SECONDS,
  machineFacts,
  markdownReport,
  type ModeResult,
  type ScenarioResult,
} from './report.js';
import { violation, violations, violationsMarkdown } from './violations.js';

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    // Focused runs while working on one path: scenarios whose name contains one of the words
    // (case-insensitive); the organization-size rounds only with the word "size".
    only: { type: 'string', multiple: true },
    // embedded, external or both (the default: both when DATABASE_URL is set, else embedded).
    mode: { type: 'string' },
    // The server too with DATABASE_PREPARED_STATEMENTS=off: its comparison with the unprepared server
    // is then of two identical processes, and shows how far chance alone moves the prepared targets.
    'a-a': { type: 'boolean', default: false },
    // A checkout of an earlier commit, installed and built (scripts/bench/baseline.ts makes one): the
    // server as it was, a fourth side of the prepared targets' scenarios, which are then judged against it too.
    baseline: { type: 'string' },
  },
});
const volumes = flags.quick ? QUICK : FULL;
/** Rounds per side and scenario; each side is summarized by its median round. */
const ROUNDS = flags.quick ? 1 : 3;
/**
 * Rounds per side of the scenarios with a prepared target: their sides are judged against each
 * other, and a round's figures move by up to a third with V8's collections and the neighbours on the
 * cores, so their medians take more rounds.
 */
const TARGET_ROUNDS = flags.quick ? 1 : 5;
/**
 * Warm-up rounds per side, not counted. The judged scenarios take two: after one, their first counted
 * round was still its side's highest in 29 of 48 sides (16 % above their medians on average, the later
 * rounds within 3 %), V8 still compiling.
 */
const WARM_UP_ROUNDS = 1;
const TARGET_WARM_UP_ROUNDS = flags.quick ? 1 : 2;
/**
 * The judgement against the baseline build (scripts/bench/fresh-processes.ts): fresh processes per
 * side and scenario, each with TARGET_WARM_UP_ROUNDS of warm-up and FRESH_ROUNDS counted. Three
 * processes of two rounds rather than two of three: processes differ more than rounds do.
 */
const FRESH_PROCESSES = flags.quick ? 1 : 3;
const FRESH_ROUNDS = flags.quick ? 1 : 2;
const LOAD = {
  connections: 8,
  seconds: flags.quick ? 2 : 6,
  rounds: ROUNDS,
  warmUpRounds: WARM_UP_ROUNDS,
  targetRounds: TARGET_ROUNDS,
  targetWarmUpRounds: TARGET_WARM_UP_ROUNDS,
  freshProcesses: FRESH_PROCESSES,
  freshRounds: FRESH_ROUNDS,
};
/** A round's load on one mode's database: PostgreSQL's CPU is read from its cluster's processes only. */
type ModeLoad = typeof LOAD & { postmaster?: number };
const run = promisify(execFile);

type Mode = { kind: 'embedded' } | { kind: 'external'; databaseUrl: string };

interface Organization {
  id: number;
  /** The benchmark user's id. */
  administratorId: number;
  /** Each user's Authorization header; the first is the benchmark user's (an administrator). */
  authorizations: string[];
  volume: Volume;
}

/** Imports one organization through the CLI's import (the import path), with a known key for every user. */
async function importOrganization(name: DataSet, env: Record<string, string>, workDir: string, db: pg.Pool): Promise<Organization> {
  const volume = volumes[name];
  const { file } = benchOrganization(name, volume);
  const basic = (email: string, key: string) => `Basic ${Buffer.from(`${email}:${key}`).toString('base64')}`;
  const authorizations = file.users!.map((user) => {
    user.api_key = generateApiKey();
    return basic(String(user.email), user.api_key);
  });
  const path = join(workDir, `${name}.json`);
  await writeFile(path, JSON.stringify(file));
  const started = Date.now();
  await run(process.execPath, [...cliCommand(), 'import', path], { env: { ...process.env, ...env }, maxBuffer: 1 << 24 });
  console.error(`Imported ${name}: ${describeVolume(volume)} in ${((Date.now() - started) / 1000).toFixed(1)} s.`);
  return { ...(await importedIds(db, file)), volume, authorizations };
}

/**
 * Delivers every e-mail due through the CLI's `deliver-emails`, between rounds. The measured servers
 * run with EMAIL_WORKER=off, as a fleet's request processes may: the floor never delivers the e-mail
 * it queues, so a server delivering its own beside its rounds would be measured doing more work than
 * the floor (about a tenth of the 1-address invitations' rate, in A/B runs).
 * Then checks that nothing due is left, so no round runs beside the previous round's mail.
 */
async function deliverQueued(env: Record<string, string>, db: pg.Pool): Promise<void> {
  // Its output is a log line per e-mail written to a file: up to tens of thousands after the hostile load.
  await run(process.execPath, [...cliCommand(), 'deliver-emails'], { env: { ...process.env, ...env }, maxBuffer: 1 << 28 });
  const { rows } = await db.query(
    `SELECT count(*)::int AS due FROM outbox_email WHERE status = 'PENDING' AND "nextAttemptAt" <= $1::timestamp(3)`,
    [new Date().toISOString()],
  );
  if (rows[0].due > 0) throw new Error(`deliver-emails left ${rows[0].due} e-mails due`);
}

const runId = Date.now().toString(36);
let invitationBatch = 0;

const asAdministrator = (org: Organization) => ({ authorization: org.authorizations[0]! });

const administrator = (org: Organization) => ({ id: org.administratorId, organizationId: org.id });

const attachments = (org: Organization): ScenarioSpec => ({
  method: 'GET',
  path: '/api/v1/attachments',
  headers: asAdministrator(org),
  databaseStatement: ownAttachmentsListStatement(administrator(org), false),
});

const graphqlAttachments = (org: Organization): ScenarioSpec => ({
  method: 'POST',
  path: '/graphql',
  headers: { ...asAdministrator(org), 'content-type': 'application/json' },
  body: JSON.stringify({ query: ATTACHMENTS_QUERY }),
  databaseStatement: ownAttachmentsListStatement(administrator(org), true),
});

const graphqlAttachmentPage = (org: Organization): ScenarioSpec => ({
  method: 'POST',
  path: '/graphql',
  headers: { ...asAdministrator(org), 'content-type': 'application/json' },
  body: JSON.stringify({ query: ATTACHMENT_PAGE_QUERY }),
  databaseStatement: ownAttachmentsListStatement(administrator(org), true, ATTACHMENT_PAGE_SIZE + 1),
});

/**
 * Query.invitations of an administrator while the organization holds LISTED_INVITATIONS pending
 * invitations (this scenario comes before the invitation rounds; its reset revokes any others).
 */
function graphqlInvitations(org: Organization, { db }: BenchContext): ScenarioSpec {
  return {
    method: 'POST',
    path: '/graphql',
    headers: { ...asAdministrator(org), 'content-type': 'application/json' },
    body: JSON.stringify({ query: INVITATIONS_QUERY }),
    databaseStatement: pendingInvitationsStatement({ ...administrator(org), role: 200 }),
    reset: () => pendingInvitations(db, org),
  };
}

async function pendingInvitations(db: pg.Pool, org: Organization) {
  const { rows } = await db.query(`SELECT count(*)::int AS pending FROM invitation WHERE "organizationId" = $1 AND status = 'PENDING'`, [
    org.id,
  ]);
  if (rows[0].pending === LISTED_INVITATIONS) return;
  await db.query(`UPDATE invitation SET status = 'REVOKED' WHERE "organizationId" = $1 AND status = 'PENDING'`, [org.id]);
  await insertListedInvitations(db, org.id, org.administratorId);
}

function emojiDeactivation(org: Organization, { db }: BenchContext): ScenarioSpec {
  let emoji = 0;
  return {
    method: 'DELETE',
    path: '/',
    headers: asAdministrator(org),
    vary: (request) => ({ ...request, path: `/api/v1/realm/emoji/${emojiName(emoji++ % org.volume.emoji)}` }),
    recordWrites: emojiWrites(db, org.id),
    // The names run on from round to round: a request the previous round left in flight can
    // still deactivate its emoji after this reset, and must not be one this round asks for.
    reset: async () => {
      await db.query('UPDATE custom_emoji SET deactivated = false WHERE "organizationId" = $1 AND deactivated', [org.id]);
    },
  };
}

/** Invitations of `count` new addresses each; by the administrator, or by every user in turn. */
function invites(org: Organization, bench: BenchContext, count: number, { everyone = false } = {}): ScenarioSpec {
  const { db } = bench;
  let caller = 0;
  return {
    method: 'POST',
    path: '/api/v1/invites',
    minimumSeconds: count > 1 ? 6 : 0,
    probe: count > 1 ? { path: '/api/v1/users/me', headers: { authorization: org.authorizations[1]! } } : undefined,
    reset: bench.deliverQueued,
    recordWrites: invitationWrites(db, org.id, count),
    headers: { ...asAdministrator(org), 'content-type': 'application/x-www-form-urlencoded' },
    vary: (request) => {
      const batch = invitationBatch++;
      const emails = Array.from({ length: count }, (_, k) => `invitee-${runId}-${batch}-${k}@invitees.example`);
      const headers = everyone
        ? { ...request.headers, authorization: org.authorizations[caller++ % org.authorizations.length]! }
        : request.headers;
      return {
        ...request,
        headers,
        body: new URLSearchParams({ invitee_emails: emails.join(','), stream_ids: '[]', invite_as: '400' }).toString(),
      };
    },
  };
}

// The organization-size rounds follow the invitations: the e-mails those queued are delivered first.
const sizeRound = (org: Organization, bench: BenchContext): ScenarioSpec => ({ ...attachments(org), reset: bench.deliverQueued });
const sizeName = (name: DataSet) => `GET /api/v1/attachments, ${volumes[name].attachments} attachments in the organization`;

type ScenarioSpec = Omit<Scenario, 'name'>;

/** What scenarios reach besides their organization: the bench's connection, and delivery between rounds. */
interface BenchContext {
  db: pg.Pool;
  deliverQueued(): Promise<void>;
}

interface RegisteredScenario {
  name: string;
  /** The data set it runs on (imported only when a selected scenario needs it). */
  organization: DataSet;
  build: (org: Organization, bench: BenchContext) => ScenarioSpec;
  /** Selected by `--only <word>` with this word alone, not by the words of its name. */
  word?: string;
  /**
   * Measured also against the same build with DATABASE_PREPARED_STATEMENTS=off: PostgreSQL's CPU per
   * request under the server must be at most this fraction of its CPU under the unprepared server.
   */
  preparedTarget?: number;
}

/**
 * The scenarios, in the order they run, each measured against the floor, which must answer it
 * alike (scripts/bench/compare.ts). To add one, add an entry here; `Scenario` in
 * scripts/bench/load.ts says what it may declare.
 */
const SCENARIOS: RegisteredScenario[] = [
  { name: 'GET /api/v1/attachments', organization: 'main', build: attachments, preparedTarget: 0.85 },
  { name: 'GraphQL attachments { messages { id dateSent } }', organization: 'main', build: graphqlAttachments, preparedTarget: 0.85 },
  {
    name: `GraphQL me { attachmentPage(first: ${ATTACHMENT_PAGE_SIZE}) { nodes pageInfo } }`,
    organization: 'main',
    build: graphqlAttachmentPage,
    preparedTarget: 0.6,
  },
  { name: `GraphQL invitations (${LISTED_INVITATIONS} pending)`, organization: 'main', build: graphqlInvitations, preparedTarget: 0.6 },
  { name: 'DELETE /api/v1/realm/emoji/{name}', organization: 'main', build: emojiDeactivation, preparedTarget: 0.85 },
  {
    name: 'POST /api/v1/invites, 1 address',
    organization: 'main',
    build: (org, bench) => invites(org, bench, 1),
    preparedTarget: 0.85,
  },
  { name: 'POST /api/v1/invites, 100 addresses', organization: 'main', build: (org, bench) => invites(org, bench, 100) },
  {
    // Each of many members in turn, so the per-user limit (200 a minute) is not what is measured:
    // the counters' upsert per request is.
    name: `POST /api/v1/invites, 1 address, ${volumes.crowd.users} members in turn, default rate limits`,
    organization: 'crowd',
    build: (org, bench) => ({ ...invites(org, bench, 1, { everyone: true }), rateLimited: true }),
  },
  { name: sizeName('small'), organization: 'small', word: 'size', build: sizeRound },
  { name: sizeName('large'), organization: 'large', word: 'size', build: sizeRound },
];

const isSelected = (entry: Pick<RegisteredScenario, 'name' | 'word'>) =>
  !flags.only || flags.only.some((word) => (entry.word ? word === entry.word : entry.name.toLowerCase().includes(word.toLowerCase())));

/** The measurements that are not a floor comparison, after the scenarios; `--only <word>` runs one. */
const LIVE = { name: LIVE_SCENARIO, word: 'live' };
const PAGES = { name: PAGES_SCENARIO, word: 'pages', organization: 'pages' as DataSet };

/** The hoarder is the benchmark user (an administrator, who also invites); the other user a member. */
const hostileParties = (org: Organization) => ({ id: org.id, authorization: org.authorizations[0]!, otherUser: org.authorizations[1]! });

/** The unknown emoji's refusal too must be the same. */
async function assertSameRefusal(org: Organization, { floor, real }: Pair) {
  const missing = (server: BenchProcess) =>
    fetch(`${server.url}/api/v1/realm/emoji/no_such_emoji`, { method: 'DELETE', headers: asAdministrator(org) }).then(
      async (r) => `${r.status} ${await r.text()}`,
    );
  const [a, b] = [await missing(floor), await missing(real)];
  if (a !== b) throw new Error(`unknown emoji: the floor answered ${a}, the server ${b}`);
}

/** The server alone, ROUNDS rounds (its median round): for comparing one server's figures under different conditions. */
async function serverRounds(scenario: Scenario, server: BenchProcess, load: ModeLoad): Promise<Round> {
  const expected = await agreedAnswer(scenario, { floor: server, real: server });
  const rounds: Round[] = [];
  for (let i = 0; i < ROUNDS; i++) rounds.push(await runRound(scenario, server, expected, load));
  return median(rounds);
}

/**
 * The sides beside floor and server on the prepared targets' scenarios, on the same data: the same
 * build with DATABASE_PREPARED_STATEMENTS=off, and the build of `--baseline`.
 */
interface Sides extends Pair {
  comparisons?: Partial<Record<Comparison, BenchProcess>>;
}

const cpuOf = (rounds: Round[]) => rounds.map((round) => round.cpuMsPerRequest);
const postgresCpuOf = (rounds: Round[]) => rounds.map((round) => round.postgresCpuMsPerRequest);
const middle = <T>(sorted: T[]) => sorted[Math.floor((sorted.length - 1) / 2)]!;
const middleOf = (values: number[]) => middle([...values].sort((a, b) => a - b));

/**
 * Alternates floor and server (and the comparisons, when the scenario has a prepared target),
 * `load.rounds` times each after `load.warmUpRounds` rounds of warm-up; summarizes each side by its median round. A list's
 * statement alone (its database-bound limit) runs after each set of rounds. `afterServerRound`:
 * what is read right after each of the server's rounds (its database's memory), never during one.
 */
async function measure(
  scenario: Scenario,
  { floor, real, comparisons = {} }: Sides,
  databaseUrl: string,
  load: ModeLoad,
  afterServerRound = () => {},
): Promise<ScenarioResult> {
  const expected = await agreedAnswer(scenario, { floor, real });
  // Each comparison's answer must be the floor's too: agreedAnswer throws otherwise.
  const others: { side: Comparison; process: BenchProcess; expected: typeof expected; rounds: Round[] }[] = [];
  for (const [side, process] of Object.entries(comparisons) as [Comparison, BenchProcess][])
    others.push({ side, process, expected: await agreedAnswer(scenario, { floor, real: process }), rounds: [] });
  const rounds: { floor: Round[]; real: Round[] } = { floor: [], real: [] };
  const alone: StatementAlone[] = [];
  let serverPeakRss = 0;
  // Rounds of each, not counted: V8 compiles a scenario's hot functions during its first thousands of
  // requests (a GraphQL list's first 2,500 cost 0.3-0.75 ms of compilation each, on the same two
  // cores), and the floor has far less code to compile. The rounds measure what a running server does.
  for (let i = 0; i < load.warmUpRounds; i++) {
    await runRound(scenario, floor, expected, load);
    await runRound(scenario, real, expected, load);
    for (const other of others) await runRound(scenario, other.process, other.expected, load);
  }
  for (let i = 0; i < load.rounds; i++) {
    rounds.floor.push(await runRound(scenario, floor, expected, load));
    const rss = sampleRss(real.child.pid!);
    rounds.real.push(await runRound(scenario, real, expected, load));
    afterServerRound();
    serverPeakRss = Math.max(serverPeakRss, rss.stop().serverPeak);
    for (const other of others) other.rounds.push(await runRound(scenario, other.process, other.expected, load));
    if (scenario.databaseStatement) alone.push(await statementsPerSecond(databaseUrl, scenario.databaseStatement, load));
  }
  const medianAlone = alone.length ? middle(alone.sort((a, b) => a.perSecond - b.perSecond)) : undefined;
  const ofOthers = <T>(figure: (rounds: Round[]) => T): Partial<Record<Comparison, T>> =>
    Object.fromEntries(others.map((other) => [other.side, figure(other.rounds)]));
  const result: ScenarioResult = {
    name: scenario.name,
    real: median(rounds.real),
    floor: median(rounds.floor),
    ...ofOthers(median),
    cpuRounds: { real: cpuOf(rounds.real), floor: cpuOf(rounds.floor), ...ofOthers(cpuOf) },
    postgresCpuRounds: { real: postgresCpuOf(rounds.real), floor: postgresCpuOf(rounds.floor), ...ofOthers(postgresCpuOf) },
    databaseLimit: medianAlone?.perSecond,
    databaseAlonePostgresCpuMs: alone.length ? middleOf(alone.map((one) => one.postgresCpuMs)) : undefined,
    serverPeakRss,
    mismatches: [
      ...roundMismatches(rounds.floor, rounds.real, expected),
      // "server" in these is the comparison.
      ...others.flatMap((other) =>
        roundMismatches(rounds.floor, other.rounds, other.expected).map(
          (mismatch) => `${COMPARISON_NAMES[other.side]}'s rounds: ${mismatch}`,
        ),
      ),
    ],
  };
  const limit = medianAlone ? `, its statement alone ${medianAlone.perSecond.toFixed(0)}/s` : '';
  const rate = (round: Round) => `${round.requestsPerSecond.toFixed(0)} req/s`;
  const third = others.map((other) => `, ${COMPARISON_NAMES[other.side]} ${rate(result[other.side]!)}`).join('');
  const sides = `server ${rate(result.real)}, floor ${rate(result.floor)}${third}`;
  console.error(`${scenario.name}: ${sides} (medians)${limit}`);
  return result;
}

/**
 * A server and a floor with the default rate limits (API_RATE_LIMIT unset) on the same database,
 * for the scenarios that declare `rateLimited`; stopped once measured.
 */
async function withRateLimitedPair<T>(env: Record<string, string>, workDir: string, use: (pair: Pair) => Promise<T>): Promise<T> {
  const limited = { ...env, API_RATE_LIMIT: undefined };
  const started: BenchProcess[] = [];
  try {
    started.push(await startProcess('server (default rate limits)', realServerCommand(), limited, join(workDir, 'server-limited')));
    started.push(await startProcess('floor (default rate limits)', FLOOR_COMMAND, limited, join(workDir, 'floor-limited')));
    return await use({ real: started[0]!, floor: started[1]! });
  } finally {
    for (const one of started) await one.stop();
  }
}

/** A rate-limited scenario measures nothing if a side ran without its counters. */
async function uncountedSides(db: pg.Pool): Promise<string[]> {
  const { rows } = await db.query(`SELECT prefix FROM unnest(ARRAY['user:', 'floor-user:']) AS prefix
                                    WHERE NOT EXISTS (SELECT FROM rate_counter WHERE starts_with(key, prefix))`);
  return rows.map((row) => `no rate counter of ${row.prefix === 'user:' ? 'the server' : 'the floor'}: it ran without the rate limits`);
}

async function measureRateLimited(
  scenario: Scenario,
  env: Record<string, string>,
  workDir: string,
  db: pg.Pool,
  load: ModeLoad,
): Promise<ScenarioResult> {
  const result = await withRateLimitedPair(env, workDir, (limited) => measure(scenario, limited, env.DATABASE_URL!, load));
  return { ...result, mismatches: [...result.mismatches, ...(await uncountedSides(db))] };
}

type ModeResults = ModeResult & {
  hostile?: HostileResult;
  live?: LiveResult;
  pages?: PagesResult;
  anonymousDocuments?: AnonymousDocumentsResult;
};

/**
 * How the processes beside the server connect. PGAPPNAME "bench...": their backends are left out of
 * the server's database memory, as the floor's are.
 */
const besideEnv = (databaseUrl: string, name: string) => ({ ...THROUGHPUT_ENV, DATABASE_URL: databaseUrl, PGAPPNAME: `bench ${name}` });

/** The same build unprepared, beside the server for the whole of the prepared targets' scenarios. */
async function startComparisons(databaseUrl: string, workDir: string): Promise<Partial<Record<Comparison, BenchProcess>>> {
  const unprepared = await startProcess(
    'server (DATABASE_PREPARED_STATEMENTS=off)',
    realServerCommand(),
    { ...besideEnv(databaseUrl, 'unprepared server'), DATABASE_PREPARED_STATEMENTS: 'off' },
    join(workDir, 'server-unprepared'),
  );
  return { unprepared };
}

/**
 * The server and the baseline build (`--baseline`) in fresh processes on a prepared target's
 * scenario: the baseline's figures, and the server's to judge them against.
 */
async function measureAgainstBaseline(
  scenario: Scenario,
  result: ScenarioResult,
  floor: BenchProcess,
  baseline: string,
  databaseUrl: string,
  workDir: string,
  load: ModeLoad,
): Promise<ScenarioResult> {
  const sides = {
    real: {
      name: 'server',
      command: realServerCommand(),
      // As the long-lived server runs: unprepared too with --a-a.
      env: { ...besideEnv(databaseUrl, 'fresh server'), ...(flags['a-a'] && { DATABASE_PREPARED_STATEMENTS: 'off' }) },
    },
    compared: { name: `baseline build (${baseline})`, command: realServerCommand(baseline), env: besideEnv(databaseUrl, 'baseline build') },
  };
  const processes = { processes: load.freshProcesses, warmUpRounds: load.targetWarmUpRounds, rounds: load.freshRounds };
  const fresh = await freshRounds(scenario, floor, sides, workDir, { ...load, ...processes });
  console.error(
    `${scenario.name}, fresh processes: server ${middleOf(cpuOf(fresh.real)).toFixed(2)} ms CPU per request, ` +
      `baseline build ${middleOf(cpuOf(fresh.compared)).toFixed(2)} (medians)`,
  );
  return {
    ...result,
    baseline: median(fresh.compared),
    cpuRounds: { ...result.cpuRounds!, fresh: cpuOf(fresh.real), baseline: cpuOf(fresh.compared) },
    postgresCpuRounds: { ...result.postgresCpuRounds!, fresh: postgresCpuOf(fresh.real), baseline: postgresCpuOf(fresh.compared) },
    mismatches: [...result.mismatches, ...fresh.mismatches],
  };
}

const stopAll = async (processes: Partial<Record<Comparison, BenchProcess>>) => {
  for (const process of Object.values(processes)) await process.stop();
};

async function benchMode(mode: Mode): Promise<ModeResults> {
  const workDir = await mkdtemp(join(tmpdir(), 'tc-bench-'));
  // Run as root, the embedded PostgreSQL runs as the postgres user: it must reach the folder.
  await chmod(workDir, 0o755);
  const serverDir = join(workDir, 'server');
  // The embedded database is the server's own, under its DATA_DIR; the CLI and the floor reach it there.
  const databaseUrl = mode.kind === 'external' ? await freshDatabaseBeside(mode.databaseUrl, 'bench') : embeddedDatabaseUrl(serverDir);
  const env = {
    ...THROUGHPUT_ENV,
    DATA_DIR: serverDir,
    DATABASE_URL: mode.kind === 'external' ? databaseUrl : '',
    ...(flags['a-a'] && { DATABASE_PREPARED_STATEMENTS: 'off' }),
  };
  const entries = SCENARIOS.filter(isSelected);
  let db: pg.Pool | undefined;
  let real: BenchProcess | undefined;
  let floor: BenchProcess | undefined;
  const comparisons: Partial<Record<Comparison, BenchProcess>> = {};
  try {
    real = await startProcess('server', realServerCommand(), env, serverDir);
    const started = rssOf(real.child.pid!);
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 2, application_name: 'bench' });
    db = pool;
    const bench: BenchContext = { db: pool, deliverQueued: () => deliverQueued(env, pool) };
    const load: ModeLoad = { ...LOAD, postmaster: await postmasterOf(pool) };
    const organizations = {} as Partial<Record<DataSet, Organization>>;
    for (const name of Object.keys(volumes) as DataSet[]) {
      const needed =
        name === 'main' || entries.some((entry) => entry.organization === name) || (name === PAGES.organization && isSelected(PAGES));
      if (needed) organizations[name] = await importOrganization(name, env, workDir, db);
    }
    // Settled as autovacuum leaves a database (its visibility map set, so that index-only scans read
    // no table page) before the rounds, rather than autovacuum running beside the first ones.
    await db.query('VACUUM (ANALYZE)');
    floor = await startProcess('floor', FLOOR_COMMAND, { ...THROUGHPUT_ENV, DATABASE_URL: databaseUrl }, join(workDir, 'floor'));
    if (entries.some((entry) => entry.preparedTarget !== undefined))
      Object.assign(comparisons, await startComparisons(databaseUrl, workDir));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const afterImport = rssOf(real.child.pid!);
    // Idle is what a server holds once nothing has asked it anything for a while: V8 gives back the
    // garbage of the start and the import only when its memory reducer runs, some seconds after
    // the work ends (so a figure taken at once said more about timing than about the server).
    await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
    const idle = { server: rssOf(real.child.pid!), floor: rssOf(floor.child.pid!) };
    const databasePids = serverDatabasePids(real.dataDir, db);
    const pair = { floor, real };
    await assertSameRefusal(organizations.main!, pair);

    const realRss = sampleRss(real.child.pid!, databasePids);
    const floorRss = sampleRss(floor.child.pid!);
    const results: ScenarioResult[] = [];
    for (const entry of entries) {
      const scenario = { name: entry.name, ...entry.build(organizations[entry.organization]!, bench) };
      const judged = entry.preparedTarget !== undefined;
      const sides = judged ? { ...pair, comparisons } : pair;
      const scenarioLoad = judged ? { ...load, rounds: load.targetRounds, warmUpRounds: load.targetWarmUpRounds } : load;
      // A rate-limited scenario runs a second server and floor on the database: its memory then is not the normal load's.
      const measured = scenario.rateLimited
        ? await realRss.withoutDatabase(() =>
            measureRateLimited(scenario, { ...THROUGHPUT_ENV, DATABASE_URL: databaseUrl }, workDir, db!, load),
          )
        : await measure(scenario, sides, databaseUrl, scenarioLoad, realRss.sampleDatabase);
      const result =
        judged && flags.baseline
          ? await measureAgainstBaseline(scenario, measured, floor, flags.baseline, databaseUrl, workDir, load)
          : measured;
      for (const mismatch of result.mismatches)
        violation(`${mode.kind}: ${scenario.name}`, `floor and server did not do the same work: ${mismatch}`);
      results.push({ ...result, preparedTarget: entry.preparedTarget });
    }
    await stopAll(comparisons);
    const realPeaks = realRss.stop();
    databasePids.stop();
    const main = organizations.main!;
    const live = isSelected(LIVE)
      ? await runLive({
          databaseUrl,
          env: THROUGHPUT_ENV,
          workDir,
          db,
          org: { id: main.id, authorizations: main.authorizations, emoji: main.volume.emoji },
          sizes: flags.quick ? LIVE_QUICK : LIVE_FULL,
          throughput: (server) =>
            serverRounds({ name: 'DELETE /api/v1/realm/emoji/{name}', ...emojiDeactivation(main, bench) }, server, load),
        })
      : undefined;
    const pages = isSelected(PAGES) ? await runPages(real, db, organizations.pages!, ROUNDS) : undefined;
    const anonymousDocuments = isSelected({ name: ANONYMOUS_DOCUMENTS_SCENARIO })
      ? await runAnonymousDocuments(real.url, real.child.pid!)
      : undefined;
    // Last, on its own: it adds 60,000 files and 30,000 invitations, and its memory is not the normal load's.
    const hostile = isSelected({ name: HOSTILE_SCENARIO }) ? await runHostile(real, db, hostileParties(organizations.main!)) : undefined;
    return {
      anonymousDocuments,
      hostile,
      live,
      pages,
      mode: mode.kind,
      data: describeVolume(volumes.main),
      scenarios: results,
      rss: {
        serverAfterStart: started,
        serverAfterImport: afterImport,
        serverIdle: idle.server,
        serverPeak: realPeaks.serverPeak,
        databasePeak: databasePids.all().length ? realPeaks.databasePeak : undefined,
        databaseAllPeak: databasePids.all().length ? realPeaks.databaseAllPeak : undefined,
        floorIdle: idle.floor,
        floorPeak: floorRss.stop().serverPeak,
      },
    };
  } finally {
    // The bench's own connections close first: the server stops the embedded PostgreSQL under them.
    await db?.end();
    await stopAll(comparisons);
    await floor?.stop();
    await real?.stop();
    await removeWorkDir(workDir);
  }
}

async function main() {
  const external = process.env.DATABASE_URL;
  const modes: ModeResults[] = [];
  const outbox: OutboxFairnessResult[] = [];
  const signIn: SignInResult[] = [];
  // The outbox and sign-in scenarios run servers of their own: `--only outbox` or `--only signin` runs nothing else.
  const SIGN_IN = { name: SIGN_IN_SCENARIO, word: 'signin' };
  const onlyOwn = flags.only?.every((word) => OUTBOX_SCENARIO.toLowerCase().includes(word.toLowerCase()) || word === SIGN_IN.word);
  const benchBoth = async (mode: Mode) => {
    if (!onlyOwn) modes.push(await benchMode(mode));
    if (isSelected({ name: OUTBOX_SCENARIO })) outbox.push(await benchOutboxFairness(mode, flags.quick ? 2_000 : 10_000));
    if (isSelected(SIGN_IN)) signIn.push(await benchSignIn(mode, flags.quick));
  };
  if (flags.mode !== 'external') await benchBoth({ kind: 'embedded' });
  if (external && flags.mode !== 'embedded') await benchBoth({ kind: 'external', databaseUrl: external });
  else if (!external) console.error('DATABASE_URL is unset: measured on the embedded PostgreSQL only.');
  const report = {
    quick: flags.quick,
    aa: flags['a-a'],
    // The commit scripts/bench/baseline.ts built it from.
    baseline: flags.baseline && readFileSync(join(flags.baseline, 'BASELINE'), 'utf8').trim(),
    date: new Date().toISOString(),
    machine: await machineFacts(external),
    load: LOAD,
    violations: violations(),
    modes,
    outbox,
    signIn,
  };
  const stamp = report.date.replace(/[:.]/g, '-');
  await mkdir('bench/results', { recursive: true });
  const partial = flags.only || (flags.mode && flags.mode !== 'both');
  const name = `bench/results/${flags['a-a'] ? 'a-a-' : ''}${flags.quick ? 'quick-' : partial ? 'partial-' : ''}${stamp}`;
  const markdown =
    violationsMarkdown() +
    markdownReport(report) +
    liveMarkdown(modes) +
    pagesMarkdown(modes) +
    anonymousDocumentsMarkdown(modes) +
    hostileMarkdown(modes) +
    outboxMarkdown(outbox) +
    signInMarkdown(signIn);
  await writeFile(`${name}.json`, `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(`${name}.md`, markdown);
  console.log(markdown);
  console.error(`Wrote ${name}.json and ${name}.md`);
  if (violations().length > 0) {
    console.error(
      `FAILED: ${violations().length} broken invariants:\n${violations()
        .map((v) => `- ${v.scenario}: ${v.reason}`)
        .join('\n')}`,
    );
    process.exitCode = 1;
  }
}

await main();
