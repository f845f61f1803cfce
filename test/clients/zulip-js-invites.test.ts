// Sending invitations with the `zulip-js` client: it posts multipart/form-data, JSON-encodes arrays
// and stringifies everything else (behaviour.md section 7).
import { afterAll, beforeAll, expect, test } from 'vitest';
import { expectMatchesOpenApi } from '../support/openapi.js';
import { storedInvitations } from '../support/invites.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld } from '../support/world.js';
import { lastZulipStatus, zulipClientFor } from '../support/zulip-js.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

test('zulip-js sends invitations through callEndpoint', async () => {
  const world = await createWorld(server.app.prisma);
  const admin = await zulipClientFor(server.url, world, 'admin');
  const general = await world.channelId('general');
  const support = await world.groupId('support');

  const sent = await admin.callEndpoint('/invites', 'POST', {
    invitee_emails: 'ann@elsewhere.example,Bob <bob@elsewhere.example>',
    stream_ids: [general],
    group_ids: [support],
    invite_as: 300,
    invite_expires_in_minutes: null,
    notify_referrer_on_join: 'false', // its FormData (the form-data package) refuses booleans
  });
  expect(sent).toEqual({ result: 'success', msg: '' });
  expect(lastZulipStatus()).toBe(200);
  expectMatchesOpenApi('POST', '/invites', { status: lastZulipStatus(), body: sent });
  const stored = await storedInvitations(server.app.prisma, world.org.id);
  expect(stored.map((i) => [i.email, i.invitedAs, i.expiresAt, i.notifyReferrerOnJoin])).toEqual([
    ['ann@elsewhere.example', 300, null, false],
    ['bob@elsewhere.example', 300, null, false],
  ]);
  expect(stored[0]!.channels).toEqual([{ channelId: general }]);
  expect(stored[0]!.groups).toEqual([{ groupId: support }]);

  // zulip-js sends a null welcome text as the four letters "null": a member is then refused.
  const member = await zulipClientFor(server.url, world, 'member');
  const refused = await member.callEndpoint('/invites', 'POST', {
    invitee_emails: 'carol@elsewhere.example',
    stream_ids: [],
    welcome_message_custom_text: null,
  });
  expect(refused).toEqual({ result: 'error', msg: 'Must be an organization administrator', code: 'BAD_REQUEST' });
  expect(lastZulipStatus()).toBe(400);
  expectMatchesOpenApi('POST', '/invites', { status: lastZulipStatus(), body: refused });

  const existing = await member.callEndpoint('/invites', 'POST', { invitee_emails: world.users.owner.email, stream_ids: [] });
  expect(existing).toMatchObject({ result: 'error', code: 'INVITATION_FAILED', msg: "We weren't able to invite anyone." });
  expect(await storedInvitations(server.app.prisma, world.org.id)).toHaveLength(2);
});
