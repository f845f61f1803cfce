// An invitation request's SQL statements do not
// grow with its addresses; 10,000 addresses in one request succeed, whole, with their channels,
// groups and e-mails; other requests are served while it holds its organization's lock.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startCountingApp } from '../support/query-count.js';
import { connectToTestDatabase, startTestServer, type TestServer } from '../support/server.js';
import type { OrganizationFile } from '../../src/import/organization-file.js';
import { eventually } from '../support/smtp.js';
import { createWorld } from '../support/world.js';
import { organizationRowLocked } from '../support/contention.js';

let counting: Awaited<ReturnType<typeof startCountingApp>>;
let server: TestServer;
beforeAll(async () => {
  counting = await startCountingApp();
  server = await startTestServer();
});
afterAll(async () => {
  await counting?.close();
  await server?.close();
});

const noDailyLimit = (file: OrganizationFile) => (file.organization.max_invites = null);
const addresses = (count: number, tag: string) => Array.from({ length: count }, (_, i) => `${tag}-${i}@example.net`).join(',');

test('5, 100 and 10,000 addresses take the same number of statements, and every row is written', async () => {
  const w = await createWorld(counting.prisma, noDailyLimit);
  const channels = [await w.channelId('general'), await w.channelId('design')];
  const groups = [await w.groupId('support')];
  const invite = (count: number, tag: string) =>
    counting.request('/api/v1/invites', {
      method: 'POST',
      headers: { authorization: w.users.owner.auth },
      body: new URLSearchParams({
        invitee_emails: addresses(count, tag),
        stream_ids: JSON.stringify(channels),
        group_ids: JSON.stringify(groups),
      }),
    });
  // Authentication and the permission reads cost statements only until the process's caches hold
  // them: warm them first, with one address.
  expect((await invite(1, 'warm')).response.status).toBe(200);
  const counts: number[] = [];
  for (const [count, tag] of [
    [5, 'five'],
    [100, 'hundred'],
    [10_000, 'many'],
  ] as const) {
    const { response, statements } = await invite(count, tag);
    expect(response.status).toBe(200);
    counts.push(statements);
  }
  expect(new Set(counts).size).toBe(1);
  const prisma = counting.prisma;
  const invitations = await prisma.invitation.findMany({ where: { organizationId: w.org.id }, select: { id: true } });
  expect(invitations).toHaveLength(10_106);
  const ids = invitations.map((i) => i.id);
  expect(await prisma.invitationChannel.count({ where: { invitationId: { in: ids.slice(0, 30_000) } } })).toBe(2 * 10_106);
  expect(await prisma.invitationGroup.count({ where: { invitationId: { in: ids.slice(0, 30_000) } } })).toBe(10_106);
  expect(await prisma.outboxEmail.count({ where: { organizationId: w.org.id, kind: 'invitation' } })).toBe(10_106);
});

test("10,000 addresses on the real server: while it holds its organization's lock, /health and another organization are answered", async () => {
  const w = await createWorld(server.app.prisma, noDailyLimit);
  const other = await createWorld(server.app.prisma);
  // The test keeps the big request inside its transaction: it takes the organization's row, then its
  // statement that writes the rows waits for the outbox table, which the test holds in SHARE mode.
  const probe = await connectToTestDatabase();
  const outbox = await connectToTestDatabase();
  await outbox.query('BEGIN');
  await outbox.query('LOCK TABLE outbox_email IN SHARE MODE');
  let finished = false;
  const big = fetch(`${server.url}/api/v1/invites`, {
    method: 'POST',
    headers: { authorization: w.users.owner.auth },
    body: new URLSearchParams({ invitee_emails: addresses(10_000, 'burst'), stream_ids: '[]' }),
  }).finally(() => (finished = true));
  try {
    await eventually(() => organizationRowLocked(probe, w.org.id), "the big invitation to hold its organization's row lock", 20_000);
    const small = await Promise.all([
      fetch(`${server.url}/health`),
      fetch(`${server.url}/api/v1/users/me`, { headers: { authorization: other.users.member.auth } }),
    ]);
    expect(small.map((r) => r.status)).toEqual([200, 200]);
    expect({ finished, locked: await organizationRowLocked(probe, w.org.id) }).toEqual({ finished: false, locked: true });
  } finally {
    await outbox.query('ROLLBACK');
    await Promise.all([outbox.end(), probe.end()]);
  }
  expect((await big).status).toBe(200);
  expect(await server.app.prisma.invitation.count({ where: { organizationId: w.org.id } })).toBe(10_000);
});
