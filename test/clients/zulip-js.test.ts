// The `zulip-js` npm package as a real client against the running server: it authenticates with
// HTTP Basic, sends DELETE/GET parameters in the query string and resolves to the parsed JSON
// body whatever the status (behaviour.md section 7).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectMatchesOpenApi } from '../support/openapi.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World, type WorldUserName } from '../support/world.js';
import { lastZulipStatus, zulipClient, zulipClientFor } from '../support/zulip-js.js';

let server: TestServer;
let world: World;
beforeAll(async () => {
  server = await startTestServer();
  world = await createWorld(server.app.prisma);
});
afterAll(() => server.close());

const clientFor = (who: WorldUserName) => zulipClientFor(server.url, world, who);

const emojiActive = async (name: string) =>
  (await server.app.prisma.customEmoji.findFirstOrThrow({ where: { organizationId: world.org.id, name }, orderBy: { id: 'asc' } }))
    .deactivated === false;

describe('zulip-js', () => {
  test('server.settings() reads the feature level', async () => {
    const client = await clientFor('guest');
    const settings = await client.server.settings();
    expect(settings).toMatchObject({ result: 'success', msg: '', zulip_feature_level: 472, realm_url: server.url });
  });

  test('users.me.getProfile() identifies the caller', async () => {
    const client = await clientFor('member');
    const profile = await client.users.me.getProfile();
    expect(profile).toMatchObject({
      result: 'success',
      msg: '',
      user_id: world.users.member.id,
      email: 'mark@lighthouse.example',
      role: 400,
      is_admin: false,
    });
  });

  test('callEndpoint DELETE /realm/emoji/<name>: refused for a non-author, done by the author, then 404', async () => {
    const member = await clientFor('member');
    const moderator = await clientFor('moderator');
    const refused = await moderator.callEndpoint('/realm/emoji/green_tick', 'DELETE');
    expect(refused).toEqual({ result: 'error', msg: 'Must be an organization administrator or emoji author', code: 'BAD_REQUEST' });
    expect(await emojiActive('green_tick')).toBe(true);

    const done = await member.callEndpoint('/realm/emoji/green_tick', 'DELETE');
    expect(done).toEqual({ result: 'success', msg: '' });
    expect(lastZulipStatus()).toBe(200);
    expectMatchesOpenApi('DELETE', '/realm/emoji/{emoji_name}', { status: lastZulipStatus(), body: done });
    expect(await emojiActive('green_tick')).toBe(false);

    // No leading slash: zulip-js adds it.
    const again = await member.callEndpoint('realm/emoji/green_tick', 'DELETE');
    expect(again).toEqual({ result: 'error', msg: "Emoji 'green_tick' does not exist", code: 'BAD_REQUEST' });
    expect(lastZulipStatus()).toBe(404);
    expectMatchesOpenApi('DELETE', '/realm/emoji/{emoji_name}', { status: lastZulipStatus(), body: again });
  });

  test('callEndpoint DELETE with params: they travel in the query string and are reported as ignored', async () => {
    const owner = await clientFor('owner');
    const response = await owner.callEndpoint('/realm/emoji/lighthouse', 'DELETE', { reason: 'rebrand', force: true });
    expect(response).toEqual({ result: 'success', msg: '', ignored_parameters_unsupported: ['force', 'reason'] });
    expect(await emojiActive('lighthouse')).toBe(false);
  });

  test('emojis.retrieve() lists the custom emoji, deactivated ones flagged', async () => {
    const client = await clientFor('guest');
    const response = await client.emojis.retrieve();
    const rows = await server.app.prisma.customEmoji.findMany({ where: { organizationId: world.org.id }, orderBy: { id: 'asc' } });
    expect(response.result).toBe('success');
    expect(Object.values(response.emoji).map((e: any) => [e.id, e.name, e.deactivated, e.author_id])).toEqual(
      rows.map((r) => [String(r.id), r.name, r.deactivated, r.authorId]),
    );
    expect(rows.some((r) => r.deactivated)).toBe(true);
  });

  test('callEndpoint GET /attachments', async () => {
    const client = await clientFor('member');
    const response = await client.callEndpoint('/attachments');
    expect(lastZulipStatus()).toBe(200);
    expectMatchesOpenApi('GET', '/attachments', { status: lastZulipStatus(), body: response });
    expect(response).toMatchObject({ result: 'success', msg: '', upload_space_used: 571_946 + 12 + 3_221_225_472 });
    expect(response.attachments.map((a: { name: string; message_ids: number[] }) => [a.name, a.message_ids])).toEqual([
      ['plan.pdf', world.messageIds.slice(0, 2)],
      ['draft.txt', []],
    ]);
  });

  test('wrong credentials come back as a JSON error body, not a thrown error', async () => {
    const client = await zulipClient(server.url, world.users.member.email, world.users.owner.apiKey);
    const response = await client.callEndpoint('/attachments');
    expect(response).toEqual({ result: 'error', msg: 'Invalid API key', code: 'UNAUTHORIZED' });
    expect(lastZulipStatus()).toBe(401);
    expectMatchesOpenApi('GET', '/attachments', { status: lastZulipStatus(), body: response });
  });

  // Invitations through zulip-js (multipart POST bodies) are in zulip-js-invites.test.ts.
});
