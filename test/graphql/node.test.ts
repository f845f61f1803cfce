// Relay global object identification over HTTP: globalId on every Node type, and Query.node and
// Query.nodes finding exactly what the caller's lists show them (null otherwise, never an error that
// tells an object exists); malformed global ids are BAD_USER_INPUT errors.
import { print } from 'graphql';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { graphql } from '../generated/gql.js';
import { gql } from '../support/graphql.js';
import { createInvitation, uniqueEmail } from '../support/invitations.js';
import { startCountingApp } from '../support/query-count.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World, type WorldUserName } from '../support/world.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const newWorld = () => createWorld(server.app.prisma);

/** Relay's convention, written independently of the server's codec. */
const globalId = (type: string, id: number) => Buffer.from(`${type}:${id}`, 'utf8').toString('base64');

const NodeById = graphql(`
  query NodeById($id: ID!) {
    node(id: $id) {
      __typename
      globalId
      ... on Attachment {
        id
        name
        messageIds
      }
      ... on Invitation {
        id
        email
        status
        referrer {
          email
        }
      }
      ... on CustomEmoji {
        id
        name
        deactivated
      }
      ... on Channel {
        id
        name
        isDefault
      }
      ... on UserGroup {
        id
        name
      }
      ... on User {
        id
        email
        role
      }
    }
  }
`);

const NodesByIds = graphql(`
  query NodesByIds($ids: [ID!]!) {
    nodes(ids: $ids) {
      __typename
      globalId
      ... on Attachment {
        name
      }
      ... on CustomEmoji {
        name
      }
      ... on Channel {
        name
      }
      ... on UserGroup {
        name
      }
      ... on User {
        email
      }
      ... on Invitation {
        email
      }
    }
  }
`);

const ListedGlobalIds = graphql(`
  query ListedGlobalIds {
    attachments {
      attachments {
        id
        globalId
      }
    }
    customEmoji(includeDeactivated: true) {
      id
      globalId
      author {
        id
        globalId
      }
    }
    me {
      subscriptions {
        id
        globalId
      }
      groups {
        id
        globalId
      }
    }
  }
`);

const node = async (world: World, who: WorldUserName, id: string) => {
  const result = await gql(server.url, NodeById, { id }, world.users[who].auth);
  expect(result.errors).toBeUndefined();
  return result.data!.node;
};

const nodes = async (world: World, who: WorldUserName, ids: string[]) => {
  const result = await gql(server.url, NodesByIds, { ids }, world.users[who].auth);
  expect(result.errors).toBeUndefined();
  return result.data!.nodes;
};

describe('globalId', () => {
  test('each listed object carries the base64 of "<type>:<id>", and node gives the same object back', async () => {
    const world = await newWorld();
    const result = await gql(server.url, ListedGlobalIds, {}, world.users.member.auth);
    expect(result.errors).toBeUndefined();
    const { attachments, customEmoji, me } = result.data!;
    const listed = [
      ...attachments.attachments.map((a) => ['Attachment', a] as const),
      ...customEmoji.map((e) => ['CustomEmoji', e] as const),
      ...customEmoji.flatMap((e) => (e.author ? [['User', e.author] as const] : [])),
      ...me.subscriptions.map((c) => ['Channel', c] as const),
      ...me.groups.map((g) => ['UserGroup', g] as const),
    ];
    expect(new Set(listed.map(([type]) => type))).toEqual(new Set(['Attachment', 'CustomEmoji', 'User', 'Channel', 'UserGroup']));
    for (const [type, object] of listed) {
      expect(object.globalId).toBe(globalId(type, object.id));
      expect(await node(world, 'member', object.globalId)).toMatchObject({ __typename: type, globalId: object.globalId, id: object.id });
    }
  });

  test('equal row ids of different types are different global ids', async () => {
    const world = await newWorld();
    const id = world.users.member.id;
    const [user, channel] = await nodes(world, 'member', [globalId('User', id), globalId('Channel', id)]);
    expect(user).toMatchObject({ __typename: 'User', email: 'mark@lighthouse.example' });
    expect(channel).toBeNull();
  });
});

describe('node, per type, as the lists show each', () => {
  test("Attachment: one's own file; another user's file is null, for an owner too", async () => {
    const world = await newWorld();
    const plan = await world.attachmentId('plan.pdf');
    const archive = await world.attachmentId('archive.tar');
    const planNode = await node(world, 'member', globalId('Attachment', plan));
    expect(planNode).toMatchObject({ __typename: 'Attachment', id: plan, name: 'plan.pdf' });
    expect(await node(world, 'member', globalId('Attachment', archive))).toBeNull();
    expect(await node(world, 'owner', globalId('Attachment', plan))).toBeNull();
    expect(await node(world, 'owner', globalId('Attachment', archive))).toMatchObject({ name: 'archive.tar' });
  });

  test("Invitation: the referrer's own, an administrator's every one, inactive ones too; another member's is null", async () => {
    const world = await newWorld();
    const byAdmin = await createInvitation(server, world, { email: uniqueEmail('by-admin'), referrer: 'admin' });
    const revoked = await createInvitation(server, world, { email: uniqueEmail('revoked'), referrer: 'member', status: 'REVOKED' });
    const byAdminId = globalId('Invitation', byAdmin.id);
    const revokedId = globalId('Invitation', revoked.id);
    expect(await node(world, 'admin', byAdminId)).toMatchObject({
      __typename: 'Invitation',
      email: byAdmin.email,
      status: 'PENDING',
      referrer: { email: 'adam@lighthouse.example' },
    });
    expect(await node(world, 'admin', revokedId)).toMatchObject({ email: revoked.email, status: 'REVOKED' });
    expect(await node(world, 'member', revokedId)).toMatchObject({
      email: revoked.email,
      status: 'REVOKED',
      referrer: { email: 'mark@lighthouse.example' },
    });
    expect(await node(world, 'member', byAdminId)).toBeNull();
    expect(await node(world, 'moderator', revokedId)).toBeNull();
    // Guests may list no invitations at all: null, not the list's refusal.
    expect(await node(world, 'guest', byAdminId)).toBeNull();
  });

  test('CustomEmoji: any of the organization, a deactivated one as customEmoji(includeDeactivated: true) shows it', async () => {
    const world = await newWorld();
    const tick = await world.emojiId('green_tick');
    const retired = await world.emojiId('retired_logo');
    expect(await node(world, 'guest', globalId('CustomEmoji', tick))).toEqual({
      __typename: 'CustomEmoji',
      globalId: globalId('CustomEmoji', tick),
      id: tick,
      name: 'green_tick',
      deactivated: false,
    });
    expect(await node(world, 'member', globalId('CustomEmoji', retired))).toMatchObject({ name: 'retired_logo', deactivated: true });
  });

  test("Channel: subscribed or invitable; others' private channels, archived ones, a guest's unsubscribed ones are null", async () => {
    const world = await newWorld();
    const names = ['general', 'boardroom', 'old-news', 'design'];
    const [general, boardroom, oldNews, design] = await Promise.all(names.map((name) => world.channelId(name)));
    expect(await node(world, 'member', globalId('Channel', design))).toEqual({
      __typename: 'Channel',
      globalId: globalId('Channel', design),
      id: design,
      name: 'design',
      isDefault: false,
    });
    expect(await node(world, 'member', globalId('Channel', general))).toMatchObject({ name: 'general', isDefault: true });
    expect(await node(world, 'member', globalId('Channel', boardroom))).toBeNull();
    expect(await node(world, 'owner', globalId('Channel', boardroom))).toMatchObject({ name: 'boardroom' });
    expect(await node(world, 'owner', globalId('Channel', oldNews))).toBeNull();
    expect(await node(world, 'guest', globalId('Channel', general))).toBeNull();
  });

  test("UserGroup: its members' and those who may invite to it; a deactivated group, a guest's others, are null", async () => {
    const world = await newWorld();
    const [support, leads, alumni] = await Promise.all(['support', 'leads', 'alumni'].map((name) => world.groupId(name)));
    expect(await node(world, 'member', globalId('UserGroup', support))).toEqual({
      __typename: 'UserGroup',
      globalId: globalId('UserGroup', support),
      id: support,
      name: 'support',
    });
    expect(await node(world, 'admin', globalId('UserGroup', leads))).toMatchObject({ name: 'leads' });
    expect(await node(world, 'owner', globalId('UserGroup', alumni))).toBeNull();
    expect(await node(world, 'guest', globalId('UserGroup', support))).toBeNull();
  });

  test('User: any of the organization, a deactivated one too (as a referrer or author is shown)', async () => {
    const world = await newWorld();
    expect(await node(world, 'guest', globalId('User', world.users.owner.id))).toEqual({
      __typename: 'User',
      globalId: globalId('User', world.users.owner.id),
      id: world.users.owner.id,
      email: 'olga@lighthouse.example',
      role: 'OWNER',
    });
    expect(await node(world, 'member', globalId('User', world.users.deactivated.id))).toMatchObject({ email: 'dora@lighthouse.example' });
  });
});

describe("another organization's objects", () => {
  test('are null through node and nodes, every type, for its owner too', async () => {
    const [mine, theirs] = await Promise.all([newWorld(), newWorld()]);
    const invitation = await createInvitation(server, theirs, { email: uniqueEmail('theirs'), referrer: 'owner' });
    const theirIds = [
      globalId('Attachment', await theirs.attachmentId('archive.tar')),
      globalId('Invitation', invitation.id),
      globalId('CustomEmoji', await theirs.emojiId('lighthouse')),
      globalId('Channel', await theirs.channelId('general')),
      globalId('UserGroup', await theirs.groupId('leads')),
      globalId('User', theirs.users.owner.id),
    ];
    for (const id of theirIds) expect(await node(mine, 'owner', id)).toBeNull();
    expect(await nodes(mine, 'owner', theirIds)).toEqual(theirIds.map(() => null));
    // The same ids in their own organization, to its owner: every one found.
    expect((await nodes(theirs, 'owner', theirIds)).map((n) => n?.globalId)).toEqual(theirIds);
  });
});

describe('ids that name nothing, and ids that are not global ids', () => {
  test('a well-formed id of no type of ours, or of no possible row, is null', async () => {
    const world = await newWorld();
    const namingNothing = [
      globalId('Nothing', 1),
      globalId('Viewer', world.users.member.id),
      globalId('constructor', 1),
      globalId('__proto__', 1),
      globalId('User', 2 ** 31),
      globalId('User', Number('99999999999999999999')),
    ];
    for (const id of namingNothing) expect(await node(world, 'member', id)).toBeNull();
  });

  const malformed = [
    '',
    '5',
    'not base64!',
    Buffer.from('User').toString('base64'),
    Buffer.from('User:').toString('base64'),
    Buffer.from('User:abc').toString('base64'),
    Buffer.from('User:0').toString('base64'),
    Buffer.from('User:007').toString('base64'),
    Buffer.from('User:-1').toString('base64'),
    Buffer.from('User:1.5').toString('base64'),
    Buffer.from('User:1\0').toString('base64'),
    Buffer.from('Us\0er:1').toString('base64'),
    Buffer.from('Usér:1').toString('base64'),
    // Unpadded, and with characters Node's decoder would skip.
    Buffer.from('User:12').toString('base64').replace(/=+$/, ''),
    ` ${Buffer.from('User:12').toString('base64')}`,
    `${Buffer.from('User:12').toString('base64')}\0`,
    Buffer.from(`User:${'1'.repeat(200)}`).toString('base64'),
  ];

  test('node: each malformed id is a BAD_USER_INPUT error', async () => {
    const world = await newWorld();
    for (const id of malformed) {
      const result = await gql(server.url, NodeById, { id }, world.users.member.auth);
      expect(result.status, id).toBe(200);
      expect(result.data, id).toEqual({ node: null });
      expect(result.errors, id).toEqual([expect.objectContaining({ path: ['node'], extensions: { code: 'BAD_USER_INPUT' } })]);
    }
  });

  test('nodes: one malformed id among good ones fails the field; more than 100 ids too', async () => {
    const world = await newWorld();
    const good = globalId('User', world.users.member.id);
    const oneBad = await gql(server.url, NodesByIds, { ids: [good, 'not base64!', good] }, world.users.member.auth);
    expect(oneBad.data).toBeNull();
    expect(oneBad.errors).toEqual([expect.objectContaining({ path: ['nodes'], extensions: { code: 'BAD_USER_INPUT' } })]);
    const tooMany = await gql(server.url, NodesByIds, { ids: Array(101).fill(good) }, world.users.member.auth);
    expect(tooMany.errors).toEqual([expect.objectContaining({ message: 'At most 100 ids', extensions: { code: 'BAD_USER_INPUT' } })]);
    expect((await nodes(world, 'member', Array(100).fill(good))).every((n) => n?.globalId === good)).toBe(true);
  });

  test('without credentials node is refused with 401', async () => {
    const world = await newWorld();
    const result = await gql(server.url, NodeById, { id: globalId('User', world.users.member.id) });
    expect(result.status).toBe(401);
    expect(result.errors?.[0]).toMatchObject({ extensions: { code: 'UNAUTHORIZED' } });
  });
});

describe('nodes', () => {
  test('answers in the order given, null where node would be, every type mixed and repeated', async () => {
    const world = await newWorld();
    const invitation = await createInvitation(server, world, { email: uniqueEmail('mixed'), referrer: 'member' });
    const ids = [
      globalId('User', world.users.owner.id),
      globalId('Attachment', await world.attachmentId('archive.tar')),
      globalId('Channel', await world.channelId('design')),
      globalId('Invitation', invitation.id),
      globalId('Nothing', 1),
      globalId('CustomEmoji', await world.emojiId('retired_logo')),
      globalId('Attachment', await world.attachmentId('draft.txt')),
      globalId('UserGroup', await world.groupId('support')),
      globalId('Attachment', await world.attachmentId('plan.pdf')),
      globalId('User', world.users.owner.id),
    ];
    expect(await nodes(world, 'member', ids)).toEqual([
      { __typename: 'User', globalId: ids[0], email: 'olga@lighthouse.example' },
      null,
      { __typename: 'Channel', globalId: ids[2], name: 'design' },
      { __typename: 'Invitation', globalId: ids[3], email: invitation.email },
      null,
      { __typename: 'CustomEmoji', globalId: ids[5], name: 'retired_logo' },
      { __typename: 'Attachment', globalId: ids[6], name: 'draft.txt' },
      { __typename: 'UserGroup', globalId: ids[7], name: 'support' },
      { __typename: 'Attachment', globalId: ids[8], name: 'plan.pdf' },
      { __typename: 'User', globalId: ids[0], email: 'olga@lighthouse.example' },
    ]);
    expect(await nodes(world, 'member', [])).toEqual([]);
  });
});

describe('SQL statements per request', () => {
  let counting: Awaited<ReturnType<typeof startCountingApp>>;
  beforeAll(async () => {
    counting = await startCountingApp();
  });
  afterAll(() => counting.close());

  const send = (world: World, document: Parameters<typeof print>[0], variables: object) =>
    counting.request('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: world.users.member.auth },
      body: JSON.stringify({ query: print(document), variables }),
    });
  const request = (world: World, ids: string[]) => send(world, NodesByIds, { ids });

  test('nodes reads each type once, however many of its ids are asked for', async () => {
    const world = await createWorld(counting.prisma);
    const emojiNames = ['green_tick', 'lighthouse', 'retired_logo'];
    const emoji = await Promise.all(emojiNames.map(async (name) => globalId('CustomEmoji', await world.emojiId(name))));
    const users = Object.values(world.users).map((user) => globalId('User', user.id));
    await request(world, [users[0]!]); // the member's credentials cached, as they are for the others
    const one = await request(world, [emoji[0]!, users[0]!]);
    const many = await request(world, [...emoji, ...users]);
    expect((await one.response.json()).data.nodes).toHaveLength(2);
    expect((await many.response.json()).data.nodes.filter((n: unknown) => n !== null)).toHaveLength(emoji.length + users.length);
    expect(many.statements).toBe(one.statements);
  });

  test('node and nodes fields of one request share the batch of each type', async () => {
    const world = await createWorld(counting.prisma);
    const [first, second, third] = await Promise.all(['green_tick', 'lighthouse', 'retired_logo'].map((name) => world.emojiId(name)));
    const emoji = [first!, second!, third!].map((id) => globalId('CustomEmoji', id));
    const users = [world.users.owner.id, world.users.admin.id, world.users.guest.id].map((id) => globalId('User', id));
    await request(world, [users[0]!]); // the member's credentials cached, as they are for the others
    const oneField = await request(world, [...emoji, ...users]);
    const variables = { a: emoji[0], b: users[0], ids: [emoji[1], users[1]], c: emoji[2], d: users[2] };
    const severalFields = await send(world, SeveralNodeFields, variables);
    const data = (await severalFields.response.json()).data;
    expect([data.a, data.b, ...data.nodes, data.c, data.d].map((n: { globalId: string }) => n.globalId)).toEqual([
      emoji[0],
      users[0],
      emoji[1],
      users[1],
      emoji[2],
      users[2],
    ]);
    expect(severalFields.statements).toBe(oneField.statements);
  });
});

const SeveralNodeFields = graphql(`
  query SeveralNodeFields($a: ID!, $b: ID!, $ids: [ID!]!, $c: ID!, $d: ID!) {
    a: node(id: $a) {
      globalId
    }
    b: node(id: $b) {
      globalId
    }
    nodes(ids: $ids) {
      globalId
    }
    c: node(id: $c) {
      globalId
    }
    d: node(id: $d) {
      globalId
    }
  }
`);
