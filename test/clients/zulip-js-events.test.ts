// zulip-js's event functions against the running server (docs/reference/events.md section 5):
// queues.register, events.retrieve, queues.deregister, and callOnEachEvent's endless loop receiving
// each event type this server serves. (zulip-js cannot send `event_types: null` in its multipart
// form: its form-data library refuses a null value, so its callers name their types.)
import { createReadStream } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { callApi } from '../support/rest.js';
import { postInvites } from '../support/invites.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';
import { lastZulipStatus, zulipClientFor, zulipClientWithConfig, type ZulipConfig } from '../support/zulip-js.js';

let server: TestServer;
let world: World;
/** Where callOnEachEvent's loop is sent when its test ends: a server that never answers, so it stops asking. */
let silent: Server;
beforeAll(async () => {
  server = await startTestServer({ eventHeartbeatSeconds: 2 });
  world = await createWorld(server.app.prisma);
  silent = createServer(() => {});
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  silent.unref();
});
afterAll(() => server.close());

describe('zulip-js events', () => {
  test('queues.register, events.retrieve and queues.deregister', async () => {
    const client = await zulipClientFor(server.url, world, 'member');
    const registered = await client.queues.register({ event_types: ['realm_emoji'] });
    expect(registered).toMatchObject({ result: 'success', msg: '', last_event_id: -1, realm_emoji: expect.any(Object) });
    const queueId = registered.queue_id;
    expect((await callApi(server.url, 'DELETE', '/realm/emoji/green_tick', { authorization: world.users.member.auth })).status).toBe(200);

    const retrieved = await client.events.retrieve({ queue_id: queueId, last_event_id: -1, dont_block: true });
    expect(lastZulipStatus()).toBe(200);
    expect(retrieved).toEqual({
      result: 'success',
      msg: '',
      events: [{ type: 'realm_emoji', op: 'update', realm_emoji: expect.any(Object), id: expect.any(Number) }],
    });
    expect(retrieved.events[0].realm_emoji[String(await world.emojiId('green_tick'))]).toMatchObject({
      name: 'green_tick',
      deactivated: true,
    });

    expect(await client.queues.deregister({ queue_id: queueId })).toEqual({ result: 'success', msg: '' });
    const gone = await client.events.retrieve({ queue_id: queueId, last_event_id: retrieved.events[0].id });
    expect(lastZulipStatus()).toBe(400);
    expect(gone).toEqual({ result: 'error', msg: `Bad event queue ID: ${queueId}`, queue_id: queueId, code: 'BAD_EVENT_QUEUE_ID' });
  });

  test('callOnEachEvent receives invites_changed, realm_emoji, attachment and heartbeat, each once', async () => {
    const config: ZulipConfig = { realm: server.url, username: world.users.member.email, apiKey: world.users.member.apiKey };
    const client = await zulipClientWithConfig(config);
    const received: { type: string; id: number }[] = [];
    const wanted = ['invites_changed', 'realm_emoji', 'attachment', 'heartbeat'];
    let allArrived: () => void;
    const arrived = new Promise<void>((resolve) => (allArrived = resolve));
    const queuesBefore = await server.app.prisma.eventQueue.count({ where: { userId: world.users.member.id } });
    void client.callOnEachEvent(
      (event) => {
        received.push(event);
        if (wanted.every((type) => received.some((e) => e.type === type))) allArrived();
      },
      ['invites_changed', 'realm_emoji', 'attachment'],
    ); // heartbeats come whatever the filter

    // The loop has registered once its queue exists.
    while ((await server.app.prisma.eventQueue.count({ where: { userId: world.users.member.id } })) === queuesBefore)
      await new Promise((r) => setTimeout(r, 20));

    expect((await postInvites(server.url, world.users.member.auth, { invitee_emails: 'zed@example.net', stream_ids: '[]' })).status).toBe(
      200,
    );
    expect((await callApi(server.url, 'DELETE', '/realm/emoji/lighthouse', { authorization: world.users.owner.auth })).status).toBe(200);
    // Uploaded as zulip-js uploads (its form-data library replaces the global FormData in this file).
    const path = join(await mkdtemp(join(tmpdir(), 'zulip-js-events-')), 'a.txt');
    await writeFile(path, 'a');
    expect(await client.callEndpoint('/user_uploads', 'POST', { file: createReadStream(path) })).toMatchObject({ result: 'success' });
    await arrived;
    config.apiURL = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/api/v1`;

    const ids = received.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    for (const type of ['invites_changed', 'realm_emoji', 'attachment'])
      expect([type, received.filter((e) => e.type === type).length]).toEqual([type, 1]);
    expect(received.find((e) => e.type === 'attachment')).toMatchObject({ op: 'add', attachment: { name: 'a.txt', size: 1 } });
  });
});
