// What a browser session reaches (signin.md section 4, Decision 3): the /json twins of the /api/v1
// routes (session only, X-CSRFToken for methods that change state), /graphql over HTTP, SSE and
// WebSocket; never /api/v1. And when a session ends: sign-out, two weeks, its user's or
// organization's deactivation, a password change or reset, in every process at once (long-lived
// requests included).
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { graphql } from '../generated/gql.js';
import { removeExpiredSessions } from '../../src/domain/auth/sessions.js';
import { setPassword } from '../../src/domain/auth/sign-in.js';
import { lockWaitersOf } from '../support/contention.js';
import { callApi } from '../support/rest.js';
import { givePassword, PASSWORD, postForm, signIn, type SignedIn } from '../support/sessions.js';
import { connectToTestDatabase, runOnTestDatabase, startTestServer, type TestServer } from '../support/server.js';
import { eventually, subscribe, TRANSPORTS, type OpenSubscription, type Transport } from '../support/subscriptions.js';
import { createWorld, type World, type WorldUserName } from '../support/world.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const open: OpenSubscription<unknown>[] = [];
afterAll(async () => {
  await Promise.all(open.map((s) => s.close()));
});

async function signedInWorld(who: WorldUserName = 'member'): Promise<{ world: World; session: SignedIn }> {
  const world = await createWorld(server.app.prisma);
  await givePassword(server.app.prisma, world.users[who].id);
  return { world, session: await signIn(server.url, { username: world.users[who].email, realm: world.org.stringId }) };
}

/** A /json request as a browser page's fetch sends it (the session cookie; the CSRF header when given). */
async function callJson(
  path: string,
  init: { method?: string; cookie?: string; csrfToken?: string; form?: Record<string, string>; authorization?: string } = {},
) {
  const response = await fetch(`${server.url}/json${path}`, {
    method: init.method ?? 'GET',
    headers: {
      // A page's fetch sends its origin with every request but GET and HEAD.
      ...(init.method && init.method !== 'GET' && { origin: server.url }),
      ...(init.cookie && { cookie: init.cookie }),
      ...(init.csrfToken && { 'x-csrftoken': init.csrfToken }),
      ...(init.authorization && { authorization: init.authorization }),
    },
    body: init.form ? new URLSearchParams(init.form) : undefined,
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
}

const NOT_LOGGED_IN = { result: 'error', msg: 'Not logged in: API authentication or user session required', code: 'UNAUTHORIZED' };

/** A GraphQL POST as a same-origin page sends it: the cookie and Yoga's CSRF header. */
async function graphqlWithCookie(
  cookie: string | undefined,
  query = '{ me { email } }',
  headers: Record<string, string> = { 'x-graphql-yoga-csrf': '1' },
) {
  const response = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(cookie && { cookie }), ...headers },
    body: JSON.stringify({ query }),
  });
  return {
    status: response.status,
    body: (await response.json()) as {
      data?: { me?: { email: string } } | null;
      errors?: { message: string; extensions?: { code?: string } }[];
    },
  };
}

describe('/json', () => {
  test('serves the /api/v1 routes to the session: the same answer as with the key', async () => {
    const { world, session } = await signedInWorld();
    const viaSession = await callJson('/users/me', { cookie: session.cookie });
    const viaKey = await callApi(server.url, 'GET', '/users/me', { authorization: world.users.member.auth });
    expect(viaSession.status).toBe(200);
    expect(viaSession.body).toEqual(viaKey.body);
  });

  test('without a session, or with an ended or made-up one: 401 with WWW-Authenticate: Session', async () => {
    const { world } = await signedInWorld();
    const cases = [undefined, `sessionid=${'A'.repeat(43)}`, 'sessionid=short', `sessionid=${'x'.repeat(10_000)}`];
    for (const cookie of cases) {
      const answer = await callJson('/users/me', { cookie });
      expect(answer.status).toBe(401);
      expect(answer.body).toEqual(NOT_LOGGED_IN);
      expect(answer.headers.get('www-authenticate')).toBe('Session realm="zulip"');
    }
    // Basic credentials are not the session: /json does not take them.
    const withKey = await callJson('/users/me', { authorization: world.users.member.auth });
    expect(withKey.status).toBe(401);
    expect(withKey.body).toEqual(NOT_LOGGED_IN);
  });

  test('/api/v1 never accepts the session cookie', async () => {
    const { session } = await signedInWorld();
    const answer = await callApi(server.url, 'GET', '/users/me', { headers: { cookie: session.cookie, 'x-csrftoken': session.csrfToken } });
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject(NOT_LOGGED_IN);
  });

  test("a state-changing method needs the session's X-CSRFToken: 403 CSRF_FAILED without it or with another, nothing changed", async () => {
    const { world, session } = await signedInWorld();
    const queues = () => server.app.prisma.eventQueue.count({ where: { userId: world.users.member.id } });
    const before = await queues();
    const missing = await callJson('/register', { method: 'POST', cookie: session.cookie });
    expect(missing.status).toBe(403);
    expect(missing.body).toEqual({
      result: 'error',
      msg: 'CSRF error: CSRF token missing.',
      code: 'CSRF_FAILED',
      reason: 'CSRF token missing.',
    });
    const other = await signedInWorld();
    const incorrect = await callJson('/register', { method: 'POST', cookie: session.cookie, csrfToken: other.session.csrfToken });
    expect(incorrect.status).toBe(403);
    expect(incorrect.body).toEqual({
      result: 'error',
      msg: 'CSRF error: CSRF token incorrect.',
      code: 'CSRF_FAILED',
      reason: 'CSRF token incorrect.',
    });
    expect(await queues()).toBe(before);
    const accepted = await callJson('/register', { method: 'POST', cookie: session.cookie, csrfToken: session.csrfToken });
    expect(accepted.status).toBe(200);
    expect(await queues()).toBe(before + 1);
    // GET changes nothing and needs no token.
    expect((await callJson('/attachments', { cookie: session.cookie })).status).toBe(200);
  });

  test('fetch_api_key, server_settings and users/me/api_key/regenerate are not served at /json', async () => {
    const { session } = await signedInWorld();
    for (const [method, path] of [
      ['POST', '/fetch_api_key'],
      ['GET', '/server_settings'],
      ['POST', '/users/me/api_key/regenerate'],
    ] as const) {
      const answer = await callJson(path, { method, cookie: session.cookie, csrfToken: session.csrfToken });
      expect(answer.status, path).toBe(404);
    }
    expect((await callApi(server.url, 'GET', '/server_settings')).status).toBe(200);
  });

  test('OPTIONS and 405 come before authentication, as at /api/v1', async () => {
    const wrongMethod = await callJson('/users/me', { method: 'DELETE' });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.body).toMatchObject({ allowed_methods: ['GET', 'HEAD'] });
    expect((await callJson('/nothing/here')).status).toBe(404);
  });
});

describe('/graphql with the session', () => {
  test('a query runs as the signed-in user; a POST a page could send without a preflight still needs the CSRF header', async () => {
    const { world, session } = await signedInWorld();
    const answer = await graphqlWithCookie(session.cookie);
    expect(answer).toEqual({ status: 200, body: { data: { me: { email: world.users.member.email } } } });
    // A form another site could post (urlencoded: no preflight) is refused without the header; with it, it runs.
    const formPost = (headers: Record<string, string>) =>
      fetch(`${server.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: session.cookie, ...headers },
        body: new URLSearchParams({ query: '{ me { email } }' }),
      });
    expect((await formPost({})).status).toBe(403);
    expect((await formPost({ 'x-graphql-yoga-csrf': '1' })).status).toBe(200);
  });

  test('an unknown or ended session is refused like a wrong key: 401 UNAUTHORIZED; introspection still answers', async () => {
    const { session } = await signedInWorld();
    await postForm(`${server.url}/accounts/logout/`, { csrfmiddlewaretoken: session.csrfToken }, session.cookies);
    for (const cookie of [session.cookie, `sessionid=${'B'.repeat(43)}`]) {
      const answer = await graphqlWithCookie(cookie);
      expect(answer.status).toBe(401);
      expect(answer.body.errors?.[0]?.extensions?.code).toBe('UNAUTHORIZED');
    }
    expect((await graphqlWithCookie(session.cookie, '{ __typename }')).status).toBe(200);
  });

  test('an Authorization header goes before the cookie', async () => {
    const { session } = await signedInWorld();
    const other = await createWorld(server.app.prisma);
    const response = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-graphql-yoga-csrf': '1',
        cookie: session.cookie,
        authorization: other.users.owner.auth,
      },
      body: JSON.stringify({ query: '{ me { email } }' }),
    });
    expect(await response.json()).toEqual({ data: { me: { email: other.users.owner.email } } });
  });

  test('cached GET answers vary with the cookie', async () => {
    const { session } = await signedInWorld();
    const response = await fetch(`${server.url}/graphql?query=${encodeURIComponent('{ me { email } }')}`, {
      headers: { cookie: session.cookie, accept: 'application/json' },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('vary')).toMatch(/\bCookie\b/);
  });
});

describe('uploads with the session', () => {
  const upload = (path: string, session: SignedIn, headers: Record<string, string>, form: FormData) =>
    fetch(`${server.url}${path}`, { method: 'POST', headers: { cookie: session.cookie, origin: server.url, ...headers }, body: form });

  test('a GraphQL multipart upload runs on the cookie (with the CSRF header every multipart request needs)', async () => {
    const { world, session } = await signedInWorld();
    const form = () => {
      const data = new FormData();
      data.append(
        'operations',
        JSON.stringify({
          query: 'mutation($file: File!) { uploadFile(file: $file) { __typename ... on UploadFileSuccess { attachment { name } } } }',
          variables: { file: null },
        }),
      );
      data.append('map', JSON.stringify({ 0: ['variables.file'] }));
      data.append('0', new Blob(['hello'], { type: 'text/plain' }), 'hello.txt');
      return data;
    };
    const files = () => server.app.prisma.attachment.count({ where: { ownerId: world.users.member.id, name: 'hello.txt' } });
    expect((await upload('/graphql', session, {}, form())).status).toBe(403);
    expect(await files()).toBe(0);
    const answer = await upload('/graphql', session, { 'x-graphql-yoga-csrf': '1' }, form());
    expect(await answer.json()).toEqual({ data: { uploadFile: { __typename: 'UploadFileSuccess', attachment: { name: 'hello.txt' } } } });
    expect(await files()).toBe(1);
  });

  test('POST /json/user_uploads streams the file on the session, with its X-CSRFToken', async () => {
    const { world, session } = await signedInWorld();
    const form = () => {
      const data = new FormData();
      data.append('file', new Blob(['bytes'], { type: 'text/plain' }), 'notes.txt');
      return data;
    };
    const refused = await upload('/json/user_uploads', session, {}, form());
    expect(refused.status).toBe(403);
    const accepted = await upload('/json/user_uploads', session, { 'x-csrftoken': session.csrfToken }, form());
    expect(accepted.status).toBe(200);
    expect(await accepted.json()).toMatchObject({ result: 'success', filename: 'notes.txt' });
    expect(await server.app.prisma.attachment.count({ where: { ownerId: world.users.member.id, name: 'notes.txt' } })).toBe(1);
  });
});

describe('a session ends', () => {
  const stillIn = async (session: SignedIn) => (await callJson('/users/me', { cookie: session.cookie })).status;

  test("a password change through /json/settings keeps that session and ends the user's others; a key regeneration ends none", async () => {
    const { world, session } = await signedInWorld();
    const other = await signIn(server.url, { username: world.users.member.email, realm: world.org.stringId });
    const changed = await callJson('/settings', {
      method: 'PATCH',
      cookie: session.cookie,
      csrfToken: session.csrfToken,
      form: { old_password: PASSWORD, new_password: 'a renewed passphrase of mine' },
    });
    expect(changed).toMatchObject({ status: 200, body: { result: 'success', msg: '' } });
    expect(await stillIn(session)).toBe(200);
    expect(await stillIn(other)).toBe(401);
    const regenerated = await callApi(server.url, 'POST', '/users/me/api_key/regenerate', { authorization: world.users.member.auth });
    expect(regenerated.status).toBe(200);
    expect(await stillIn(session)).toBe(200);
  });

  test("after two weeks (and the minute's housekeeping removes it)", async () => {
    const { world, session } = await signedInWorld();
    await runOnTestDatabase(`UPDATE user_session SET "expiresAt" = now() AT TIME ZONE 'UTC' - interval '1 second' WHERE "userId" = $1`, [
      world.users.member.id,
    ]);
    expect(await stillIn(session)).toBe(401);
    await removeExpiredSessions(server.app.sql);
    expect(await server.app.prisma.userSession.count({ where: { userId: world.users.member.id } })).toBe(0);
  });

  test('when its user is deactivated, or their organization', async () => {
    const first = await signedInWorld();
    await runOnTestDatabase(`UPDATE user_account SET "isActive" = false WHERE id = $1`, [first.world.users.member.id]);
    expect(await stillIn(first.session)).toBe(401);
    const second = await signedInWorld();
    expect(await stillIn(second.session)).toBe(200);
    await runOnTestDatabase(`UPDATE organization SET deactivated = true WHERE id = $1`, [second.world.org.id]);
    expect(await stillIn(second.session)).toBe(401);
  });

  test('when the password changes: every session of the user, whichever process changed it', async () => {
    const { world, session } = await signedInWorld();
    const another = await signIn(server.url, { username: world.users.member.email, realm: world.org.stringId });
    expect(await stillIn(session)).toBe(200);
    await setPassword(server.app.prisma, world.users.member.id, 'a brand new passphrase');
    expect(await stillIn(session)).toBe(401);
    expect(await stillIn(another)).toBe(401);
  });
});

/** A GET /json/events of the session on a new queue of emoji events, once it waits (its queue says so): its answer to come. */
async function waitingEmojiPoll(session: SignedIn) {
  const registered = await callJson('/register', {
    method: 'POST',
    cookie: session.cookie,
    csrfToken: session.csrfToken,
    form: { event_types: '["realm_emoji"]' },
  });
  expect(registered.status).toBe(200);
  const queueId = registered.body.queue_id as string;
  const answer = callJson(`/events?${new URLSearchParams({ queue_id: queueId, last_event_id: '-1' })}`, { cookie: session.cookie });
  await eventually(
    async () => (await server.app.prisma.eventQueue.findUniqueOrThrow({ where: { id: queueId } })).waitingUntil !== null,
    15_000,
  );
  return { answer };
}

/**
 * A marker that a long poll has its answer ready and waits for its credentials' check in flight:
 * resolves when a poll begun from now on asks after a check and finds one.
 */
function pollWaitingForCheck() {
  const credentialWatch = server.app.eventPolls.credentialWatch;
  const watch = credentialWatch.watch.bind(credentialWatch);
  let heard!: () => void;
  const marker = new Promise<void>((resolve) => (heard = resolve));
  const spy = vi.spyOn(credentialWatch, 'watch').mockImplementation((credentials, outcomes) => {
    const watching = watch(credentials, outcomes);
    return {
      stop: () => watching.stop(),
      settled: () => {
        const settled = watching.settled();
        if (settled) heard();
        return settled;
      },
    };
  });
  return { marker, restore: () => spy.mockRestore() };
}

describe('a waiting GET /json/events', () => {
  test('is answered with 401 when its session signs out', async () => {
    const { session } = await signedInWorld();
    const poll = await waitingEmojiPoll(session);
    await postForm(`${server.url}/accounts/logout/`, { csrfmiddlewaretoken: session.csrfToken }, session.cookies);
    const answer = await poll.answer;
    expect(answer.status).toBe(401);
    expect(answer.body).toEqual(NOT_LOGGED_IN);
  });

  test('given an event while the session is checked again, waits for the check: the deactivated user is answered 401, not the event', async () => {
    const { world, session } = await signedInWorld();
    const watched = pollWaitingForCheck();
    const locker = await connectToTestDatabase();
    try {
      const poll = await waitingEmojiPoll(session);
      // The check reads the session: held back here until the poll has read the event and waits.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE user_session IN ACCESS EXCLUSIVE MODE');
      await runOnTestDatabase(`UPDATE user_account SET "isActive" = false WHERE id = $1`, [world.users.member.id]);
      await eventually(async () => (await lockWaitersOf(locker)).some((waiter) => waiter.query.includes('FROM user_session s')), 15_000);
      await callApi(server.url, 'DELETE', '/realm/emoji/lighthouse', { authorization: world.users.owner.auth });
      await watched.marker;
      await locker.query('ROLLBACK');
      const answer = await poll.answer;
      expect(answer.status).toBe(401);
      expect(answer.body).toEqual(NOT_LOGGED_IN);
    } finally {
      watched.restore();
      // Ending the connection ends its transaction too, wherever the test stopped.
      await locker.end();
    }
  });
});

const EmojiChanges = graphql(`
  subscription SessionEmojiChanges {
    customEmojiChanged {
      change
      emoji {
        name
      }
    }
  }
`);

describe.each(TRANSPORTS)('a subscription over %s with the session', (transport: Transport) => {
  /** A subscription with the session, or with a Basic Authorization header. */
  async function follow(credentials: SignedIn | string) {
    const before = server.app.eventStreams!.size;
    // The cookie travels with the SSE request, or with the WebSocket's handshake (no connection_init credentials).
    const subscription =
      typeof credentials === 'string'
        ? subscribe(transport, server.url, credentials, EmojiChanges, {})
        : subscribe(transport, server.url, undefined, EmojiChanges, {}, { headers: { cookie: credentials.cookie }, connectionParams: {} });
    open.push(subscription as OpenSubscription<unknown>);
    const first = subscription.next(300);
    await eventually(() => server.app.eventStreams!.size > before, 15_000);
    expect(await first).toBe('silent');
    return subscription;
  }

  test('receives events, and ends when the session is signed out', async () => {
    const { world, session } = await signedInWorld();
    const subscription = await follow(session);
    await callApi(server.url, 'DELETE', '/realm/emoji/lighthouse', { authorization: world.users.owner.auth });
    expect(await subscription.next()).toEqual({ data: { customEmojiChanged: { change: 'DEACTIVATED', emoji: { name: 'lighthouse' } } } });
    await postForm(`${server.url}/accounts/logout/`, { csrfmiddlewaretoken: session.csrfToken }, session.cookies);
    expect(await subscription.next()).toMatchObject({ errors: [{ extensions: { code: 'UNAUTHORIZED' } }] });
    expect(await subscription.next()).toBe('ended');
  });

  test('ends when the password changes, and when the user is deactivated', async () => {
    const first = await signedInWorld();
    const changed = await follow(first.session);
    await setPassword(server.app.prisma, first.world.users.member.id, 'another fine passphrase');
    expect(await changed.next()).toMatchObject({ errors: [{ extensions: { code: 'UNAUTHORIZED' } }] });
    const second = await signedInWorld();
    const deactivated = await follow(second.session);
    await runOnTestDatabase(`UPDATE user_account SET "isActive" = false WHERE id = $1`, [second.world.users.member.id]);
    expect(await deactivated.next()).toMatchObject({ errors: [{ extensions: { code: 'UNAUTHORIZED' } }] });
  });

  test('ends when its session expires and the housekeeping removes it', async () => {
    const { world, session } = await signedInWorld();
    const subscription = await follow(session);
    await runOnTestDatabase(`UPDATE user_session SET "expiresAt" = now() AT TIME ZONE 'UTC' - interval '1 second' WHERE "userId" = $1`, [
      world.users.member.id,
    ]);
    await removeExpiredSessions(server.app.sql);
    expect(await subscription.next()).toMatchObject({ errors: [{ extensions: { code: 'UNAUTHORIZED' } }] });
  });

  test('an event heard while the session is checked again waits for the check: the deactivated user is sent the refusal, not the event', async () => {
    const { world, session } = await signedInWorld();
    const subscription = await follow(session);
    const owners = await follow(world.users.owner.auth);
    const locker = await connectToTestDatabase();
    try {
      // The check reads the session: held back here until the event has reached the member's stream.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE user_session IN ACCESS EXCLUSIVE MODE');
      await runOnTestDatabase(`UPDATE user_account SET "isActive" = false WHERE id = $1`, [world.users.member.id]);
      await eventually(async () => (await lockWaitersOf(locker)).some((waiter) => waiter.query.includes('FROM user_session s')), 15_000);
      await callApi(server.url, 'DELETE', '/realm/emoji/lighthouse', { authorization: world.users.owner.auth });
      // The owner's stream has the event: the reader hands each event to every stream at once, the member's included.
      expect(await owners.next()).toMatchObject({ data: { customEmojiChanged: { change: 'DEACTIVATED' } } });
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    expect(await subscription.next()).toMatchObject({ errors: [{ extensions: { code: 'UNAUTHORIZED' } }] });
    expect(await subscription.next()).toBe('ended');
  });

  test('follows a regenerated key: a later deactivation still ends it', async () => {
    const { world, session } = await signedInWorld();
    const subscription = await follow(session);
    await runOnTestDatabase(`UPDATE user_account SET "apiKeyHash" = md5(random()::text) WHERE id = $1`, [world.users.member.id]);
    // Sessions stay when the key changes: the stream goes on (an event proves it).
    await callApi(server.url, 'DELETE', '/realm/emoji/lighthouse', { authorization: world.users.owner.auth });
    expect(await subscription.next()).toMatchObject({ data: { customEmojiChanged: { change: 'DEACTIVATED' } } });
    await runOnTestDatabase(`UPDATE user_account SET "isActive" = false WHERE id = $1`, [world.users.member.id]);
    expect(await subscription.next()).toMatchObject({ errors: [{ extensions: { code: 'UNAUTHORIZED' } }] });
  });
});

test('without credentials or a session, a WebSocket connection is refused', async () => {
  const refused = subscribe(
    'ws',
    server.url,
    undefined,
    EmojiChanges,
    {},
    { connectionParams: {}, headers: { cookie: `sessionid=${'C'.repeat(43)}` } },
  );
  open.push(refused as OpenSubscription<unknown>);
  expect(await refused.next()).toBe('ended');
});
