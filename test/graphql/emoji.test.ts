// Custom emoji through GraphQL: the same rules and messages as REST, errors as data.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { graphql } from '../generated/gql.js';
import { gql } from '../support/graphql.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const newWorld = () => createWorld(server.app.prisma);

const DeactivateCustomEmoji = graphql(`
  mutation DeactivateCustomEmoji($emojiName: String!) {
    deactivateCustomEmoji(emojiName: $emojiName) {
      __typename
      ... on DeactivateCustomEmojiSuccess {
        emoji {
          name
          deactivated
          author {
            id
            email
            role
          }
        }
      }
      ... on Error {
        message
        code
      }
    }
  }
`);

const CustomEmojiList = graphql(`
  query CustomEmojiList($includeDeactivated: Boolean) {
    customEmoji(includeDeactivated: $includeDeactivated) {
      name
      deactivated
      author {
        fullName
      }
    }
  }
`);

const deactivate = (world: World, who: keyof World['users'], emojiName: string) =>
  gql(server.url, DeactivateCustomEmoji, { emojiName }, world.users[who].auth);

const activeNames = async (world: World) =>
  (
    await server.app.prisma.customEmoji.findMany({ where: { organizationId: world.org.id, deactivated: false }, orderBy: { id: 'asc' } })
  ).map((e) => e.name);

describe('deactivateCustomEmoji', () => {
  test('the author deactivates their emoji and gets it back with its author', async () => {
    const world = await newWorld();
    const result = await deactivate(world, 'member', 'green_tick');
    expect(result).toEqual({
      status: 200,
      data: {
        deactivateCustomEmoji: {
          __typename: 'DeactivateCustomEmojiSuccess',
          emoji: {
            name: 'green_tick',
            deactivated: true,
            author: { id: world.users.member.id, email: 'mark@lighthouse.example', role: 'MEMBER' },
          },
        },
      },
    });
    expect(await activeNames(world)).toEqual(['lighthouse']);
    expect(
      await server.app.prisma.auditLogEntry.count({
        where: { organizationId: world.org.id, eventType: 'REALM_EMOJI_REMOVED', actorId: world.users.member.id },
      }),
    ).toBe(1);
  });

  test("an administrator deactivates someone else's emoji", async () => {
    const world = await newWorld();
    const result = await deactivate(world, 'admin', 'lighthouse');
    expect(result.data?.deactivateCustomEmoji).toEqual({
      __typename: 'DeactivateCustomEmojiSuccess',
      emoji: {
        name: 'lighthouse',
        deactivated: true,
        author: { id: world.users.owner.id, email: 'olga@lighthouse.example', role: 'OWNER' },
      },
    });
    expect(await activeNames(world)).toEqual(['green_tick']);
  });

  test('a moderator, a member or a guest who is not the author gets BadRequestError; nothing changes', async () => {
    const world = await newWorld();
    for (const [who, name] of [
      ['moderator', 'green_tick'],
      ['member', 'lighthouse'],
      ['guest', 'green_tick'],
    ] as const) {
      const result = await deactivate(world, who, name);
      expect(result).toEqual({
        status: 200,
        data: {
          deactivateCustomEmoji: {
            __typename: 'BadRequestError',
            message: 'Must be an organization administrator or emoji author',
            code: 'BAD_REQUEST',
          },
        },
      });
    }
    expect(await activeNames(world)).toEqual(['green_tick', 'lighthouse']);
  });

  test('a guest may deactivate the emoji they added', async () => {
    const world = await newWorld();
    await server.app.prisma.customEmoji.create({
      data: { organizationId: world.org.id, name: 'wave', authorId: world.users.guest.id, fileName: 'wave.gif' },
    });
    const result = await deactivate(world, 'guest', 'wave');
    expect(result.data?.deactivateCustomEmoji).toMatchObject({
      __typename: 'DeactivateCustomEmojiSuccess',
      emoji: { name: 'wave', deactivated: true },
    });
  });

  test("unknown, deactivated, wrongly cased and other organizations' names are NotFoundError", async () => {
    const world = await newWorld();
    const other = await newWorld();
    await server.app.prisma.customEmoji.create({
      data: { organizationId: other.org.id, name: 'elsewhere', authorId: null, fileName: 'e.png' },
    });
    for (const name of ['no_such', 'retired_logo', 'Green_Tick', 'elsewhere', 'a/b']) {
      const result = await deactivate(world, 'owner', name);
      expect(result.data?.deactivateCustomEmoji).toEqual({
        __typename: 'NotFoundError',
        message: `Emoji '${name}' does not exist`,
        code: 'BAD_REQUEST',
      });
    }
    expect(await activeNames(world)).toEqual(['green_tick', 'lighthouse']);
    expect(await activeNames(other)).toEqual(['green_tick', 'lighthouse', 'elsewhere']);
  });

  test('without valid credentials the operation is refused with 401', async () => {
    const world = await newWorld();
    const result = await deactivate(world, 'deactivated', 'green_tick');
    expect(result.status).toBe(401);
    expect(result.data).toBeUndefined();
    expect(result.errors?.[0]).toMatchObject({ message: 'Account is deactivated', extensions: { code: 'UNAUTHORIZED' } });
    expect(await activeNames(world)).toEqual(['green_tick', 'lighthouse']);
  });
});

describe('customEmoji', () => {
  test('lists active emoji by default, and deactivated ones when asked, with authors', async () => {
    const world = await newWorld();
    await deactivate(world, 'member', 'green_tick');
    const active = await gql(server.url, CustomEmojiList, {}, world.users.guest.auth);
    expect(active).toEqual({
      status: 200,
      data: { customEmoji: [{ name: 'lighthouse', deactivated: false, author: { fullName: 'Olga Owner' } }] },
    });
    const all = await gql(server.url, CustomEmojiList, { includeDeactivated: true }, world.users.guest.auth);
    expect(all.data?.customEmoji).toEqual([
      { name: 'green_tick', deactivated: true, author: { fullName: 'Mark Member' } },
      { name: 'lighthouse', deactivated: false, author: { fullName: 'Olga Owner' } },
      { name: 'retired_logo', deactivated: true, author: null },
    ]);
  });
});
