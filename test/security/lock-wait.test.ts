// A request never waits for a lock forever: while another connection holds the organization's row
// longer than DATABASE_LOCK_WAIT_SECONDS, invitations (the driver's transaction and Prisma's) answer a
// JSON 503 with Retry-After ("busy", not the outage's message), write nothing, and the database is
// not taken for down; the log has one warning per refusal and no error.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { graphql } from '../generated/gql.js';
import { gql } from '../support/graphql.js';
import { createInvitation, uniqueEmail } from '../support/invitations.js';
import { capturedLogger } from '../support/log-capture.js';
import { postInvites, storedInvitations } from '../support/invites.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';
import { holdOrganizationRow } from '../support/contention.js';

const { logger, lines } = capturedLogger('debug');

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ databaseLockWaitSeconds: 1 }, { outbox: false, logger });
});
afterAll(() => server.close());

const BUSY_BODY = { result: 'error', msg: 'The database is busy; try again shortly.', code: 'BAD_REQUEST' };

/** The log lines at warn (40) or above that `work` wrote. */
async function warningsOf<T>(work: () => Promise<T>) {
  const from = lines.length;
  const result = await work();
  const written = lines.slice(from).map(({ level, msg, requestId }) => ({ level, msg, requestId }));
  return { result, warnings: written.filter((line) => line.level >= 40) };
}
/** Written with the refused request's id. */
const REFUSAL_WARNING = { level: 40, msg: 'database lock not granted in time: answering 503', requestId: expect.any(String) };

const SendInvitations = graphql(`
  mutation SendInvitationsWhileLocked($input: SendInvitationsInput!) {
    sendInvitations(input: $input) {
      __typename
    }
  }
`);

/** `work`'s result, run while a connection of the test's own holds the organization's row lock. */
async function whileRowHeld<T>(organizationId: number, work: () => Promise<T>): Promise<T> {
  const hold = await holdOrganizationRow(organizationId);
  try {
    return await work();
  } finally {
    await hold.release();
  }
}

async function outboxCount(w: World) {
  return server.app.prisma.outboxEmail.count({ where: { organizationId: w.org.id } });
}

test('REST invitations answer 503 when the lock is not granted in time, write nothing, and work once it is free', async () => {
  const w = await createWorld(server.app.prisma);
  const fields = { invitee_emails: uniqueEmail('late'), stream_ids: '[]' };
  const { result, warnings } = await warningsOf(() =>
    whileRowHeld(w.org.id, async () => {
      const response = await fetch(`${server.url}/api/v1/invites`, {
        method: 'POST',
        headers: { authorization: w.users.admin.auth },
        body: new URLSearchParams(fields),
      });
      const busy = { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() };
      return { busy, health: (await fetch(`${server.url}/health`)).status };
    }),
  );
  const { busy, health } = result;
  expect(warnings).toEqual([REFUSAL_WARNING]);
  expect(busy).toEqual({ status: 503, retryAfter: '5', body: BUSY_BODY });
  expect(health).toBe(200);
  expect(await storedInvitations(server.app.prisma, w.org.id)).toEqual([]);
  expect(await outboxCount(w)).toBe(0);

  expect(await postInvites(server.url, w.users.admin.auth, fields)).toEqual({ status: 200, body: { result: 'success', msg: '' } });
  expect(await storedInvitations(server.app.prisma, w.org.id)).toHaveLength(1);
});

test('GraphQL invitations answer 503 SERVICE_UNAVAILABLE the same way', async () => {
  const w = await createWorld(server.app.prisma);
  const input = { inviteeEmails: [uniqueEmail('late')], streamIds: [] };
  const { result: busy, warnings } = await warningsOf(() =>
    whileRowHeld(w.org.id, () => gql(server.url, SendInvitations, { input }, w.users.admin.auth)),
  );
  // The refusal's warning alone: the error the 503 replaced is not logged as an unexpected one.
  expect(warnings).toEqual([REFUSAL_WARNING]);
  expect(busy).toEqual({
    status: 503,
    data: null,
    errors: [{ message: BUSY_BODY.msg, extensions: { code: 'SERVICE_UNAVAILABLE' } }],
  });
  expect(await storedInvitations(server.app.prisma, w.org.id)).toEqual([]);
  expect(await gql(server.url, SendInvitations, { input }, w.users.admin.auth)).toEqual({
    status: 200,
    data: { sendInvitations: { __typename: 'SendInvitationsSuccess' } },
  });
});

test('a Prisma transaction (revoking) gives up the same way and leaves the invitation as it was', async () => {
  const w = await createWorld(server.app.prisma);
  const invitation = await createInvitation(server, w, { email: uniqueEmail('kept'), referrer: 'admin', queueEmail: false });
  const revoke = () =>
    fetch(`${server.url}/api/v1/invites/${invitation.id}`, { method: 'DELETE', headers: { authorization: w.users.admin.auth } });
  const busy = await whileRowHeld(w.org.id, async () => {
    const response = await revoke();
    return { status: response.status, body: await response.json() };
  });
  expect(busy).toEqual({ status: 503, body: BUSY_BODY });
  expect((await server.app.prisma.invitation.findUniqueOrThrow({ where: { id: invitation.id } })).status).toBe('PENDING');
  expect((await revoke()).status).toBe(200);
});
