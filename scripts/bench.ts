// npm run bench [-- --quick]: the server in this process over a fresh embedded database (or the
// PostgreSQL of DATABASE_URL), a generated organization, then four endpoints under load. Prints a
// Markdown table. The load generator shares the process, so Peak RSS covers server and client.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.js';
import { importOrganization } from '../src/import/import-organization.js';
import { parseOrganizationFile } from '../src/import/organization-file.js';
import { startServer, type RunningServer } from '../src/server.js';
import { markdownTable, runScenario, UnexpectedResponse, type Outcome, type Scenario } from './bench/load.js';
import { BENCH_USER_EMAIL, benchOrganization, emojiName, FULL, QUICK, type Volume } from './bench/organization.js';

const CONCURRENCY = 8;
const { values: flags } = parseArgs({ options: { quick: { type: 'boolean', default: false } } });
const volume = flags.quick ? QUICK : FULL;
const requests = flags.quick
  ? { attachments: 40, graphql: 40, invites: 30, emoji: 80, warmup: 2 }
  : { attachments: 400, graphql: 400, invites: 300, emoji: 1000, warmup: 10 };

interface Bench {
  server: RunningServer;
  organizationId: number;
  authorization: string;
  defaultChannelIds: number[];
}

async function setUp(dataDir: string): Promise<Bench> {
  const config = { ...loadConfig(), host: '127.0.0.1', port: 0, dataDir, rateLimits: [], smtpUrl: undefined };
  // Invitation e-mail is queued in the request's transaction; delivering it is a background job, left out here.
  const server = await startServer(config, undefined, { outbox: false });
  server.app.config.serverUrl = server.url;
  console.error(`Server started: RSS ${mib(process.memoryUsage().rss)}.`);
  const parsed = parseOrganizationFile(benchOrganization(volume));
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  const started = Date.now();
  const imported = await importOrganization(server.database.prisma, parsed.value);
  console.error(`Imported ${describe(volume)} in ${((Date.now() - started) / 1000).toFixed(1)} s: RSS ${mib(process.memoryUsage().rss)}.`);
  const channels = await server.database.prisma.channel.findMany({ where: { organizationId: imported.id, isDefault: true }, select: { id: true } });
  const apiKey = imported.apiKeys.get(BENCH_USER_EMAIL)!;
  return {
    server,
    organizationId: imported.id,
    authorization: 'Basic ' + Buffer.from(`${BENCH_USER_EMAIL}:${apiKey}`).toString('base64'),
    defaultChannelIds: channels.map((c) => c.id),
  };
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

function describe(v: Volume) {
  return `${v.users} users, ${v.channels} channels, ${v.attachments} attachments (${v.ownedByBenchUser} the benchmark user's), ${v.messages} messages, ${v.emoji} emoji`;
}

const ATTACHMENTS_QUERY = '{ attachments { uploadSpaceUsed attachments { id name pathId url size createTime messageIds messages { id dateSent } } } }';

function scenarios(bench: Bench): Scenario[] {
  const base = bench.server.url;
  const headers = { authorization: bench.authorization };
  const ownedCount = (list: unknown[] | undefined) =>
    list?.length === volume.ownedByBenchUser ? undefined : `expected ${volume.ownedByBenchUser} attachments, got ${list?.length}`;
  let invitation = 0;
  let emoji = 0;
  const runId = Date.now().toString(36);
  return [
    {
      name: 'GET /api/v1/attachments',
      requests: requests.attachments,
      send: () => fetch(`${base}/api/v1/attachments`, { headers }),
      check: (body) => ownedCount(JSON.parse(body).attachments),
    },
    {
      name: 'GraphQL attachments { messages }',
      requests: requests.graphql,
      send: () =>
        fetch(`${base}/graphql`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ query: ATTACHMENTS_QUERY }),
        }),
      check: (body) => {
        const result = JSON.parse(body);
        return result.errors ? JSON.stringify(result.errors) : ownedCount(result.data.attachments.attachments);
      },
      notAvailable: (status, body) => (status === 501 || body.includes('NOT_IMPLEMENTED') ? body : undefined),
    },
    {
      name: 'POST /api/v1/invites (5 addresses)',
      requests: requests.invites,
      send: () => {
        const batch = invitation++;
        const emails = Array.from({ length: 5 }, (_, k) => `invitee-${runId}-${batch}-${k}@invitees.example`);
        return fetch(`${base}/api/v1/invites`, {
          method: 'POST',
          headers,
          body: new URLSearchParams({ invitee_emails: emails.join(','), stream_ids: JSON.stringify(bench.defaultChannelIds) }),
        });
      },
    },
    {
      name: 'DELETE /api/v1/realm/emoji/{name}',
      requests: requests.emoji,
      send: () => fetch(`${base}/api/v1/realm/emoji/${emojiName(emoji++)}`, { method: 'DELETE', headers }),
    },
  ];
}

async function main(): Promise<number> {
  const dataDir = await mkdtemp(join(tmpdir(), 'teamchat-bench-'));
  let bench: Bench | undefined;
  try {
    bench = await setUp(dataDir);
    const outcomes: Outcome[] = [];
    for (const scenario of scenarios(bench)) {
      console.error(`Running ${scenario.name} ...`);
      outcomes.push(await runScenario(scenario, CONCURRENCY, requests.warmup));
    }
    const database = bench.server.database.kind === 'external' ? 'PostgreSQL (DATABASE_URL)' : 'embedded PostgreSQL';
    console.log(`Benchmark${flags.quick ? ' (--quick)' : ''}: ${database}, Node ${process.version}, ${describe(volume)}.\n`);
    console.log(markdownTable(outcomes, CONCURRENCY));
    console.log(`\nProcess peak RSS (maxRSS, whole run including the import): ${mib(process.resourceUsage().maxRSS * 1024)}`);
    for (const o of outcomes) if (o.kind === 'not-available') console.log(`n/a: ${o.name} answered ${o.reason.slice(0, 200)}`);
    return 0;
  } catch (error) {
    if (!(error instanceof UnexpectedResponse)) throw error;
    console.error(error.message);
    return 1;
  } finally {
    if (bench) await tearDown(bench);
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** A shared PostgreSQL database keeps no benchmark organization behind. */
async function tearDown(bench: Bench) {
  const prisma = bench.server.database.prisma;
  if (bench.server.database.kind === 'external') {
    // Channels point at groups with RESTRICT; remove them before the cascade takes the groups.
    await prisma.channel.deleteMany({ where: { organizationId: bench.organizationId } });
    await prisma.organization.delete({ where: { id: bench.organizationId } });
  }
  await bench.server.close();
}

process.exitCode = await main();
