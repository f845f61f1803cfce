// The REST events API over HTTP (docs/reference/events.md): registration, polling, acknowledgement,
// deletion, their refusals, and each event type sent to exactly its recipients on exactly its
// triggers. "Nothing was sent" is proven by a later event that must arrive first in the same queue.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { capturedLogger } from '../support/log-capture.js';
import { callApi, type ApiResponse } from '../support/rest.js';
import { expectMatchesOpenApi } from '../support/openapi.js';
import { postInvites } from '../support/invites.js';
import { postFiles } from '../support/uploads.js';
import { connectToTestDatabase, runOnTestDatabase, startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World, type WorldUserName } from '../support/world.js';
import { submitAcceptance } from '../support/invitations.js';
import { removeExpired } from '../../src/domain/events/queues.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const newWorld = () => createWorld(server.app.prisma);

async function register(world: World, who: WorldUserName, form: Record<string, string> = {}): Promise<string> {
  const response = await callApi(server.url, 'POST', '/register', { authorization: world.users[who].auth, form });
  expect(response.body).toMatchObject({ result: 'success', last_event_id: -1 });
  return response.body.queue_id;
}

function poll(world: World, who: WorldUserName, queueId: string, lastEventId: number, dontBlock = true): Promise<ApiResponse> {
  return callApi(server.url, 'GET', '/events', {
    authorization: world.users[who].auth,
    query: { queue_id: queueId, last_event_id: String(lastEventId), dont_block: String(dontBlock) },
  });
}

async function eventsOf(world: World, who: WorldUserName, queueId: string, lastEventId = -1) {
  const response = await poll(world, who, queueId, lastEventId);
  expect(response.status).toBe(200);
  return response.body.events as { type: string; id: number; [key: string]: unknown }[];
}

const deactivateEmoji = (world: World, who: WorldUserName, name: string) =>
  callApi(server.url, 'DELETE', `/realm/emoji/${name}`, { authorization: world.users[who].auth });

const invite = (world: World, who: WorldUserName, email: string) =>
  postInvites(server.url, world.users[who].auth, { invitee_emails: email, stream_ids: '[]' });

/** A realm_emoji event that every user's queue receives: what comes before it in a queue came first. */
async function marker(world: World) {
  expect((await deactivateEmoji(world, 'owner', 'lighthouse')).status).toBe(200);
}

const types = (events: { type: string }[]) => events.map((e) => e.type);

describe('POST /register', () => {
  test('answers a queue, the versions and the realm_emoji state (every emoji, deactivated ones included)', async () => {
    const world = await newWorld();
    const response = await callApi(server.url, 'POST', '/register', {
      authorization: world.users.member.auth,
      form: { event_types: '["realm_emoji"]' },
    });
    expect(response.status).toBe(200);
    const listed = await callApi(server.url, 'GET', '/realm/emoji', { authorization: world.users.member.auth });
    expect(response.body).toEqual({
      result: 'success',
      msg: '',
      queue_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      last_event_id: -1,
      zulip_version: '12.0',
      zulip_feature_level: 472,
      zulip_merge_base: '12.0',
      realm_emoji: listed.body.emoji,
    });
    expect(Object.values(response.body.realm_emoji).some((e: any) => e.deactivated)).toBe(true);
  });

  test('event_types null: every type, realm_emoji state and the long-poll timeout; unknown types are ignored', async () => {
    const world = await newWorld();
    const all = await callApi(server.url, 'POST', '/register', { authorization: world.users.member.auth, form: { event_types: 'null' } });
    expect(all.body).toMatchObject({ event_queue_longpoll_timeout_seconds: 90, realm_emoji: expect.any(Object) });
    const unknown = await callApi(server.url, 'POST', '/register', {
      authorization: world.users.member.auth,
      form: { event_types: '["message","presence"]' },
    });
    expect(unknown.status).toBe(200);
    expect(unknown.body.realm_emoji).toBeUndefined();
    expect(unknown.body.event_queue_longpoll_timeout_seconds).toBeUndefined();
  });

  test.each([
    [{ event_types: 'nope' }, 'event_types is not valid JSON'],
    [{ event_types: '{"a":1}' }, 'event_types is not a list'],
    [{ event_types: '[1]' }, 'event_types[0] is not a string'],
    [{ queue_lifespan_secs: '1.5' }, 'queue_lifespan_secs is not an integer'],
    [{ queue_lifespan_secs: '-1' }, 'Invalid queue_lifespan_secs'],
    [{ apply_markdown: '"yes"' }, 'apply_markdown is not a boolean'],
    [{ client_capabilities: '[]' }, 'client_capabilities is not a dict'],
  ])('refuses %j with 400 and makes no queue', async (form, msg) => {
    const world = await newWorld();
    const response = await callApi(server.url, 'POST', '/register', {
      authorization: world.users.member.auth,
      form: form as Record<string, string>,
    });
    expect(response).toMatchObject({ status: 400, body: { result: 'error', msg, code: 'BAD_REQUEST' } });
    expect(await server.app.prisma.eventQueue.count({ where: { userId: world.users.member.id } })).toBe(0);
  });

  test('without credentials: 401', async () => {
    const response = await callApi(server.url, 'POST', '/register');
    expect(response.status).toBe(401);
  });

  test('a 51st queue replaces the least recently polled one', async () => {
    const world = await newWorld();
    const first = await register(world, 'guest');
    const second = await register(world, 'guest');
    for (let i = 0; i < 48; i++) await register(world, 'guest');
    await eventsOf(world, 'guest', first); // now polled more recently than the second
    await register(world, 'guest');
    expect(await server.app.prisma.eventQueue.count({ where: { userId: world.users.guest.id } })).toBe(50);
    expect((await poll(world, 'guest', second, -1)).body.code).toBe('BAD_EVENT_QUEUE_ID');
    expect((await poll(world, 'guest', first, -1)).status).toBe(200);
  });

  test('120 registrations of one user at once: each answered, 50 queues remain', async () => {
    const world = await newWorld();
    const answers = await Promise.all(
      Array.from({ length: 120 }, () => callApi(server.url, 'POST', '/register', { authorization: world.users.guest.auth })),
    );
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200));
    expect(await server.app.prisma.eventQueue.count({ where: { userId: world.users.guest.id } })).toBe(50);
  });
});

describe('GET and DELETE /events: refusals', () => {
  test("missing arguments, unknown, malformed and other users' queues", async () => {
    const world = await newWorld();
    const queueId = await register(world, 'member');
    const auth = world.users.member.auth;
    // Section 2: GET's missing arguments are plain BAD_REQUESTs, without var_name; DELETE's is the usual error.
    const answerTo = async (method: 'GET' | 'DELETE', query: Record<string, string>) => {
      const { status, body } = await callApi(server.url, method, '/events', { authorization: auth, query });
      return { status, body };
    };
    const plainRefusal = (msg: string) => ({ status: 400, body: { result: 'error', msg, code: 'BAD_REQUEST' } });
    expect(await answerTo('GET', { last_event_id: '-1' })).toEqual(plainRefusal("Missing 'queue_id' argument"));
    expect(await answerTo('GET', {})).toEqual(plainRefusal("Missing 'queue_id' argument"));
    expect(await answerTo('GET', { queue_id: queueId })).toEqual(plainRefusal("Missing 'last_event_id' argument"));
    expect(await answerTo('DELETE', {})).toEqual({
      status: 400,
      body: { result: 'error', msg: "Missing 'queue_id' argument", code: 'REQUEST_VARIABLE_MISSING', var_name: 'queue_id' },
    });
    for (const [who, id] of [
      ['member', 'nonsense'],
      ['member', '00000000-0000-4000-8000-000000000000'],
      ['admin', queueId],
    ] as const) {
      const response = await poll(world, who, id, -1);
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ result: 'error', msg: `Bad event queue ID: ${id}`, queue_id: id, code: 'BAD_EVENT_QUEUE_ID' });
    }
    const other = await newWorld();
    expect(
      (
        await callApi(server.url, 'GET', '/events', {
          authorization: other.users.member.auth,
          query: { queue_id: queueId, last_event_id: '-1' },
        })
      ).body.code,
    ).toBe('BAD_EVENT_QUEUE_ID');
    expect(
      (await callApi(server.url, 'DELETE', '/events', { authorization: world.users.admin.auth, query: { queue_id: queueId } })).body.code,
    ).toBe('BAD_EVENT_QUEUE_ID');
    expect((await poll(world, 'member', queueId, -1)).status).toBe(200);
    expect((await callApi(server.url, 'GET', '/events', { query: { queue_id: queueId, last_event_id: '-1' } })).status).toBe(401);
    const hostile = (query: Record<string, string>) => answerTo('GET', { queue_id: queueId, ...query });
    expect(await hostile({ last_event_id: 'x' })).toEqual(plainRefusal('last_event_id is not valid JSON'));
    expect(await hostile({ last_event_id: '-1', dont_block: 'yes' })).toEqual(plainRefusal('dont_block is not valid JSON'));
    // An integer a JavaScript number does not hold exactly (past 2^53 it would be silently rounded) is not one.
    const twoToThe70 = (2n ** 70n).toString();
    for (const notAnInteger of [
      '1.5',
      '1e3',
      twoToThe70,
      `-${twoToThe70}`,
      '9007199254740992',
      '-9007199254740992',
      '99999999999999999999999',
    ]) {
      expect(await hostile({ last_event_id: notAnInteger, dont_block: 'true' })).toEqual(plainRefusal('last_event_id is not an integer'));
    }
    for (const safe of [String(Number.MAX_SAFE_INTEGER), String(Number.MIN_SAFE_INTEGER)]) {
      expect(await hostile({ last_event_id: safe, dont_block: 'true' })).toEqual({
        status: 200,
        body: { result: 'success', msg: '', events: [] },
      });
    }
  });

  test('acknowledgement: pruned and unknown event ids', async () => {
    const world = await newWorld();
    const queueId = await register(world, 'member');
    expect(await eventsOf(world, 'member', queueId, 5)).toEqual([]); // nothing acknowledged yet, as the reference
    await marker(world);
    await deactivateEmoji(world, 'member', 'green_tick');
    const [first, second] = await eventsOf(world, 'member', queueId);
    expect((await poll(world, 'member', queueId, first!.id + 1000)).body).toEqual({
      result: 'error',
      msg: `Event ${first!.id + 1000} was not in this queue`,
      code: 'BAD_REQUEST',
    });
    expect(await eventsOf(world, 'member', queueId, first!.id)).toEqual([second]);
    expect((await poll(world, 'member', queueId, -1)).body).toEqual({
      result: 'error',
      msg: 'An event newer than -1 has already been pruned!',
      code: 'BAD_REQUEST',
    });
    expect(await eventsOf(world, 'member', queueId, second!.id)).toEqual([]);
  });

  test('an answer carries at most 1,000 events; the rest come after the acknowledgement', async () => {
    const world = await newWorld();
    const queueId = await register(world, 'member');
    await runOnTestDatabase(
      `INSERT INTO event ("organizationId", type, payload, "recipientIds")
       SELECT $1, 'attachment', '{"op":"remove","attachment":{"id":1},"upload_space_used":0}', ARRAY[$2::int] FROM generate_series(1, 1001)`,
      [world.org.id, world.users.member.id],
    );
    const first = await eventsOf(world, 'member', queueId);
    expect(first).toHaveLength(1000);
    expect(await eventsOf(world, 'member', queueId, first.at(-1)!.id)).toHaveLength(1);
  });

  test('an event whose transaction took its id first but committed last is still delivered after the later one was acknowledged', async () => {
    const world = await newWorld();
    const queueId = await register(world, 'member');
    const slow = await connectToTestDatabase();
    let seen: { id: number } | undefined;
    try {
      await slow.query('BEGIN');
      await slow.query(
        `INSERT INTO event ("organizationId", type, payload, "recipientIds") VALUES ($1, 'attachment', '{"op":"remove","attachment":{"id":7},"upload_space_used":0}', ARRAY[$2::int])`,
        [world.org.id, world.users.member.id],
      );
      await marker(world); // a later id, committed first
      const [first] = await eventsOf(world, 'member', queueId);
      expect(first).toMatchObject({ type: 'realm_emoji' });
      seen = first;
      expect(await eventsOf(world, 'member', queueId, seen!.id)).toEqual([]);
      await slow.query('COMMIT');
    } finally {
      await slow.end();
    }
    const late = await eventsOf(world, 'member', queueId, seen!.id);
    expect(late).toEqual([{ type: 'attachment', op: 'remove', attachment: { id: 7 }, upload_space_used: 0, id: expect.any(Number) }]);
    expect(late[0]!.id).toBeGreaterThan(seen!.id);
  });

  test('an expired queue is gone, and the server removes it', async () => {
    const world = await newWorld();
    const queueId = await register(world, 'member');
    await runOnTestDatabase(`UPDATE event_queue SET "expiresAt" = now() - interval '1 second' WHERE id = $1`, [queueId]);
    expect((await poll(world, 'member', queueId, -1)).body.code).toBe('BAD_EVENT_QUEUE_ID');
    await removeExpired(server.app.sql);
    expect(await server.app.prisma.eventQueue.count({ where: { id: queueId } })).toBe(0);
  });

  test('DELETE removes the queue', async () => {
    const world = await newWorld();
    const queueId = await register(world, 'member');
    const deleted = await callApi(server.url, 'DELETE', '/events', {
      authorization: world.users.member.auth,
      query: { queue_id: queueId },
    });
    expect(deleted).toMatchObject({ status: 200, body: { result: 'success', msg: '' } });
    expect((await poll(world, 'member', queueId, -1)).body.code).toBe('BAD_EVENT_QUEUE_ID');
  });
});

describe('recipients and triggers', () => {
  test('realm_emoji: every user of the organization, none of another; the dict of GET /realm/emoji', async () => {
    const world = await newWorld();
    const other = await newWorld();
    const queues = { member: await register(world, 'member'), guest: await register(world, 'guest'), bot: await register(world, 'bot') };
    const elsewhere = await register(other, 'owner');
    await deactivateEmoji(world, 'member', 'green_tick');
    const listed = await callApi(server.url, 'GET', '/realm/emoji', { authorization: world.users.guest.auth });
    for (const [who, queueId] of Object.entries(queues) as [WorldUserName, string][]) {
      const events = await eventsOf(world, who, queueId);
      expect(events).toEqual([{ type: 'realm_emoji', op: 'update', realm_emoji: listed.body.emoji, id: expect.any(Number) }]);
    }
    // A refused deactivation (the member did not add this one) sends nothing.
    expect((await deactivateEmoji(world, 'member', 'lighthouse')).status).toBe(400);
    await deactivateEmoji(other, 'owner', 'green_tick');
    expect(types(await eventsOf(other, 'owner', elsewhere))).toEqual(['realm_emoji']);
    expect(types(await eventsOf(world, 'member', queues.member))).toEqual(['realm_emoji']);
  });

  test('invites_changed: administrators, owners and the inviter, once per request; not on a refusal, a resend or to others', async () => {
    const world = await newWorld();
    const other = await newWorld();
    const names: WorldUserName[] = ['owner', 'admin', 'moderator', 'member', 'guest'];
    const queues = Object.fromEntries(
      await Promise.all(names.map(async (who) => [who, await register(world, who, { event_types: '["invites_changed","realm_emoji"]' })])),
    );
    const elsewhere = await register(other, 'owner');
    // Refused: an invalid address; then sent by the member (two addresses, one event).
    expect((await invite(world, 'member', 'not-an-address')).status).toBe(400);
    expect((await invite(world, 'member', 'ann@example.net, bob@example.net')).status).toBe(200);
    const invitation = await server.app.prisma.invitation.findFirstOrThrow({
      where: { organizationId: world.org.id, email: 'ann@example.net' },
    });
    const resend = await callApi(server.url, 'POST', `/invites/${invitation.id}/resend`, { authorization: world.users.admin.auth });
    expect(resend.status).toBe(200);
    await marker(world);
    await marker(other);
    const expected: Record<string, string[]> = {
      owner: ['invites_changed', 'realm_emoji'],
      admin: ['invites_changed', 'realm_emoji'],
      member: ['invites_changed', 'realm_emoji'],
      moderator: ['realm_emoji'],
      guest: ['realm_emoji'],
    };
    for (const who of names) expect([who, types(await eventsOf(world, who, queues[who]))]).toEqual([who, expected[who]]);
    expect(types(await eventsOf(other, 'owner', elsewhere))).toEqual(['realm_emoji']);
    const [event] = await eventsOf(world, 'owner', queues.owner);
    expect(event).toEqual({ type: 'invites_changed', id: expect.any(Number) });
  });

  test('invites_changed: nothing for a request the daily limit refuses (its rows rolled back) or an expired link', async () => {
    const world = await createWorld(server.app.prisma, (file) => (file.organization.max_invites = 2));
    expect((await invite(world, 'member', 'eve@example.net')).status).toBe(200);
    const invitation = await server.app.prisma.invitation.findFirstOrThrow({
      where: { organizationId: world.org.id, email: 'eve@example.net' },
    });
    const queues = { member: await register(world, 'member'), owner: await register(world, 'owner') };
    const refused = await invite(world, 'member', 'fay@example.net, gus@example.net');
    expect(refused.body).toMatchObject({ result: 'error', code: 'INVITATION_FAILED', daily_limit_reached: true });
    await runOnTestDatabase(`UPDATE invitation SET "expiresAt" = now() - interval '1 minute' WHERE id = $1`, [invitation.id]);
    const expired = await submitAcceptance(server.url, invitation.confirmationKey, { full_name: 'Eve', password: 'lighthouse-keeper-42' });
    expect(expired.status).toBe(410);
    await marker(world);
    expect(types(await eventsOf(world, 'member', queues.member))).toEqual(['realm_emoji']);
    expect(types(await eventsOf(world, 'owner', queues.owner))).toEqual(['realm_emoji']);
  });

  test("invites_changed on revoking: the invitation's inviter and the administrators, not the moderator", async () => {
    const world = await newWorld();
    expect((await invite(world, 'member', 'cy@example.net')).status).toBe(200);
    const invitation = await server.app.prisma.invitation.findFirstOrThrow({
      where: { organizationId: world.org.id, email: 'cy@example.net' },
    });
    const queues = {
      member: await register(world, 'member'),
      owner: await register(world, 'owner'),
      moderator: await register(world, 'moderator'),
    };
    // Refused: the guest may not revoke.
    expect((await callApi(server.url, 'DELETE', `/invites/${invitation.id}`, { authorization: world.users.guest.auth })).status).toBe(400);
    expect((await callApi(server.url, 'DELETE', `/invites/${invitation.id}`, { authorization: world.users.admin.auth })).status).toBe(200);
    await marker(world);
    expect(types(await eventsOf(world, 'member', queues.member))).toEqual(['invites_changed', 'realm_emoji']);
    expect(types(await eventsOf(world, 'owner', queues.owner))).toEqual(['invites_changed', 'realm_emoji']);
    expect(types(await eventsOf(world, 'moderator', queues.moderator))).toEqual(['realm_emoji']);
  });

  test('invites_changed on an acceptance: the new account exists', async () => {
    const world = await newWorld();
    expect((await invite(world, 'member', 'dee@example.net')).status).toBe(200);
    const invitation = await server.app.prisma.invitation.findFirstOrThrow({
      where: { organizationId: world.org.id, email: 'dee@example.net' },
    });
    const queue = await register(world, 'member');
    const accepted = await submitAcceptance(server.url, invitation.confirmationKey, { full_name: 'Dee', password: 'lighthouse-keeper-42' });
    expect(accepted.status).toBe(200);
    await marker(world);
    expect(types(await eventsOf(world, 'member', queue))).toEqual(['invites_changed', 'realm_emoji']);
    expect(await server.app.prisma.user.count({ where: { organizationId: world.org.id, emailKey: 'dee@example.net' } })).toBe(1);
  });

  test("attachment: the owner only, the item of GET /attachments and the organization's space used", async () => {
    const world = await newWorld();
    const queues = { member: await register(world, 'member'), owner: await register(world, 'owner') };
    const uploaded = await postFiles(server.url, '/user_uploads', world.users.member.auth, [
      { name: 'notes.txt', content: 'hello events' },
    ]);
    expect(uploaded.status).toBe(200);
    const listed = await callApi(server.url, 'GET', '/attachments', { authorization: world.users.member.auth });
    expectMatchesOpenApi('GET', '/attachments', listed);
    const item = listed.body.attachments.find((a: { name: string }) => a.name === 'notes.txt');
    const [added] = await eventsOf(world, 'member', queues.member);
    expect(added).toEqual({
      type: 'attachment',
      op: 'add',
      attachment: item,
      upload_space_used: listed.body.upload_space_used,
      id: expect.any(Number),
    });

    const refused = await callApi(server.url, 'DELETE', `/attachments/${item.id}`, { authorization: world.users.owner.auth });
    expect(refused.status).toBe(400);
    const removed = await callApi(server.url, 'DELETE', `/attachments/${item.id}`, { authorization: world.users.member.auth });
    expect(removed.status).toBe(200);
    const after = await callApi(server.url, 'GET', '/attachments', { authorization: world.users.member.auth });
    await marker(world);
    const events = await eventsOf(world, 'member', queues.member, added!.id);
    expect(events.slice(0, 1)).toEqual([
      {
        type: 'attachment',
        op: 'remove',
        attachment: { id: item.id },
        upload_space_used: after.body.upload_space_used,
        id: expect.any(Number),
      },
    ]);
    expect(types(events)).toEqual(['attachment', 'realm_emoji']);
    expect(types(await eventsOf(world, 'owner', queues.owner))).toEqual(['realm_emoji']);
  });

  test('event_types filters; heartbeats are always delivered and acknowledged like any event', async () => {
    const world = await newWorld();
    const onlyInvites = await register(world, 'member', { event_types: '["invites_changed"]' });
    await marker(world);
    expect(await eventsOf(world, 'member', onlyInvites)).toEqual([]);
    const beating = await startTestServer({ eventHeartbeatSeconds: 1 });
    try {
      const waited = await callApi(beating.url, 'GET', '/events', {
        authorization: world.users.member.auth,
        query: { queue_id: onlyInvites, last_event_id: '-1' },
      });
      expect(waited.body).toEqual({
        result: 'success',
        msg: '',
        events: [{ type: 'heartbeat', id: expect.any(Number) }],
        queue_id: onlyInvites,
      });
      expect(await eventsOf(world, 'member', onlyInvites, waited.body.events[0].id)).toEqual([]);
    } finally {
      await beating.close();
    }
  });
});

describe('long polls', () => {
  test('a waiting poll is answered by a new event, with its queue_id', async () => {
    const world = await newWorld();
    const queueId = await register(world, 'member', { event_types: '["realm_emoji"]' });
    const waiting = poll(world, 'member', queueId, -1, false);
    await waitUntilWaiting(queueId);
    await marker(world);
    const answer = await waiting;
    expect(answer.body).toEqual({
      result: 'success',
      msg: '',
      events: [expect.objectContaining({ type: 'realm_emoji' })],
      queue_id: queueId,
    });
  });

  test('a second poll of the queue answers the first; DELETE answers the waiting one', async () => {
    const world = await newWorld();
    const queueId = await register(world, 'member', { event_types: '["invites_changed"]' });
    const first = poll(world, 'member', queueId, -1, false);
    await waitUntilWaiting(queueId);
    const second = poll(world, 'member', queueId, -1, false);
    expect((await first).body).toEqual({ result: 'success', msg: '', events: [], queue_id: queueId });
    await waitUntilWaiting(queueId);
    const deleted = await callApi(server.url, 'DELETE', '/events', {
      authorization: world.users.member.auth,
      query: { queue_id: queueId },
    });
    expect(deleted.status).toBe(200);
    expect((await second).body).toEqual({ result: 'success', msg: '', events: [], queue_id: queueId });
  });

  test("a deactivated user's waiting poll is answered, and the next one is refused with 401", async () => {
    const world = await newWorld();
    const queueId = await register(world, 'moderator', { event_types: '["invites_changed"]' });
    const waiting = poll(world, 'moderator', queueId, -1, false);
    await waitUntilWaiting(queueId);
    await runOnTestDatabase(`UPDATE user_account SET "isActive" = false WHERE id = $1`, [world.users.moderator.id]);
    const answer = await waiting;
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject({ result: 'error', msg: 'Account is deactivated' });
    expect((await poll(world, 'moderator', queueId, -1)).status).toBe(401);
  });

  test('a reset key: the waiting poll is answered with 401, and so is the next', async () => {
    const world = await newWorld();
    const queueId = await register(world, 'admin', { event_types: '["attachment"]' });
    const waiting = poll(world, 'admin', queueId, -1, false);
    await waitUntilWaiting(queueId);
    await runOnTestDatabase(`UPDATE user_account SET "apiKeyHash" = md5(random()::text) WHERE id = $1`, [world.users.admin.id]);
    const answer = await waiting;
    expect(answer).toMatchObject({ status: 401, body: { result: 'error', msg: 'Invalid API key' } });
    expect((await poll(world, 'admin', queueId, -1)).status).toBe(401);
  });

  test('the GraphQL door writes the same event (the domain writes it, not the REST handler)', async () => {
    const world = await newWorld();
    const queueId = await register(world, 'guest', { event_types: '["realm_emoji"]' });
    const response = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { authorization: world.users.owner.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'mutation { deactivateCustomEmoji(emojiName: "lighthouse") { __typename } }' }),
    });
    expect(response.status).toBe(200);
    expect(types(await eventsOf(world, 'guest', queueId))).toEqual(['realm_emoji']);
  });

  test('a client that leaves while its poll reads the queue is answered at once, not kept waiting until the heartbeat', async () => {
    const logged = capturedLogger('info');
    const alone = await startTestServer({ eventHeartbeatSeconds: 600 }, { outbox: false, logger: logged.logger });
    // Two connections: inside a transaction, pg_stat_activity answers what it first saw, again and again.
    const [holder, watcher] = [await connectToTestDatabase(), await connectToTestDatabase()];
    try {
      const world = await createWorld(alone.app.prisma);
      const registered = await callApi(alone.url, 'POST', '/register', { authorization: world.users.member.auth, form: {} });
      const queueId = registered.body.queue_id as string;
      // The queue's row held: the poll stops in its first statement, before it could wait.
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM event_queue WHERE id = $1 FOR UPDATE', [queueId]);
      const socket = connect(Number(new URL(alone.url).port), '127.0.0.1');
      socket.on('error', () => {});
      socket.write(
        `GET /api/v1/events?queue_id=${queueId}&last_event_id=-1 HTTP/1.1\r\nHost: test\r\nAuthorization: ${world.users.member.auth}\r\n\r\n`,
      );
      const {
        rows: [{ pid: holderPid }],
      } = await holder.query('SELECT pg_backend_pid() AS pid');
      await vi.waitFor(async () => expect((await watcher.query(BLOCKED_BY, [holderPid])).rows).toHaveLength(1), { timeout: 10_000 });
      socket.destroy();
      // Sent after the first connection closed: once it is answered, the server has seen that close.
      expect((await fetch(`${alone.url}/health`)).status).toBe(200);
      await holder.query('COMMIT');
      const answered = () => logged.lines.some((line) => line.msg === 'request' && line.path === '/api/v1/events');
      await vi.waitFor(() => expect(answered()).toBe(true), { timeout: 10_000 });
      expect(alone.app.eventPolls?.size).toBe(0);
    } finally {
      await Promise.all([holder.end(), watcher.end()]);
      await alone.close();
    }
  });
});

/** The backends a session's locks hold up: here, only the poll's (no other test waits on this queue). */
const BLOCKED_BY = 'SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))';

/** Until a request waits on the queue (its row says so). */
async function waitUntilWaiting(queueId: string): Promise<void> {
  for (;;) {
    const queue = await server.app.prisma.eventQueue.findUniqueOrThrow({ where: { id: queueId } });
    if (queue.waitingUntil !== null) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
