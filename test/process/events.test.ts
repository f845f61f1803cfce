// Event queues shared by server processes on one database (docs/reference/events.md Decision 2):
// any process answers any queue, a long poll held by one process hears of an event committed
// through another, a second poll through another process answers the first, and a process killed
// with SIGKILL or stopped with SIGTERM loses nothing and keeps no poll waiting.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { graphql } from '../generated/gql.js';
import { callApi, type ApiResponse } from '../support/rest.js';
import { subscribe, TRANSPORTS, untilFollowing, type OpenSubscription } from '../support/subscriptions.js';
import {
  listeningUrl,
  serverProcessesOnTestDatabase,
  startServerProcess,
  testDatabaseEnvironment,
  type ProcessesOnTestDatabase,
} from '../support/process.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';
import { pngImage } from '../support/images.js';
import { postFiles } from '../support/uploads.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let server: TestServer;
let processes: ProcessesOnTestDatabase;
let a: string;
let b: string;
beforeAll(async () => {
  server = await startTestServer();
  processes = await serverProcessesOnTestDatabase(2, { API_RATE_LIMIT: 'off' });
  [a, b] = processes.urls as [string, string];
}, 120_000);
afterAll(async () => {
  await processes?.stop();
  await server?.close();
});

const newWorld = () => createWorld(server.app.prisma);

async function register(url: string, world: World): Promise<string> {
  const response = await callApi(url, 'POST', '/register', {
    authorization: world.users.member.auth,
    form: { event_types: '["realm_emoji"]' },
  });
  expect(response.status).toBe(200);
  return response.body.queue_id;
}

const poll = (url: string, world: World, queueId: string, lastEventId: number, dontBlock = true): Promise<ApiResponse> =>
  callApi(url, 'GET', '/events', {
    authorization: world.users.member.auth,
    query: { queue_id: queueId, last_event_id: String(lastEventId), dont_block: String(dontBlock) },
  });

async function deactivate(url: string, world: World, name: string) {
  expect((await callApi(url, 'DELETE', `/realm/emoji/${name}`, { authorization: world.users.owner.auth })).status).toBe(200);
}

/** Until a request waits on the queue with a wait that began after `after` (epoch ms of the row's mark). */
async function waitUntilWaiting(queueId: string, previous: Date | null = null): Promise<Date> {
  for (;;) {
    const { waitingUntil } = await server.app.prisma.eventQueue.findUniqueOrThrow({ where: { id: queueId } });
    if (waitingUntil !== null && waitingUntil.getTime() !== previous?.getTime()) return waitingUntil;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('two processes, one database', () => {
  test('a queue polled alternately through both processes continues where it was', async () => {
    const world = await newWorld();
    const queueId = await register(a, world);
    await deactivate(b, world, 'green_tick');
    const first = await poll(b, world, queueId, -1);
    expect(first.body.events).toEqual([expect.objectContaining({ type: 'realm_emoji' })]);
    await deactivate(a, world, 'lighthouse');
    const second = await poll(a, world, queueId, first.body.events[0].id);
    expect(second.body.events).toEqual([expect.objectContaining({ type: 'realm_emoji' })]);
    expect(second.body.events[0].id).toBeGreaterThan(first.body.events[0].id);
    expect((await poll(b, world, queueId, second.body.events[0].id)).body.events).toEqual([]);
    // The first acknowledgement holds on the other process too.
    expect((await poll(b, world, queueId, -1)).body.msg).toBe('An event newer than -1 has already been pruned!');
  });

  test('a long poll on one process receives an event committed through the other', async () => {
    const world = await newWorld();
    const queueId = await register(b, world);
    const waiting = poll(a, world, queueId, -1, false);
    await waitUntilWaiting(queueId);
    await deactivate(b, world, 'green_tick');
    const answer = await waiting;
    expect(answer.body).toEqual({
      result: 'success',
      msg: '',
      events: [expect.objectContaining({ type: 'realm_emoji' })],
      queue_id: queueId,
    });
  });

  test('a second poll through the other process answers the first; a DELETE through the first answers the second', async () => {
    const world = await newWorld();
    const queueId = await register(a, world);
    const first = poll(a, world, queueId, -1, false);
    const firstMark = await waitUntilWaiting(queueId);
    const second = poll(b, world, queueId, -1, false);
    expect((await first).body).toEqual({ result: 'success', msg: '', events: [], queue_id: queueId });
    await waitUntilWaiting(queueId, firstMark);
    expect((await callApi(a, 'DELETE', '/events', { authorization: world.users.member.auth, query: { queue_id: queueId } })).status).toBe(
      200,
    );
    expect((await second).body).toEqual({ result: 'success', msg: '', events: [], queue_id: queueId });
  });

  test('SIGKILL of the process holding a long poll, with an event committed and not yet delivered: the poll repeated on another process receives it', async () => {
    const world = await newWorld();
    const dataDir = await mkdtemp(join(tmpdir(), 'teamchat-killed-'));
    const doomed = startServerProcess({ ...(await testDatabaseEnvironment()), DATA_DIR: dataDir });
    try {
      const url = await listeningUrl(doomed);
      const queueId = await register(url, world);
      const waiting = poll(url, world, queueId, -1, false).catch((error: unknown) => error);
      await waitUntilWaiting(queueId);
      // Frozen, the process holding the poll cannot deliver what commits now: the change is acknowledged and in flight when it dies.
      doomed.child.kill('SIGSTOP');
      await deactivate(a, world, 'green_tick');
      doomed.child.kill('SIGKILL');
      await doomed.exited;
      expect(await waiting).toBeInstanceOf(Error);
      const answer = await poll(b, world, queueId, -1, false);
      expect(answer.body.events).toEqual([expect.objectContaining({ type: 'realm_emoji' })]);
    } finally {
      doomed.child.kill('SIGKILL'); // never left frozen, whatever failed
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  test('SIGTERM answers a waiting poll at once, and the process exits', async () => {
    const world = await newWorld();
    const dataDir = await mkdtemp(join(tmpdir(), 'teamchat-drained-'));
    const draining = startServerProcess({ ...(await testDatabaseEnvironment()), DATA_DIR: dataDir });
    try {
      const url = await listeningUrl(draining);
      const queueId = await register(url, world);
      const waiting = poll(url, world, queueId, -1, false);
      await waitUntilWaiting(queueId);
      draining.child.kill('SIGTERM');
      expect((await waiting).body).toEqual({ result: 'success', msg: '', events: [], queue_id: queueId });
      expect(await draining.exited).toBe(0);
      // The queue lives on: another process answers it.
      expect((await poll(a, world, queueId, -1)).status).toBe(200);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('subscriptions across processes', () => {
  const EmojiChanges = graphql(`
    subscription ProcessEmojiChanges($after: String) {
      customEmojiChanged(after: $after) {
        cursor
        emoji {
          name
        }
      }
    }
  `);
  type Payload = { data: { customEmojiChanged: { cursor: string; emoji: { name: string } } } };

  /** A new emoji, added through process `a`: an event for every subscriber of the organization. */
  async function addEmoji(world: World, name: string) {
    const added = await postFiles(a, `/realm/emoji/${name}`, world.users.owner.auth, [
      { name: `${name}.png`, type: 'image/png', content: await pngImage() },
    ]);
    expect(added.status).toBe(200);
  }

  /** Until the subscription follows the log, proven by new emoji `marker_0`, `marker_1`, ... that reach it. */
  const untilFollowingEmoji = (subscription: OpenSubscription<unknown>, world: World) =>
    untilFollowing(
      subscription,
      (n) => addEmoji(world, `marker_${n}`),
      (received) => {
        expect(received).toMatchObject({ data: { customEmojiChanged: { emoji: { name: expect.stringMatching(/^marker_\d+$/) } } } });
        return Number((received as Payload).data.customEmojiChanged.emoji.name.slice('marker_'.length));
      },
    );

  test.each(TRANSPORTS)('over %s: an event committed through one process reaches a subscription on the other', async (transport) => {
    const world = await newWorld();
    const subscription = subscribe(transport, b, world.users.member.auth, EmojiChanges, {});
    try {
      await untilFollowingEmoji(subscription, world);
      await deactivate(a, world, 'green_tick');
      expect(await subscription.next()).toMatchObject({ data: { customEmojiChanged: { emoji: { name: 'green_tick' } } } });
    } finally {
      await subscription.close();
    }
  });

  test.each(TRANSPORTS)(
    'over %s: SIGKILL of the process holding the subscription, with an event committed and not yet delivered: resumed on another with `after`, it arrives',
    async (transport) => {
      const world = await newWorld();
      const dataDir = await mkdtemp(join(tmpdir(), 'teamchat-killed-'));
      const doomed = startServerProcess({ ...(await testDatabaseEnvironment()), DATA_DIR: dataDir });
      try {
        const url = await listeningUrl(doomed);
        const first = subscribe(transport, url, world.users.member.auth, EmojiChanges, {});
        await untilFollowingEmoji(first, world);
        await deactivate(a, world, 'green_tick');
        const seen = (await first.next()) as Payload;
        // Frozen, the process holding the subscription cannot deliver what commits now: in flight when it dies.
        doomed.child.kill('SIGSTOP');
        await deactivate(a, world, 'lighthouse');
        doomed.child.kill('SIGKILL');
        await doomed.exited;
        expect(await first.next()).toBe('ended');
        await first.close();
        const resumed = subscribe(transport, b, world.users.member.auth, EmojiChanges, { after: seen.data.customEmojiChanged.cursor });
        try {
          expect(await resumed.next()).toMatchObject({ data: { customEmojiChanged: { emoji: { name: 'lighthouse' } } } });
          // No second copy of it: the next payload is the change committed after it.
          await addEmoji(world, 'after_resume');
          expect(await resumed.next()).toMatchObject({ data: { customEmojiChanged: { emoji: { name: 'after_resume' } } } });
        } finally {
          await resumed.close();
        }
      } finally {
        doomed.child.kill('SIGKILL'); // never left frozen, whatever failed
        await rm(dataDir, { recursive: true, force: true });
      }
    },
  );
});
