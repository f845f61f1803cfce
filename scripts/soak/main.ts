// npm run soak [-- --minutes N] [-- --seed S]: the fault soak (see docs/guide/operations.md, "The fault soak").
// Two server processes, started as `npm start` starts them, on a fresh database beside DATABASE_URL's
// (or in an embedded PostgreSQL of the soak's own without it; through PgBouncer when
// DATABASE_DIRECT_URL is also given, as the servers then use both), each through a TCP proxy of the
// soak and with a real SMTP receiver of its own; a mixed workload from the users of several
// organizations, 200 subscriptions over both transports and 50 long-poll queues, while faults are
// injected at random moments of a seeded run. Then it checks the recorded history against the
// database, the storage, the e-mails received and the events each client received (checks.ts), and
// exits 1 on any broken invariant.
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import pg from 'pg';
import { generateApiKey } from '../../src/domain/users/api-keys.js';
import { freshDatabaseBeside } from '../bench/databases.js';
import { benchOrganization } from '../bench/organization.js';
import { cliCommand } from '../bench/processes.js';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres.js';
import { runChecks, type CheckResult, type LiveRecord } from './checks.js';
import { FAULT_KINDS, injectFaults, type FaultKind } from './faults.js';
import { startFleet, type Fleet } from './fleet.js';
import { History } from './history.js';
import { longPoll, subscribe, type LiveClient, type SubscriptionField } from './live.js';
import { seededRandom } from './random.js';
import { readSnapshot } from './snapshot.js';
import { workload, type SoakOrganization } from './workload.js';

const { values: flags } = parseArgs({
  options: {
    minutes: { type: 'string', default: '3' },
    seed: { type: 'string' },
    organizations: { type: 'string', default: '3' },
    users: { type: 'string', default: '10' },
    subscriptions: { type: 'string', default: '200' },
    queues: { type: 'string', default: '50' },
    keep: { type: 'boolean', default: false },
    // Only these kinds of fault (comma-separated; scripts/soak/faults.ts), e.g. to reproduce one.
    faults: { type: 'string' },
  },
});

const SERVERS = 2;
const WORKERS_PER_ORGANIZATION = 3;
/** The outbox retries a refused e-mail after a minute, then two: the drain waits that long and more. */
const DRAIN_MS = 6 * 60_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const named = (url: string, database: string) => Object.assign(new URL(url), { pathname: `/${database}` }).toString();

async function sweepFiles(env: Record<string, string>) {
  const { stdout } = await promisify(execFile)(process.execPath, [...cliCommand(), 'sweep-files', '--grace-minutes', '0'], {
    env: { ...process.env, ...env },
  });
  console.error(`soak: file sweep: ${stdout.trim().split('\n').pop()}`);
}

async function importOrganization(
  index: number,
  users: number,
  env: Record<string, string>,
  workDir: string,
  db: pg.Pool,
): Promise<SoakOrganization> {
  const { file } = benchOrganization(`soak${index}`, { users, attachments: 0, ownedByBenchUser: 0, linksPerOwned: 0, emoji: 0 });
  const keys = file.users!.map((user) => (user.api_key = generateApiKey()));
  const path = join(workDir, `soak${index}.json`);
  await writeFile(path, JSON.stringify(file));
  await promisify(execFile)(process.execPath, [...cliCommand(), 'import', path], { env: { ...process.env, ...env } });
  const emails = file.users!.map((user) => String(user.email));
  const { rows } = await db.query<{ id: number; email: string; organizationId: number; role: number }>(
    'SELECT id, email, "organizationId", role FROM user_account WHERE email = ANY($1::text[])',
    [emails],
  );
  const byEmail = new Map(rows.map((row) => [row.email, row]));
  return {
    id: rows[0]!.organizationId,
    name: file.organization.string_id as string,
    users: emails.map((email, i) => ({
      id: byEmail.get(email)!.id,
      email,
      authorization: `Basic ${Buffer.from(`${email}:${keys[i]}`).toString('base64')}`,
      administrator: byEmail.get(email)!.role <= 200,
    })),
  };
}

/** 200 subscriptions (half SSE, half WebSocket; emoji, files, and administrators' invitations) and 50 queues, spread over every user. */
function openLiveClients(
  organizations: SoakOrganization[],
  fleet: Fleet,
  history: History,
  random: ReturnType<typeof seededRandom>,
  db: pg.Pool,
  from: number,
): LiveClient[] {
  const users = organizations.flatMap((org) => org.users.map((user) => ({ ...user, organizationId: org.id })));
  const clients: LiveClient[] = [];
  const subscriptions = Number(flags.subscriptions);
  for (let i = 0; i < subscriptions; i++) {
    const user = users[i % users.length]!;
    const field: SubscriptionField =
      i % 4 === 3 ? 'attachmentsChanged' : user.administrator && i % 4 === 2 ? 'invitationsChanged' : 'customEmojiChanged';
    const transport = i % 2 === 0 ? 'sse' : 'ws';
    clients.push(subscribe(transport, field, user, from, fleet.servers, history, random, `subscription ${i} (${transport}, ${field})`));
  }
  const queueStart = async (queueId: string) => {
    const { rows } = await db.query<{ startAfter: string }>('SELECT "startAfter"::text FROM event_queue WHERE id = $1', [queueId]);
    return rows[0] ? Number(rows[0].startAfter) : undefined;
  };
  for (let i = 0; i < Number(flags.queues); i++) {
    const user = users[(i * 7) % users.length]!;
    clients.push(
      longPoll(user, ['realm_emoji', 'attachment', 'invites_changed'], fleet.servers, history, random, `queue ${i}`, queueStart),
    );
  }
  return clients;
}

/** Waits until no e-mail is pending (the outbox retries refused ones after a minute, then two). */
async function drainOutbox(db: pg.Pool, history: History) {
  const deadline = Date.now() + DRAIN_MS;
  let reported = Date.now();
  for (;;) {
    const { rows } = await db.query<{ pending: number }>(`SELECT count(*)::int AS pending FROM outbox_email WHERE status = 'PENDING'`);
    if (rows[0]!.pending === 0) return;
    if (Date.now() > deadline)
      return history.violation(`${rows[0]!.pending} e-mails still pending ${DRAIN_MS / 60_000} minutes after the run`);
    if (Date.now() > reported + 10_000) {
      reported = Date.now();
      console.error(`soak: ${rows[0]!.pending} e-mails pending (refused ones are retried a minute later)`);
    }
    await sleep(1_000);
  }
}

/** Waits until every event is positioned and every live client has received its last one (or 60 s). */
async function liveClientsCaughtUp(db: pg.Pool, clients: LiveClient[]) {
  const deadline = Date.now() + 60_000;
  let reported = Date.now();
  while (Date.now() < deadline) {
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM event WHERE position IS NULL');
    let behind = rows[0]!.n;
    for (const client of clients) {
      const start = await client.startAfter();
      if (start === undefined) continue;
      const expected = await expectedPositions(db, client, start);
      if (expected.length > 0 && (client.received.at(-1) ?? -1) < expected.at(-1)!) behind++;
    }
    if (behind === 0) return;
    if (Date.now() > reported + 5_000) {
      reported = Date.now();
      console.error(`soak: ${rows[0]!.n} events not positioned and ${behind - rows[0]!.n} live clients behind`);
    }
    await sleep(500);
  }
}

/**
 * Without DATABASE_URL: a PostgreSQL of the soak's own (the embedded one; the proxies reach its socket) in a
 * temporary folder, removed at the end unless the run failed or --keep was given.
 */
async function embeddedPostgres(): Promise<{ url: string; stop(keep: boolean): Promise<void> }> {
  const folder = await mkdtemp(join(tmpdir(), 'tc-soak-postgres-'));
  // As root the embedded PostgreSQL runs as the postgres user: it must reach the folder.
  await chmod(folder, 0o711);
  const postgres = await startEmbeddedPostgres(folder);
  console.error(`soak: DATABASE_URL is unset: an embedded PostgreSQL in ${folder}`);
  return {
    // Its own database appears with a server's first start; the soak's is made beside `postgres`.
    url: named(postgres.url, 'postgres'),
    async stop(keep) {
      await postgres.stop();
      if (keep) console.error(`soak: its cluster is kept in ${folder}`);
      else await rm(folder, { recursive: true, force: true });
    },
  };
}

/** The positions a live client should have received so far (as the checks count them, from the database). */
async function expectedPositions(db: pg.Pool, client: LiveClient, startAfter: number): Promise<number[]> {
  const { rows } = await db.query<{ position: string }>(
    `SELECT e.position::text AS position FROM event e
      WHERE e."organizationId" = $1 AND e.position > $2 AND (e."recipientIds" = '{}' OR $3 = ANY(e."recipientIds")) AND e.type = ANY($4::text[])
      ORDER BY e.position`,
    [client.organizationId, startAfter, client.user.id, client.types],
  );
  return rows.map((row) => Number(row.position));
}

async function liveRecord(client: LiveClient): Promise<LiveRecord> {
  const { name, organizationId, user, types, received, receivedOn, reconnections } = client;
  return { name, organizationId, userId: user.id, types, startAfter: await client.startAfter(), received, receivedOn, reconnections };
}

async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(10_000) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

async function main() {
  const embedded = process.env.DATABASE_URL ? undefined : await embeddedPostgres();
  let failed = true;
  try {
    failed = await soak(process.env.DATABASE_URL || embedded!.url, process.env.DATABASE_DIRECT_URL || undefined);
  } finally {
    await embedded?.stop(flags.keep || failed);
  }
  if (failed) process.exitCode = 1;
}

/** One run on a fresh database beside `databaseUrl`'s; whether an invariant broke. */
async function soak(databaseUrl: string, directUrl: string | undefined): Promise<boolean> {
  const seed = flags.seed ? Number(flags.seed) : Math.floor(Math.random() * 2 ** 31);
  // One source per part, so that the faults drawn do not depend on how many requests ran before them.
  const random = seededRandom(seed);
  const faultRandom = seededRandom(seed + 1);
  const liveRandom = seededRandom(seed + 2);
  const minutes = Number(flags.minutes);
  console.error(
    `soak: seed ${seed} (--seed ${seed} to replay the same choices), ${minutes} minutes, ${directUrl ? 'through PgBouncer (DATABASE_URL) and directly (DATABASE_DIRECT_URL)' : 'directly'}`,
  );

  const soakDirect = await freshDatabaseBeside(directUrl ?? databaseUrl, 'soak');
  const database = new URL(soakDirect).pathname.slice(1);
  const soakUrl = named(databaseUrl, database);
  const workDir = await mkdtemp(join(tmpdir(), 'tc-soak-'));
  await chmod(workDir, 0o755);
  const history = new History();
  let results: CheckResult[] = [];
  let fleet: Fleet | undefined;
  const db = new pg.Pool({ connectionString: soakDirect, max: 4, application_name: 'soak' });
  db.on('error', () => {});
  const liveClients: LiveClient[] = [];
  const emailFrom = 'Soak <noreply@soak.example>';
  try {
    fleet = await startFleet({
      databaseUrl: soakUrl,
      directUrl: directUrl ? soakDirect : undefined,
      count: SERVERS,
      env: {
        NODE_ENV: 'production',
        API_RATE_LIMIT: 'off',
        API_IP_RATE_LIMIT: 'off',
        AUTH_FAILURE_LIMIT: 'off',
        SERVER_URL: 'http://soak.example',
        DATA_DIR: join(workDir, 'servers'),
        UPLOADS_DIR: join(workDir, 'uploads'),
        EVENT_HEARTBEAT_SECONDS: '10',
        EMAIL_FROM: emailFrom,
      },
    });
    const cliEnv = { DATABASE_URL: soakUrl, DATABASE_DIRECT_URL: directUrl ? soakDirect : '' };
    const organizations: SoakOrganization[] = [];
    for (let i = 0; i < Number(flags.organizations); i++)
      organizations.push(await importOrganization(i, Number(flags.users), cliEnv, workDir, db));
    const { rows } = await db.query<{ last: string }>('SELECT coalesce(max(position), 0)::text AS last FROM event');
    liveClients.push(...openLiveClients(organizations, fleet, history, liveRandom, db, Number(rows[0]!.last)));

    const runId = Date.now().toString(36);
    const startedAt = (history.startedAt = Date.now());
    const endsAt = startedAt + minutes * 60_000;
    const over = () => Date.now() >= endsAt;
    const loads = organizations.map((org) => workload(org, fleet!.servers, history, fleet!.mail, random, runId));
    const running = loads.flatMap((load) => Array.from({ length: WORKERS_PER_ORGANIZATION }, () => load.run(over)));
    const injecting = injectFaults(
      { fleet, history, random: faultRandom, db, database, startedAt, burst: (server) => faultRandom.pick(loads).burst(server, 12) },
      over,
      () => Date.now() >= startedAt + (minutes * 60_000) / 2,
      flags.faults ? (flags.faults.split(',') as FaultKind[]) : FAULT_KINDS,
    );
    const progress = setInterval(
      () =>
        console.error(
          `soak: ${((Date.now() - startedAt) / 1000).toFixed(0)} s: ${history.progress()}; up: ${fleet!.servers
            .filter((s) => s.up())
            .map((s) => s.name)
            .join(', ')}`,
        ),
      10_000,
    );
    await Promise.all([...running, injecting]);
    clearInterval(progress);
    console.error(`soak: the run is over (${history.operations.length} requests); restarting any server that is down, then draining`);
    for (const server of fleet.servers)
      if (!server.up())
        await server.start().catch((error: Error) => history.violation(`${server.name} did not start again: ${error.message}`));
    fleet.mail.setRefusing(false);
    await drainOutbox(db, history);
    await liveClientsCaughtUp(db, liveClients);
    // Bytes a killed process left without a row (an upload stored, not committed; a deletion committed,
    // its bytes not yet removed) are the file sweep's to remove: run it now, with no grace, as an
    // operator would (docs/guide/operations.md, "Storage": npm run cli -- sweep-files).
    await sweepFiles({ ...cliEnv, DATA_DIR: join(workDir, 'servers'), UPLOADS_DIR: join(workDir, 'uploads') }).catch((error: Error) =>
      history.violation(`the file sweep failed: ${error.message}`),
    );
    for (const client of liveClients) client.stop();

    for (const server of fleet.servers) {
      for (const exit of server.unexpectedExits) history.violation(exit);
      if (!(await answers(server.url))) history.violation(`${server.name} does not answer /health with 200 at the end`);
    }
    const organizationIds = organizations.map((org) => org.id);
    const snapshot = await readSnapshot(db, organizationIds, join(workDir, 'uploads'), emailFrom);
    results = runChecks({ history, snapshot, emails: fleet.mail.delivered(), clients: await Promise.all(liveClients.map(liveRecord)) });
    report(history, results, seed);
    const errors = fleet.servers.flatMap((server) =>
      server.output.filter((line) => line.includes('"level":50') || line.includes('"level":60')),
    );
    if (errors.length > 0)
      console.log(`\nThe servers' error log lines (the last ${errors.length}):\n${errors.map((line) => line.slice(0, 3000)).join('\n')}`);
  } finally {
    for (const client of liveClients) client.stop();
    await fleet?.stop();
    await db.end();
    await rm(workDir, { recursive: true, force: true });
  }
  const failed = history.violations.length > 0 || results.length === 0 || results.some((r) => r.violations.length > 0);
  if (!flags.keep && !failed) {
    const admin = new pg.Client({ connectionString: directUrl ?? databaseUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await admin.end();
  } else {
    console.error(`soak: the database ${database} is kept for inspection`);
  }
  return failed;
}

/** The requests by kind and outcome, the faults, each check with what it examined, and every broken invariant. */
function report(history: History, results: CheckResult[], seed: number) {
  const broken = [...history.violations, ...results.flatMap((r) => r.violations.map((v) => `${r.name}: ${v}`))];
  const lines = [`# Fault soak, seed ${seed}`, ''];
  if (broken.length > 0) {
    lines.push(`**FAILED: ${broken.length} broken invariants:**`, '', ...broken.map((v) => `- ${v.replaceAll('\n', ' | ')}`), '');
  } else {
    lines.push('Every invariant held.', '');
  }
  lines.push('| requests | total | ok | refused | unknown outcome |', '|---|---:|---:|---:|---:|');
  for (const [kind, c] of Object.entries(history.counts())) lines.push(`| ${kind} | ${c.total} | ${c.ok} | ${c.refused} | ${c.unknown} |`);
  const byKind = new Map<string, number>();
  for (const fault of history.faults) byKind.set(fault.kind, (byKind.get(fault.kind) ?? 0) + 1);
  const at = (ms: number) => `${((ms - history.startedAt) / 1000).toFixed(1)} s`;
  lines.push(
    '',
    `Faults: ${[...byKind].map(([kind, n]) => `${kind} ${n}`).join(', ') || 'none'} (${history.faults.map((f) => `${at(f.start)}-${at(f.end)} ${f.kind}: ${f.detail}`).join('; ')}).`,
    '',
    '| check | examined | broken | |',
    '|---|---:|---:|---|',
    ...results.map((r) => `| ${r.name} | ${r.examined} ${r.unit} | ${r.violations.length} | ${r.notes ?? ''} |`),
  );
  console.log(lines.join('\n'));
}

await main();
