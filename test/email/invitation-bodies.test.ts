// The invitation e-mails the database writes from their template's parts (src/domain/email/outbox.ts)
// are, character for character, what renderInvitationEmail gives for each invitation's link: with
// names and a server URL full of HTML's special characters and non-ASCII letters, with and without an expiry, for a
// send of several addresses and for a resend.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { renderInvitationEmail } from '../../src/domain/email/invitation-email.js';
import { callApi } from '../support/rest.js';
import { postInvites } from '../support/invites.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

let server: TestServer;
let world: World;
const ORGANIZATION = `Tom & Jerry's "<Club>" ☕ 日本`;
const REFERRER = `Ann <b>"O'Neil"</b> & Zoë`;

beforeAll(async () => {
  // A server URL that HTML escapes too: the links in the HTML are escaped, in the text they are not.
  server = await startTestServer({ serverUrl: `https://chat.example/o'brien&co` });
  world = await createWorld(server.app.prisma, (file) => {
    file.organization.name = ORGANIZATION;
    file.users!.find((u) => u.email === 'adam@lighthouse.example')!.full_name = REFERRER;
  });
});
afterAll(async () => {
  await server?.close();
});

/** Each queued e-mail beside what renderInvitationEmail gives for its invitation. */
async function queuedAndRendered() {
  const emails = await server.app.prisma.outboxEmail.findMany({
    where: { organizationId: world.org.id },
    orderBy: { id: 'asc' },
    include: { invitation: true },
  });
  return emails.map(({ invitation, toAddress, subject, textBody, htmlBody }) => ({
    queued: { toAddress, subject, text: textBody, html: htmlBody },
    rendered: {
      toAddress: invitation!.email,
      ...renderInvitationEmail({
        referrerName: REFERRER,
        referrerEmail: world.users.admin.email,
        organizationName: ORGANIZATION,
        link: `${server.app.config.serverUrl}/accounts/do_confirm/${invitation!.confirmationKey}`,
        expiresAt: invitation!.expiresAt,
      }),
    },
  }));
}

describe('invitation e-mails written by the database', () => {
  test('a send of three addresses, one that never expires, and a resend: each body as rendered', async () => {
    const addresses = ['first@elsewhere.example', 'Second.Person@elsewhere.example', 'third@elsewhere.example'];
    const sent = await postInvites(server.url, world.users.admin.auth, { invitee_emails: addresses.join(','), stream_ids: '[]' });
    expect(sent.status).toBe(200);
    const never = await postInvites(server.url, world.users.admin.auth, {
      invitee_emails: 'never@elsewhere.example',
      stream_ids: '[]',
      invite_expires_in_minutes: 'null',
    });
    expect(never.status).toBe(200);
    const first = await server.app.prisma.invitation.findFirstOrThrow({ where: { organizationId: world.org.id, email: addresses[0] } });
    const resend = await callApi(server.url, 'POST', `/invites/${first.id}/resend`, { authorization: world.users.admin.auth });
    expect(resend.status).toBe(200);

    const emails = await queuedAndRendered();
    expect(emails.map((e) => e.queued.toAddress)).toEqual([...addresses, 'never@elsewhere.example', addresses[0]]);
    for (const { queued, rendered } of emails) expect(queued).toEqual(rendered);
    // The names arrive escaped in the HTML, as they are in the text.
    expect(emails[0]!.queued.html).toContain('Tom &amp; Jerry&#39;s &quot;&lt;Club&gt;&quot; ☕ 日本');
    expect(emails[0]!.queued.text).toContain(ORGANIZATION);
    expect(emails[3]!.queued.text).toContain('This invitation does not expire.');
    expect(emails[0]!.queued.html).toContain(`href="https://chat.example/o&#39;brien&amp;co/accounts/do_confirm/${first.confirmationKey}"`);
    expect(emails[0]!.queued.text).toContain(`https://chat.example/o'brien&co/accounts/do_confirm/${first.confirmationKey}`);
  });
});
