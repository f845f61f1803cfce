// DELETE /api/v1/realm/emoji/{emoji_name} and GET /api/v1/realm/emoji over HTTP, against the real
// database: whole bodies, statuses, and what was (or was not) written.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectMatchesOpenApi } from '../support/openapi.js';
import { startCountingApp } from '../support/query-count.js';
import { callApi, type ApiCall } from '../support/rest.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { whileRowLocked } from '../support/contention.js';
import { createWorld, type World } from '../support/world.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

// Attachment path ids are unique across organizations: let the importer make fresh ones per world.
const newWorld = () => createWorld(server.app.prisma);

const SUCCESS = { result: 'success', msg: '' };
const notFoundBody = (name: string) => ({ result: 'error', msg: `Emoji '${name}' does not exist`, code: 'BAD_REQUEST' });
const NOT_ALLOWED = { result: 'error', msg: 'Must be an organization administrator or emoji author', code: 'BAD_REQUEST' };

/** DELETE with the name percent-encoded as a client would, validated against the OpenAPI excerpt. */
async function deactivate(
  authorization: string,
  name: string,
  call: Omit<ApiCall, 'authorization'> = {},
  encode: (name: string) => string = encodeURIComponent,
) {
  const response = await callApi(server.url, 'DELETE', `/realm/emoji/${encode(name)}`, { authorization, ...call });
  expectMatchesOpenApi('DELETE', '/realm/emoji/{emoji_name}', response);
  return response;
}

const emojiRows = (world: World) =>
  server.app.prisma.customEmoji.findMany({
    where: { organizationId: world.org.id },
    orderBy: { id: 'asc' },
    select: { name: true, deactivated: true },
  });

const auditRows = (world: World) =>
  server.app.prisma.auditLogEntry.findMany({
    where: { organizationId: world.org.id, eventType: 'REALM_EMOJI_REMOVED' },
    select: { actorId: true, extraData: true },
  });

const INITIAL = [
  { name: 'green_tick', deactivated: false },
  { name: 'lighthouse', deactivated: false },
  { name: 'retired_logo', deactivated: true },
];

async function addEmoji(world: World, name: string, authorId: number | null) {
  return server.app.prisma.customEmoji.create({ data: { organizationId: world.org.id, name, authorId, fileName: 'x.png' } });
}

describe('who may deactivate', () => {
  test('the author (a member) deactivates their emoji; only that row changes and the audit log says so', async () => {
    const world = await newWorld();
    const greenTickId = await world.emojiId('green_tick');
    const response = await deactivate(world.users.member.auth, 'green_tick');
    expect(response.status).toBe(200);
    expect(response.body).toEqual(SUCCESS);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('cache-control')).toContain('no-cache');
    expect(await emojiRows(world)).toEqual([{ name: 'green_tick', deactivated: true }, INITIAL[1], INITIAL[2]]);
    const dict = {
      id: String(greenTickId),
      name: 'green_tick',
      source_url: `/user_avatars/${world.org.id}/emoji/images/green_tick.png`,
      still_url: null,
      author_id: world.users.member.id,
    };
    expect(await auditRows(world)).toEqual([
      { actorId: world.users.member.id, extraData: { before: { ...dict, deactivated: false }, after: { ...dict, deactivated: true } } },
    ]);
  });

  test("an administrator and an owner deactivate other people's emoji, and emoji without an author", async () => {
    const world = await newWorld();
    await addEmoji(world, 'orphan', null);
    expect((await deactivate(world.users.admin.auth, 'lighthouse')).body).toEqual(SUCCESS);
    expect((await deactivate(world.users.owner.auth, 'green_tick')).body).toEqual(SUCCESS);
    expect((await deactivate(world.users.admin.auth, 'orphan')).body).toEqual(SUCCESS);
    expect(await emojiRows(world)).toEqual([
      { name: 'green_tick', deactivated: true },
      { name: 'lighthouse', deactivated: true },
      { name: 'retired_logo', deactivated: true },
      { name: 'orphan', deactivated: true },
    ]);
    expect((await auditRows(world)).map((r) => r.actorId)).toEqual([world.users.admin.id, world.users.owner.id, world.users.admin.id]);
  });

  test("a member, a moderator, a guest and a bot may not deactivate someone else's emoji (400, nothing written)", async () => {
    const world = await newWorld();
    await addEmoji(world, 'orphan', null);
    const attempts: [string, string][] = [
      [world.users.member.auth, 'lighthouse'],
      [world.users.moderator.auth, 'green_tick'],
      [world.users.moderator.auth, 'orphan'],
      [world.users.guest.auth, 'green_tick'],
      [world.users.bot.auth, 'lighthouse'],
    ];
    for (const [authorization, name] of attempts) {
      const response = await deactivate(authorization, name);
      expect(response.status).toBe(400);
      expect(response.body).toEqual(NOT_ALLOWED);
    }
    expect(await emojiRows(world)).toEqual([...INITIAL, { name: 'orphan', deactivated: false }]);
    expect(await auditRows(world)).toEqual([]);
  });

  test('a guest and a bot may deactivate the emoji they added', async () => {
    const world = await newWorld();
    await addEmoji(world, 'guest_wave', world.users.guest.id);
    await addEmoji(world, 'bot_beep', world.users.bot.id);
    expect(await deactivate(world.users.guest.auth, 'guest_wave')).toMatchObject({ status: 200, body: SUCCESS });
    expect(await deactivate(world.users.bot.auth, 'bot_beep')).toMatchObject({ status: 200, body: SUCCESS });
    expect((await emojiRows(world)).slice(3)).toEqual([
      { name: 'guest_wave', deactivated: true },
      { name: 'bot_beep', deactivated: true },
    ]);
  });
});

describe('which emoji is meant', () => {
  test('unknown, already deactivated, wrongly cased and built-in names are 404 with code BAD_REQUEST', async () => {
    const world = await newWorld();
    for (const name of ['no_such_emoji', 'retired_logo', 'Green_Tick', 'GREEN_TICK', 'green_tick ', 'green tick', 'smile']) {
      const response = await deactivate(world.users.admin.auth, name);
      expect(response.status).toBe(404);
      expect(response.body).toEqual(notFoundBody(name));
    }
    expect(await emojiRows(world)).toEqual(INITIAL);
    expect(await auditRows(world)).toEqual([]);
  });

  test('a missing emoji is 404 before the permission check: a member learns nothing more', async () => {
    const world = await newWorld();
    const response = await deactivate(world.users.member.auth, 'lighthouse_typo');
    expect(response).toMatchObject({ status: 404, body: notFoundBody('lighthouse_typo') });
  });

  test('names with `/`, spaces, `%` and non-ASCII letters reach the service decoded, raw or percent-encoded', async () => {
    const world = await newWorld();
    for (const name of ['a/b', 'c/d', 'tea time', '100%', 'café', 'x%2Fy']) await addEmoji(world, name, world.users.member.id);
    // A literal slash in the path, and an encoded one.
    expect((await deactivate(world.users.member.auth, 'a/b', {}, (n) => n)).body).toEqual(SUCCESS);
    expect((await deactivate(world.users.member.auth, 'c/d')).body).toEqual(SUCCESS);
    expect((await deactivate(world.users.member.auth, 'tea time')).body).toEqual(SUCCESS);
    expect((await deactivate(world.users.member.auth, '100%')).body).toEqual(SUCCESS);
    expect((await deactivate(world.users.member.auth, 'café')).body).toEqual(SUCCESS);
    // The name is the decoded segment: "x%2Fy" must be sent as x%252Fy.
    expect(await deactivate(world.users.member.auth, 'x%2Fy', {}, (n) => n)).toMatchObject({ status: 404, body: notFoundBody('x/y') });
    expect((await deactivate(world.users.member.auth, 'x%2Fy')).body).toEqual(SUCCESS);
    expect((await emojiRows(world)).slice(3).every((e) => e.deactivated)).toBe(true);
  });

  test("another organization's emoji is unknown here, and stays untouched", async () => {
    const here = await newWorld();
    const there = await newWorld();
    await addEmoji(there, 'only_there', there.users.member.id);
    const response = await deactivate(here.users.owner.auth, 'only_there');
    expect(response).toMatchObject({ status: 404, body: notFoundBody('only_there') });
    // Both organizations have a green_tick: deactivating one leaves the other's active.
    expect((await deactivate(here.users.owner.auth, 'green_tick')).body).toEqual(SUCCESS);
    expect(await emojiRows(there)).toEqual([...INITIAL, { name: 'only_there', deactivated: false }]);
    expect(await auditRows(there)).toEqual([]);
  });

  test('a deactivated row does not shadow an active emoji re-uploaded under the same name', async () => {
    const world = await newWorld();
    const again = await addEmoji(world, 'retired_logo', world.users.member.id);
    expect((await deactivate(world.users.member.auth, 'retired_logo')).body).toEqual(SUCCESS);
    const rows = await server.app.prisma.customEmoji.findMany({
      where: { organizationId: world.org.id, name: 'retired_logo' },
      orderBy: { id: 'asc' },
    });
    expect(rows.map((r) => [r.id === again.id, r.deactivated])).toEqual([
      [false, true],
      [true, true],
    ]);
  });

  test('two simultaneous deactivations: exactly one succeeds and one audit row is written', async () => {
    const world = await newWorld();
    // Both wait on the emoji's row (PostgreSQL shows them) before the test lets it go.
    const responses = await whileRowLocked(
      'custom_emoji',
      await world.emojiId('green_tick'),
      () => Promise.all([deactivate(world.users.member.auth, 'green_tick'), deactivate(world.users.owner.auth, 'green_tick')]),
      { waiters: 2 },
    );
    expect(responses.map((r) => r.status).sort()).toEqual([200, 404]);
    expect(await auditRows(world)).toHaveLength(1);
  });
});

describe('parameters', () => {
  test('query and form parameters are reported, sorted, in ignored_parameters_unsupported', async () => {
    const world = await newWorld();
    const response = await deactivate(world.users.member.auth, 'green_tick', {
      query: { zeta: '1', alpha: '2' },
      form: { emoji_name: 'lighthouse' },
    });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ...SUCCESS, ignored_parameters_unsupported: ['alpha', 'emoji_name', 'zeta'] });
    // The form field did not pick another emoji.
    expect(await emojiRows(world)).toEqual([{ name: 'green_tick', deactivated: true }, INITIAL[1], INITIAL[2]]);
  });

  test('errors never carry ignored_parameters_unsupported', async () => {
    const world = await newWorld();
    const response = await deactivate(world.users.member.auth, 'lighthouse', { query: { foo: 'bar' } });
    expect(response).toMatchObject({ status: 400, body: NOT_ALLOWED });
    expect(Object.keys(response.body)).toEqual(['result', 'msg', 'code']);
  });
});

describe('GET /realm/emoji', () => {
  test('lists every custom emoji, deactivated ones included, keyed by id, in the reference shape', async () => {
    const world = await newWorld();
    await deactivate(world.users.member.auth, 'green_tick');
    const [greenTick, lighthouse, retired] = await Promise.all(['green_tick', 'lighthouse', 'retired_logo'].map((n) => world.emojiId(n)));
    const response = await callApi(server.url, 'GET', '/realm/emoji', { authorization: world.users.guest.auth });
    const image = (file: string) => `/user_avatars/${world.org.id}/emoji/images/${file}`;
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      result: 'success',
      msg: '',
      emoji: {
        [greenTick]: {
          id: String(greenTick),
          name: 'green_tick',
          source_url: image('green_tick.png'),
          still_url: null,
          deactivated: true,
          author_id: world.users.member.id,
        },
        [lighthouse]: {
          id: String(lighthouse),
          name: 'lighthouse',
          source_url: image('lighthouse.png'),
          still_url: null,
          deactivated: false,
          author_id: world.users.owner.id,
        },
        [retired]: {
          id: String(retired),
          name: 'retired_logo',
          source_url: image('retired_logo.png'),
          still_url: null,
          deactivated: true,
          author_id: null,
        },
      },
    });
  });

  test("never shows another organization's emoji, and needs credentials", async () => {
    const here = await newWorld();
    const there = await newWorld();
    await addEmoji(there, 'only_there', null);
    const response = await callApi(server.url, 'GET', '/realm/emoji', { authorization: here.users.member.auth });
    expect(Object.values(response.body.emoji).map((e: any) => e.name)).toEqual(['green_tick', 'lighthouse', 'retired_logo']);
    const anonymous = await callApi(server.url, 'GET', '/realm/emoji');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({
      result: 'error',
      msg: 'Not logged in: API authentication or user session required',
      code: 'UNAUTHORIZED',
    });
  });
});

describe('SQL statements', () => {
  test('a deactivation is authentication, one lookup and one write (update and audit entry together), its event time now', async () => {
    const counting = await startCountingApp();
    try {
      const world = await createWorld(counting.prisma);
      const before = Date.now();
      const { response, statements } = await counting.request('/api/v1/realm/emoji/green_tick', {
        method: 'DELETE',
        headers: { authorization: world.users.member.auth },
      });
      expect(response.status).toBe(200);
      expect(statements).toBe(3);
      const [entry] = await counting.prisma.auditLogEntry.findMany({
        where: { organizationId: world.org.id, eventType: 'REALM_EMOJI_REMOVED' },
      });
      // Stored in UTC like every other time of the schema: within a minute of the request.
      expect(Math.abs(entry!.eventTime.getTime() - before)).toBeLessThan(60_000);
    } finally {
      await counting.close();
    }
  });
});
