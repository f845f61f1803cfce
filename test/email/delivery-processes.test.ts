// A fleet may keep e-mail delivery out of the processes that answer requests (as the reference runs
// its e-mail queue in workers of their own): a server started with EMAIL_WORKER=off queues
// invitation e-mail and delivers none; `deliver-emails` (the CLI) delivers what is due, once, and
// exits. The CLI's count is the marker: had the server delivered, the CLI would have found nothing due.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { StartupError } from '../../src/startup-error.js';
import { postInvites } from '../support/invites.js';
import { runCli, serverProcessesOnTestDatabase, testDatabaseEnvironment, type ProcessesOnTestDatabase } from '../support/process.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { recipient, startMailReceiver, type MailReceiver } from '../support/smtp.js';
import { createWorld } from '../support/world.js';

let receiver: MailReceiver;
let server: TestServer;
let requestsOnly: ProcessesOnTestDatabase;
beforeAll(async () => {
  receiver = await startMailReceiver();
  server = await startTestServer();
  requestsOnly = await serverProcessesOnTestDatabase(1, { EMAIL_WORKER: 'off', SMTP_URL: receiver.url, API_RATE_LIMIT: 'off' });
}, 120_000);
afterAll(async () => {
  await requestsOnly?.stop();
  await server?.close();
  await receiver?.close();
});

test('EMAIL_WORKER is on unless set to off; anything else stops the start with the variable named', () => {
  expect([
    loadConfig({}).emailWorker,
    loadConfig({ EMAIL_WORKER: 'on' }).emailWorker,
    loadConfig({ EMAIL_WORKER: 'off' }).emailWorker,
  ]).toEqual([true, true, false]);
  for (const value of ['0', 'false', 'OFF', 'no']) expect(() => loadConfig({ EMAIL_WORKER: value }), value).toThrow(StartupError);
  expect(() => loadConfig({ EMAIL_WORKER: 'no' })).toThrow(/EMAIL_WORKER must be on or off/);
});

test('a server with EMAIL_WORKER=off queues the e-mail; deliver-emails sends it once', async () => {
  expect(requestsOnly.processes[0]!.output()).toContain('E-mail:    queued, delivered by other processes (EMAIL_WORKER=off)');
  const world = await createWorld(server.app.prisma);
  const invitee = `queued-${Date.now()}@example.net`;
  const sent = await postInvites(requestsOnly.urls[0]!, world.users.admin.auth, { invitee_emails: invitee, stream_ids: '[]' });
  expect(sent).toEqual({ status: 200, body: { result: 'success', msg: '' } });
  const queued = () => server.app.prisma.outboxEmail.findFirstOrThrow({ where: { toAddress: invitee } });
  expect((await queued()).status).toBe('PENDING');

  const env = { ...(await testDatabaseEnvironment()), SMTP_URL: receiver.url };
  const destination = `SMTP server ${new URL(receiver.url).protocol}//${new URL(receiver.url).host}`;
  const first = await runCli(env, 'deliver-emails');
  expect(first).toMatchObject({ code: 0, stdout: `E-mails delivered: 1, failed: 0 (tried again later). Destination: ${destination}\n` });
  expect(receiver.received.map(recipient)).toEqual([invitee]);
  expect((await queued()).status).toBe('SENT');

  const again = await runCli(env, 'deliver-emails');
  expect(again).toMatchObject({ code: 0, stdout: `E-mails delivered: 0, failed: 0 (tried again later). Destination: ${destination}\n` });
  expect(receiver.received).toHaveLength(1);
});
