// The outbox under a bulk invitation: a mail server that takes 20 ms per message, one
// organization's 10,000-address invitation being delivered, then another organization invites one
// address: how long until that e-mail arrives (target: 5 s). Then SIGTERM with the backlog queued:
// how long until the process has exited (target: under 10 s), and what it left queued.
// A server process of its own, started as `npm start` starts it, on a fresh database.
import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { dropDatabaseBeside, freshDatabaseBeside } from './databases.js';
import { SMTPServer } from 'smtp-server';
import { openDatabase } from '../../src/db/database.js';
import { generateApiKey } from '../../src/domain/users/api-keys.js';
import { benchOrganization } from './organization.js';
import { cliCommand, realServerCommand, removeWorkDir, startProcess, type BenchProcess } from './processes.js';
import { expectHolds } from './violations.js';

export const OUTBOX_SCENARIO = "Outbox: another organization's e-mail behind a bulk invitation's backlog, then SIGTERM";

const ACCEPT_MS = 20;
/** Backlog e-mails delivered before the other organization's first invitation: delivery is under way. */
const UNDER_WAY = 100;
/**
 * The other organization invites one address this many times, each after this many more backlog
 * deliveries (not a batch's size, so that its invitations meet batches at different points).
 */
const PROBES = 5;
const PROBE_EVERY = 37;
const TARGETS = { otherDelayMs: 5_000, sigtermExitMs: 10_000 };

export interface OutboxFairnessResult {
  mode: 'embedded' | 'external';
  backlog: number;
  acceptMs: number;
  /** For each of the other organization's invitations, from its request to its e-mail's arrival. */
  otherDelaysMs: number[];
  /** For each, the backlog e-mails that arrived between its request's answer and its e-mail. */
  backlogAhead: number[];
  /** Backlog e-mails not yet delivered when the signal was sent. */
  queuedAtSigterm: number;
  sigtermExitMs: number;
  exitCode: number | null;
  /** The database after the exit: e-mails still queued (and of them, claimed by no one), sent. */
  pendingAfterExit: number;
  pendingUnclaimed: number;
  sentAfterExit: number;
  received: number;
  receivedTwice: number;
}

/** An SMTP server that accepts each message after ACCEPT_MS, noting the order of arrival. */
async function startSlowMailServer() {
  const arrivals: string[] = [];
  const waiters: { check: () => boolean; resolve: () => void }[] = [];
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    disableReverseLookup: true,
    logger: false,
    onData(stream, session, callback) {
      // (The session's envelope is reset once the message is answered.)
      const recipients = session.envelope.rcptTo.map((to) => to.address);
      stream.resume();
      stream.on('end', () => {
        setTimeout(() => {
          callback();
          arrivals.push(...recipients);
          for (const waiter of waiters.filter((w) => w.check())) {
            waiters.splice(waiters.indexOf(waiter), 1);
            waiter.resolve();
          }
        }, ACCEPT_MS);
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `smtp://127.0.0.1:${(server.server.address() as { port: number }).port}`,
    arrivals,
    until: (check: () => boolean) => new Promise<void>((resolve) => (check() ? resolve() : waiters.push({ check, resolve }))),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Wraps a wait so that it fails, with the end of the server's output, if the server exits meanwhile. */
function failOnExit(server: BenchProcess) {
  let onExit: (code: number | null) => void = () => {};
  const exited = new Promise<never>((_, reject) => {
    onExit = (code) => reject(new Error(`the server exited (${code}) during the outbox scenario:\n${server.output().join('\n')}`));
    server.child.once('exit', onExit);
  });
  exited.catch(() => {});
  const whileRunning = <T>(wait: Promise<T>) => Promise.race([wait, exited]);
  return Object.assign(whileRunning, { stop: () => server.child.off('exit', onExit) });
}

/** A small organization imported through the CLI; the authorization of its administrator. */
async function importAdministrator(name: string, env: Record<string, string>, workDir: string): Promise<string> {
  const { file } = benchOrganization(name, { users: 2, attachments: 0, ownedByBenchUser: 0, linksPerOwned: 0, emoji: 0 });
  const apiKey = generateApiKey();
  file.users![0]!.api_key = apiKey;
  const path = join(workDir, `${name}.json`);
  await writeFile(path, JSON.stringify(file));
  await promisify(execFile)(process.execPath, [...cliCommand(), 'import', path], { env: { ...process.env, ...env } });
  return `Basic ${Buffer.from(`${file.users![0]!.email}:${apiKey}`).toString('base64')}`;
}

async function invite(url: string, authorization: string, emails: string[]): Promise<void> {
  const response = await fetch(`${url}/api/v1/invites`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ invitee_emails: emails.join(','), stream_ids: '[]', invite_as: '400' }).toString(),
  });
  const body = await response.text();
  if (response.status !== 200)
    throw new Error(`POST /api/v1/invites (${emails.length} addresses): ${response.status} ${body.slice(0, 300)}`);
}

/** What the server left in its outbox, read once it has exited (the embedded database is started again for it). */
async function outboxAfterExit(database: { dataDir: string } | { databaseUrl: string }) {
  const opened = await openDatabase('dataDir' in database ? { dataDir: database.dataDir, owner: 'tool' } : database);
  try {
    const [row] = await opened.prisma.$queryRaw<{ pending: number; unclaimed: number; sent: number }[]>`
      SELECT count(*) FILTER (WHERE status = 'PENDING')::int AS pending,
             count(*) FILTER (WHERE status = 'PENDING' AND attempts = 0 AND "nextAttemptAt" <= now() AT TIME ZONE 'UTC')::int AS unclaimed,
             count(*) FILTER (WHERE status = 'SENT')::int AS sent
      FROM outbox_email`;
    return row!;
  } finally {
    await opened.close();
  }
}

export async function benchOutboxFairness(
  mode: { kind: 'embedded' } | { kind: 'external'; databaseUrl: string },
  backlogSize: number,
): Promise<OutboxFairnessResult> {
  const workDir = await mkdtemp(join(tmpdir(), 'tc-bench-outbox-'));
  // Run as root, the embedded PostgreSQL runs as the postgres user: it must reach the folder.
  await chmod(workDir, 0o755);
  const serverDir = join(workDir, 'server');
  const databaseUrl = mode.kind === 'external' ? await freshDatabaseBeside(mode.databaseUrl, 'bench_outbox') : '';
  const mail = await startSlowMailServer();
  const env = {
    NODE_ENV: 'production',
    API_RATE_LIMIT: 'off',
    SERVER_URL: 'http://bench.example',
    DATA_DIR: serverDir,
    DATABASE_URL: databaseUrl,
    SMTP_URL: mail.url,
  };
  try {
    const server = await startProcess('server', realServerCommand(), env, serverDir);
    const whileRunning = failOnExit(server);
    const bulkAdmin = await importAdministrator('outbox-bulk', env, workDir);
    const otherAdmin = await importAdministrator('outbox-other', env, workDir);
    const backlog = Array.from({ length: backlogSize }, (_, i) => `backlog-${i}@invitees.example`);
    const backlogDelivered = (arrivals: string[]) => arrivals.filter((address) => address.startsWith('backlog-')).length;

    await invite(server.url, bulkAdmin, backlog);
    console.error(`Outbox: ${backlogSize} invitations queued; waiting for ${UNDER_WAY} of them to be delivered.`);
    const otherDelaysMs: number[] = [];
    const backlogAhead: number[] = [];
    for (let probe = 0; probe < PROBES; probe++) {
      await whileRunning(mail.until(() => backlogDelivered(mail.arrivals) >= UNDER_WAY + probe * PROBE_EVERY));
      const other = `other-${probe}@invitees.example`;
      const sent = performance.now();
      await invite(server.url, otherAdmin, [other]);
      const before = backlogDelivered(mail.arrivals);
      await whileRunning(mail.until(() => mail.arrivals.includes(other)));
      otherDelaysMs.push(performance.now() - sent);
      backlogAhead.push(backlogDelivered(mail.arrivals.slice(0, mail.arrivals.indexOf(other))) - before);
    }

    whileRunning.stop();
    const queuedAtSigterm = backlogSize - backlogDelivered(mail.arrivals);
    const signalled = performance.now();
    const exited = new Promise<number | null>((resolve) => server.child.once('exit', resolve));
    server.signal('SIGTERM');
    const exitCode = await exited;
    const sigtermExitMs = performance.now() - signalled;

    const left = await outboxAfterExit(mode.kind === 'external' ? { databaseUrl } : { dataDir: serverDir });
    const result: OutboxFairnessResult = {
      mode: mode.kind,
      backlog: backlogSize,
      acceptMs: ACCEPT_MS,
      otherDelaysMs,
      backlogAhead,
      queuedAtSigterm,
      sigtermExitMs,
      exitCode,
      pendingAfterExit: left.pending,
      pendingUnclaimed: left.unclaimed,
      sentAfterExit: left.sent,
      received: mail.arrivals.length,
      receivedTwice: mail.arrivals.length - new Set(mail.arrivals).size,
    };
    const scenario = `${OUTBOX_SCENARIO} (${mode.kind})`;
    expectHolds(scenario, result.receivedTwice === 0, `${result.receivedTwice} e-mails sent twice`);
    expectHolds(scenario, exitCode === 0, `the server's exit status after SIGTERM was ${exitCode}, not 0`);
    expectHolds(
      scenario,
      result.sentAfterExit <= result.received,
      `${result.sentAfterExit} e-mails marked sent but ${result.received} received`,
    );
    console.error(
      `${OUTBOX_SCENARIO} (${mode.kind}): other organization's e-mails after ${otherDelaysMs.map((ms) => ms.toFixed(0)).join(', ')} ms, exit ${sigtermExitMs.toFixed(0)} ms after SIGTERM`,
    );
    return result;
  } finally {
    await mail.close();
    await removeWorkDir(workDir);
    if (mode.kind === 'external') await dropDatabaseBeside(mode.databaseUrl, databaseUrl);
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

export function outboxMarkdown(results: OutboxFairnessResult[]): string {
  if (results.length === 0) return '';
  const lines = [
    '',
    `## ${OUTBOX_SCENARIO}`,
    '',
    `A mail server that takes ${ACCEPT_MS} ms per message; one organization's invitation of N addresses is being delivered (${UNDER_WAY} sent) when another organization invites one address, ${PROBES} times, ${PROBE_EVERY} backlog e-mails apart. Then SIGTERM with the rest of the backlog queued.`,
    '',
    `| Database | N | other organization's e-mail after: worst (median) (target ${seconds(TARGETS.otherDelayMs)}) | backlog e-mails ahead of it: most | SIGTERM to exit (target under ${seconds(TARGETS.sigtermExitMs)}) | exit status | queued after exit (of them claimable at once) | sent / received | received twice |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of results) {
    lines.push(
      `| ${r.mode} | ${r.backlog} | ${seconds(Math.max(...r.otherDelaysMs))} (${seconds(median(r.otherDelaysMs))}) | ${Math.max(...r.backlogAhead)} | ${seconds(r.sigtermExitMs)} | ${r.exitCode} | ` +
        `${r.pendingAfterExit} (${r.pendingUnclaimed}) | ${r.sentAfterExit} / ${r.received} | ${r.receivedTwice} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}
