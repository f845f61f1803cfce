// What the process's one reader of the event log wakes, on a server of this file's own database (no
// other reader positions its events): the first subscriber after a quiet spell does not receive
// what committed before it came, and a waiting long poll is not woken (no read of its queue) by
// events its queue does not take, and the polls an emoji change wakes read its dict once. Each
// "not" is proven by a later event that must come first, never by waiting.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { captureStatements, countStatementsMatching } from '../../src/db/statement-counter.js';
import { postFiles } from '../support/uploads.js';
import { callApi } from '../support/rest.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { eventually, subscribe } from '../support/subscriptions.js';
import { createWorld, type World } from '../support/world.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const deactivateEmoji = (world: World, name: string) =>
  callApi(server.url, 'DELETE', `/realm/emoji/${name}`, { authorization: world.users.owner.auth });

test('an event committed while nobody followed the log is not new to the first subscriber', async () => {
  const world = await createWorld(server.app.prisma);
  expect((await deactivateEmoji(world, 'lighthouse')).status).toBe(200);
  const subscription = subscribe(
    'sse',
    server.url,
    world.users.member.auth,
    'subscription { customEmojiChanged { change emoji { name } } }',
    {},
  );
  try {
    await eventually(() => server.app.eventStreams!.size === 1);
    // Had the earlier deactivation been new to it, it would come first (the log's order).
    expect((await deactivateEmoji(world, 'green_tick')).status).toBe(200);
    expect(await subscription.next()).toEqual({ data: { customEmojiChanged: { change: 'DEACTIVATED', emoji: { name: 'green_tick' } } } });
  } finally {
    await subscription.close();
  }
  await eventually(() => server.app.eventStreams!.size === 0);
});

test('a waiting long poll is not woken (no read of its queue) by an event its queue does not take', async () => {
  const world = await createWorld(server.app.prisma);
  // The reads a poll makes of its queue's events (queuedEvents), by queue ($4).
  const queueReads = captureStatements(/FROM event e WHERE .* ORDER BY e\.position LIMIT/s);
  const readsOf = (queueId: string) => queueReads.filter((read) => read.values[3] === queueId).length;
  const register = async (eventTypes: string) => {
    const registered = await callApi(server.url, 'POST', '/register', {
      authorization: world.users.member.auth,
      form: { event_types: eventTypes },
    });
    expect(registered.status).toBe(200);
    return registered.body.queue_id as string;
  };
  const aborts: AbortController[] = [];
  const wait = <T>(queueId: string): Promise<T> => {
    const abort = new AbortController();
    aborts.push(abort);
    const url = `${server.url}/api/v1/events?queue_id=${queueId}&last_event_id=-1`;
    return fetch(url, { headers: { authorization: world.users.member.auth }, signal: abort.signal }).then(
      (answer) => answer.json() as T,
      () => 'aborted' as T,
    );
  };
  type Answer = { events: { type: string; op: string }[] };
  const queues: string[] = [];
  for (let i = 0; i < 20; i++) queues.push(await register('["attachment"]'));
  // The marker: a queue that takes the emoji event; its answer comes once the reader has dispatched it.
  const marker = await register('["realm_emoji"]');
  const waiting = queues.map((queueId) => wait<Answer>(queueId));
  const markerAnswer = wait<Answer>(marker);
  try {
    // Each poll has read its queue twice: when it came, and once more once it listens (long-polls.ts).
    await eventually(() => queues.every((queueId) => readsOf(queueId) === 2), 15_000);
    expect((await deactivateEmoji(world, 'lighthouse')).status).toBe(200);
    expect((await markerAnswer).events.map(({ type }) => type)).toEqual(['realm_emoji']);
    // An event the queues take wakes each of them: one read each, and every poll answers with it. Had
    // the emoji event woken them, that read (it found nothing) would be a second one.
    const uploaded = await postFiles(server.url, '/user_uploads', world.users.member.auth, [{ name: 'wake.txt', content: 'wake up' }]);
    expect(uploaded.status).toBe(200);
    const answers = await Promise.all(waiting);
    expect(answers.map((answer) => answer.events.map(({ type, op }) => ({ type, op })))).toEqual(
      Array(queues.length).fill([{ type: 'attachment', op: 'add' }]),
    );
    expect(queues.map(readsOf)).toEqual(Array(queues.length).fill(3));
  } finally {
    for (const abort of aborts) abort.abort();
    await Promise.all([...waiting, markerAnswer]);
  }
});

test('the polls an emoji change wakes share one read of the organization’s emoji dict', async () => {
  const world = await createWorld(server.app.prisma);
  const dictReads = countStatementsMatching(/FROM "public"\."custom_emoji" WHERE .*"organizationId" = \$1 ORDER BY/s);
  const polls = 20;
  const waiting: Promise<{ events: { type: string; realm_emoji: Record<string, { name: string; deactivated: boolean }> }[] }>[] = [];
  for (let i = 0; i < polls; i++) {
    const registered = await callApi(server.url, 'POST', '/register', {
      authorization: world.users.member.auth,
      form: { event_types: '["realm_emoji"]' },
    });
    expect(registered.status).toBe(200);
    const url = `${server.url}/api/v1/events?queue_id=${registered.body.queue_id}&last_event_id=-1`;
    waiting.push(fetch(url, { headers: { authorization: world.users.member.auth } }).then((answer) => answer.json()));
  }
  await eventually(() => server.app.eventPolls!.size === polls);
  const before = dictReads();
  expect((await deactivateEmoji(world, 'lighthouse')).status).toBe(200);
  const answers = await Promise.all(waiting);
  for (const answer of answers) {
    expect(answer.events.map((event) => event.type)).toEqual(['realm_emoji']);
    const lighthouse = Object.values(answer.events[0]!.realm_emoji).find((emoji) => emoji.name === 'lighthouse');
    expect(lighthouse?.deactivated).toBe(true);
  }
  // One read per poll would be 20; here they share one (a poll whose own read ended over 1 s later would read again).
  expect(dictReads() - before).toBeGreaterThan(0);
  expect(dictReads() - before).toBeLessThan(polls / 2);
});
