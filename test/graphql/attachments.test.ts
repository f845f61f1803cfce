// The attachments query: the same business rules as GET /api/v1/attachments, and message links
// loaded in one batch for all attachments (the SQL statement count does not grow with them).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { insertAttachments } from '../../src/domain/attachments/upload-space.js';
import { print } from 'graphql';
import { graphql } from '../generated/gql.js';
import { gql } from '../support/graphql.js';
import { startCountingApp } from '../support/query-count.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';
import type { DatabaseClient } from '../../src/db/database.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const newWorld = (prisma: DatabaseClient = server.app.prisma) => createWorld(prisma);

const WORLD_TOTAL = 571_946 + 12 + 3_221_225_472;

const Attachments = graphql(`
  query Attachments {
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
      uploadSpaceUsed
    }
  }
`);

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

async function expectedAttachment(prisma: DatabaseClient, serverUrl: string, world: World, name: string) {
  const row = await prisma.attachment.findFirstOrThrow({
    where: { organizationId: world.org.id, name },
    include: { messages: { select: { message: { select: { id: true, dateSent: true } } }, orderBy: { messageId: 'asc' } } },
  });
  const messages = row.messages.map(({ message }) => ({ id: message.id, dateSent: seconds(message.dateSent) }));
  return {
    id: row.id,
    name,
    pathId: row.pathId,
    url: `${serverUrl}/user_uploads/${row.pathId}`,
    size: Number(row.size),
    createTime: seconds(row.createTime),
    messageIds: messages.map((m) => m.id),
    messages,
  };
}

describe('attachments', () => {
  test("the caller's own files, claimed or not, with messages from any sender and the organization's total", async () => {
    const world = await newWorld();
    const result = await gql(server.url, Attachments, {}, world.users.member.auth);
    const plan = await expectedAttachment(server.app.prisma, server.url, world, 'plan.pdf');
    expect(plan.messageIds).toEqual(world.messageIds.slice(0, 2));
    expect(plan.messages.map((m) => m.dateSent)).toEqual([1767312100, 1767312200]);
    expect(result).toEqual({
      status: 200,
      data: {
        attachments: {
          attachments: [plan, await expectedAttachment(server.app.prisma, server.url, world, 'draft.txt')],
          uploadSpaceUsed: WORLD_TOTAL,
        },
      },
    });
    expect(result.data?.attachments.attachments[1]).toMatchObject({ messageIds: [], messages: [], createTime: 1767312060 });
  });

  test('others see only their own files; the total is organization-wide and past 2^31', async () => {
    const world = await newWorld();
    const olga = await gql(server.url, Attachments, {}, world.users.owner.auth);
    expect(olga.data?.attachments).toEqual({
      attachments: [await expectedAttachment(server.app.prisma, server.url, world, 'archive.tar')],
      uploadSpaceUsed: WORLD_TOTAL,
    });
    expect(olga.data!.attachments.attachments[0]!.size).toBe(3_221_225_472);
    const gina = await gql(server.url, Attachments, {}, world.users.guest.auth);
    expect(gina.data?.attachments).toEqual({ attachments: [], uploadSpaceUsed: WORLD_TOTAL });
  });

  test("other organizations' files are neither listed nor counted", async () => {
    const here = await newWorld();
    const there = await newWorld();
    await server.app.prisma.$transaction((tx) =>
      insertAttachments(tx, there.org.id, [
        {
          organizationId: there.org.id,
          ownerId: there.users.member.id,
          name: 'big.iso',
          size: 3_000_000_000n,
          pathId: `${there.org.id}/00/${there.org.stringId}/big.iso`,
        },
      ]),
    );
    const mark = await gql(server.url, Attachments, {}, here.users.member.auth);
    expect(mark.data?.attachments.attachments.map((a) => a.name)).toEqual(['plan.pdf', 'draft.txt']);
    expect(mark.data?.attachments.uploadSpaceUsed).toBe(WORLD_TOTAL);
    const markThere = await gql(server.url, Attachments, {}, there.users.member.auth);
    expect(markThere.data?.attachments.uploadSpaceUsed).toBe(WORLD_TOTAL + 3_000_000_000);
    expect(markThere.data?.attachments.attachments.map((a) => a.name)).toEqual(['plan.pdf', 'draft.txt', 'big.iso']);
  });

  test('without credentials the query is refused with 401', async () => {
    const result = await gql(server.url, Attachments, {});
    expect(result.status).toBe(401);
    expect(result.errors?.[0]).toMatchObject({
      message: 'Not logged in: API authentication or user session required',
      extensions: { code: 'UNAUTHORIZED' },
    });
  });
});

describe('SQL statements per request', () => {
  let counting: Awaited<ReturnType<typeof startCountingApp>>;
  beforeAll(async () => {
    counting = await startCountingApp();
  });
  afterAll(() => counting.close());

  /** A fresh world whose member owns `count` files, each linked from two messages (bulk inserts: 1,000 files stay quick). */
  async function memberWithFiles(count: number) {
    const world = await newWorld(counting.prisma);
    const { org, users } = world;
    await counting.prisma.attachment.deleteMany({ where: { ownerId: users.member.id } });
    const files = await counting.prisma.attachment.createManyAndReturn({
      data: Array.from({ length: count }, (_, i) => ({
        organizationId: org.id,
        ownerId: users.member.id,
        name: `f${i}.txt`,
        size: 10n,
        pathId: `${org.id}/0${i % 10}/${org.stringId}-${i}/f${i}.txt`,
      })),
      select: { id: true },
    });
    const messages = await counting.prisma.message.createManyAndReturn({
      data: files.flatMap((_, i) =>
        [users.member.id, users.owner.id].map((senderId) => ({ organizationId: org.id, senderId, content: `file ${i}` })),
      ),
      select: { id: true, dateSent: true },
    });
    await counting.prisma.messageAttachment.createMany({
      data: messages.map((message, m) => ({
        messageId: message.id,
        attachmentId: files[Math.floor(m / 2)]!.id,
        dateSent: message.dateSent,
      })),
    });
    return world;
  }

  const graphqlRequest = (world: World) =>
    counting.request('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: world.users.member.auth },
      body: JSON.stringify({ query: print(Attachments) }),
    });

  test('GraphQL: 10 and 1,000 attachments (each with messages) take the same number of statements, at most 2', async () => {
    const few = await graphqlRequest(await memberWithFiles(10));
    const many = await graphqlRequest(await memberWithFiles(1000));
    const fewBody = await few.response.json();
    const manyBody = await many.response.json();
    expect(fewBody.data.attachments.attachments).toHaveLength(10);
    expect(manyBody.data.attachments.attachments).toHaveLength(1000);
    expect(
      manyBody.data.attachments.attachments.every(
        (a: { messageIds: number[]; messages: unknown[] }) => a.messageIds.length === 2 && a.messages.length === 2,
      ),
    ).toBe(true);
    expect(few.statements).toBeGreaterThan(0);
    // Authentication and the list: the server's per-user rate limit may add one more (at most 3).
    expect(few.statements).toBeLessThanOrEqual(2);
    expect(many.statements).toBe(few.statements);
  });

  test('REST: GET /attachments likewise', async () => {
    const rest = (world: World) => counting.request('/api/v1/attachments', { headers: { authorization: world.users.member.auth } });
    const few = await rest(await memberWithFiles(10));
    const many = await rest(await memberWithFiles(1000));
    const body = await many.response.json();
    expect(body.attachments).toHaveLength(1000);
    expect(body.attachments.every((a: { message_ids: number[] }) => a.message_ids.length === 2)).toBe(true);
    expect(few.statements).toBeGreaterThan(0);
    // Authentication and the list: the server's per-user rate limit may add one more (at most 3).
    expect(few.statements).toBeLessThanOrEqual(2);
    expect(many.statements).toBe(few.statements);
  });
});
