// GraphQL subscriptions over Server-Sent Events (graphql-sse's client) and WebSocket (graphql-ws's
// client): the REST events' recipients and triggers, resuming with `after`, EVENTS_PRUNED, access
// ending with a key reset or a deactivation, credentials, origins, limits, and a closed connection
// or a shutdown ending the stream at once. "Nothing was delivered" is proven by a later event that
// the subscriber must receive next, never by waiting; "accepted" by an event it receives.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createClient as createWsClient } from 'graphql-ws';
import { print } from 'graphql';
import WebSocket from 'ws';
import { graphql } from '../generated/gql.js';
import { LISTENER_NAME } from '../../src/db/notifications.js';
import { positionCommittedEvents } from '../../src/domain/events/positions.js';
import { MAX_HELD_EVENTS } from '../../src/domain/events/streams.js';
import { removeExpired } from '../../src/domain/events/queues.js';
import { ROLE } from '../../src/domain/users/roles.js';
import { callApi } from '../support/rest.js';
import { postInvites } from '../support/invites.js';
import { pngImage } from '../support/images.js';
import { postFiles } from '../support/uploads.js';
import { connectToTestDatabase, runOnTestDatabase, startTestServer, type TestServer } from '../support/server.js';
import { eventually, subscribe, TRANSPORTS, type OpenSubscription, type Transport } from '../support/subscriptions.js';
import { createWorld, type World, type WorldUserName } from '../support/world.js';

const ALLOWED_ORIGIN = 'https://app.example';
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ allowedOrigins: [ALLOWED_ORIGIN] });
});
afterAll(() => server.close());

const newWorld = () => createWorld(server.app.prisma);

const EmojiChanges = graphql(`
  subscription EmojiChanges($after: String) {
    customEmojiChanged(after: $after) {
      cursor
      change
      emoji {
        name
        deactivated
        author {
          email
        }
      }
    }
  }
`);

const InvitationChanges = graphql(`
  subscription InvitationChanges {
    invitationsChanged {
      cursor
      invitations {
        email
      }
    }
  }
`);

const InvitationReferrers = graphql(`
  subscription InvitationReferrers {
    invitationsChanged {
      invitations {
        email
        referrer {
          fullName
        }
      }
    }
  }
`);

const AttachmentChanges = graphql(`
  subscription AttachmentChanges {
    attachmentsChanged {
      change
      attachmentId
      attachment {
        name
        size
        messageIds
      }
      uploadSpaceUsed
    }
  }
`);

const open: OpenSubscription<unknown>[] = [];

/**
 * A subscription that is following the log (so that what happens next reaches it). Whatever came
 * before (what committed before it, another's event) would be the first thing it receives: each test's
 * first expected event proves that nothing came.
 */
async function follow<T, V>(
  transport: Transport,
  world: World,
  who: WorldUserName,
  document: Parameters<typeof subscribe<T, V>>[3],
  variables: V,
) {
  const before = server.app.eventStreams!.size;
  const subscription = subscribe(transport, server.url, world.users[who].auth, document, variables);
  open.push(subscription as OpenSubscription<unknown>);
  // A first subscription after a long unread backlog positions it first (seconds through a pooler).
  await eventually(() => server.app.eventStreams!.size > before, 60_000);
  return subscription;
}

const deactivateEmoji = (world: World, who: WorldUserName, name: string) =>
  callApi(server.url, 'DELETE', `/realm/emoji/${name}`, { authorization: world.users[who].auth });

/** A new emoji of the organization: an ADDED event for every subscriber of it (a marker that must come next). */
async function addEmoji(world: World, name: string) {
  const added = await postFiles(server.url, `/realm/emoji/${name}`, world.users.owner.auth, [
    { name: `${name}.png`, type: 'image/png', content: await pngImage() },
  ]);
  expect(added.status).toBe(200);
}

const emojiAdded = (name: string) => ({
  data: { customEmojiChanged: { cursor: expect.any(String), change: 'ADDED', emoji: expect.objectContaining({ name }) } },
});

afterAll(async () => {
  await Promise.all(open.map((s) => s.close()));
});

describe.each(TRANSPORTS)('over %s', (transport) => {
  test('customEmojiChanged reaches every user of the organization, and nobody of another', async () => {
    const world = await newWorld();
    const other = await newWorld();
    const guest = await follow(transport, world, 'guest', EmojiChanges, {});
    const bot = await follow(transport, world, 'bot', EmojiChanges, {});
    const outsider = await follow(transport, other, 'member', EmojiChanges, {});
    // A refused deactivation (the member did not add this one) sends nothing: the first event is the next one.
    expect((await deactivateEmoji(world, 'member', 'lighthouse')).status).toBe(400);
    expect((await deactivateEmoji(world, 'owner', 'lighthouse')).status).toBe(200);
    const expected = { change: 'DEACTIVATED', emoji: { name: 'lighthouse', deactivated: true, author: { email: expect.any(String) } } };
    for (const subscription of [guest, bot]) {
      expect(await subscription.next()).toEqual({ data: { customEmojiChanged: { cursor: expect.any(String), ...expected } } });
    }
    // The outsider's own organization's next change is the first thing it receives.
    expect((await deactivateEmoji(other, 'owner', 'green_tick')).status).toBe(200);
    const outsiders = await outsider.next();
    expect(outsiders).toMatchObject({ data: { customEmojiChanged: { change: 'DEACTIVATED', emoji: { name: 'green_tick' } } } });
    // The guest's next event is its own organization's next change, the bot's too: not the other organization's.
    expect((await deactivateEmoji(world, 'owner', 'green_tick')).status).toBe(200);
    const [guests, bots] = [await guest.next(), await bot.next()];
    expect(guests).toMatchObject({ data: { customEmojiChanged: { change: 'DEACTIVATED', emoji: { name: 'green_tick' } } } });
    expect(guests).toEqual(bots);
    expect(guests).not.toEqual(outsiders);
  });

  test('invitationsChanged: owners, administrators and the inviter; not a member who is neither, nor another organization; nothing on a refusal or a resend', async () => {
    const world = await newWorld();
    const other = await newWorld();
    const subscribers = {
      owner: await follow(transport, world, 'owner', InvitationChanges, {}),
      admin: await follow(transport, world, 'admin', InvitationChanges, {}),
      member: await follow(transport, world, 'member', InvitationChanges, {}),
      moderator: await follow(transport, world, 'moderator', InvitationChanges, {}),
      outsider: await follow(transport, other, 'owner', InvitationChanges, {}),
    };
    const invite = (email: string) => postInvites(server.url, world.users.member.auth, { invitee_emails: email, stream_ids: '[]' });
    expect((await invite('not-an-address')).status).toBe(400);
    expect((await invite('new.person@lighthouse.example')).status).toBe(200);
    const listed = (emails: string[]) => ({
      data: { invitationsChanged: { cursor: expect.any(String), invitations: emails.map((email) => ({ email })) } },
    });
    const everyPending = (
      await server.app.prisma.invitation.findMany({
        where: { organizationId: world.org.id, status: 'PENDING' },
        orderBy: [{ invitedAt: 'desc' }, { id: 'desc' }],
      })
    ).map((i) => i.email);
    expect(await subscribers.owner.next()).toEqual(listed(everyPending));
    expect(await subscribers.admin.next()).toEqual(listed(everyPending));
    const own = (
      await server.app.prisma.invitation.findMany({
        where: { referrerId: world.users.member.id, status: 'PENDING' },
        orderBy: [{ invitedAt: 'desc' }, { id: 'desc' }],
      })
    ).map((i) => i.email);
    expect(await subscribers.member.next()).toEqual(listed(own));
    // A resend sends nothing; the revocation that follows is the inviter's next event.
    const invitation = await server.app.prisma.invitation.findFirstOrThrow({
      where: { organizationId: world.org.id, email: 'new.person@lighthouse.example' },
    });
    expect((await callApi(server.url, 'POST', `/invites/${invitation.id}/resend`, { authorization: world.users.admin.auth })).status).toBe(
      200,
    );
    expect((await callApi(server.url, 'DELETE', `/invites/${invitation.id}`, { authorization: world.users.admin.auth })).status).toBe(200);
    expect(await subscribers.member.next()).toEqual(listed(own.filter((email) => email !== 'new.person@lighthouse.example')));
    // The moderator's first event is its own invitation's, the outsider's its own organization's: nothing came before.
    expect(
      (await postInvites(server.url, world.users.moderator.auth, { invitee_emails: 'by.moderator@lighthouse.example', stream_ids: '[]' }))
        .status,
    ).toBe(200);
    expect(await subscribers.moderator.next()).toEqual(listed(['by.moderator@lighthouse.example']));
    expect(
      (await postInvites(server.url, other.users.owner.auth, { invitee_emails: 'in.other@lighthouse.example', stream_ids: '[]' })).status,
    ).toBe(200);
    const othersPending = (
      await server.app.prisma.invitation.findMany({
        where: { organizationId: other.org.id, status: 'PENDING' },
        orderBy: [{ invitedAt: 'desc' }, { id: 'desc' }],
      })
    ).map((i) => i.email);
    expect(await subscribers.outsider.next()).toEqual(listed(othersPending));
  });

  test('attachmentsChanged: the owner only, ADDED with the file, REMOVED with none', async () => {
    const world = await newWorld();
    const owner = await follow(transport, world, 'member', AttachmentChanges, {});
    const someoneElse = await follow(transport, world, 'admin', AttachmentChanges, {});
    const uploaded = await postFiles(server.url, '/user_uploads', world.users.member.auth, [
      { name: 'notes.txt', content: 'hello subscriptions' },
    ]);
    expect(uploaded.status).toBe(200);
    const added = await owner.next();
    expect(added).toEqual({
      data: {
        attachmentsChanged: {
          change: 'ADDED',
          attachmentId: expect.any(Number),
          attachment: { name: 'notes.txt', size: 19, messageIds: [] },
          uploadSpaceUsed: expect.any(Number),
        },
      },
    });
    const id = (added as { data: { attachmentsChanged: { attachmentId: number } } }).data.attachmentsChanged.attachmentId;
    expect((await callApi(server.url, 'DELETE', `/attachments/${id}`, { authorization: world.users.member.auth })).status).toBe(200);
    expect(await owner.next()).toEqual({
      data: { attachmentsChanged: { change: 'REMOVED', attachmentId: id, attachment: null, uploadSpaceUsed: expect.any(Number) } },
    });
    // The administrator's first event is its own upload's: neither of the member's came before it.
    expect((await postFiles(server.url, '/user_uploads', world.users.admin.auth, [{ name: 'own.txt', content: 'mine' }])).status).toBe(200);
    expect(await someoneElse.next()).toMatchObject({ data: { attachmentsChanged: { change: 'ADDED', attachment: { name: 'own.txt' } } } });
  });

  test('after: what was missed first, then new events; an invalid or pruned cursor is refused', async () => {
    const world = await newWorld();
    const first = await follow(transport, world, 'member', EmojiChanges, {});
    await deactivateEmoji(world, 'owner', 'lighthouse');
    const received = (await first.next()) as { data: { customEmojiChanged: { cursor: string } } };
    await first.close();
    await deactivateEmoji(world, 'owner', 'green_tick');
    const resumed = subscribe(transport, server.url, world.users.member.auth, EmojiChanges, {
      after: received.data.customEmojiChanged.cursor,
    });
    open.push(resumed as OpenSubscription<unknown>);
    expect(await resumed.next()).toMatchObject({ data: { customEmojiChanged: { emoji: { name: 'green_tick' } } } });
    // Then the next new event, and nothing (no event delivered twice) before it.
    await addEmoji(world, 'after_resume');
    expect(await resumed.next()).toEqual(emojiAdded('after_resume'));

    for (const cursor of ['nonsense', Buffer.from('event:999999999999').toString('base64url')]) {
      const refused = subscribe(transport, server.url, world.users.member.auth, EmojiChanges, { after: cursor });
      expect(await refused.next()).toMatchObject({
        errors: [
          { message: 'Invalid cursor: pass the cursor of an earlier event of this subscription.', extensions: { code: 'BAD_REQUEST' } },
        ],
      });
      await refused.close();
    }

    await runOnTestDatabase(`UPDATE event SET "createdAt" = now() - interval '1 day' WHERE "organizationId" = $1`, [world.org.id]);
    await removeExpired(server.app.sql);
    const pruned = subscribe(transport, server.url, world.users.member.auth, EmojiChanges, {
      after: received.data.customEmojiChanged.cursor,
    });
    expect(await pruned.next()).toMatchObject({ errors: [{ extensions: { code: 'EVENTS_PRUNED' } }] });
    await pruned.close();
  });

  test('a key reset ends the subscription; a deactivation too', async () => {
    const world = await newWorld();
    const before = server.app.eventStreams!.size;
    const admin = await follow(transport, world, 'admin', EmojiChanges, {});
    const moderator = await follow(transport, world, 'moderator', EmojiChanges, {});
    // Without any event: the authentication cache's invalidation ends it (how soon is the benchmark's to measure).
    await runOnTestDatabase(`UPDATE user_account SET "apiKeyHash" = md5(random()::text) WHERE id = $1`, [world.users.admin.id]);
    expect(await admin.next()).toMatchObject({ errors: [{ message: 'Invalid API key', extensions: { code: 'UNAUTHORIZED' } }] });
    expect(await admin.next()).toBe('ended');
    await runOnTestDatabase(`UPDATE user_account SET "isActive" = false WHERE id = $1`, [world.users.moderator.id]);
    expect(await moderator.next()).toMatchObject({ errors: [{ message: 'Account is deactivated', extensions: { code: 'UNAUTHORIZED' } }] });
    expect(await moderator.next()).toBe('ended');
    await eventually(() => server.app.eventStreams!.size === before);
  });

  test("a change of the subscriber's row is followed: demoted, they are sent their own invitations only, under their new name", async () => {
    const world = await newWorld();
    const admin = await follow(transport, world, 'admin', InvitationReferrers, {});
    const invite = (who: WorldUserName, email: string) =>
      postInvites(server.url, world.users[who].auth, { invitee_emails: email, stream_ids: '[]' });
    const pending = (referrerId?: number) =>
      server.app.prisma.invitation.findMany({
        where: { organizationId: world.org.id, referrerId, status: 'PENDING' },
        orderBy: [{ invitedAt: 'desc' }, { id: 'desc' }],
        select: { email: true, referrer: { select: { fullName: true } } },
      });
    expect((await invite('member', 'by.member@lighthouse.example')).status).toBe(200);
    const everyone = await pending();
    expect(everyone.map((i) => i.email)).toContain('by.member@lighthouse.example');
    expect(await admin.next()).toEqual({ data: { invitationsChanged: { invitations: everyone } } });
    await runOnTestDatabase(`UPDATE user_account SET role = $2, "fullName" = 'Adam Demoted' WHERE id = $1`, [
      world.users.admin.id,
      ROLE.MEMBER,
    ]);
    expect((await invite('admin', 'by.demoted@lighthouse.example')).status).toBe(200);
    const own = await pending(world.users.admin.id);
    expect(own.map((i) => i.referrer.fullName)).toEqual(own.map(() => 'Adam Demoted'));
    expect(await admin.next()).toEqual({ data: { invitationsChanged: { invitations: own } } });
  });

  test('a closed connection frees its stream at once', async () => {
    const world = await newWorld();
    const before = server.app.eventStreams!.size;
    const subscription = await follow(transport, world, 'member', EmojiChanges, {});
    expect(server.app.eventStreams!.size).toBe(before + 1);
    await subscription.close();
    await eventually(() => server.app.eventStreams!.size === before, 1_000);
  });

  test('documents are validated and limited as queries are', async () => {
    const world = await newWorld();
    const aliases = Array.from({ length: 31 }, (_, i) => `c${i}: cursor`).join(' ');
    for (const [query, message] of [
      [
        'subscription TwoFields { a: customEmojiChanged { cursor } b: customEmojiChanged { cursor } }',
        'Subscription "TwoFields" must select only one top level field.',
      ],
      [`subscription ManyAliases { customEmojiChanged { ${aliases} } }`, 'Syntax Error: Aliases limit of 30 exceeded, found 31.'],
    ]) {
      const refused = subscribe(transport, server.url, world.users.member.auth, query!, {});
      const answer = await refused.next();
      await refused.close();
      expect(answer).toMatchObject({ errors: [{ message }] });
    }
  });
});

describe('credentials and origins', () => {
  test('SSE without credentials: UNAUTHORIZED; with a wrong key: the same', async () => {
    const world = await newWorld();
    for (const authorization of [undefined, `${world.users.member.auth.slice(0, -4)}AAAA`]) {
      const refused = subscribe('sse', server.url, authorization, EmojiChanges, {});
      const answer = await refused.next();
      await refused.close();
      if (answer === 'ended') expect(String(refused.failure())).toMatch(/401/);
      else expect(answer).toMatchObject({ errors: [{ extensions: { code: 'UNAUTHORIZED' } }] });
    }
  });

  test('SSE over GET streams (its answer is not held back to be made cacheable)', async () => {
    const world = await newWorld();
    const query = encodeURIComponent('subscription { customEmojiChanged { change emoji { name } } }');
    const abort = new AbortController();
    const response = await fetch(`${server.url}/graphql?query=${query}`, {
      headers: { authorization: world.users.member.auth, accept: 'text/event-stream' },
      signal: abort.signal,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await eventually(() => server.app.eventStreams!.size > 0);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    expect((await deactivateEmoji(world, 'owner', 'lighthouse')).status).toBe(200);
    let text = '';
    while (!text.includes('lighthouse')) text += decoder.decode((await reader.read()).value);
    expect(text).toContain('"customEmojiChanged":{"change":"DEACTIVATED","emoji":{"name":"lighthouse"}}');
    abort.abort();
  });

  test('SSE without a CSRF header is refused', async () => {
    const world = await newWorld();
    const response = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      // A content type a form could send: without the header, no preflight would have vetted the origin.
      headers: { authorization: world.users.member.auth, 'content-type': 'text/plain', accept: 'text/event-stream' },
      body: JSON.stringify({ query: 'subscription { customEmojiChanged { cursor } }' }),
    });
    expect(response.status).toBe(403);
  });

  test('WebSocket without credentials or with a wrong key: closed with 4403 before any operation', async () => {
    const world = await newWorld();
    for (const connectionParams of [{}, { Authorization: `${world.users.member.auth.slice(0, -4)}AAAA` }]) {
      const refused = subscribe('ws', server.url, undefined, EmojiChanges, {}, { connectionParams });
      expect(await refused.next()).toBe('ended');
      expect((refused.failure() as { code: number }).code).toBe(4403);
      await refused.close();
    }
  });

  test("a WebSocket handshake from another origin is refused; the server's own and allowed ones are not", async () => {
    const world = await newWorld();
    const handshake = (origin: string) =>
      new Promise<number>((resolve) => {
        const socket = new WebSocket(`${server.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws', { headers: { origin } });
        socket.on('open', () => {
          socket.close();
          resolve(101);
        });
        socket.on('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
        socket.on('error', () => {});
      });
    expect(await handshake('https://evil.example')).toBe(403);
    expect(await handshake(ALLOWED_ORIGIN)).toBe(101);
    expect(await handshake(new URL(server.url).origin)).toBe(101);
    const before = server.app.eventStreams!.size;
    const allowed = subscribe('ws', server.url, world.users.member.auth, EmojiChanges, {}, { headers: { origin: ALLOWED_ORIGIN } });
    open.push(allowed as OpenSubscription<unknown>);
    // Accepted: it follows the log and receives the organization's next event.
    await eventually(() => server.app.eventStreams!.size > before, 60_000);
    expect((await deactivateEmoji(world, 'owner', 'lighthouse')).status).toBe(200);
    expect(await allowed.next()).toMatchObject({ data: { customEmojiChanged: { change: 'DEACTIVATED', emoji: { name: 'lighthouse' } } } });
    await allowed.close();
  });
});

test('while the listening connection was down: a key reset still ends the subscription, and a waiting poll is answered', async () => {
  const world = await newWorld();
  const subscription = await follow('sse', world, 'admin', EmojiChanges, {});
  const registered = await callApi(server.url, 'POST', '/register', {
    authorization: world.users.member.auth,
    form: { event_types: '["realm_emoji"]' },
  });
  const queueId = registered.body.queue_id as string;
  const waiting = callApi(server.url, 'GET', '/events', {
    authorization: world.users.member.auth,
    query: { queue_id: queueId, last_event_id: '-1' },
  });
  await eventually(async () => (await server.app.prisma.eventQueue.findUniqueOrThrow({ where: { id: queueId } })).waitingUntil !== null);
  // The key is reset while the process hears nothing: its NOTIFY is lost. Only this file's database's
  // listener: the other files' server processes run beside it on the same PostgreSQL.
  await runOnTestDatabase(
    `WITH listener AS (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $2 AND datname = current_database())
     UPDATE user_account SET "apiKeyHash" = md5(random()::text) WHERE id = $1 AND (SELECT count(*) FROM listener) > 0`,
    [world.users.admin.id, LISTENER_NAME],
  );
  expect(await subscription.next(5_000)).toMatchObject({ errors: [{ extensions: { code: 'UNAUTHORIZED' } }] });
  expect(await waiting).toMatchObject({ status: 200, body: { result: 'success', events: [], queue_id: queueId } });
});

test('at most 100 subscriptions a user on one server (one WebSocket carries them all here); the 101st is refused', async () => {
  const world = await newWorld();
  const client = createWsClient({
    url: `${server.url.replace('http', 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { Authorization: world.users.guest.auth },
  });
  const before = server.app.eventStreams!.size;
  const stops: (() => void)[] = [];
  try {
    for (let i = 0; i < 100; i++)
      stops.push(
        client.subscribe(
          { query: 'subscription { customEmojiChanged { cursor } }' },
          { next: () => {}, error: () => {}, complete: () => {} },
        ),
      );
    await eventually(() => server.app.eventStreams!.size === before + 100, 10_000);
    const refused = await new Promise((resolve) =>
      client.subscribe({ query: 'subscription { customEmojiChanged { cursor } }' }, { next: resolve, error: resolve, complete: () => {} }),
    );
    expect(refused).toMatchObject({
      errors: [
        { message: 'A user may hold at most 100 subscriptions on one server: close some first.', extensions: { code: 'BAD_REQUEST' } },
      ],
    });
  } finally {
    for (const stop of stops) stop();
    await client.dispose();
  }
  await eventually(() => server.app.eventStreams!.size === before);
});

test('a server holding MAX_SUBSCRIPTIONS refuses more with SERVICE_UNAVAILABLE', async () => {
  const small = await startTestServer({ maxSubscriptions: 2 });
  try {
    const world = await createWorld(small.app.prisma);
    const held = [
      subscribe('ws', small.url, world.users.member.auth, EmojiChanges, {}),
      subscribe('sse', small.url, world.users.admin.auth, EmojiChanges, {}),
    ];
    await eventually(() => small.app.eventStreams!.size === 2);
    // Over SSE the request itself is refused, so that clients retry (perhaps on another server).
    const overSse = await fetch(`${small.url}/graphql`, {
      method: 'POST',
      headers: { authorization: world.users.owner.auth, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: print(EmojiChanges) }),
    });
    expect(overSse.status).toBe(503);
    expect(overSse.headers.get('retry-after')).toBe('5');
    expect(await overSse.text()).toContain('"code":"SERVICE_UNAVAILABLE"');
    const overSseClient = subscribe('sse', small.url, world.users.owner.auth, EmojiChanges, {});
    expect(await overSseClient.next()).toBe('ended');
    expect(overSseClient.failure()).toMatchObject({ response: { status: 503 } });
    // Over WebSocket the operation's error says it, without the HTTP hints.
    const overWs = subscribe('ws', small.url, world.users.owner.auth, EmojiChanges, {});
    const wsAnswer = await overWs.next();
    expect(wsAnswer).toMatchObject({
      errors: [{ message: 'This server holds as many subscriptions as it may: try again later (or another server).' }],
    });
    expect(typeof wsAnswer === 'object' && wsAnswer.errors?.map((error) => error.extensions)).toEqual([{ code: 'SERVICE_UNAVAILABLE' }]);
    await Promise.all([...held, overSseClient, overWs].map((s) => s.close()));
  } finally {
    await small.close();
  }
});

/** `count` realm_emoji events of the world's organization, committed and not yet read by anyone (so none is positioned). */
const commitEmojiBacklog = (world: World, count: number) =>
  runOnTestDatabase(
    `INSERT INTO event ("organizationId", type, payload, "recipientIds")
     SELECT $1, 'realm_emoji', jsonb_build_object('change', 'added', 'emoji', jsonb_build_object('id', n, 'organizationId', $1::int, 'name', 'old_' || n,
            'deactivated', false, 'authorId', null, 'fileName', 'x.png', 'isAnimated', false)), '{}' FROM generate_series(1, $2::int) n`,
    [world.org.id, count],
  );

test('a backlog of more than one positioning batch committed before: neither a new subscription nor a new queue receives it', async () => {
  const world = await newWorld();
  await commitEmojiBacklog(world, 25_000);
  const subscription = await follow('ws', world, 'member', EmojiChanges, {});
  const registered = await callApi(server.url, 'POST', '/register', {
    authorization: world.users.guest.auth,
    form: { event_types: '["realm_emoji"]' },
  });
  expect((await deactivateEmoji(world, 'owner', 'lighthouse')).status).toBe(200);
  expect(await subscription.next()).toMatchObject({
    data: { customEmojiChanged: { change: 'DEACTIVATED', emoji: { name: 'lighthouse' } } },
  });
  const polled = await callApi(server.url, 'GET', '/events', {
    authorization: world.users.guest.auth,
    query: { queue_id: registered.body.queue_id, last_event_id: '-1' },
  });
  expect(polled.body.events).toHaveLength(1);
}, 120_000);

test("a backlog the process's reader hands a new subscription before it knows where the log ends is not delivered, and does not end it", async () => {
  const world = await newWorld();
  // Following invitations only: the reader has a subscriber, and its invitation marks how far the reader has read.
  const witness = await follow('ws', world, 'owner', InvitationChanges, {});
  await commitEmojiBacklog(world, MAX_HELD_EVENTS + 500);
  // The new subscription positions the backlog, then waits to read where the log ends (briefly: far
  // less than DATABASE_LOCK_WAIT_SECONDS, after which its statement would give up).
  const horizon = await connectToTestDatabase();
  let subscription: OpenSubscription<unknown>;
  let following: number;
  try {
    await horizon.query('BEGIN');
    await horizon.query('LOCK TABLE event_log_horizon IN ACCESS EXCLUSIVE MODE');
    const before = server.app.eventStreams!.admitted;
    subscription = subscribe('ws', server.url, world.users.member.auth, EmojiChanges, {});
    open.push(subscription);
    await eventually(async () => {
      const { rows } = await horizon.query(`SELECT 1 FROM pg_locks WHERE relation = 'event_log_horizon'::regclass AND NOT granted`);
      return server.app.eventStreams!.admitted > before && rows.length > 0;
    }, 5_000);
    // Meanwhile the reader reads the backlog, then the invitation committed after it.
    expect(
      (await postInvites(server.url, world.users.owner.auth, { invitee_emails: 'after-backlog@example.com', stream_ids: '[]' })).status,
    ).toBe(200);
    expect(await witness.next()).toMatchObject({
      data: { invitationsChanged: { invitations: expect.arrayContaining([{ email: 'after-backlog@example.com' }]) } },
    });
  } finally {
    following = server.app.eventStreams!.size;
    await horizon.query('COMMIT');
    await horizon.end();
  }
  await eventually(() => server.app.eventStreams!.size > following, 5_000);
  expect((await deactivateEmoji(world, 'owner', 'lighthouse')).status).toBe(200);
  expect(await subscription.next()).toMatchObject({
    data: { customEmojiChanged: { change: 'DEACTIVATED', emoji: { name: 'lighthouse' } } },
  });
});

test('shutdown ends every stream at once, on both transports', async () => {
  const own = await startTestServer();
  try {
    const world = await createWorld(own.app.prisma);
    const streams = TRANSPORTS.map((transport) => subscribe(transport, own.url, world.users.member.auth, EmojiChanges, {}));
    await eventually(() => own.app.eventStreams!.size === 2);
    const closing = own.close();
    const outcomes = await Promise.all(streams.map((s) => s.next(2_000)));
    expect(outcomes).toEqual(['ended', 'ended']);
    await closing;
    await Promise.all(streams.map((s) => s.close()));
  } finally {
    await own.close().catch(() => {});
  }
});

// Last in the file: it moves two events past the log's end, to positions of a new length.
describe('replay order', () => {
  test("after: the missed events come in the log's order, also where their positions gain a digit", async () => {
    const world = await newWorld();
    expect((await deactivateEmoji(world, 'owner', 'lighthouse')).status).toBe(200);
    expect((await deactivateEmoji(world, 'owner', 'green_tick')).status).toBe(200);
    await positionCommittedEvents(server.app.sql);
    // The two events move to positions 10^k - 1 and 10^k past the log's end: in text, "10..0" sorts first.
    const [{ end }] = await server.app.sql.rows<{ end: string }>('SELECT max(position)::text AS end FROM event', []);
    const ninesPosition = 10 ** end!.length * 10 - 1;
    await runOnTestDatabase(
      `UPDATE event SET position = $2 + (SELECT count(*) FROM event later WHERE later."organizationId" = $1 AND later.type = 'realm_emoji' AND later.id < event.id)
        WHERE "organizationId" = $1 AND type = 'realm_emoji'`,
      [world.org.id, ninesPosition],
    );
    const resumed = subscribe('sse', server.url, world.users.member.auth, EmojiChanges, {
      after: Buffer.from(`event:${ninesPosition - 1}`).toString('base64url'),
    });
    open.push(resumed as OpenSubscription<unknown>);
    expect(await resumed.next()).toMatchObject({ data: { customEmojiChanged: { emoji: { name: 'lighthouse' } } } });
    expect(await resumed.next()).toMatchObject({ data: { customEmojiChanged: { emoji: { name: 'green_tick' } } } });
    // Neither comes twice: a later change (positioned past them) is what comes next.
    await runOnTestDatabase(`SELECT setval(pg_get_serial_sequence('event', 'id'), $1)`, [ninesPosition + 1]);
    await addEmoji(world, 'after_the_nines');
    expect(await resumed.next()).toMatchObject(emojiAdded('after_the_nines'));
  });
});
