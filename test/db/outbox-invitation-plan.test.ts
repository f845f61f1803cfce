// An invitation's e-mails are read by invitation, from their index, however large the outbox. Nothing
// indexed outbox_email by invitation: GraphQL's emailDelivery scanned every e-mail of every
// organization for each invitation list that asked, and deleting invitations (a user's or an
// organization's deletion) scanned the outbox once per invitation for the foreign key. Each
// statement is EXPLAINed as the server sent it.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { captureStatements } from '../../src/db/statement-counter.js';
import { createInvitations, uniqueEmail } from '../support/invitations.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';
import { nodesOf, type PlanNode } from '../support/plans.js';

let server: TestServer;
let world: World;
const OTHER_EMAILS = 20_000;

beforeAll(async () => {
  server = await startTestServer();
  world = await createWorld(server.app.prisma);
  await createInvitations(server, world, [{ email: uniqueEmail('one') }, { email: uniqueEmail('two') }]);
  // Mail of no invitation (password-reset notices), as a busy server's outbox holds.
  await server.app.sql.rows(
    `INSERT INTO outbox_email (kind, "toAddress", subject, "textBody", "htmlBody", status)
     SELECT 'password_reset', 'someone-' || n || '@example.net', 'Reset', 'text', 'html', 'SENT'
       FROM generate_series(1, $1::int) n`,
    [OTHER_EMAILS],
  );
  await server.app.sql.rows('ANALYZE outbox_email', []);
}, 60_000);
afterAll(() => server?.close());

test("an invitation list's emailDelivery reads the invitations' e-mails from their index, not the outbox", async () => {
  const reads = captureStatements(/FROM outbox_email\s+WHERE kind = /);
  const response = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { authorization: world.users.admin.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ invitations { email emailDelivery { status } } }' }),
  });
  const body = (await response.json()) as { data: { invitations: { emailDelivery: { status: string } }[] } };
  expect(body.data.invitations.map((i) => i.emailDelivery.status)).toEqual(['PENDING', 'PENDING']);
  expect(reads).toHaveLength(1);
  const [
    {
      'QUERY PLAN': [explained],
    },
  ] = (await server.app.sql.rows<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) ${reads[0]!.text}`, reads[0]!.values)) as [
    { 'QUERY PLAN': [{ Plan: PlanNode }] },
  ];
  const nodes = nodesOf(explained.Plan);
  expect(nodes.filter((node) => node['Relation Name'] === 'outbox_email').map((node) => node['Node Type'])).not.toContain('Seq Scan');
  expect(nodes.map((node) => node['Index Name'])).toContain('outbox_email_invitationId_idx');
});
