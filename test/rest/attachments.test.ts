// GET /api/v1/attachments and DELETE /api/v1/attachments/{id} over HTTP, against the real database.
// The example organization: Mark owns plan.pdf (571946 bytes; linked from Mark's and Olga's
// messages) and draft.txt (12 bytes, never linked); Olga owns archive.tar (3 GiB, past 2^31).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { insertAttachments } from '../../src/domain/attachments/upload-space.js';
import { expectMatchesOpenApi } from '../support/openapi.js';
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

const WORLD_TOTAL = 571_946 + 12 + 3_221_225_472;

async function listAttachments(authorization: string, call: Omit<ApiCall, 'authorization'> = {}) {
  const response = await callApi(server.url, 'GET', '/attachments', { authorization, ...call });
  expectMatchesOpenApi('GET', '/attachments', response);
  return response;
}

/** DELETE is not in the OpenAPI excerpt: its bodies are asserted whole instead. */
const deleteAttachment = (authorization: string, id: number | string) =>
  callApi(server.url, 'DELETE', `/attachments/${id}`, { authorization });

/** The reference's attachment object, from the database row. */
async function expected(world: World, name: string, messageIds: number[]) {
  const row = await server.app.prisma.attachment.findFirstOrThrow({ where: { organizationId: world.org.id, name } });
  return {
    id: row.id,
    name,
    path_id: row.pathId,
    size: Number(row.size),
    create_time: Math.floor(row.createTime.getTime() / 1000),
    message_ids: messageIds,
  };
}

/** A row as the upload service would write it: counted in the organization's total. */
async function addAttachment(world: World, ownerId: number, name: string, size: bigint | number) {
  const [row] = await server.app.prisma.$transaction((tx) =>
    insertAttachments(tx, world.org.id, [
      {
        organizationId: world.org.id,
        ownerId,
        name,
        size: BigInt(size),
        pathId: `${world.org.id}/ab/${world.org.stringId}-${name}/${name}`,
      },
    ]),
  );
  return row!;
}

describe('GET /attachments', () => {
  test("the caller's files, claimed or not, with every linking message and the organization's total", async () => {
    const world = await newWorld();
    const [byMark, byOlga] = world.messageIds;
    const response = await listAttachments(world.users.member.auth);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.body).toEqual({
      result: 'success',
      msg: '',
      attachments: [await expected(world, 'plan.pdf', [byMark!, byOlga!]), await expected(world, 'draft.txt', [])],
      upload_space_used: WORLD_TOTAL,
    });
    expect(Object.keys(response.body)).toEqual(['result', 'msg', 'attachments', 'upload_space_used']);
    // The world's fixed upload times come back in whole seconds.
    expect(response.body.attachments.map((a: { create_time: number }) => a.create_time)).toEqual([1767312000, 1767312060]);
  });

  test("only the caller's own files: Olga sees her archive, not plan.pdf she reposted; the guest sees none", async () => {
    const world = await newWorld();
    const olga = await listAttachments(world.users.owner.auth);
    expect(olga.body).toEqual({
      result: 'success',
      msg: '',
      attachments: [await expected(world, 'archive.tar', [])],
      upload_space_used: WORLD_TOTAL,
    });
    const gina = await listAttachments(world.users.guest.auth);
    expect(gina.body).toEqual({ result: 'success', msg: '', attachments: [], upload_space_used: WORLD_TOTAL });
    const bot = await listAttachments(world.users.bot.auth);
    expect(bot.body).toEqual({ result: 'success', msg: '', attachments: [], upload_space_used: WORLD_TOTAL });
  });

  test('files come in ascending id order, and sizes and totals past 2^31 are exact JSON integers', async () => {
    const world = await newWorld();
    const big = await addAttachment(world, world.users.member.id, 'video.mp4', 3_000_000_000);
    const small = await addAttachment(world, world.users.member.id, 'note.md', 1);
    const response = await listAttachments(world.users.member.auth);
    const ids = response.body.attachments.map((a: { id: number }) => a.id);
    const own = await server.app.prisma.attachment.findMany({ where: { ownerId: world.users.member.id }, select: { id: true } });
    expect(ids).toEqual(own.map((a) => a.id).sort((a, b) => a - b));
    expect(ids).toContain(big.id);
    expect(ids).toContain(small.id);
    expect(response.body.attachments.find((a: { id: number }) => a.id === big.id).size).toBe(3_000_000_000);
    expect(response.body.upload_space_used).toBe(WORLD_TOTAL + 3_000_000_001);
    expect(response.body.upload_space_used).toBeGreaterThan(2 ** 32);
  });

  test("message_ids lists any user's messages that link the file, ascending", async () => {
    const world = await newWorld();
    const plan = await world.attachmentId('plan.pdf');
    const dateSent = new Date();
    const dm = await server.app.prisma.message.create({
      data: {
        organizationId: world.org.id,
        senderId: world.users.guest.id,
        content: 'plan again',
        dateSent,
        attachments: { create: { attachmentId: plan, dateSent } },
      },
    });
    const response = await listAttachments(world.users.member.auth);
    expect(response.body.attachments[0]).toEqual(await expected(world, 'plan.pdf', [...world.messageIds.slice(0, 2), dm.id]));
  });

  test("other organizations' files are never listed nor counted", async () => {
    const here = await newWorld();
    const there = await newWorld();
    await addAttachment(there, there.users.member.id, 'elsewhere.bin', 5_000_000_000);
    const response = await listAttachments(here.users.member.auth);
    expect(response.body.upload_space_used).toBe(WORLD_TOTAL);
    expect(response.body.attachments.map((a: { name: string }) => a.name)).toEqual(['plan.pdf', 'draft.txt']);
    const thereTotal = await listAttachments(there.users.guest.auth);
    expect(thereTotal.body.upload_space_used).toBe(WORLD_TOTAL + 5_000_000_000);
  });

  test('unknown parameters are reported sorted; nothing else changes', async () => {
    const world = await newWorld();
    const plain = await listAttachments(world.users.member.auth);
    const response = await listAttachments(world.users.member.auth, { query: { limit: '1', anchor: 'x' } });
    expect(response.body).toEqual({ ...plain.body, ignored_parameters_unsupported: ['anchor', 'limit'] });
  });
});

describe('DELETE /attachments/{id}', () => {
  test('the owner deletes their file: its row and message links go, the messages stay, the total drops', async () => {
    const world = await newWorld();
    const plan = await world.attachmentId('plan.pdf');
    const response = await deleteAttachment(world.users.member.auth, plan);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ result: 'success', msg: '' });
    expect(await server.app.prisma.attachment.findUnique({ where: { id: plan } })).toBeNull();
    expect(await server.app.prisma.messageAttachment.count({ where: { attachmentId: plan } })).toBe(0);
    expect(await server.app.prisma.message.count({ where: { id: { in: world.messageIds } } })).toBe(3);
    const listing = await listAttachments(world.users.member.auth);
    expect(listing.body).toEqual({
      result: 'success',
      msg: '',
      attachments: [await expected(world, 'draft.txt', [])],
      upload_space_used: WORLD_TOTAL - 571_946,
    });
  });

  test('the counter stays the exact sum of the remaining files through deletions, refused ones included', async () => {
    const world = await newWorld();
    const sum = async () =>
      (await server.app.prisma.attachment.aggregate({ where: { organizationId: world.org.id }, _sum: { size: true } }))._sum.size ?? 0n;
    const counter = async () =>
      (await server.app.prisma.organization.findUniqueOrThrow({ where: { id: world.org.id }, select: { uploadSpaceUsed: true } }))
        .uploadSpaceUsed;
    expect(await counter()).toBe(BigInt(WORLD_TOTAL));
    const video = await addAttachment(world, world.users.member.id, 'video.mp4', 3_000_000_000);
    expect(await counter()).toBe(await sum());
    // Two concurrent deletions of one file (both wait on its row before the test lets it go) uncount it once.
    const twice = await whileRowLocked(
      'attachment',
      video.id,
      () => Promise.all([deleteAttachment(world.users.member.auth, video.id), deleteAttachment(world.users.member.auth, video.id)]),
      { waiters: 2 },
    );
    expect(twice.map((r) => r.status).sort()).toEqual([200, 400]);
    expect(await counter()).toBe(BigInt(WORLD_TOTAL));
    await deleteAttachment(world.users.admin.auth, await world.attachmentId('archive.tar'));
    expect(await counter()).toBe(BigInt(WORLD_TOTAL));
    await deleteAttachment(world.users.owner.auth, await world.attachmentId('archive.tar'));
    await deleteAttachment(world.users.member.auth, await world.attachmentId('draft.txt'));
    await deleteAttachment(world.users.member.auth, await world.attachmentId('plan.pdf'));
    expect(await counter()).toBe(0n);
    expect(await sum()).toBe(0n);
  });

  test("someone else's, another organization's, unknown and out-of-range ids are all `Invalid attachment`", async () => {
    const here = await newWorld();
    const there = await newWorld();
    const archive = await here.attachmentId('archive.tar');
    const foreign = await there.attachmentId('plan.pdf');
    const ids = [archive, foreign, 2_147_483_647, 2_147_483_648, '99999999999999999999999', 0];
    for (const id of ids) {
      const response = await deleteAttachment(here.users.admin.auth, id);
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ result: 'error', msg: 'Invalid attachment', code: 'BAD_REQUEST' });
    }
    // The owner of another organization's file is refused too.
    expect((await deleteAttachment(here.users.owner.auth, foreign)).body.msg).toBe('Invalid attachment');
    expect(await server.app.prisma.attachment.count({ where: { id: { in: [archive, foreign] } } })).toBe(2);
  });

  test('a non-numeric id does not match the route; no credentials is 401', async () => {
    const world = await newWorld();
    const notARoute = await deleteAttachment(world.users.member.auth, 'abc');
    expect(notARoute.status).toBe(404);
    const anonymous = await callApi(server.url, 'DELETE', `/attachments/${await world.attachmentId('plan.pdf')}`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({
      result: 'error',
      msg: 'Not logged in: API authentication or user session required',
      code: 'UNAUTHORIZED',
    });
    expect(await server.app.prisma.attachment.count({ where: { organizationId: world.org.id } })).toBe(3);
  });
});
