// Concurrency without 500s: every race has exactly the winners the rules allow,
// the losers get the documented 4xx, and every side (rows, outbox) agrees. The requests contend for
// real: PostgreSQL shows them waiting on the organization's row lock before the test lets it go
// (contention.ts), and where the rules accept two outcomes the requests are queued in both orders, so
// that each outcome occurs. A forced deadlock proves the retry of src/domain/transaction.ts.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createInvitations, submitAcceptance, uniqueEmail } from '../support/invitations.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld } from '../support/world.js';
import { inSqlTransaction, inTransaction } from '../../src/domain/transaction.js';
import { holdOrganizationRow, inLockOrder, whileOrganizationLocked } from '../support/contention.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const PARALLEL = 20;

/** A transaction's body that locks organization rows with `lock`. */
type Locking = (lock: (organizationId: number) => Promise<unknown>) => Promise<number>;

/** How many answers had each status, e.g. { 200: 1, 410: 19 }. */
function countStatuses(statuses: number[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

function accept(key: string, fullName = 'Racing Person') {
  return submitAcceptance(server.url, key, { full_name: fullName, password: 'lighthouse-keeper-42' });
}

const rest = (method: string, path: string, auth: string, form?: Record<string, string>) =>
  fetch(`${server.url}/api/v1${path}`, { method, headers: { authorization: auth }, body: form ? new URLSearchParams(form) : undefined });

test(`row 3: ${PARALLEL} simultaneous acceptances of one address's ${PARALLEL} invitations create one account`, async () => {
  const w = await createWorld(server.app.prisma);
  const email = uniqueEmail('racer');
  const invitations = await createInvitations(
    server,
    w,
    Array.from({ length: PARALLEL }, () => ({ email, queueEmail: false })),
  );
  // Every connection of the server's pool (10) waits for the lock before it is let go.
  const answers = await whileOrganizationLocked(w.org.id, () => Promise.all(invitations.map((i) => accept(i.confirmationKey))), {
    waiters: 10,
  });
  const counts = countStatuses(answers.map((a) => a.status));
  // One winner; the others find their invitation revoked by the winner's acceptance (410).
  expect(counts).toEqual({ 200: 1, 410: PARALLEL - 1 });
  for (const answer of answers) expect(answer.headers.get('content-type')).toMatch(/^text\/html/);
  const prisma = server.app.prisma;
  const accounts = await prisma.user.findMany({ where: { organizationId: w.org.id, emailKey: email } });
  expect(accounts).toHaveLength(1);
  const statuses = await prisma.invitation.findMany({
    where: { id: { in: invitations.map((i) => i.id) } },
    select: { status: true, createdUserId: true },
  });
  expect(countStatuses(statuses.map((s) => (s.status === 'ACCEPTED' ? 1 : 0)))).toEqual({ 1: 1, 0: PARALLEL - 1 });
  expect(statuses.filter((s) => s.status === 'REVOKED')).toHaveLength(PARALLEL - 1);
  expect(statuses.find((s) => s.status === 'ACCEPTED')!.createdUserId).toBe(accounts[0]!.id);
  // Welcome Bot greeted the one account once: no message twice.
  const greetings = await prisma.message.findMany({
    where: { organizationId: w.org.id, recipients: { some: { userId: accounts[0]!.id } } },
  });
  expect(greetings.length).toBeGreaterThan(0);
  expect(new Set(greetings.map((m) => m.content)).size).toBe(greetings.length);
});

/** Half of the pairs with one request first in the lock's queue, half with the other. */
const ORDERS = ['first', 'second'] as const;
const PAIRS = 8;

test(`revoke against accept, ${PAIRS} pairs queued on the lock in both orders: the first wins, never both`, async () => {
  const w = await createWorld(server.app.prisma);
  const invitations = await createInvitations(
    server,
    w,
    Array.from({ length: PAIRS }, () => ({ email: uniqueEmail('pair'), queueEmail: false })),
  );
  const prisma = server.app.prisma;
  for (const [n, i] of invitations.entries()) {
    const acceptFirst = ORDERS[n % 2] === 'first';
    const revoke = () => rest('DELETE', `/invites/${i.id}`, w.users.admin.auth);
    const acceptIt = () => accept(i.confirmationKey);
    const answers = await inLockOrder(w.org.id, acceptFirst ? [acceptIt, revoke] : [revoke, acceptIt]);
    const [accepted, revoked] = acceptFirst ? answers : [answers[1]!, answers[0]!];
    const row = await prisma.invitation.findUniqueOrThrow({ where: { id: i.id } });
    const accounts = await prisma.user.count({ where: { organizationId: w.org.id, emailKey: i.email.toLowerCase() } });
    const outcome = { accept: accepted.status, revoke: revoked.status, revokeBody: await revoked.json(), row: row.status, accounts };
    if (acceptFirst) {
      expect(outcome).toEqual({
        accept: 200,
        revoke: 400,
        revokeBody: { result: 'error', msg: 'No such invitation', code: 'BAD_REQUEST' },
        row: 'ACCEPTED',
        accounts: 1,
      });
    } else {
      expect(outcome).toEqual({ accept: 410, revoke: 200, revokeBody: { result: 'success', msg: '' }, row: 'REVOKED', accounts: 0 });
    }
  }
});

test(`resend against revoke, ${PAIRS} pairs queued on the lock in both orders: a resent e-mail only while still pending`, async () => {
  const w = await createWorld(server.app.prisma);
  const invitations = await createInvitations(
    server,
    w,
    Array.from({ length: PAIRS }, () => ({ email: uniqueEmail('resend') })),
  );
  const prisma = server.app.prisma;
  for (const [n, i] of invitations.entries()) {
    const resendFirst = ORDERS[n % 2] === 'first';
    const resend = () => rest('POST', `/invites/${i.id}/resend`, w.users.admin.auth);
    const revoke = () => rest('DELETE', `/invites/${i.id}`, w.users.admin.auth);
    const answers = await inLockOrder(w.org.id, resendFirst ? [resend, revoke] : [revoke, resend]);
    const [resent, revoked] = resendFirst ? answers : [answers[1]!, answers[0]!];
    const outcome = {
      resend: resent.status,
      resendBody: await resent.json(),
      revoke: revoked.status,
      row: (await prisma.invitation.findUniqueOrThrow({ where: { id: i.id } })).status,
      emails: await prisma.outboxEmail.count({ where: { invitationId: i.id } }),
    };
    expect(outcome).toEqual(
      resendFirst
        ? { resend: 200, resendBody: { result: 'success', msg: '' }, revoke: 200, row: 'REVOKED', emails: 2 }
        : {
            resend: 400,
            resendBody: { result: 'error', msg: 'No such invitation', code: 'BAD_REQUEST' },
            revoke: 200,
            row: 'REVOKED',
            emails: 1,
          },
    );
  }
});

test('invites against the daily limit: 30 requests at once, exactly the limit passes', async () => {
  const w = await createWorld(server.app.prisma, (f) => (f.organization.max_invites = 10));
  // Two sends per organization and process wait on the database lock; the others queue in the process.
  const answers = await whileOrganizationLocked(
    w.org.id,
    () =>
      Promise.all(
        Array.from({ length: 30 }, () =>
          rest('POST', '/invites', w.users.admin.auth, { invitee_emails: uniqueEmail('daily'), stream_ids: '[]' }),
        ),
      ),
    { waiters: 2 },
  );
  const bodies = await Promise.all(answers.map((a) => a.json()));
  expect(countStatuses(answers.map((a) => a.status))).toEqual({ 200: 10, 400: 20 });
  for (const body of bodies.filter((b) => b.result === 'error'))
    expect(body).toMatchObject({ code: 'INVITATION_FAILED', daily_limit_reached: true });
  const prisma = server.app.prisma;
  expect(await prisma.invitation.count({ where: { organizationId: w.org.id } })).toBe(10);
  expect(await prisma.outboxEmail.count({ where: { organizationId: w.org.id } })).toBe(10);
});

test.each([
  [
    'a Prisma transaction (inTransaction)',
    (work: Locking) =>
      inTransaction(server.app.prisma, (tx) => work((id) => tx.$queryRaw`SELECT id FROM organization WHERE id = ${id} FOR UPDATE`)),
  ],
  [
    'a driver transaction (inSqlTransaction)',
    (work: Locking) =>
      inSqlTransaction(server.app.sql, (tx) => work((id) => tx.rows('SELECT id FROM organization WHERE id = $1 FOR UPDATE', [id]))),
  ],
])('a forced deadlock aborts %s, which runs again and commits', async (_name, run) => {
  // PostgreSQL aborts the backend whose deadlock check (deadlock_timeout, 1 s after it began to wait)
  // finds the cycle. The transaction waits first, so it is the one, unless the test's own request
  // came more than a second later (a loaded machine): then the test's connection is the victim and
  // the round proves nothing, so it is played again. The retry may itself deadlock once more: when
  // the first attempt aborts, the retry can lock A again before the test's woken backend does (a free
  // row is locked without queueing), and the cycle repeats. So: retried at least once, then committed.
  for (let round = 1; round <= 5; round++) {
    const retried = await deadlockRound(run);
    if (retried === 'test connection aborted') continue;
    // Resolved at all: the last attempt committed (past MAX_TRANSACTION_ATTEMPTS the deadlock is thrown).
    return expect(retried.attempts).toBeGreaterThanOrEqual(2);
  }
  throw new Error('In 5 rounds PostgreSQL never chose the transaction as the deadlock victim');
});

/** The test's connection holds B; the transaction takes A, then waits for B; then the test asks for A. */
async function deadlockRound(run: (work: Locking) => Promise<number>) {
  const [a, b] = [await createWorld(server.app.prisma), await createWorld(server.app.prisma)];
  const hold = await holdOrganizationRow(b.org.id);
  let attempts = 0;
  const done = run(async (lock) => {
    attempts++;
    await lock(a.org.id);
    await lock(b.org.id);
    return attempts;
  });
  done.catch(() => {});
  let testConnectionAborted = false;
  try {
    await hold.untilWaiting(1);
    // Granted only once the transaction's first attempt was aborted (its retry may have begun meanwhile).
    await hold.holder.query('SELECT id FROM organization WHERE id = $1 FOR UPDATE', [a.org.id]);
  } catch (error) {
    if ((error as { code?: string }).code !== '40P01') throw error;
    testConnectionAborted = true;
  } finally {
    await hold.release();
  }
  const attemptsInAll = await done;
  return testConnectionAborted ? ('test connection aborted' as const) : { attempts: attemptsInAll };
}
