// npm run bench [-- --quick]: the real server and the floor (scripts/bench/floor.ts) side by side on
// the same data, alternately, under autocannon; writes bench/results/<stamp>.{json,md}.
// See the README's "Benchmark" section.
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { embeddedDatabaseUrl } from '../src/db/embedded-postgres.js';
import { generateApiKey } from '../src/domain/users/api-keys.js';
import { best, runRound, type Round, type Scenario } from './bench/load.js';
import { benchOutboxFairness, OUTBOX_SCENARIO, outboxMarkdown, type OutboxFairnessResult } from './bench/outbox-fairness.js';
import { ATTACHMENTS_QUERY, benchOrganization, describeVolume, emojiName, FULL, QUICK, type DataSet, type Volume } from './bench/organization.js';
import { cliCommand, embeddedPostgresPids, FLOOR_COMMAND, realServerCommand, rssOf, sampleRss, startProcess, type BenchProcess } from './bench/processes.js';
import { machineFacts, markdownReport, type ModeResult, type ScenarioResult } from './bench/report.js';

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    // Focused runs while working on one path: scenarios whose name contains one of the words
    // (case-insensitive); the organization-size rounds only with the word "size".
    only: { type: 'string', multiple: true },
    // embedded, external or both (the default: external when DATABASE_URL is set).
    mode: { type: 'string' },
  },
});
const selected = (name: string) => !flags.only || flags.only.some((word) => name.toLowerCase().includes(word.toLowerCase()));
const sizeSelected = !flags.only || flags.only.includes('size');
const sizeScenario = (name: DataSet) => `GET /api/v1/attachments, ${volumes[name].attachments} attachments in the organization`;
const volumes = flags.quick ? QUICK : FULL;
const LOAD = flags.quick ? { connections: 8, seconds: 2, rounds: 1 } : { connections: 8, seconds: 6, rounds: 2 };
const SERVER_URL = 'http://bench.example';
const run = promisify(execFile);

type Mode = { kind: 'embedded' } | { kind: 'external'; databaseUrl: string };

interface Organization {
  id: number;
  authorization: string;
  /** Another user of the organization (a member), for the probe beside the invitations. */
  otherUser: string;
  volume: Volume;
}

function adminUrl(databaseUrl: string, database: string): string {
  const url = new URL(databaseUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/** A fresh database beside DATABASE_URL's (the role needs CREATEDB). */
async function createBenchDatabase(databaseUrl: string): Promise<string> {
  const name = `${new URL(databaseUrl).pathname.slice(1)}_bench`;
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  return adminUrl(databaseUrl, name);
}

/** Imports one organization through the CLI's import (the import path), with a known key for the benchmark user. */
async function importOrganization(name: DataSet, env: Record<string, string>, workDir: string, db: pg.Pool): Promise<Organization> {
  const volume = volumes[name];
  const { file, benchUserEmail } = benchOrganization(name, volume);
  const apiKey = generateApiKey();
  const otherKey = generateApiKey();
  file.users![0]!.api_key = apiKey;
  file.users![1]!.api_key = otherKey;
  const path = join(workDir, `${name}.json`);
  await writeFile(path, JSON.stringify(file));
  const started = Date.now();
  await run(process.execPath, [...cliCommand(), 'import', path], { env: { ...process.env, ...env }, maxBuffer: 1 << 24 });
  console.error(`Imported ${name}: ${describeVolume(volume)} in ${((Date.now() - started) / 1000).toFixed(1)} s.`);
  const { rows } = await db.query('SELECT id FROM organization WHERE "stringId" = $1', [file.organization.string_id]);
  const basic = (email: string, key: string) => 'Basic ' + Buffer.from(`${email}:${key}`).toString('base64');
  return { id: rows[0].id, volume, authorization: basic(benchUserEmail, apiKey), otherUser: basic(String(file.users![1]!.email), otherKey) };
}

/**
 * Waits until the server's worker has delivered every e-mail due (at most 5 minutes), so no round,
 * the floor's above all, runs beside the previous round's deliveries.
 */
async function outboxDelivered(db: pg.Pool) {
  for (const deadline = Date.now() + 300_000; Date.now() < deadline; ) {
    const { rows } = await db.query(`SELECT count(*)::int AS due FROM outbox_email WHERE status = 'PENDING' AND "nextAttemptAt" <= $1::timestamp(3)`, [new Date().toISOString()]);
    if (rows[0].due === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error('the server did not deliver its queued e-mails within 5 minutes');
}

function scenarios(org: Organization, db: pg.Pool): Scenario[] {
  const headers = { authorization: org.authorization };
  let emoji = 0;
  let invitation = 0;
  const runId = Date.now().toString(36);
  const invites = (count: number): Scenario => ({
    name: `POST /api/v1/invites, ${count} address${count > 1 ? 'es' : ''}`,
    method: 'POST',
    path: '/api/v1/invites',
    minimumSeconds: count > 1 ? 6 : 0,
    probe: count > 1 ? { path: '/api/v1/users/me', headers: { authorization: org.otherUser } } : undefined,
    reset: () => outboxDelivered(db),
    headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
    vary: (request) => {
      const batch = invitation++;
      const emails = Array.from({ length: count }, (_, k) => `invitee-${runId}-${batch}-${k}@invitees.example`);
      return { ...request, body: new URLSearchParams({ invitee_emails: emails.join(','), stream_ids: '[]', invite_as: '400' }).toString() };
    },
  });
  return [
    { name: 'GET /api/v1/attachments', method: 'GET', path: '/api/v1/attachments', headers },
    {
      name: 'GraphQL attachments { messages { id dateSent } }',
      method: 'POST',
      path: '/graphql',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ query: ATTACHMENTS_QUERY }),
    },
    {
      name: 'DELETE /api/v1/realm/emoji/{name}',
      method: 'DELETE',
      path: '/',
      headers,
      vary: () => ({ path: `/api/v1/realm/emoji/${emojiName(emoji++ % org.volume.emoji)}` }),
      // The names run on from round to round: a request the previous round left in flight can
      // still deactivate its emoji after this reset, and must not be one this round asks for.
      reset: async () => {
        await db.query('UPDATE custom_emoji SET deactivated = false WHERE "organizationId" = $1 AND deactivated', [org.id]);
      },
    },
    invites(1),
    invites(100),
  ];
}

/** Same request to both: attachments must match byte for byte, the others in status and body. */
async function assertSameAnswers(list: Scenario[], floor: BenchProcess, real: BenchProcess) {
  for (const scenario of list) {
    const answer = async (server: BenchProcess) => {
      const request = scenario.vary?.({ path: scenario.path, body: scenario.body }) ?? scenario;
      const response = await fetch(server.url + request.path, { method: scenario.method, headers: scenario.headers, body: request.body });
      return { status: response.status, body: Buffer.from(await response.arrayBuffer()) };
    };
    const [a, b] = [await answer(floor), await answer(real)];
    if (a.status !== b.status || !a.body.equals(b.body)) {
      throw new Error(`${scenario.name}: the floor answered ${a.status} ${a.body.toString().slice(0, 300)}\nthe server answered ${b.status} ${b.body.toString().slice(0, 300)}`);
    }
  }
  const missing = (server: BenchProcess) =>
    fetch(`${server.url}/api/v1/realm/emoji/no_such_emoji`, { method: 'DELETE', headers: list[0]!.headers }).then(async (r) => `${r.status} ${await r.text()}`);
  const [a, b] = [await missing(floor), await missing(real)];
  if (a !== b) throw new Error(`unknown emoji: the floor answered ${a}, the server ${b}`);
}

/** Alternates floor and server, `rounds` times each; keeps each one's best round. */
async function measure(scenario: Scenario, floor: BenchProcess, real: BenchProcess): Promise<ScenarioResult> {
  let floorBest: Round | undefined;
  let realBest: Round | undefined;
  let serverPeakRss = 0;
  for (let i = 0; i < LOAD.rounds; i++) {
    floorBest = best(floorBest, await runRound(scenario, floor, LOAD));
    const rss = sampleRss(real.child.pid!, () => []);
    realBest = best(realBest, await runRound(scenario, real, LOAD));
    serverPeakRss = Math.max(serverPeakRss, rss.stop().serverPeak);
  }
  console.error(`${scenario.name}: server ${realBest!.requestsPerSecond.toFixed(0)} req/s, floor ${floorBest!.requestsPerSecond.toFixed(0)} req/s`);
  return { name: scenario.name, real: realBest!, floor: floorBest!, serverPeakRss };
}

async function benchMode(mode: Mode): Promise<ModeResult> {
  const workDir = await mkdtemp(join(tmpdir(), 'tc-bench-'));
  // Run as root, the embedded PostgreSQL runs as the postgres user: it must reach the folder.
  await chmod(workDir, 0o755);
  const serverDir = join(workDir, 'server');
  // The embedded database is the server's own, under its DATA_DIR; the CLI and the floor reach it there.
  const databaseUrl = mode.kind === 'external' ? await createBenchDatabase(mode.databaseUrl) : embeddedDatabaseUrl(serverDir);
  const common = { NODE_ENV: 'production', API_RATE_LIMIT: 'off', SERVER_URL, INVITATION_LINK_VALIDITY_MINUTES: '14400' };
  const env = { ...common, DATA_DIR: serverDir, DATABASE_URL: mode.kind === 'external' ? databaseUrl : '' };
  let db: pg.Pool | undefined;
  let real: BenchProcess | undefined;
  let floor: BenchProcess | undefined;
  try {
    real = await startProcess('server', realServerCommand(), env, serverDir);
    const started = rssOf(real.child.pid!);
    db = new pg.Pool({ connectionString: databaseUrl, max: 2 });
    const organizations = {} as Partial<Record<DataSet, Organization>>;
    for (const name of Object.keys(volumes) as DataSet[]) {
      if (name === 'main' || sizeSelected) organizations[name] = await importOrganization(name, env, workDir, db);
    }
    floor = await startProcess('floor', FLOOR_COMMAND, { ...common, DATABASE_URL: databaseUrl }, join(workDir, 'floor'));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const idle = { server: rssOf(real.child.pid!), floor: rssOf(floor.child.pid!) };
    const databasePids = () => embeddedPostgresPids(real!.dataDir);
    const all = scenarios(organizations.main!, db);
    await assertSameAnswers(all, floor, real);
    const list = all.filter((scenario) => selected(scenario.name));

    const realRss = sampleRss(real.child.pid!, databasePids);
    const floorRss = sampleRss(floor.child.pid!, () => []);
    const results: ScenarioResult[] = [];
    for (const scenario of list) results.push(await measure(scenario, floor, real));
    for (const name of ['small', 'large'] as const) {
      if (!organizations[name]) continue;
      const [rest] = scenarios(organizations[name]!, db);
      // They follow the invitations: the e-mails those queued are delivered first.
      results.push(await measure({ ...rest!, name: sizeScenario(name), reset: () => outboxDelivered(db!) }, floor, real));
    }
    const realPeaks = realRss.stop();
    return {
      mode: mode.kind,
      data: describeVolume(volumes.main),
      scenarios: results,
      rss: {
        serverAfterStart: started,
        serverIdle: idle.server,
        serverPeak: realPeaks.serverPeak,
        databasePeak: databasePids().length ? realPeaks.databasePeak : undefined,
        floorIdle: idle.floor,
        floorPeak: floorRss.stop().serverPeak,
      },
    };
  } finally {
    // The bench's own connections close first: the server stops the embedded PostgreSQL under them.
    await db?.end();
    await floor?.stop();
    await real?.stop();
    await rm(workDir, { recursive: true, force: true });
  }
}

async function main() {
  const external = process.env.DATABASE_URL;
  const modes: ModeResult[] = [];
  const outbox: OutboxFairnessResult[] = [];
  // The outbox scenario runs a server of its own: `--only outbox` runs nothing else.
  const onlyOutbox = flags.only?.every((word) => OUTBOX_SCENARIO.toLowerCase().includes(word.toLowerCase()));
  const benchBoth = async (mode: Mode) => {
    if (!onlyOutbox) modes.push(await benchMode(mode));
    if (selected(OUTBOX_SCENARIO)) outbox.push(await benchOutboxFairness(mode, flags.quick ? 2_000 : 10_000));
  };
  if (flags.mode !== 'external') await benchBoth({ kind: 'embedded' });
  if (external && flags.mode !== 'embedded') await benchBoth({ kind: 'external', databaseUrl: external });
  else if (!external) console.error('DATABASE_URL is unset: measured on the embedded PostgreSQL only.');
  const report = { quick: flags.quick, date: new Date().toISOString(), machine: await machineFacts(external), load: LOAD, modes, outbox };
  const stamp = report.date.replace(/[:.]/g, '-');
  await mkdir('bench/results', { recursive: true });
  const partial = flags.only || flags.mode;
  const name = `bench/results/${flags.quick ? 'quick-' : partial ? 'partial-' : ''}${stamp}`;
  const markdown = markdownReport(report) + outboxMarkdown(outbox);
  await writeFile(`${name}.json`, JSON.stringify(report, null, 2) + '\n');
  await writeFile(`${name}.md`, markdown);
  console.log(markdown);
  console.error(`Wrote ${name}.json and ${name}.md`);
}

await main();
