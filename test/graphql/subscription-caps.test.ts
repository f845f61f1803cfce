// The subscription caps under subscriptions that arrive together: a user's 100 and the process's
// MAX_SUBSCRIPTIONS hold for 2,000 subscribes on one WebSocket, 150 WebSocket connections or SSE
// requests admitted in one moment (held until all have arrived), and a mix of them; the rest are
// refused as documented, and every stream is uncounted when it ends (a refusal after admission
// included). Each subscription resumes after an event that has a successor, so a live one proves
// itself by receiving that successor at once.
import { afterAll, afterEach, beforeAll, expect, test, vi } from 'vitest';
import { createClient as createWsClient } from 'graphql-ws';
import WebSocket from 'ws';
import { positionCommittedEvents } from '../../src/domain/events/positions.js';
import { eventCursor, MAX_SUBSCRIPTIONS_PER_USER } from '../../src/domain/events/streams.js';
import type { LoggedEvent } from '../../src/domain/events/reader.js';
import { callApi } from '../support/rest.js';
import { connectToTestDatabase, startTestServer, type TestServer } from '../support/server.js';
import { eventually, subscribe, type OpenSubscription } from '../support/subscriptions.js';
import { createWorld, type World, type WorldUserName } from '../support/world.js';

const MAX_SUBSCRIPTIONS = 200;
const ANSWER_MS = 120_000;
const DOCUMENT = 'subscription Caps($after: String) { customEmojiChanged(after: $after) { cursor emoji { name } } }';
const PER_USER_REFUSAL = `A user may hold at most ${MAX_SUBSCRIPTIONS_PER_USER} subscriptions on one server: close some first.`;

// Thousands of subscriptions on a busy machine may take longer than the default test time (a cap, not a measure).
vi.setConfig({ testTimeout: 180_000 });

let server: TestServer;
beforeAll(async () => {
  // Without the API rate limit, which would refuse most of these first (it is tested on its own).
  // No lock wait limit: one test holds admissions at a lock for as long as it needs.
  server = await startTestServer({ maxSubscriptions: MAX_SUBSCRIPTIONS, rateLimits: [], databaseLockWaitSeconds: 0 });
});
afterAll(() => server.close());

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
  // Every stream is uncounted once its subscriber has gone, whatever became of it.
  await eventually(() => server.app.eventStreams!.admitted === 0, 30_000);
});

type Outcome = 'live' | 'per-user refusal' | 'process refusal' | string;

/** A world whose customEmojiChanged has one event after the returned cursor (green_tick's deactivation). */
async function worldWithReplay(): Promise<{ world: World; after: string }> {
  const world = await createWorld(server.app.prisma);
  const deactivate = (name: string) => callApi(server.url, 'DELETE', `/realm/emoji/${name}`, { authorization: world.users.owner.auth });
  expect((await deactivate('lighthouse')).status).toBe(200);
  await positionCommittedEvents(server.app.sql);
  const [first] = await server.app.sql.rows<{ position: string }>(
    `SELECT max(position)::text AS position FROM event WHERE "organizationId" = $1 AND type = 'realm_emoji'`,
    [world.org.id],
  );
  expect((await deactivate('green_tick')).status).toBe(200);
  return { world, after: eventCursor({ id: Number(first!.position) } as LoggedEvent) };
}

/** A payload or refusal as either client hands it over, or how the subscription ended. */
type Answer = 'ended' | 'silent' | { data?: unknown; errors?: readonly { message: string; extensions?: { code?: unknown } }[] };

function outcomeOf(answer: Answer, failure?: unknown): Outcome {
  if (answer === 'ended' && (failure as { response?: { status?: number } } | undefined)?.response?.status === 503) return 'process refusal';
  if (typeof answer !== 'object') return `${answer}: ${String(failure)}`;
  const data = answer.data as { customEmojiChanged?: { emoji: { name: string } } } | undefined;
  if (data?.customEmojiChanged?.emoji.name === 'green_tick') return 'live';
  const [error] = answer.errors ?? [];
  if (error?.message === PER_USER_REFUSAL && error.extensions?.code === 'BAD_REQUEST') return 'per-user refusal';
  if (error?.extensions?.code === 'SERVICE_UNAVAILABLE') return 'process refusal';
  return JSON.stringify(answer);
}

/** `count` subscriptions of one user on one WebSocket, sent back to back. */
async function overOneWebSocket(authorization: string, after: string, count: number): Promise<Outcome[]> {
  const client = createWsClient({
    url: `${server.url.replace('http', 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { Authorization: authorization },
  });
  const stops: (() => void)[] = [];
  closers.push(async () => {
    for (const stop of stops) stop();
    await client.dispose();
  });
  const outcomes = Array.from({ length: count }, () => {
    let timer: NodeJS.Timeout;
    return new Promise<Outcome>((resolve) => {
      timer = setTimeout(() => resolve('silent'), ANSWER_MS);
      const settle = (answer: Answer) => resolve(outcomeOf(answer));
      stops.push(
        client.subscribe(
          { query: DOCUMENT, variables: { after } },
          { next: settle, error: (error) => settle(Array.isArray(error) ? { errors: error } : 'ended'), complete: () => resolve('ended') },
        ),
      );
    }).finally(() => clearTimeout(timer));
  });
  return Promise.all(outcomes);
}

/** `count` subscriptions of one user, each on its own connection (WebSocket or SSE request), opened together. */
async function overOwnConnections(transport: 'ws' | 'sse', authorization: string, after: string, count: number): Promise<Outcome[]> {
  const subscriptions: OpenSubscription<unknown>[] = Array.from({ length: count }, () =>
    subscribe(transport, server.url, authorization, DOCUMENT, { after }),
  );
  closers.push(async () => void (await Promise.all(subscriptions.map((subscription) => subscription.close()))));
  return Promise.all(
    subscriptions.map(async (subscription) => outcomeOf((await subscription.next(ANSWER_MS)) as Answer, subscription.failure())),
  );
}

function tally(outcomes: Outcome[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const outcome of outcomes) counts[outcome] = (counts[outcome] ?? 0) + 1;
  return counts;
}

test('2,000 subscribes back to back on one WebSocket: 100 live, the rest refused', async () => {
  const { world, after } = await worldWithReplay();
  expect(tally(await overOneWebSocket(world.users.member.auth, after, 2_000))).toEqual({ live: 100, 'per-user refusal': 1_900 });
});

/**
 * Holds every subscription until `count` have arrived, then lets them all go in one moment: a cap
 * whose count were taken after an await would let them all pass its check.
 */
function admitTogether(count: number): void {
  let arrived = 0;
  let release = () => {};
  const together = new Promise<void>((resolve) => (release = resolve));
  const streams = server.app.eventStreams!;
  const follow = streams.follow;
  streams.follow = async (...request) => {
    if (++arrived === count) release();
    await together;
    return follow.apply(streams, request);
  };
  closers.push(async () => void (streams.follow = follow));
}

test.each(['ws', 'sse'] as const)('150 connections of one user admitted at once over %s: 100 live, the rest refused', async (transport) => {
  const { world, after } = await worldWithReplay();
  admitTogether(150);
  expect(tally(await overOwnConnections(transport, world.users.member.auth, after, 150))).toEqual({ live: 100, 'per-user refusal': 50 });
});

test('a mix of one user: one WebSocket carrying 300, 60 WebSockets and 60 SSE requests at once: 100 live', async () => {
  const { world, after } = await worldWithReplay();
  const auth = world.users.member.auth;
  const outcomes = (
    await Promise.all([
      overOneWebSocket(auth, after, 300),
      overOwnConnections('ws', auth, after, 60),
      overOwnConnections('sse', auth, after, 60),
    ])
  ).flat();
  expect(tally(outcomes)).toEqual({ live: 100, 'per-user refusal': 320 });
});

test(`the process holds at most MAX_SUBSCRIPTIONS (${MAX_SUBSCRIPTIONS}) of many users opening theirs at once; the rest are refused with SERVICE_UNAVAILABLE`, async () => {
  const { world, after } = await worldWithReplay();
  const users: WorldUserName[] = ['owner', 'admin', 'moderator', 'member', 'guest'];
  const outcomes = (
    await Promise.all(
      users.flatMap((who) => {
        const auth = world.users[who].auth;
        return [overOneWebSocket(auth, after, 40), overOwnConnections('ws', auth, after, 15), overOwnConnections('sse', auth, after, 15)];
      }),
    )
  ).flat();
  expect(tally(outcomes)).toEqual({ live: MAX_SUBSCRIPTIONS, 'process refusal': users.length * 70 - MAX_SUBSCRIPTIONS });
  expect(server.app.eventStreams!.admitted).toBe(MAX_SUBSCRIPTIONS);
});

test('subscriptions refused after their admission (a cursor past the log) are uncounted: the user then holds 100', async () => {
  const { world, after } = await worldWithReplay();
  const pastTheLog = Buffer.from('event:999999999999').toString('base64url');
  const auth = world.users.member.auth;
  const refused = (await Promise.all([overOneWebSocket(auth, pastTheLog, 150), overOwnConnections('sse', auth, pastTheLog, 50)])).flat();
  // Those admitted count until they are refused: meanwhile the others may meet the user's cap.
  const counts = tally(refused.map((outcome) => (outcome.includes('Invalid cursor') ? 'invalid cursor' : outcome)));
  expect(counts['invalid cursor']).toBeGreaterThanOrEqual(MAX_SUBSCRIPTIONS_PER_USER);
  expect(counts).toEqual({
    'invalid cursor': counts['invalid cursor'],
    ...(counts['per-user refusal'] && { 'per-user refusal': counts['per-user refusal'] }),
  });
  expect(server.app.eventStreams!.admitted).toBe(0);
  expect(tally(await overOneWebSocket(auth, after, 101))).toEqual({ live: 100, 'per-user refusal': 1 });
});

test('subscribers that go away while their subscriptions are being admitted free them once admitted', async () => {
  const world = await createWorld(server.app.prisma);
  const auth = world.users.member.auth;
  // Admission reads where the log ends, positioning what committed first: held here, it waits.
  const positioning = await connectToTestDatabase();
  try {
    await positioning.query('BEGIN');
    await positioning.query('SELECT pg_advisory_xact_lock(22, 0)');
    // An event committed now stays unpositioned (the process's reader only tries the lock).
    expect((await callApi(server.url, 'DELETE', '/realm/emoji/lighthouse', { authorization: world.users.owner.auth })).status).toBe(200);
    // Fewer than the pool's connections: each one held by an admission that waits.
    const subscriptions = (['sse', 'ws'] as const).flatMap((transport) =>
      Array.from({ length: 4 }, () => subscribe(transport, server.url, auth, DOCUMENT, {})),
    );
    for (const subscription of subscriptions) void subscription.next(ANSWER_MS);
    await eventually(() => server.app.eventStreams!.admitted === subscriptions.length, 30_000);
    await Promise.all(subscriptions.map((subscription) => subscription.close()));
  } finally {
    await positioning.query('COMMIT');
    await positioning.end();
  }
  // afterEach: every one is uncounted.
});
