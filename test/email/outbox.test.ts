// E-mail delivery: a real SMTP receiver, the .eml fallback, retries, two workers on one database,
// and mail of a process that died. (Turns between organizations and the stop: turns.test.ts.)
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, expect, test as baseTest, vi } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { createMailTransport } from '../../src/domain/email/transport.js';
import { DEFAULT_OUTBOX_OPTIONS, OutboxWorker } from '../../src/domain/email/worker.js';
import type { MailTransport, OutgoingEmail } from '../../src/domain/email/transport.js';
import { logger } from '../../src/logging.js';
import type { RunningServer } from '../../src/server.js';
import { createInvitation, createInvitations, uniqueEmail } from '../support/invitations.js';
import { eventually, startMailReceiver, startServerWithOutbox, type MailReceiver } from '../support/smtp.js';
import { testDatabaseUrl } from '../support/server.js';
import { createWorld } from '../support/world.js';
import { graphql } from '../generated/gql.js';
import { gql } from '../support/graphql.js';

// Each test starts its own server(s) and organization: generous time on a shared 2-core machine.
const Deliveries = graphql(`
  query Deliveries {
    invitations(includeInactive: true) {
      email
      emailDelivery {
        status
        attempts
        lastError
        sentAt
      }
    }
  }
`);

/** The transport, recording each address it delivered to. */
function recording(transport: MailTransport, addresses: string[]): MailTransport {
  return {
    description: transport.description,
    close: () => transport.close(),
    async deliver(email: OutgoingEmail) {
      await transport.deliver(email);
      addresses.push(email.to);
    },
  };
}

const test = (name: string, body: () => Promise<void>) => baseTest(name, body, 120_000);

let receiver: MailReceiver;
beforeAll(async () => {
  receiver = await startMailReceiver();
});
afterAll(() => receiver.close());

const mailTo = (address: string) => receiver.received.filter((m) => m.to && !Array.isArray(m.to) && m.to.value[0]?.address === address);
const outboxRow = (server: RunningServer, invitationId: number) =>
  server.app.prisma.outboxEmail.findFirstOrThrow({ where: { invitationId }, orderBy: { id: 'desc' } });

test('an invitation e-mail travels over SMTP: subject, addresses, link, escaped HTML', async () => {
  const server = await startServerWithOutbox({ smtpUrl: receiver.url });
  try {
    const world = await createWorld(server.app.prisma);
    await server.app.prisma.organization.update({ where: { id: world.org.id }, data: { name: 'Lighthouse <Co> & "Friends"' } });
    const invitee = uniqueEmail('sam');
    const invitation = await createInvitation(server, world, {
      email: invitee,
      referrer: 'owner',
      expiresAt: new Date('2099-03-04T05:06:00Z'),
    });

    const [mail] = await eventually(() => mailTo(invitee).length > 0 && mailTo(invitee), 'the invitation e-mail');
    const link = `${server.url}/accounts/do_confirm/${invitation.confirmationKey}`;
    expect(mail!.subject).toBe('Olga Owner has invited you to join Lighthouse <Co> & "Friends"');
    expect(mail!.from?.value).toEqual([{ address: 'noreply@teamchat.test', name: 'Zulip' }]);
    expect(mail!.text).toBe(
      'Hello,\n\n' +
        'Olga Owner (olga@lighthouse.example) wants you to join them on Zulip, in the organization Lighthouse <Co> & "Friends".\n\n' +
        `To accept the invitation and create your account, open this link:\n${link}\n\n` +
        'This invitation expires on 4 March 2099, 05:06 UTC.\n',
    );
    expect(mail!.html).toContain(
      'wants you to join them on Zulip, in the organization <strong>Lighthouse &lt;Co&gt; &amp; &quot;Friends&quot;</strong>',
    );
    expect(mail!.html).toContain(`<a href="${link}">`);
    expect(mail!.html).not.toContain('<Co>');
    expect(mailTo(invitee)).toHaveLength(1);

    const row = await eventually(async () => {
      const r = await outboxRow(server, invitation.id);
      return r.status === 'SENT' && r;
    }, 'the row to be marked sent');
    expect(row).toMatchObject({ toAddress: invitee, attempts: 1, lastError: null, kind: 'invitation' });
    expect(row.sentAt).toBeInstanceOf(Date);
    // Stable per outbox row: a copy sent again after a crash is the same message (at-least-once delivery).
    expect(mail!.messageId).toBe(`<outbox-${row.id}@teamchat.test>`);
  } finally {
    await server.close();
  }
});

test('without SMTP_URL the e-mail is written as an .eml file under DATA_DIR/outbox', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'teamchat-outbox-'));
  const server = await startServerWithOutbox({ dataDir });
  const log = vi.spyOn(logger, 'info').mockImplementation(() => {});
  try {
    const world = await createWorld(server.app.prisma);
    const invitee = uniqueEmail('eml');
    const invitation = await createInvitation(server, world, { email: invitee, expiresAt: null });
    const files = await eventually(async () => {
      const names = await readdir(join(dataDir, 'outbox')).catch(() => []);
      return names.length > 0 && names;
    }, 'an .eml file');
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^\d{8}-[0-9a-f]{8}\.eml$/);
    const mail = await simpleParser(await readFile(join(dataDir, 'outbox', files[0]!)));
    expect(mail.subject).toBe('Adam Admin has invited you to join Lighthouse Cooperative');
    expect(mail.to).toMatchObject({ value: [{ address: invitee }] });
    expect(mail.text).toContain(`${server.url}/accounts/do_confirm/${invitation.confirmationKey}`);
    expect(mail.text).toContain('This invitation does not expire.');
    await eventually(async () => (await outboxRow(server, invitation.id)).status === 'SENT', 'the row to be marked sent');
    expect(log).toHaveBeenCalledWith(
      {
        emailId: expect.any(Number),
        file: join(dataDir, 'outbox', files[0]!),
        links: [`${server.url}/accounts/do_confirm/${invitation.confirmationKey}`],
      },
      'e-mail written to a file',
    );
  } finally {
    log.mockRestore();
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  }
});

test('a refused delivery is retried; after maxAttempts refusals the e-mail is FAILED', async () => {
  const server = await startServerWithOutbox({ smtpUrl: receiver.url }, { outbox: { retryDelayMs: () => 0, maxAttempts: 3 } });
  try {
    const world = await createWorld(server.app.prisma);
    receiver.refuseNext(1);
    const retried = await createInvitation(server, world, { email: uniqueEmail('retry') });
    await eventually(() => mailTo(retried.email).length === 1, 'the retried e-mail');
    const delivered = await eventually(async () => {
      const r = await outboxRow(server, retried.id);
      return r.status === 'SENT' && r;
    }, 'the retried row to be sent');
    expect(delivered).toMatchObject({ attempts: 2, lastError: null });

    receiver.refuseNext(3);
    const failing = await createInvitation(server, world, { email: uniqueEmail('fail') });
    const failed = await eventually(async () => {
      const r = await outboxRow(server, failing.id);
      return r.status === 'FAILED' && r;
    }, 'the row to fail');
    expect(failed.attempts).toBe(3);
    expect(failed.lastError).toMatch(/451/);
    expect(mailTo(failing.email)).toEqual([]);

    // Administrators see how delivery went; the referrer, a member here, does not.
    const failingByMember = await createInvitation(server, world, { email: uniqueEmail('seen'), referrer: 'member', queueEmail: false });
    await server.app.prisma.outboxEmail.create({
      data: {
        organizationId: world.org.id,
        invitationId: failingByMember.id,
        kind: 'invitation',
        toAddress: failingByMember.email,
        subject: 's',
        textBody: 't',
        htmlBody: 'h',
        status: 'FAILED',
        attempts: 6,
        lastError: '550 no such user',
        nextAttemptAt: new Date(8.64e15),
      },
    });
    const deliveries = async (who: 'admin' | 'member') =>
      (await gql(server.url, Deliveries, {}, world.users[who].auth)).data!.invitations.map((i) => [i.email, i.emailDelivery]);
    expect(await deliveries('admin')).toEqual(
      expect.arrayContaining([
        [failing.email, { status: 'FAILED', attempts: 3, lastError: expect.stringMatching(/451/), sentAt: null }],
        [retried.email, { status: 'SENT', attempts: 2, lastError: null, sentAt: expect.any(Number) }],
        [failingByMember.email, { status: 'FAILED', attempts: 6, lastError: '550 no such user', sentAt: null }],
      ]),
    );
    expect(await deliveries('member')).toEqual([[failingByMember.email, null]]);
  } finally {
    receiver.refuseNext(0);
    await server.close();
  }
});

test('two workers on one database deliver every e-mail exactly once', async () => {
  const server = await startServerWithOutbox({ smtpUrl: receiver.url }, { outbox: { batchSize: 3 } });
  // The second worker has a connection pool of its own on the server's database, as a second server process would.
  const second = await openDatabase({ databaseUrl: await testDatabaseUrl() });
  const delivered = { server: [] as string[], other: [] as string[] };
  const otherWorker = new OutboxWorker(second.prisma, recording(createMailTransport(server.app.config), delivered.other), { batchSize: 3 });
  const serverTransport = (server.outbox as unknown as { transport: MailTransport }).transport;
  (server.outbox as unknown as { transport: MailTransport }).transport = recording(serverTransport, delivered.server);
  try {
    const world = await createWorld(server.app.prisma);
    const invitations = await createInvitations(
      server,
      world,
      Array.from({ length: 24 }, (_, i) => ({ email: uniqueEmail(`twice-${i}`) })),
    );
    otherWorker.start();
    server.outbox!.wake();
    await eventually(async () => {
      const sent = await server.app.prisma.outboxEmail.count({
        where: { invitationId: { in: invitations.map((i) => i.id) }, status: 'SENT' },
      });
      return sent === invitations.length;
    }, 'every row to be sent');
    for (const invitation of invitations) expect(mailTo(invitation.email)).toHaveLength(1);
    const rows = await server.app.prisma.outboxEmail.findMany({ where: { invitationId: { in: invitations.map((i) => i.id) } } });
    expect(rows.map((r) => r.attempts)).toEqual(invitations.map(() => 1));
    // What each worker delivered: no address twice, and together every address once.
    const both = [...delivered.server, ...delivered.other];
    expect(new Set(both).size).toBe(both.length);
    expect(both.sort()).toEqual(invitations.map((i) => i.email).sort());
  } finally {
    await otherWorker.stop();
    await second.close();
    await server.close();
  }
});

test('mail claimed by a process that died is claimed again once the lease ends (under a minute), and sent once', async () => {
  const server = await startServerWithOutbox({ smtpUrl: receiver.url }, { outbox: false });
  const dead = await openDatabase({ databaseUrl: await testDatabaseUrl() });
  const neverAnswers: MailTransport = {
    description: 'a process about to die',
    close: () => {},
    deliver: () => new Promise<void>(() => {}),
  };
  const delivered: string[] = [];
  const survivor = new OutboxWorker(server.app.prisma, recording(createMailTransport(server.app.config), delivered));
  try {
    const world = await createWorld(server.app.prisma);
    const invitations = await createInvitations(
      server,
      world,
      Array.from({ length: 3 }, (_, i) => ({ email: uniqueEmail(`orphan-${i}`) })),
    );
    const ids = invitations.map((i) => i.id);
    // The first process claims the mail and dies mid-delivery.
    const dying = new OutboxWorker(dead.prisma, neverAnswers);
    void dying.deliverDue();
    await eventually(
      async () => (await server.app.prisma.outboxEmail.count({ where: { invitationId: { in: ids }, attempts: 1 } })) === 3,
      'the claim',
    );
    await dead.close().catch(() => {});
    expect(DEFAULT_OUTBOX_OPTIONS.leaseMs).toBeLessThan(60_000);
    // While the lease runs nobody else takes the mail; once it has ended, any worker does.
    const now = Date.now();
    const ours = (addresses: string[]) => addresses.filter((a) => invitations.some((i) => i.email === a)).sort();
    await survivor.deliverDue(new Date(now + DEFAULT_OUTBOX_OPTIONS.leaseMs - 5_000));
    expect(ours(delivered)).toEqual([]);
    await survivor.deliverDue(new Date(now + DEFAULT_OUTBOX_OPTIONS.leaseMs + 1_000));
    expect(ours(delivered)).toEqual(invitations.map((i) => i.email).sort());
    for (const invitation of invitations) expect(mailTo(invitation.email)).toHaveLength(1);
    const rows = await server.app.prisma.outboxEmail.findMany({ where: { invitationId: { in: ids } } });
    expect(rows.map((r) => [r.status, r.attempts])).toEqual(ids.map(() => ['SENT', 2]));
  } finally {
    await survivor.stop();
    await server.close();
  }
});
