// Signing in, on a server process of its own with every limit off:
// 1. POST /api/v1/fetch_api_key with the right password under autocannon, against a floor that
//    verifies the same stored Argon2id hash with the same library (scripts/bench/sign-in-floor.ts),
//    alternately, in the same run.
// 2. A flood: 200 parallel wrong passwords from 50 client addresses (X-Forwarded-For, the bench being
//    a trusted proxy), beside another user's small requests (GET /api/v1/users/me, one at a time):
//    that user's p99 (target under 250 ms), the server's peak RSS (target: under 512 MiB, as for the
//    other hostile load; the 200 MiB of ordinary load is printed beside it), and every flood answer
//    401 or 429.
// Flood answers other than 401 and 429, and the other user's failed requests, are broken invariants
// (scripts/bench/violations.ts); the targets on latency and memory are figures in the report.
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import pg from 'pg';
import { embeddedDatabaseUrl } from '../../src/db/embedded-postgres.js';
import { generateApiKey } from '../../src/domain/users/api-keys.js';
import { dropDatabaseBeside, freshDatabaseBeside } from './databases.js';
import { benchOrganization } from './organization.js';
import { cliCommand, realServerCommand, removeWorkDir, rssOf, sampleRss, startProcess, type BenchProcess } from './processes.js';
import { violation } from './violations.js';

export const SIGN_IN_SCENARIO = 'Signing in: fetch_api_key against an Argon2id floor; a flood of wrong passwords beside another user';

const PASSWORD = 'bench-lighthouse-keeper-2026';
const TARGETS = { otherP99Ms: 250, peakRssMiB: 512, ordinaryPeakRssMiB: 200 };
const FLOOD = { parallel: 200, addresses: 50 };

export interface SignInResult {
  mode: 'embedded' | 'external';
  throughput: {
    serverPerSecond: number;
    floorPerSecond: number;
    serverP99Ms: number;
    floorP99Ms: number;
    serverFailed: number;
    floorFailed: number;
  };
  flood: {
    seconds: number;
    answers: Record<string, number>;
    perSecond: number;
    other: { requests: number; p50Ms: number; p99Ms: number; worstMs: number; failed: number };
    rss: { idle: number; peak: number };
  };
}

type Mode = { kind: 'embedded' } | { kind: 'external'; databaseUrl: string };

/** `npm run cli -- <args>` with `input` on standard input. */
function cli(env: Record<string, string>, input: string, ...args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...cliCommand(), ...args], {
      env: { ...process.env, ...env },
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`cli ${args.join(' ')}: exit ${code}: ${stderr}`))));
    child.stdin.end(input);
  });
}

/** Two users through the CLI's import; the first gets PASSWORD through set-password. */
async function importUsers(env: Record<string, string>, workDir: string) {
  const { file } = benchOrganization('signin', { users: 2, attachments: 0, ownedByBenchUser: 0, linksPerOwned: 0, emoji: 0 });
  const [signer, other] = file.users!.map(
    (user) => ((user.api_key = generateApiKey()), { email: String(user.email), apiKey: user.api_key }),
  );
  const path = join(workDir, 'signin.json');
  await writeFile(path, JSON.stringify(file));
  await cli(env, '', 'import', path);
  await cli(env, `${PASSWORD}\n`, 'set-password', '--org', String(file.organization.string_id), '--email', signer!.email);
  return { signer: signer!, other: other! };
}

async function fetchApiKey(url: string, username: string, password: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}/api/v1/fetch_api_key`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams({ username, password }).toString(),
  });
  return { status: response.status, body: await response.text() };
}

async function throughputRound(target: BenchProcess, body: string, seconds: number) {
  const result = await autocannon({
    url: `${target.url}/api/v1/fetch_api_key`,
    method: 'POST',
    connections: 8,
    duration: seconds,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body,
  });
  return { perSecond: result['2xx'] / result.duration, p99Ms: result.latency.p99, failed: result.non2xx + result.errors + result.timeouts };
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0;

/** FLOOD.parallel requests in flight at every moment for `seconds`, each from one of FLOOD.addresses addresses. */
async function flood(server: BenchProcess, username: string, seconds: number) {
  const answers: Record<string, number> = {};
  const until = performance.now() + seconds * 1000;
  let sent = 0;
  const worker = async (index: number) => {
    const address = `10.26.0.${(index % FLOOD.addresses) + 1}`;
    while (performance.now() < until) {
      sent++;
      const { status } = await fetchApiKey(server.url, username, `wrong-${sent}`, { 'x-forwarded-for': address }).catch(() => ({
        status: 0,
      }));
      answers[status] = (answers[status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: FLOOD.parallel }, (_, i) => worker(i)));
  return answers;
}

/** The other user's small requests, one after another, until `done`. */
async function otherUser(server: BenchProcess, authorization: string, done: Promise<unknown>) {
  let running = true;
  void done.then(() => (running = false));
  const latencies: number[] = [];
  let failed = 0;
  while (running) {
    const started = performance.now();
    const response = await fetch(`${server.url}/api/v1/users/me`, { headers: { authorization } });
    await response.arrayBuffer();
    latencies.push(performance.now() - started);
    if (response.status !== 200) failed++;
  }
  const sorted = latencies.sort((a, b) => a - b);
  return { requests: sorted.length, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), worstMs: sorted.at(-1) ?? 0, failed };
}

export async function benchSignIn(mode: Mode, quick: boolean): Promise<SignInResult> {
  const workDir = await mkdtemp(join(tmpdir(), 'tc-bench-signin-'));
  // Run as root, the embedded PostgreSQL runs as the postgres user: it must reach the folder.
  await chmod(workDir, 0o755);
  const serverDir = join(workDir, 'server');
  const databaseUrl = mode.kind === 'external' ? await freshDatabaseBeside(mode.databaseUrl, 'bench_signin') : '';
  const limitsOff = { API_RATE_LIMIT: 'off', API_IP_RATE_LIMIT: 'off', AUTH_FAILURE_LIMIT: 'off', SIGNIN_RATE_LIMIT: 'off' };
  const env = {
    NODE_ENV: 'production',
    SERVER_URL: 'http://bench.example',
    TRUSTED_PROXIES: '127.0.0.1',
    DATA_DIR: serverDir,
    DATABASE_URL: databaseUrl,
    ...limitsOff,
  };
  const started: BenchProcess[] = [];
  try {
    const server = await startProcess('server', realServerCommand(), env, serverDir);
    started.push(server);
    const { signer, other } = await importUsers(env, workDir);
    const db = new pg.Pool({ connectionString: databaseUrl || embeddedDatabaseUrl(serverDir), max: 1 });
    const { rows } = await db.query('SELECT "passwordHash" FROM user_account WHERE "emailKey" = $1', [signer.email.toLowerCase()]);
    await db.end();
    const right = await fetchApiKey(server.url, signer.email, PASSWORD);
    if (right.status !== 200) throw new Error(`fetch_api_key with the right password: ${right.status} ${right.body}`);
    const floor = await startProcess(
      'sign-in floor',
      ['--import', 'tsx', 'scripts/bench/sign-in-floor.ts'],
      { PASSWORD_HASH: rows[0].passwordHash, ANSWER: right.body },
      join(workDir, 'floor'),
    );
    started.push(floor);
    const floorAnswer = await fetchApiKey(floor.url, signer.email, PASSWORD);
    if (floorAnswer.body !== right.body) throw new Error(`the floor answers ${floorAnswer.body}, the server ${right.body}`);

    const seconds = quick ? 2 : 6;
    const body = new URLSearchParams({ username: signer.email, password: PASSWORD }).toString();
    const rounds = {
      server: [] as Awaited<ReturnType<typeof throughputRound>>[],
      floor: [] as Awaited<ReturnType<typeof throughputRound>>[],
    };
    for (let i = 0; i < (quick ? 1 : 3); i++) {
      rounds.floor.push(await throughputRound(floor, body, seconds));
      rounds.server.push(await throughputRound(server, body, seconds));
    }
    const middle = <T extends { perSecond: number }>(list: T[]) =>
      [...list].sort((a, b) => a.perSecond - b.perSecond)[Math.floor((list.length - 1) / 2)]!;
    const [serverRound, floorRound] = [middle(rounds.server), middle(rounds.floor)];
    await floor.stop();
    console.error(
      `${SIGN_IN_SCENARIO} (${mode.kind}): fetch_api_key ${serverRound.perSecond.toFixed(1)}/s, floor ${floorRound.perSecond.toFixed(1)}/s`,
    );

    const idle = rssOf(server.child.pid!);
    const rss = sampleRss(server.child.pid!);
    const floodSeconds = quick ? 5 : 15;
    const flooding = flood(server, signer.email, floodSeconds);
    const otherAuthorization = `Basic ${Buffer.from(`${other.email}:${other.apiKey}`).toString('base64')}`;
    const [answers, otherResult] = await Promise.all([flooding, otherUser(server, otherAuthorization, flooding)]);
    const peak = rss.stop().serverPeak;
    const total = Object.values(answers).reduce((sum, n) => sum + n, 0);

    // Broken promises fail the run; the other user's p99 and the peak RSS are figures (their targets are in the report).
    const unexpected = Object.keys(answers).filter((status) => status !== '401' && status !== '429');
    if (unexpected.length) violation(SIGN_IN_SCENARIO, `${mode.kind}: flood answers other than 401 and 429: ${JSON.stringify(answers)}`);
    if (otherResult.failed) violation(SIGN_IN_SCENARIO, `${mode.kind}: ${otherResult.failed} of the other user's requests failed`);
    return {
      mode: mode.kind,
      throughput: {
        serverPerSecond: serverRound.perSecond,
        floorPerSecond: floorRound.perSecond,
        serverP99Ms: serverRound.p99Ms,
        floorP99Ms: floorRound.p99Ms,
        serverFailed: serverRound.failed,
        floorFailed: floorRound.failed,
      },
      flood: { seconds: floodSeconds, answers, perSecond: total / floodSeconds, other: otherResult, rss: { idle, peak } },
    };
  } finally {
    for (const one of started.reverse()) await one.stop();
    await removeWorkDir(workDir);
    if (mode.kind === 'external') await dropDatabaseBeside(mode.databaseUrl, databaseUrl);
  }
}

const mib = (bytes: number) => `${(bytes / 1048576).toFixed(0)} MiB`;
const met = (ok: boolean) => (ok ? 'met' : '**not met**');

export function signInMarkdown(results: SignInResult[]): string {
  if (results.length === 0) return '';
  const lines = [
    '',
    `## ${SIGN_IN_SCENARIO}`,
    '',
    'Every limit off (`API_RATE_LIMIT`, `API_IP_RATE_LIMIT`, `AUTH_FAILURE_LIMIT`, `SIGNIN_RATE_LIMIT`). Throughput: 8 connections posting the right password; the floor verifies the same stored Argon2id hash with `@node-rs/argon2` behind `node:http` (median rounds, alternating).',
    `Flood: ${FLOOD.parallel} wrong passwords in flight from ${FLOOD.addresses} client addresses (X-Forwarded-For from a trusted proxy), beside another user's GET /api/v1/users/me, one at a time. Past the sign-in queue (256 per hashing slot) a sign-in is answered 429 at once.`,
    '',
    "| Database | fetch_api_key /s (server / floor) | p99 ms (server / floor) | flood answers /s | flood statuses | other user p50 / p99 / worst ms (target p99 < 250) | server RSS idle / peak (target 512 MiB; ordinary load's 200) |",
    '|---|---:|---:|---:|---|---:|---:|',
  ];
  for (const r of results) {
    const t = r.throughput;
    const f = r.flood;
    lines.push(
      `| ${r.mode} | ${t.serverPerSecond.toFixed(1)} / ${t.floorPerSecond.toFixed(1)} (${(t.serverPerSecond / t.floorPerSecond).toFixed(2)}) | ${t.serverP99Ms} / ${t.floorP99Ms} | ${f.perSecond.toFixed(1)} | ${JSON.stringify(f.answers)} | ` +
        `${f.other.p50Ms.toFixed(0)} / ${f.other.p99Ms.toFixed(0)} / ${f.other.worstMs.toFixed(0)} (${met(f.other.p99Ms < TARGETS.otherP99Ms)}) | ${mib(f.rss.idle)} / ${mib(f.rss.peak)} (${met(f.rss.peak <= TARGETS.peakRssMiB * 1048576)}; 200 MiB ${met(f.rss.peak <= TARGETS.ordinaryPeakRssMiB * 1048576)}) |`,
    );
  }
  return `${lines.join('\n')}\n`;
}
