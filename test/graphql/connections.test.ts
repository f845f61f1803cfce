// Cursor connections over real HTTP: Viewer.attachmentPage and Viewer.invitationPage page through
// exactly the lists that the `attachments` and `invitations` queries give whole, forward and
// backward; cursors survive deletions and new rows, reach only the caller's rows, and every bad
// argument is a BAD_REQUEST error naming the rule.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { graphql } from '../generated/gql.js';
import { gql } from '../support/graphql.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World, type WorldUser } from '../support/world.js';

let server: TestServer;
let world: World;
const FILES = 250;
const INVITATIONS = 120;

beforeAll(async () => {
  server = await startTestServer();
  world = await createWorld(server.app.prisma);
  await addFiles(world.users.member.id, FILES);
  await addFiles(world.users.owner.id, 30);
  await addInvitations(INVITATIONS);
});
afterAll(() => server?.close());

/** File rows only (no stored bytes), counted in the organization's total; the first 40 linked from the world's messages. */
async function addFiles(ownerId: number, count: number) {
  const prisma = server.app.prisma;
  await prisma.$executeRawUnsafe(
    `WITH added AS (
       INSERT INTO attachment ("organizationId", "ownerId", name, "pathId", size, "createTime")
       SELECT $1::int, $2::int, 'page-' || n || '.txt', $1::int::text || '/pg/' || md5(random()::text || n) || '/page-' || n || '.txt', 100 + n, now() - n * interval '1 second'
         FROM generate_series(1, $3::int) n
       RETURNING id, size)
     UPDATE organization SET "uploadSpaceUsed" = "uploadSpaceUsed" + (SELECT sum(size) FROM added) WHERE id = $1::int`,
    world.org.id,
    ownerId,
    count,
  );
  await prisma.$executeRawUnsafe(
    `INSERT INTO message_attachment ("messageId", "attachmentId", "dateSent")
     SELECT m.id, a.id, m."dateSent" FROM (SELECT id FROM attachment WHERE "ownerId" = $1 AND name LIKE 'page-%' ORDER BY id LIMIT 40) a,
            message m WHERE m.id = ANY($2::int[])
     ON CONFLICT DO NOTHING`,
    ownerId,
    world.messageIds,
  );
}

/** Invitations by the administrator and the member, some revoked or expired, many sent at the same millisecond (ties go by id). */
async function addInvitations(count: number) {
  await server.app.prisma.$executeRawUnsafe(
    `INSERT INTO invitation ("organizationId", email, "referrerId", "invitedAs", "invitedAt", "expiresAt", status, "confirmationKey", "notifyReferrerOnJoin")
     SELECT $1::int, 'page-' || n || '@example.net', CASE WHEN n % 3 = 0 THEN $3::int ELSE $2::int END, CASE WHEN n % 5 = 0 THEN 200 ELSE 400 END,
            date_trunc('second', now()) - (n % 7) * interval '1 minute' - (n % 4) * interval '1 millisecond',
            CASE WHEN n % 13 = 0 THEN NULL WHEN n % 11 = 0 THEN now() - interval '1 day' ELSE now() + interval '10 days' END,
            CASE WHEN n % 9 = 0 THEN 'REVOKED'::"InvitationStatus" WHEN n % 10 = 0 THEN 'ACCEPTED'::"InvitationStatus" ELSE 'PENDING'::"InvitationStatus" END,
            substr(md5(random()::text || n), 1, 24), n % 2 = 0
       FROM generate_series(1, $4::int) n`,
    world.org.id,
    world.users.admin.id,
    world.users.member.id,
    count,
  );
}

const AllAttachments = graphql(`
  query AllAttachmentsForPages {
    attachments {
      attachments {
        id
        name
        pathId
        url
        size
        createTime
        messageIds
        messages {
          id
          dateSent
        }
      }
    }
  }
`);

const AttachmentPage = graphql(`
  query AttachmentPage($first: Int, $after: String, $last: Int, $before: String) {
    me {
      attachmentPage(first: $first, after: $after, last: $last, before: $before) {
        totalCount
        pageInfo {
          hasNextPage
          hasPreviousPage
          startCursor
          endCursor
        }
        edges {
          cursor
          node {
            id
            name
            pathId
            url
            size
            createTime
            messageIds
            messages {
              id
              dateSent
            }
          }
        }
        nodes {
          id
        }
      }
    }
  }
`);

const AttachmentPageWithoutCount = graphql(`
  query AttachmentPageIds($first: Int, $after: String, $last: Int, $before: String) {
    me {
      attachmentPage(first: $first, after: $after, last: $last, before: $before) {
        pageInfo {
          hasNextPage
          hasPreviousPage
          endCursor
        }
        nodes {
          id
        }
      }
    }
  }
`);

const AllInvitations = graphql(`
  query AllInvitationsForPages($includeInactive: Boolean) {
    invitations(includeInactive: $includeInactive) {
      id
      email
      invitedAs
      invitedAt
      expiresAt
      status
      referrer {
        id
      }
    }
  }
`);

const InvitationPage = graphql(`
  query InvitationPage($first: Int, $after: String, $last: Int, $before: String, $includeInactive: Boolean) {
    me {
      invitationPage(first: $first, after: $after, last: $last, before: $before, includeInactive: $includeInactive) {
        totalCount
        pageInfo {
          hasNextPage
          hasPreviousPage
          startCursor
          endCursor
        }
        edges {
          cursor
          node {
            id
            email
            invitedAs
            invitedAt
            expiresAt
            status
            referrer {
              id
            }
          }
        }
        nodes {
          id
        }
      }
    }
  }
`);

const DeleteAttachment = graphql(`
  mutation DeleteAttachmentOfPage($id: Int!) {
    deleteAttachment(id: $id) {
      __typename
    }
  }
`);

type PageArgs = { first?: number; after?: string | null; last?: number; before?: string | null };

async function wholeAttachments(user: WorldUser) {
  const response = await gql(server.url, AllAttachments, {}, user.auth);
  expect(response.errors).toBeUndefined();
  return response.data!.attachments.attachments;
}

async function attachmentPage(user: WorldUser, args: PageArgs) {
  const response = await gql(server.url, AttachmentPage, args, user.auth);
  expect(response).toMatchObject({ status: 200 });
  expect(response.errors).toBeUndefined();
  const page = response.data!.me.attachmentPage;
  // nodes is edges' nodes; the cursors at the ends are the end edges'.
  expect(page.nodes).toEqual(page.edges.map((edge) => ({ id: edge.node.id })));
  expect(page.pageInfo.startCursor).toBe(page.edges[0]?.cursor ?? null);
  expect(page.pageInfo.endCursor).toBe(page.edges.at(-1)?.cursor ?? null);
  return page;
}

async function invitationPage(user: WorldUser, args: PageArgs & { includeInactive?: boolean }) {
  const response = await gql(server.url, InvitationPage, args, user.auth);
  expect(response.errors).toBeUndefined();
  const page = response.data!.me.invitationPage;
  expect(page.nodes).toEqual(page.edges.map((edge) => ({ id: edge.node.id })));
  expect(page.pageInfo.startCursor).toBe(page.edges[0]?.cursor ?? null);
  expect(page.pageInfo.endCursor).toBe(page.edges.at(-1)?.cursor ?? null);
  return page;
}

type Page<N> = {
  edges: { node: N }[];
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
  totalCount: number;
};

/** Every node, first to last, reading pages of `size` forward; checks the flags of every page. */
async function pageForward<N>(read: (args: PageArgs) => Promise<Page<N>>, size: number, expectedTotal: number) {
  const nodes: N[] = [];
  let after: string | null = null;
  for (;;) {
    const page: Page<N> = await read({ first: size, after });
    expect(page.totalCount).toBe(expectedTotal);
    expect(page.pageInfo.hasPreviousPage).toBe(after !== null);
    nodes.push(...page.edges.map((edge) => edge.node));
    expect(page.pageInfo.hasNextPage).toBe(nodes.length < expectedTotal);
    if (!page.pageInfo.hasNextPage) return nodes;
    expect(page.edges).toHaveLength(size);
    after = page.pageInfo.endCursor;
  }
}

/** Every node, first to last, reading pages of `size` backward from the end. */
async function pageBackward<N>(read: (args: PageArgs) => Promise<Page<N>>, size: number, expectedTotal: number) {
  const pages: N[][] = [];
  let before: string | null = null;
  let read_ = 0;
  for (;;) {
    const page: Page<N> = await read({ last: size, before });
    expect(page.pageInfo.hasNextPage).toBe(before !== null);
    read_ += page.edges.length;
    pages.unshift(page.edges.map((edge) => edge.node));
    expect(page.pageInfo.hasPreviousPage).toBe(read_ < expectedTotal);
    if (!page.pageInfo.hasPreviousPage) return pages.flat();
    expect(page.edges).toHaveLength(size);
    before = page.pageInfo.startCursor;
  }
}

const badRequest = (message: string, field: string) => ({
  status: 200,
  data: null,
  errors: [{ message, locations: expect.any(Array), path: ['me', field], extensions: { code: 'BAD_REQUEST' } }],
});

const cursorOf = (value: unknown[]) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('attachmentPage', () => {
  test('forward with first/after and backward with last/before give the whole attachments list, in order', async () => {
    const member = world.users.member;
    const whole = await wholeAttachments(member);
    expect(whole.length).toBe(FILES + 2);
    expect(whole.some((file) => file.messages.length > 0)).toBe(true);
    const read = (args: PageArgs) => attachmentPage(member, args);
    expect(await pageForward(read, 37, whole.length)).toEqual(whole);
    expect(await pageBackward(read, 37, whole.length)).toEqual(whole);
    // One page of 100 at each end.
    expect((await read({ first: 100 })).edges.map((e) => e.node)).toEqual(whole.slice(0, 100));
    expect((await read({ last: 100 })).edges.map((e) => e.node)).toEqual(whole.slice(-100));
  });

  test('the flags at both ends, a page past the end, and first with before / last with after (Relay ranges)', async () => {
    const member = world.users.member;
    const whole = await wholeAttachments(member);
    const first = await attachmentPage(member, { first: 3 });
    expect(first.pageInfo).toMatchObject({ hasPreviousPage: false, hasNextPage: true });
    const last = await attachmentPage(member, { last: 3 });
    expect(last.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: false });
    expect(last.edges.map((e) => e.node.id)).toEqual(whole.slice(-3).map((f) => f.id));

    // After the last file: an empty page, with files before it.
    const pastEnd = await attachmentPage(member, { first: 5, after: last.pageInfo.endCursor });
    expect(pastEnd).toEqual({
      totalCount: whole.length,
      edges: [],
      nodes: [],
      pageInfo: { hasNextPage: false, hasPreviousPage: true, startCursor: null, endCursor: null },
    });
    const beforeStart = await attachmentPage(member, { last: 5, before: first.edges[0]!.cursor });
    expect(beforeStart.edges).toEqual([]);
    expect(beforeStart.pageInfo).toEqual({ hasNextPage: true, hasPreviousPage: false, startCursor: null, endCursor: null });

    // Between two cursors: the 4th to the 9th file; first takes its start, last its end.
    const cursorAt = async (index: number) =>
      (
        await attachmentPage(member, {
          first: 1,
          after: index === 0 ? null : (await attachmentPage(member, { first: index })).pageInfo.endCursor,
        })
      ).pageInfo.endCursor;
    const [third, tenth] = [await cursorAt(2), await cursorAt(9)];
    const head = await attachmentPage(member, { first: 4, after: third, before: tenth });
    expect(head.edges.map((e) => e.node.id)).toEqual(whole.slice(3, 7).map((f) => f.id));
    expect(head.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });
    const tail = await attachmentPage(member, { last: 4, after: third, before: tenth });
    expect(tail.edges.map((e) => e.node.id)).toEqual(whole.slice(5, 9).map((f) => f.id));
    expect(tail.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });
    const all = await attachmentPage(member, { first: 100, after: third, before: tenth });
    expect(all.edges.map((e) => e.node.id)).toEqual(whole.slice(3, 9).map((f) => f.id));
    expect(all.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
  });

  test('a cursor stays valid after its file is deleted and after new files arrive', async () => {
    const user = (await createWorld(server.app.prisma)).users.moderator;
    await addFilesFor(user, 30);
    const before = await wholeAttachments(user);
    const firstTen = await attachmentPage(user, { first: 10 });
    const cursor = firstTen.pageInfo.endCursor!;

    const deleted = await gql(server.url, DeleteAttachment, { id: before[9]!.id }, user.auth);
    expect(deleted).toEqual({ status: 200, data: { deleteAttachment: { __typename: 'DeleteAttachmentSuccess' } } });
    const next = await attachmentPage(user, { first: 10, after: cursor });
    expect(next.edges.map((e) => e.node)).toEqual(before.slice(10, 20));
    expect(next.pageInfo).toMatchObject({ hasPreviousPage: true, hasNextPage: true });
    expect(next.totalCount).toBe(before.length - 1);
    // Backward from the deleted file's cursor: the nine before it.
    const previous = await attachmentPage(user, { last: 20, before: cursor });
    expect(previous.edges.map((e) => e.node)).toEqual(before.slice(0, 9));
    expect(previous.pageInfo).toMatchObject({ hasPreviousPage: false, hasNextPage: true });

    await addFilesFor(user, 5);
    const after = await wholeAttachments(user);
    expect(after.length).toBe(before.length - 1 + 5);
    expect((await attachmentPage(user, { first: 10, after: cursor })).edges.map((e) => e.node)).toEqual(before.slice(10, 20));
    const rest = await attachmentPage(user, { first: 100, after: cursor });
    expect(rest.edges.map((e) => e.node)).toEqual(after.slice(9));
    expect(rest.pageInfo.hasNextPage).toBe(false);
  });

  test("another user's cursor reaches only the caller's own files", async () => {
    const { member, owner } = world.users;
    const memberFiles = await wholeAttachments(member);
    const ownerFiles = await wholeAttachments(owner);
    const ownerCursor = (await attachmentPage(owner, { first: 5 })).pageInfo.endCursor;
    const asMember = await attachmentPage(member, { first: 100, after: ownerCursor });
    const ownerKey = ownerFiles[4]!.id;
    expect(asMember.edges.map((e) => e.node)).toEqual(memberFiles.filter((f) => f.id > ownerKey).slice(0, 100));
    expect(asMember.totalCount).toBe(memberFiles.length);

    const memberCursor = (await attachmentPage(member, { last: 1 })).pageInfo.endCursor;
    const asOwner = await attachmentPage(owner, { last: 100, before: memberCursor });
    const memberKey = memberFiles.at(-1)!.id;
    expect(asOwner.edges.map((e) => e.node)).toEqual(ownerFiles.filter((f) => f.id < memberKey).slice(-100));

    // Someone of another organization, with a cursor before everything: only their own files.
    const stranger = (await createWorld(server.app.prisma)).users.member;
    const strangerPage = await attachmentPage(stranger, { first: 100, after: cursorOf([1, 'attachment', 1]) });
    expect(strangerPage.edges.map((e) => e.node)).toEqual(await wholeAttachments(stranger));
    expect(strangerPage.edges.every((e) => !memberFiles.some((f) => f.id === e.node.id))).toBe(true);
  });

  test('totalCount counts every file of the caller; a page without it is the same page', async () => {
    const member = world.users.member;
    const whole = await wholeAttachments(member);
    const page = await attachmentPage(member, { first: 2 });
    expect(page.totalCount).toBe(whole.length);
    const response = await gql(server.url, AttachmentPageWithoutCount, { first: 2 }, member.auth);
    expect(response).toEqual({
      status: 200,
      data: {
        me: {
          attachmentPage: {
            nodes: whole.slice(0, 2).map((f) => ({ id: f.id })),
            pageInfo: { hasNextPage: true, hasPreviousPage: false, endCursor: page.pageInfo.endCursor },
          },
        },
      },
    });
    // A list of one file: the page after it is empty, and the file is before it.
    const single = (await createWorld(server.app.prisma)).users.bot;
    expect(await wholeAttachments(single)).toEqual([]);
    await addFilesFor(single, 1);
    const only = await attachmentPage(single, { first: 1 });
    expect(only.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: false });
    expect((await attachmentPage(single, { first: 1, after: only.pageInfo.endCursor })).pageInfo).toEqual({
      hasNextPage: false,
      hasPreviousPage: true,
      startCursor: null,
      endCursor: null,
    });
    expect((await attachmentPage(single, { last: 1, before: only.pageInfo.endCursor })).pageInfo).toEqual({
      hasNextPage: true,
      hasPreviousPage: false,
      startCursor: null,
      endCursor: null,
    });
    const empty = (await createWorld(server.app.prisma)).users.guest;
    expect(await attachmentPage(empty, { first: 10 })).toEqual({
      totalCount: 0,
      edges: [],
      nodes: [],
      pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null },
    });
  });

  test('bad arguments are BAD_REQUEST errors naming the rule', async () => {
    const member = world.users.member;
    const invitationCursor = (await invitationPage(world.users.admin, { first: 1 })).pageInfo.endCursor;
    const cases: [PageArgs, string][] = [
      [{ first: 5, last: 5 }, 'Pass exactly one of first and last.'],
      [{}, 'Pass exactly one of first and last.'],
      [{ after: 'abc' }, 'Pass exactly one of first and last.'],
      [{ first: 0 }, 'first must be between 1 and 100.'],
      [{ first: 101 }, 'first must be between 1 and 100.'],
      [{ first: -1 }, 'first must be between 1 and 100.'],
      [{ last: 0 }, 'last must be between 1 and 100.'],
      [{ last: 101 }, 'last must be between 1 and 100.'],
      [{ first: 5, after: 'not a cursor!' }, 'after is not a cursor of this list.'],
      [{ first: 5, after: '' }, 'after is not a cursor of this list.'],
      [{ first: 5, after: Buffer.from('not json').toString('base64url') }, 'after is not a cursor of this list.'],
      [{ first: 5, after: 'x'.repeat(10_000) }, 'after is not a cursor of this list.'],
      [{ first: 5, after: cursorOf([2, 'attachment', 5]) }, 'after is not a cursor of this list.'],
      [{ first: 5, after: cursorOf([1, 'attachment', 2 ** 31]) }, 'after is not a cursor of this list.'],
      [{ first: 5, after: cursorOf([1, 'attachment', '5']) }, 'after is not a cursor of this list.'],
      [{ first: 5, after: cursorOf([1, 'attachment', 5, 6]) }, 'after is not a cursor of this list.'],
      [{ last: 5, before: invitationCursor }, 'before is not a cursor of this list.'],
    ];
    for (const [args, message] of cases) {
      expect({ args, response: await gql(server.url, AttachmentPage, args, member.auth) }).toEqual({
        args,
        response: badRequest(message, 'attachmentPage'),
      });
    }
    // The list is as it was.
    expect((await wholeAttachments(member)).length).toBe(FILES + 2);
  });
});

async function addFilesFor(user: WorldUser, count: number) {
  const row = await server.app.prisma.user.findUniqueOrThrow({ where: { id: user.id }, select: { organizationId: true } });
  await server.app.prisma.$executeRawUnsafe(
    `WITH added AS (
       INSERT INTO attachment ("organizationId", "ownerId", name, "pathId", size)
       SELECT $1::int, $2::int, 'more-' || n || '.txt', $1::int::text || '/mo/' || md5(random()::text || n) || '/more-' || n || '.txt', n
         FROM generate_series(1, $3::int) n
       RETURNING size)
     UPDATE organization SET "uploadSpaceUsed" = "uploadSpaceUsed" + (SELECT sum(size) FROM added) WHERE id = $1::int`,
    row.organizationId,
    user.id,
    count,
  );
}

describe('invitationPage', () => {
  async function wholeInvitations(user: WorldUser, includeInactive: boolean) {
    const response = await gql(server.url, AllInvitations, { includeInactive }, user.auth);
    expect(response.errors).toBeUndefined();
    return response.data!.invitations;
  }

  test("administrators page through the organization's invitations, members through their own, with and without inactive ones", async () => {
    const { admin, member } = world.users;
    for (const user of [admin, member]) {
      for (const includeInactive of [false, true]) {
        const whole = await wholeInvitations(user, includeInactive);
        const read = (args: PageArgs) => invitationPage(user, { ...args, includeInactive });
        expect(await pageForward(read, 9, whole.length)).toEqual(whole);
        expect(await pageBackward(read, 9, whole.length)).toEqual(whole);
      }
    }
    const adminAll = await wholeInvitations(admin, true);
    const memberAll = await wholeInvitations(member, true);
    // The data has what the test means to cover: ties in time, inactive ones, other referrers.
    expect(new Set(adminAll.map((i) => i.invitedAt)).size).toBeLessThan(adminAll.length);
    expect(new Set(adminAll.map((i) => i.status))).toEqual(new Set(['PENDING', 'EXPIRED', 'REVOKED', 'ACCEPTED']));
    expect(memberAll.length).toBeLessThan(adminAll.length);
    expect(memberAll.every((i) => i.referrer.id === member.id)).toBe(true);
    expect((await wholeInvitations(admin, false)).length).toBeLessThan(adminAll.length);
  });

  test("totalCount, and an administrator's cursor gives a member only their own invitations", async () => {
    const { admin, member } = world.users;
    const adminAll = await wholeInvitations(admin, true);
    const memberAll = await wholeInvitations(member, true);
    expect((await invitationPage(admin, { first: 1, includeInactive: true })).totalCount).toBe(adminAll.length);
    expect((await invitationPage(member, { last: 1, includeInactive: true })).totalCount).toBe(memberAll.length);
    expect((await invitationPage(member, { first: 1 })).totalCount).toBe((await wholeInvitations(member, false)).length);

    // The administrator's 20th invitation: the member gets their own that come after it.
    const adminPage = await invitationPage(admin, { first: 20, includeInactive: true });
    const position = adminAll.findIndex((i) => i.id === adminPage.edges.at(-1)!.node.id);
    const laterIds = new Set(adminAll.slice(position + 1).map((i) => i.id));
    const asMember = await invitationPage(member, { first: 100, after: adminPage.pageInfo.endCursor, includeInactive: true });
    expect(asMember.edges.map((e) => e.node)).toEqual(memberAll.filter((i) => laterIds.has(i.id)));
  });

  test("a guest is refused as by invitations; bad arguments and the other list's cursors are BAD_REQUEST", async () => {
    const guest = await gql(server.url, InvitationPage, { first: 5 }, world.users.guest.auth);
    expect(guest).toEqual(badRequest('Not allowed for guest users', 'invitationPage'));
    const admin = world.users.admin;
    const attachmentCursor = (await attachmentPage(world.users.member, { first: 1 })).pageInfo.endCursor;
    const cases: [PageArgs, string][] = [
      [{ first: 5, last: 5 }, 'Pass exactly one of first and last.'],
      [{}, 'Pass exactly one of first and last.'],
      [{ first: 101 }, 'first must be between 1 and 100.'],
      [{ last: 0 }, 'last must be between 1 and 100.'],
      [{ first: 5, after: attachmentCursor }, 'after is not a cursor of this list.'],
      [{ last: 5, before: 'garbage' }, 'before is not a cursor of this list.'],
      [{ first: 5, after: cursorOf([1, 'invitation', 8.64e15 + 1, 5]) }, 'after is not a cursor of this list.'],
      [{ first: 5, after: cursorOf([1, 'invitation', -1e17, 5]) }, 'after is not a cursor of this list.'],
      [{ first: 5, after: cursorOf([1, 'invitation', 5]) }, 'after is not a cursor of this list.'],
    ];
    for (const [args, message] of cases) {
      expect({ args, response: await gql(server.url, InvitationPage, args, admin.auth) }).toEqual({
        args,
        response: badRequest(message, 'invitationPage'),
      });
    }
  });
});
