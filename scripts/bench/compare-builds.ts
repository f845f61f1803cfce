// Compares builds of the server with each other and with the floor on one kind of request, as the
// changes are measured: each process started side by side on the bench's data, rounds
// alternating under autocannon (8 connections), CPU per request read from /proc for each process and
// for PostgreSQL's processes (its cluster's) apart (on two shared cores both count in the throughput).
//   DATABASE_URL=... npx tsx scripts/bench/compare-builds.ts setup
//     once: a database beside DATABASE_URL's with the bench's main organization and 100 pending invitations
//   npx tsx scripts/bench/compare-builds.ts <kind> <seconds> <rounds> <target>...
//     kind: rest, restme, list, page, inv, me, emoji, invite, invite100
//     target: floor, or a build's folder inside the checkout (dist, or a copy of an older dist/), with
//     extra node flags after @ (dist@--max-semi-space-size=16) and variables after + (dist+NAME=value)
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { generateApiKey } from '../../src/domain/users/api-keys.js';
import { freshDatabaseBeside } from './databases.js';
import {
  ATTACHMENT_PAGE_QUERY,
  ATTACHMENTS_QUERY,
  benchOrganization,
  emojiName,
  FULL,
  importedIds,
  insertListedInvitations,
  INVITATIONS_QUERY,
} from './organization.js';
import { cpuMsOf, postgresCpuSince, postmasterOf } from './load.js';
import { cliCommand, FLOOR_COMMAND, realServerCommand, startProcess, THROUGHPUT_ENV, type BenchProcess } from './processes.js';

const STATE = 'bench/compare-organization.json';
const WORK_DIR = '/tmp/teamchat-compare-builds';
/** Each target's first round, not counted: the compiler's warm-up (WARM_UP_SECONDS, default 2). */
const WARM_UP_SECONDS = Number(process.env.WARM_UP_SECONDS ?? 2);
/** How the addresses the invite rounds make begin. */
const INVITED_PREFIX = 'compare-';

interface Organization {
  databaseUrl: string;
  id: number;
  authorization: string;
}

async function setup(): Promise<void> {
  const databaseUrl = await freshDatabaseBeside(process.env.DATABASE_URL!, 'compare');
  const { file } = benchOrganization('main', FULL.main);
  const administrator = file.users![0]!;
  for (const user of file.users!) user.api_key = generateApiKey();
  mkdirSync(WORK_DIR, { recursive: true });
  writeFileSync(join(WORK_DIR, 'organization.json'), JSON.stringify(file));
  const env = { ...process.env, DATABASE_URL: databaseUrl, DATA_DIR: join(WORK_DIR, 'cli') };
  execFileSync(process.execPath, [...cliCommand(), 'import', join(WORK_DIR, 'organization.json')], { env, stdio: 'inherit' });
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { id, administratorId } = await importedIds(db, file);
    await insertListedInvitations(db, id, administratorId);
    const authorization = `Basic ${Buffer.from(`${administrator.email}:${administrator.api_key}`).toString('base64')}`;
    writeFileSync(STATE, JSON.stringify({ databaseUrl, id, authorization } satisfies Organization, null, 1));
  } finally {
    await db.end();
  }
  console.log(`Wrote ${STATE}.`);
}

type Request = { method: 'GET' | 'POST' | 'DELETE'; path: string; headers: Record<string, string>; body?: string };

/**
 * Requests made so far, across rounds: emoji names run on from round to round, so a deactivation the
 * previous round left in flight, which lands after the reset, is never one this round asks for (a 404).
 */
let count = 0;

/** The request of a kind; the writes' vary per request (emoji names, new addresses). */
function requestOf(kind: string, org: Organization): { fixed?: Request; next?: () => Request } {
  const headers = { authorization: org.authorization };
  const graphql = (query: string): { fixed: Request } => ({
    fixed: {
      method: 'POST',
      path: '/graphql',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    },
  });
  const invite = (addresses: number) => (): Request => {
    const batch = `${Date.now()}-${count++}`;
    const emails = Array.from({ length: addresses }, (_, k) => `${INVITED_PREFIX}${batch}-${k}@invitees.example`).join(',');
    return {
      method: 'POST',
      path: '/api/v1/invites',
      headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ invitee_emails: emails, stream_ids: '[]', invite_as: '400' }).toString(),
    };
  };
  const kinds: Record<string, () => { fixed?: Request; next?: () => Request }> = {
    rest: () => ({ fixed: { method: 'GET', path: '/api/v1/attachments', headers } }),
    restme: () => ({ fixed: { method: 'GET', path: '/api/v1/users/me', headers } }),
    list: () => graphql(ATTACHMENTS_QUERY),
    page: () => graphql(ATTACHMENT_PAGE_QUERY),
    inv: () => graphql(INVITATIONS_QUERY),
    me: () => graphql('{ me { id } }'),
    emoji: () => ({
      next: (): Request => ({ method: 'DELETE', path: `/api/v1/realm/emoji/${emojiName(count++ % FULL.main.emoji)}`, headers }),
    }),
    invite: () => ({ next: invite(1) }),
    invite100: () => ({ next: invite(100) }),
  };
  if (!kinds[kind]) throw new Error(`unknown kind ${kind}: ${Object.keys(kinds).join(', ')}`);
  return kinds[kind]();
}

interface Target {
  name: string;
  process: BenchProcess;
  rates: number[];
  cpu: number[];
  database: number[];
}

/** A target's variables: `dist+NAME=value+...` runs the build with them set. */
function targetEnv(pairs: string[]): Record<string, string> {
  return Object.fromEntries(pairs.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
}

async function start(name: string, org: Organization): Promise<Target> {
  const [build, ...variables] = name.split('+');
  const [folder, ...flags] = build!.split('@');
  const args =
    folder === 'floor' ? [...flags, ...FLOOR_COMMAND] : [...realServerCommand().slice(0, -1), ...flags, join(folder!, 'main.js')];
  const env = { ...THROUGHPUT_ENV, DATABASE_URL: org.databaseUrl, ...targetEnv(variables) };
  const started = await startProcess(name, args, env, join(WORK_DIR, name.replace(/\W/g, '_')));
  return { name, process: started, rates: [], cpu: [], database: [] };
}

/** The invitations (and their e-mails) the invite rounds made: the invitation list's 100 stay alone. */
async function removeInvitesMade(db: pg.Pool, org: Organization): Promise<void> {
  const made = `SELECT id FROM invitation WHERE "organizationId" = $1 AND email LIKE '${INVITED_PREFIX}%'`;
  await db.query(`DELETE FROM outbox_email WHERE "invitationId" IN (${made})`, [org.id]);
  await db.query(`DELETE FROM invitation WHERE id IN (${made})`, [org.id]);
}

async function round(
  target: Target,
  kind: string,
  org: Organization,
  db: pg.Pool,
  seconds: number,
  postmaster: number | undefined,
): Promise<{ rate: number; cpu: number; database: number }> {
  if (kind === 'emoji') await db.query('UPDATE custom_emoji SET deactivated = false WHERE "organizationId" = $1 AND deactivated', [org.id]);
  if (kind.startsWith('invite')) await removeInvitesMade(db, org);
  const { fixed, next } = requestOf(kind, org);
  const before = { own: cpuMsOf(target.process.child.pid!), database: postgresCpuSince(postmaster) };
  const result = await autocannon({
    url: target.process.url,
    connections: 8,
    duration: seconds,
    requests: [fixed ?? { setupRequest: (request) => ({ ...request, ...next!() }) }],
  });
  const msPerRequest = (ms: number) => ms / Math.max(1, result.requests.total);
  const failed = result.non2xx + result.errors;
  if (failed > 0) console.error(`${target.name}: ${failed} requests failed (${JSON.stringify(result.statusCodeStats)})`);
  return {
    rate: result.requests.average,
    cpu: msPerRequest(cpuMsOf(target.process.child.pid!) - before.own),
    database: msPerRequest(before.database()),
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function compare(kind: string, seconds: number, rounds: number, names: string[]): Promise<void> {
  const org = JSON.parse(readFileSync(STATE, 'utf8')) as Organization;
  const db = new pg.Pool({ connectionString: org.databaseUrl, max: 1 });
  const targets: Target[] = [];
  try {
    const postmaster = await postmasterOf(db);
    for (const name of names) targets.push(await start(name, org));
    if (kind === 'inv') await removeInvitesMade(db, org);
    for (const target of targets) await round(target, kind, org, db, WARM_UP_SECONDS, postmaster);
    for (let i = 0; i < rounds; i++) {
      for (const target of targets) {
        const { rate, cpu, database } = await round(target, kind, org, db, seconds, postmaster);
        target.rates.push(rate);
        target.cpu.push(cpu);
        target.database.push(database);
        console.error(`${target.name}: ${rate.toFixed(0)} req/s, CPU ${cpu.toFixed(3)} ms/request, PostgreSQL ${database.toFixed(3)}`);
      }
    }
    console.log(`| ${kind}: target | req/s (median) | CPU ms/request | PostgreSQL ms/request | rounds' CPU |\n|---|---:|---:|---:|---|`);
    for (const t of targets) {
      console.log(
        `| ${t.name} | ${median(t.rates).toFixed(0)} | ${median(t.cpu).toFixed(3)} | ${median(t.database).toFixed(3)} | ${t.cpu.map((c) => c.toFixed(3)).join(' ')} |`,
      );
    }
  } finally {
    for (const target of targets) await target.process.stop();
    await db.end();
  }
}

const [command, ...rest] = process.argv.slice(2);
if (command === 'setup') await setup();
else if (command && rest.length >= 3) await compare(command, Number(rest[0]), Number(rest[1]), rest.slice(2));
else {
  console.error('usage: compare-builds.ts setup | <kind> <seconds> <rounds> <target>...');
  process.exitCode = 2;
}
