// The authentication cache of each server process (src/domain/auth/auth-cache.ts): two server
// instances over one database each cache a user; a key reset, a deactivation or a role change made
// outside them (as the CLI makes it) reaches both through PostgreSQL's NOTIFY before anything else,
// and from then on both answer with the new state.
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { resetApiKey } from '../src/import/users.js';
import { hashApiKey } from '../src/domain/users/api-keys.js';
import { startCountingApp } from './support/query-count.js';
import { basicAuth, startTestServer, type TestServer } from './support/server.js';
import { createWorld, type World } from './support/world.js';

describe('authentication cache across server processes', () => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    [a, b] = await Promise.all([startTestServer(), startTestServer()]);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  const me = (server: TestServer, auth: string) =>
    fetch(`${server.url}/api/v1/users/me`, { headers: { authorization: auth } }).then(async (r) => ({ status: r.status, body: await r.json() }));

  /** Both instances authenticate the user once, so each holds a cached entry for the key. */
  async function cachedOnBoth(world: World, auth = world.users.member.auth, apiKey = world.users.member.apiKey) {
    for (const server of [a, b]) {
      expect((await me(server, auth)).status).toBe(200);
      expect(server.app.authCache!.get(hashApiKey(apiKey))).toBeDefined();
    }
  }

  /** Resolves once both instances have applied the notification for this key hash. */
  const invalidatedOnBoth = (apiKey: string) =>
    Promise.all(
      [a, b].map(async (server) => {
        const events = server.app.authCache!.events;
        for (;;) {
          const [hash] = await once(events, 'invalidated');
          if (hash === hashApiKey(apiKey) || hash === '*') return;
        }
      }),
    );

  test('each instance caches a user it authenticated', async () => {
    const world = await createWorld(a.database.prisma);
    expect(a.app.authCache!.enabled).toBe(true);
    expect(a.app.authCache!.get(hashApiKey(world.users.member.apiKey))).toBeUndefined();
    await cachedOnBoth(world);
  });

  test('a cached request sends one statement less: the authentication query', async () => {
    const counting = await startCountingApp();
    try {
      const world = await createWorld(counting.prisma);
      const request = () => counting.request('/api/v1/users/me', { headers: { authorization: world.users.member.auth } });
      const first = await request();
      const second = await request();
      expect([first.response.status, second.response.status]).toEqual([200, 200]);
      expect(first.statements).toBe(1);
      expect(second.statements).toBe(0);
    } finally {
      await counting.close();
    }
  });

  test('a key reset: the old key is refused and the new one accepted by both instances', async () => {
    const world = await createWorld(a.database.prisma);
    await cachedOnBoth(world);
    const invalidated = invalidatedOnBoth(world.users.member.apiKey);
    const newKey = await resetApiKey(a.database.prisma, world.org.stringId, world.users.member.email);
    await invalidated;
    for (const server of [a, b]) {
      const refused = await me(server, world.users.member.auth);
      expect(refused).toEqual({ status: 401, body: { result: 'error', msg: 'Invalid API key', code: 'UNAUTHORIZED' } });
      expect((await me(server, basicAuth(world.users.member.email, newKey))).status).toBe(200);
    }
  });

  test('a deactivation: both instances refuse the account at once', async () => {
    const world = await createWorld(a.database.prisma);
    await cachedOnBoth(world);
    const invalidated = invalidatedOnBoth(world.users.member.apiKey);
    await b.database.prisma.user.update({ where: { id: world.users.member.id }, data: { isActive: false } });
    await invalidated;
    for (const server of [a, b]) {
      expect(await me(server, world.users.member.auth)).toEqual({
        status: 401,
        body: { result: 'error', msg: 'Account is deactivated', code: 'UNAUTHORIZED' },
      });
    }
  });

  test('an organization deactivation: every cached user of it is refused', async () => {
    const world = await createWorld(a.database.prisma);
    await cachedOnBoth(world);
    const invalidated = invalidatedOnBoth(world.users.member.apiKey);
    await a.database.prisma.organization.update({ where: { id: world.org.id }, data: { deactivated: true } });
    await invalidated;
    for (const server of [a, b]) {
      expect((await me(server, world.users.member.auth)).body.msg).toBe('This organization has been deactivated');
    }
  });

  test('a role change: both instances act with the new role', async () => {
    const world = await createWorld(a.database.prisma);
    await cachedOnBoth(world);
    for (const server of [a, b]) expect((await me(server, world.users.member.auth)).body.role).toBe(400);
    const invalidated = invalidatedOnBoth(world.users.member.apiKey);
    await a.database.prisma.user.update({ where: { id: world.users.member.id }, data: { role: 200 } });
    await invalidated;
    for (const server of [a, b]) {
      const answer = await me(server, world.users.member.auth);
      expect(answer.body).toMatchObject({ role: 200, is_admin: true });
    }
  });
});
