// The permission cache of each server process (src/domain/permissions/permission-cache.ts): an
// organization's invitation settings with its domains, and which groups hold a user, read once and
// dropped when PostgreSQL announces a change to any of those tables (migration
// permission_change_notifications), whoever makes it. Changes made here with psql-like connections,
// outside the server, take effect in it within a second of returning; an upload's counter, which
// changes nothing cached, announces nothing.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PermissionCache } from '../../src/domain/permissions/permission-cache.js';
import { postInvites } from '../support/invites.js';
import { startCountingApp } from '../support/query-count.js';
import { runOnTestDatabase, startTestServer, type TestServer } from '../support/server.js';
import { eventually } from '../support/subscriptions.js';
import { createWorld, type World } from '../support/world.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

let sent = 0;
/** The member invites one new address of `domain`. */
const memberInvites = (world: World, domain = 'lighthouse.example') =>
  postInvites(server.url, world.users.member.auth, { invitee_emails: `cached-${sent++}@${domain}`, stream_ids: '[]' });

const INSUFFICIENT = 'Insufficient permission';

/** The member's invitations (a new address each time) answer `msg` within a second of the change returning. */
const answersWithinASecond = (world: World, msg: string, domain?: string) =>
  eventually(async () => (await memberInvites(world, domain)).body.msg === msg, 1_000);

test('an invitation whose permissions the process holds sends two statements fewer: three in all', async () => {
  const counting = await startCountingApp();
  try {
    const world = await createWorld(counting.prisma);
    const invite = () =>
      counting.request('/api/v1/invites', {
        method: 'POST',
        headers: { authorization: world.users.member.auth },
        body: new URLSearchParams({ invitee_emails: `counted-${sent++}@lighthouse.example`, stream_ids: '[]' }),
      });
    await counting.request('/api/v1/users/me', { headers: { authorization: world.users.member.auth } });
    const first = await invite();
    const second = await invite();
    expect([first.response.status, second.response.status]).toEqual([200, 200]);
    expect(second.statements).toBe(first.statements - 2);
    // BEGIN with the organization's lock in one round trip, the statement that writes, COMMIT.
    expect(second.statements).toBe(3);
  } finally {
    await counting.close();
  }
});

describe('changes made outside the server take effect in it at once', () => {
  test("the organization's setting: who may invite", async () => {
    const world = await createWorld(server.app.prisma);
    expect((await memberInvites(world)).status).toBe(200);
    await runOnTestDatabase(
      `UPDATE organization SET "canInviteUsersGroupId" =
         (SELECT id FROM user_group WHERE "organizationId" = $1 AND name = 'role:administrators') WHERE id = $1`,
      [world.org.id],
    );
    await answersWithinASecond(world, INSUFFICIENT);
  });

  test('its allowed domains', async () => {
    const world = await createWorld(server.app.prisma, (file) => (file.organization.emails_restricted_to_domains = true));
    expect((await memberInvites(world, 'example.net')).body).toMatchObject({
      msg: "Some emails did not validate, so we didn't send any invitations.",
    });
    await runOnTestDatabase(`INSERT INTO organization_domain ("organizationId", domain) VALUES ($1, 'example.net')`, [world.org.id]);
    await answersWithinASecond(world, '', 'example.net');
  });

  test('a member leaving the group that holds the setting', async () => {
    const world = await createWorld(server.app.prisma, (file) => (file.organization.can_invite_users_group = 'support'));
    expect((await memberInvites(world)).status).toBe(200);
    await runOnTestDatabase(`DELETE FROM user_group_member WHERE "groupId" = $1 AND "userId" = $2`, [
      await world.groupId('support'),
      world.users.member.id,
    ]);
    await answersWithinASecond(world, INSUFFICIENT);
  });

  test('a subgroup leaving the group that holds the setting', async () => {
    // The member belongs to support, a subgroup of leads.
    const world = await createWorld(server.app.prisma, (file) => (file.organization.can_invite_users_group = 'leads'));
    expect((await memberInvites(world)).status).toBe(200);
    await runOnTestDatabase(`DELETE FROM user_group_subgroup WHERE "supergroupId" = $1`, [await world.groupId('leads')]);
    await answersWithinASecond(world, INSUFFICIENT);
  });
});

describe('what is announced', () => {
  /** The payloads the server's cache hears while `change` runs, up to a marker committed after it. */
  async function heardAround(change: () => Promise<void>): Promise<string[]> {
    const heard: string[] = [];
    const hear = (payload: string) => heard.push(payload);
    const cache = server.app.permissionCache!;
    cache.events.on('heard', hear);
    try {
      await change();
      // Notifications arrive in commit order: once the marker is heard, the change's would have been.
      await runOnTestDatabase(`SELECT pg_notify('permissions_changed', 'marker')`);
      await eventually(() => heard.includes('marker'));
      return heard;
    } finally {
      cache.events.off('heard', hear);
    }
  }

  test("an upload's counter changes nothing cached and is not announced; a setting is", async () => {
    const world = await createWorld(server.app.prisma);
    expect((await memberInvites(world)).status).toBe(200);
    const held = server.app.permissionCache!.size;
    expect(held).toBeGreaterThan(0);
    const counted = () =>
      runOnTestDatabase(`UPDATE organization SET "uploadSpaceUsed" = "uploadSpaceUsed" + 10 WHERE id = $1`, [world.org.id]);
    expect(await heardAround(counted)).toEqual(['marker']);
    const renamed = () => runOnTestDatabase(`UPDATE organization SET name = name || '!' WHERE id = $1`, [world.org.id]);
    expect(await heardAround(renamed)).toEqual(['*', 'marker']);
  });
});

describe('the cache itself', () => {
  const listeningCache = () => {
    const cache = new PermissionCache();
    cache.listening(true);
    return cache;
  };

  test('keeps what it read until a change is heard', async () => {
    const cache = listeningCache();
    let reads = 0;
    const load = async () => ++reads;
    expect([await cache.read('k', load), await cache.read('k', load)]).toEqual([1, 1]);
    cache.notified('*');
    expect(await cache.read('k', load)).toBe(2);
  });

  test('does not keep a value read while a change was heard', async () => {
    const cache = listeningCache();
    let reads = 0;
    const first = cache.read('k', async () => {
      cache.notified('*');
      return ++reads;
    });
    expect(await first).toBe(1);
    expect(await cache.read('k', async () => ++reads)).toBe(2);
  });

  test('keeps nothing while not listening, and drops everything when listening stops', async () => {
    const cache = new PermissionCache();
    let reads = 0;
    const load = async () => ++reads;
    await cache.read('k', load);
    await cache.read('k', load);
    expect(reads).toBe(2);
    cache.listening(true);
    await cache.read('k', load);
    cache.listening(false);
    expect(cache.size).toBe(0);
    expect(await cache.read('k', load)).toBe(4);
  });

  test('keeps no "nothing found"', async () => {
    const cache = listeningCache();
    let reads = 0;
    const load = async () => (++reads, undefined);
    await cache.read('k', load);
    await cache.read('k', load);
    expect(reads).toBe(2);
  });
});
