// Organizations take turns in the outbox, and a stopping server leaves its backlog queued. A slow
// real SMTP server (20 ms per message), invitations sent over HTTP, and for SIGTERM a server process
// of its own on this file's database.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { openDatabase, type DatabaseClient } from '../../src/db/database.js';
import { createMailTransport, type MailTransport } from '../../src/domain/email/transport.js';
import { OutboxWorker } from '../../src/domain/email/worker.js';
import { createInvitations } from '../support/invitations.js';
import { postInvites } from '../support/invites.js';
import { listeningUrl, startServerProcess, stopServerProcess, testDatabaseEnvironment, waitForOutput } from '../support/process.js';
import { testDatabaseUrl } from '../support/server.js';
import { eventually, recipient, startMailReceiver, startServerWithOutbox, type MailReceiver } from '../support/smtp.js';
import { createWorld, type World } from '../support/world.js';

const ACCEPT_MS = 20;

let slow: MailReceiver;
beforeAll(async () => {
  slow = await startMailReceiver({ acceptMs: ACCEPT_MS });
});
afterAll(() => slow.close());

let run = 0;
/** `count` addresses no other test uses. */
function addresses(name: string, count: number): string[] {
  const tag = `${Date.now().toString(36)}-${run++}`;
  return Array.from({ length: count }, (_, i) => `${name}-${tag}-${i}@turns.example`);
}

/** The addresses of `among` the receiver has received so far, in order of arrival. */
const receivedOf = (among: string[]) => {
  const wanted = new Set(among);
  return slow.received.map(recipient).filter((address): address is string => address !== undefined && wanted.has(address));
};

/** An organization without the example's daily invitation limit (50). */
const unlimitedWorld = (prisma: DatabaseClient) => createWorld(prisma, (file) => (file.organization.max_invites = null));

async function invite(serverUrl: string, world: World, emails: string[]): Promise<void> {
  const result = await postInvites(serverUrl, world.users.admin.auth, { invitee_emails: emails.join(','), stream_ids: '[]' });
  expect(result.status).toBe(200);
}

const outboxRows = (prisma: DatabaseClient, world: World) =>
  prisma.outboxEmail.findMany({
    where: { organizationId: world.org.id },
    select: { toAddress: true, status: true, attempts: true, nextAttemptAt: true, lastError: true },
  });

test("a batch holds each organization's first due e-mail, then each one's second; the next batch starts after the organization served last", async () => {
  const server = await startServerWithOutbox({ smtpUrl: slow.url }, { outbox: false });
  const delivered: string[] = [];
  const transport = createMailTransport(server.app.config);
  const recording: MailTransport = {
    ...transport,
    close: () => transport.close(),
    deliver: (email) => transport.deliver(email).then(() => void delivered.push(email.to)),
  };
  // Batches of 4 however long deliveries take.
  const worker = new OutboxWorker(server.app.prisma, recording, { batchSize: 4, batchDeliveryMs: Infinity });
  try {
    const [a, b, c] = [
      await unlimitedWorld(server.app.prisma),
      await unlimitedWorld(server.app.prisma),
      await unlimitedWorld(server.app.prisma),
    ];
    const queued = { a: addresses('a', 3), b: addresses('b', 1), c: addresses('c', 2) };
    for (const [world, emails] of [
      [a, queued.a],
      [b, queued.b],
      [c, queued.c],
    ] as const) {
      await createInvitations(
        server,
        world,
        emails.map((email) => ({ email })),
      );
    }
    const [a1, a2, a3] = queued.a;
    const [c1, c2] = queued.c;

    expect(await worker.deliverDue()).toEqual({ claimed: 4, sent: 4, failed: 0, full: true });
    expect(delivered).toEqual([a1, queued.b[0], c1, a2]);
    // A was served last: C (after it) comes before A.
    expect(await worker.deliverDue()).toEqual({ claimed: 2, sent: 2, failed: 0, full: false });
    expect(delivered.slice(4)).toEqual([c2, a3]);
  } finally {
    await worker.stop();
    await server.close();
  }
}, 120_000);

test("another organization's single invitation is delivered within a batch, not behind a bulk invitation's backlog", async () => {
  const batchSize = 25;
  const server = await startServerWithOutbox({ smtpUrl: slow.url }, { outbox: { batchSize } });
  try {
    const bulkOrganization = await unlimitedWorld(server.app.prisma);
    const otherOrganization = await unlimitedWorld(server.app.prisma);
    const bulk = addresses('bulk', 6 * batchSize);
    await invite(server.url, bulkOrganization, bulk);
    await eventually(() => receivedOf(bulk).length > 0, 'the bulk delivery to begin');

    const [single] = addresses('single', 1);
    await invite(server.url, otherOrganization, [single!]);
    const bulkBefore = receivedOf(bulk).length;
    await eventually(() => receivedOf([single!]).length > 0, "the other organization's e-mail");
    const arrivedAt = slow.received.findIndex((mail) => recipient(mail) === single);
    const bulkAhead = slow.received.slice(0, arrivedAt).filter((mail) => bulk.includes(recipient(mail)!)).length;

    // Ahead of it at most the rest of the batch in progress and the bulk's place in its own turn.
    expect(bulkAhead - bulkBefore).toBeLessThanOrEqual(batchSize);
    expect(bulkAhead).toBeLessThan(bulk.length);

    // The backlog goes on, every e-mail once.
    await eventually(() => receivedOf(bulk).length === bulk.length, 'the whole backlog');
    expect(receivedOf(bulk).sort()).toEqual([...bulk].sort());
    // (The batch's bookkeeping follows its last e-mail.)
    const rows = await eventually(async () => {
      const all = await outboxRows(server.app.prisma, bulkOrganization);
      return all.every((row) => row.status !== 'PENDING') && all;
    }, 'the last batch to be marked sent');
    expect(rows.map((row) => [row.status, row.attempts])).toEqual(bulk.map(() => ['SENT', 1]));
  } finally {
    await server.close();
  }
}, 120_000);

test('SIGTERM with a backlog: the e-mail in flight completes, the rest stays queued and claimable at once; the next process delivers it, nothing twice', async () => {
  const databaseUrl = await testDatabaseUrl();
  const database = await openDatabase({ databaseUrl });
  const dataDir = await mkdtemp(join(tmpdir(), 'teamchat-turns-'));
  const env = {
    ...(await testDatabaseEnvironment()),
    DATA_DIR: dataDir,
    SMTP_URL: slow.url,
    EMAIL_FROM: 'Zulip <noreply@teamchat.test>',
    LOG_LEVEL: 'warn',
  };
  try {
    const world = await unlimitedWorld(database.prisma);
    const backlog = addresses('backlog', 120);
    const first = startServerProcess(env);
    await invite(await listeningUrl(first), world, backlog);
    await eventually(() => receivedOf(backlog).length >= 3, 'the first deliveries');

    // An e-mail in flight when the signal comes: the receiver holds it until the server is stopping.
    const release = await slow.holdNext();
    const beforeSignal = receivedOf(backlog).length;
    first.child.kill('SIGTERM');
    await waitForOutput(first, /SIGTERM received/);
    release();
    expect(await first.exited).toBe(0);

    const delivered = receivedOf(backlog);
    expect(delivered).toHaveLength(beforeSignal + 1);
    const rows = await outboxRows(database.prisma, world);
    expect(
      rows
        .filter((row) => row.status === 'SENT')
        .map((row) => row.toAddress)
        .sort(),
    ).toEqual([...delivered].sort());
    // Released, not left to the lease: never attempted, due now.
    const queued = rows.filter((row) => row.status === 'PENDING');
    expect(queued).toHaveLength(backlog.length - delivered.length);
    for (const row of queued) expect(row.attempts).toBe(0);
    for (const row of queued) expect(row.nextAttemptAt.getTime()).toBeLessThanOrEqual(Date.now());

    const second = startServerProcess(env);
    await listeningUrl(second);
    await eventually(() => receivedOf(backlog).length === backlog.length, 'the rest of the backlog', 60_000);
    await stopServerProcess(second);
    expect(receivedOf(backlog).sort()).toEqual([...backlog].sort());
    const after = await outboxRows(database.prisma, world);
    expect(after.map((row) => [row.status, row.attempts])).toEqual(backlog.map(() => ['SENT', 1]));
  } finally {
    await database.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}, 180_000);

test('SIGTERM while the mail server never answers: the process still exits, the e-mail in flight left to its lease, the rest released', async () => {
  const databaseUrl = await testDatabaseUrl();
  const database = await openDatabase({ databaseUrl });
  const dataDir = await mkdtemp(join(tmpdir(), 'teamchat-turns-'));
  let release: (() => void) | undefined;
  try {
    const world = await unlimitedWorld(database.prisma);
    const backlog = addresses('stuck', 40);
    const server = startServerProcess({ ...(await testDatabaseEnvironment()), DATA_DIR: dataDir, SMTP_URL: slow.url, LOG_LEVEL: 'warn' });
    const held = slow.holdNext();
    await invite(await listeningUrl(server), world, backlog);
    release = await held;
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);

    const rows = await outboxRows(database.prisma, world);
    expect(receivedOf(backlog)).toEqual([]);
    // Whether the mail server took it is unknown: neither sent, nor failed, nor given back at once.
    const inFlight = rows.filter((row) => row.attempts === 1);
    expect(inFlight).toHaveLength(1);
    expect(inFlight[0]).toMatchObject({ status: 'PENDING', lastError: null });
    expect(inFlight[0]!.nextAttemptAt.getTime()).toBeGreaterThan(Date.now());
    expect(rows.filter((row) => row.status === 'PENDING' && row.attempts === 0)).toHaveLength(backlog.length - 1);
  } finally {
    release?.();
    await database.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}, 120_000);
