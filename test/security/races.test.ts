// Issue 9 row 3 and "Concurrency without 500s": every race has exactly the winners the rules allow,
// the losers get the documented 4xx, and every side (rows, outbox) agrees. Each test fires 20+
// requests at once on real connections, so the requests contend for the same rows for real.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createInvitations, uniqueEmail } from '../support/invitations.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld } from '../support/world.js';
import { whileOrganizationLocked } from './contention.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const PARALLEL = 20;

/** How many answers had each status, e.g. { 200: 1, 410: 19 }. */
function countStatuses(statuses: number[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

function accept(key: string, fullName = 'Racing Person') {
  return fetch(`${server.url}/accounts/do_confirm/${key}`, { method: 'POST', body: new URLSearchParams({ full_name: fullName }) });
}

const rest = (method: string, path: string, auth: string, form?: Record<string, string>) =>
  fetch(`${server.url}/api/v1${path}`, { method, headers: { authorization: auth }, body: form ? new URLSearchParams(form) : undefined });

test(`row 3: ${PARALLEL} simultaneous acceptances of one address's ${PARALLEL} invitations create one account`, async () => {
  const w = await createWorld(server.app.prisma);
  const email = uniqueEmail('racer');
  const invitations = await createInvitations(server, w, Array.from({ length: PARALLEL }, () => ({ email, queueEmail: false })));
  const answers = await whileOrganizationLocked(server.app.prisma, w.org.id, () => Promise.all(invitations.map((i) => accept(i.confirmationKey))));
  const counts = countStatuses(answers.map((a) => a.status));
  // One winner; the others find their invitation revoked by the winner's acceptance (410).
  expect(counts).toEqual({ 200: 1, 410: PARALLEL - 1 });
  for (const answer of answers) expect(answer.headers.get('content-type')).toMatch(/^text\/html/);
  const prisma = server.app.prisma;
  const accounts = await prisma.user.findMany({ where: { organizationId: w.org.id, emailKey: email } });
  expect(accounts).toHaveLength(1);
  const statuses = await prisma.invitation.findMany({ where: { id: { in: invitations.map((i) => i.id) } }, select: { status: true, createdUserId: true } });
  expect(countStatuses(statuses.map((s) => (s.status === 'ACCEPTED' ? 1 : 0)))).toEqual({ 1: 1, 0: PARALLEL - 1 });
  expect(statuses.filter((s) => s.status === 'REVOKED')).toHaveLength(PARALLEL - 1);
  expect(statuses.find((s) => s.status === 'ACCEPTED')!.createdUserId).toBe(accounts[0]!.id);
  // Welcome Bot greeted the one account once: no message twice.
  const greetings = await prisma.message.findMany({ where: { organizationId: w.org.id, recipients: { some: { userId: accounts[0]!.id } } } });
  expect(greetings.length).toBeGreaterThan(0);
  expect(new Set(greetings.map((m) => m.content)).size).toBe(greetings.length);
});

test(`revoke against accept, ${PARALLEL} pairs at once: each invitation is either revoked or accepted, never both`, async () => {
  const w = await createWorld(server.app.prisma);
  const invitations = await createInvitations(server, w, Array.from({ length: PARALLEL }, () => ({ email: uniqueEmail('pair'), queueEmail: false })));
  const pairs = await whileOrganizationLocked(server.app.prisma, w.org.id, () => Promise.all(
    invitations.map(async (i) => {
      const [revoked, accepted] = await Promise.all([rest('DELETE', `/invites/${i.id}`, w.users.admin.auth), accept(i.confirmationKey)]);
      return { id: i.id, email: i.email, revoke: revoked.status, accept: accepted.status, revokeBody: await revoked.json() };
    }),
  ));
  const prisma = server.app.prisma;
  for (const pair of pairs) {
    const row = await prisma.invitation.findUniqueOrThrow({ where: { id: pair.id } });
    const account = await prisma.user.count({ where: { organizationId: w.org.id, emailKey: pair.email.toLowerCase() } });
    if (pair.accept === 200) {
      expect(pair.revoke).toBe(400);
      expect(pair.revokeBody).toEqual({ result: 'error', msg: 'No such invitation', code: 'BAD_REQUEST' });
      expect(row.status).toBe('ACCEPTED');
      expect(account).toBe(1);
    } else {
      expect([pair.revoke, pair.accept]).toEqual([200, 410]);
      expect(row.status).toBe('REVOKED');
      expect(account).toBe(0);
    }
  }
});

test(`resend against revoke, ${PARALLEL} pairs at once: a resent e-mail only for invitations still pending then`, async () => {
  const w = await createWorld(server.app.prisma);
  const invitations = await createInvitations(server, w, Array.from({ length: PARALLEL }, () => ({ email: uniqueEmail('resend') })));
  const pairs = await whileOrganizationLocked(server.app.prisma, w.org.id, () => Promise.all(
    invitations.map(async (i) => {
      const [resent, revoked] = await Promise.all([rest('POST', `/invites/${i.id}/resend`, w.users.admin.auth), rest('DELETE', `/invites/${i.id}`, w.users.admin.auth)]);
      return { id: i.id, resend: resent.status, revoke: revoked.status, resendBody: await resent.json() };
    }),
  ));
  const prisma = server.app.prisma;
  for (const pair of pairs) {
    expect(pair.revoke).toBe(200);
    expect([200, 400]).toContain(pair.resend);
    if (pair.resend === 400) expect(pair.resendBody).toEqual({ result: 'error', msg: 'No such invitation', code: 'BAD_REQUEST' });
    expect((await prisma.invitation.findUniqueOrThrow({ where: { id: pair.id } })).status).toBe('REVOKED');
    expect(await prisma.outboxEmail.count({ where: { invitationId: pair.id } })).toBe(pair.resend === 200 ? 2 : 1);
  }
});

test('invites against the daily limit: 30 requests at once, exactly the limit passes', async () => {
  const w = await createWorld(server.app.prisma, (f) => (f.organization.max_invites = 10));
  // Two sends per organization and process wait on the database lock; the others queue in the process.
  const answers = await whileOrganizationLocked(
    server.app.prisma,
    w.org.id,
    () => Promise.all(Array.from({ length: 30 }, () => rest('POST', '/invites', w.users.admin.auth, { invitee_emails: uniqueEmail('daily'), stream_ids: '[]' }))),
    2,
  );
  const bodies = await Promise.all(answers.map((a) => a.json()));
  expect(countStatuses(answers.map((a) => a.status))).toEqual({ 200: 10, 400: 20 });
  for (const body of bodies.filter((b) => b.result === 'error')) expect(body).toMatchObject({ code: 'INVITATION_FAILED', daily_limit_reached: true });
  const prisma = server.app.prisma;
  expect(await prisma.invitation.count({ where: { organizationId: w.org.id } })).toBe(10);
  expect(await prisma.outboxEmail.count({ where: { organizationId: w.org.id } })).toBe(10);
});
