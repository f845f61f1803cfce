// The largest answers over real HTTP: a file list and an invitation list longer than a page are
// streamed page by page through REST (byte for byte the body the whole list would give, compressed
// too) and collected whole for GraphQL; and the memory budget: while it is taken, a large list
// answers 503 with Retry-After on both doors, a small one is answered as ever, and once there is
// room the large one gets its full body; a client that goes away mid-list gives its reservation back,
// and a reservation larger than the budget is held alone.
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { captureStatements } from '../../src/db/statement-counter.js';
import { ATTACHMENT_PAGE_SIZE } from '../../src/domain/attachments/statements.js';
import { INVITATION_PAGE_SIZE } from '../../src/domain/invitations/statements.js';
import { MEMORY_BUSY_MESSAGE } from '../../src/http/memory-budget.js';
import { StartupError } from '../../src/startup-error.js';
import { expectMatchesOpenApi } from '../support/openapi.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

let server: TestServer;
/** The same database, a budget of 1 MiB and a short wait. */
let tight: TestServer;
let world: World;
const FILES = ATTACHMENT_PAGE_SIZE + 150;
// A tenth are revoked or expired: the pending ones must pass a page too, the member's own must not.
const INVITATIONS = Math.ceil(INVITATION_PAGE_SIZE * 1.3);

beforeAll(async () => {
  server = await startTestServer();
  tight = await startTestServer({ memoryBudget: { bytes: 1024 * 1024, waitMs: 100 } });
  world = await createWorld(server.app.prisma);
  await addFiles(world, world.users.member.id, FILES);
  await addInvitations(world, INVITATIONS);
});
afterAll(async () => {
  await tight?.close();
  await server?.close();
});

/** Rows only, counted in the organization's total; the first 40 linked from the world's messages. */
async function addFiles(world: World, ownerId: number, count: number) {
  const prisma = server.app.prisma;
  await prisma.$executeRawUnsafe(
    `WITH added AS (
       INSERT INTO attachment ("organizationId", "ownerId", name, "pathId", size, "createTime")
       SELECT $1::int, $2::int, 'bulk-' || n || '.txt', $1::int::text || '/bk/' || md5(random()::text || n) || '/bulk-' || n || '.txt', 100 + n, now() - n * interval '1 second'
         FROM generate_series(1, $3::int) n
       RETURNING size)
     UPDATE organization SET "uploadSpaceUsed" = "uploadSpaceUsed" + (SELECT sum(size) FROM added) WHERE id = $1::int`,
    world.org.id,
    ownerId,
    count,
  );
  await prisma.$executeRawUnsafe(
    `INSERT INTO message_attachment ("messageId", "attachmentId", "dateSent")
     SELECT m.id, a.id, m."dateSent" FROM (SELECT id FROM attachment WHERE "ownerId" = $1 AND name LIKE 'bulk-%' ORDER BY id LIMIT 40) a,
            message m WHERE m.id = ANY($2::int[])`,
    ownerId,
    world.messageIds,
  );
}

/**
 * Invitations by the administrator and the member; some revoked, some expired, some never expiring,
 * and many sent at the same millisecond (the newest-first order goes on by id there).
 */
async function addInvitations(world: World, count: number) {
  await server.app.prisma.$executeRawUnsafe(
    `INSERT INTO invitation ("organizationId", email, "referrerId", "invitedAs", "invitedAt", "expiresAt", status, "confirmationKey", "notifyReferrerOnJoin")
     SELECT $1::int, 'bulk-' || n || '@example.net', CASE WHEN n % 3 = 0 THEN $3::int ELSE $2::int END, CASE WHEN n % 5 = 0 THEN 200 ELSE 400 END,
            date_trunc('second', now()) - (n % 7) * interval '1 minute' - (n % 11) * interval '1 millisecond',
            CASE WHEN n % 13 = 0 THEN NULL WHEN n % 17 = 0 THEN now() - interval '1 day' ELSE now() + interval '10 days' END,
            CASE WHEN n % 19 = 0 THEN 'REVOKED'::"InvitationStatus" ELSE 'PENDING'::"InvitationStatus" END,
            substr(md5(random()::text || n), 1, 24), n % 2 = 0
       FROM generate_series(1, $4::int) n`,
    world.org.id,
    world.users.admin.id,
    world.users.member.id,
    count,
  );
}

/** A raw HTTP exchange (fetch would ask for compression and undo it by itself). */
function raw(base: string, path: string, headers: Record<string, string>, method = 'GET', body?: string) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
    const req = request(`${base}${path}`, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const graphql = (base: string, authorization: string, query: string) =>
  raw(base, '/graphql', { authorization, 'content-type': 'application/json' }, 'POST', JSON.stringify({ query }));

/** The body GET /attachments answered before lists were paged: one JSON.stringify of the whole list. */
async function wholeAttachmentsBody(ownerId: number, extra: Record<string, unknown> = {}) {
  const prisma = server.app.prisma;
  const rows = await prisma.attachment.findMany({
    where: { ownerId, organizationId: world.org.id },
    orderBy: { id: 'asc' },
    include: { messages: { select: { messageId: true } } },
  });
  const { uploadSpaceUsed } = await prisma.organization.findUniqueOrThrow({ where: { id: world.org.id } });
  const attachments = rows.map((r) => ({
    id: r.id,
    name: r.name,
    path_id: r.pathId,
    size: Number(r.size),
    create_time: Math.floor(r.createTime.getTime() / 1000),
    message_ids: r.messages.map((m) => m.messageId).sort((a, b) => a - b),
  }));
  return `${JSON.stringify({ result: 'success', msg: '', attachments, upload_space_used: Number(uploadSpaceUsed), ...extra })}\n`;
}

/** The body GET /invites answered before lists were paged (Prisma's rows, mapped as the handler did). */
async function wholeInvitesBody(referrerId?: number) {
  const now = new Date();
  const rows = await server.app.prisma.invitation.findMany({
    where: {
      organizationId: world.org.id,
      ...(referrerId ? { referrerId } : {}),
      status: 'PENDING',
      OR: [{ expiresAt: null }, { expiresAt: { gt: now } }],
    },
    orderBy: { id: 'asc' },
  });
  const seconds = (date: Date) => Math.floor(date.getTime() / 1000);
  const invites = rows.map((i) => ({
    id: i.id,
    invited_by_user_id: i.referrerId,
    invited: seconds(i.invitedAt),
    expiry_date: i.expiresAt ? seconds(i.expiresAt) : null,
    email: i.email,
    invited_as: i.invitedAs,
    notify_referrer_on_join: i.notifyReferrerOnJoin,
    is_multiuse: false,
  }));
  return `${JSON.stringify({ result: 'success', msg: '', invites })}\n`;
}

describe('lists longer than a page', () => {
  test("GET /attachments streams exactly the whole list's body, plain and gzip-compressed, unknown parameters after the total", async () => {
    const auth = { authorization: world.users.member.auth };
    const plain = await raw(server.url, '/api/v1/attachments', auth);
    expect(plain.status).toBe(200);
    // Streamed: no declared length.
    expect(plain.headers['content-length']).toBeUndefined();
    expect(plain.headers['content-type']).toBe('application/json');
    expect(plain.body.toString()).toBe(await wholeAttachmentsBody(world.users.member.id));
    const body = JSON.parse(plain.body.toString());
    expect(body.attachments).toHaveLength(FILES + 2);
    expectMatchesOpenApi('GET', '/attachments', { status: 200, body });

    const gzipped = await raw(server.url, '/api/v1/attachments', { ...auth, 'accept-encoding': 'gzip' });
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gzipped.body).equals(plain.body)).toBe(true);

    const ignored = await raw(server.url, '/api/v1/attachments?colour=blue', auth);
    expect(ignored.body.toString()).toBe(await wholeAttachmentsBody(world.users.member.id, { ignored_parameters_unsupported: ['colour'] }));
  });

  test("a list of one page still declares its length (another user's files)", async () => {
    const response = await raw(server.url, '/api/v1/attachments', { authorization: world.users.owner.auth });
    expect(response.headers['content-length']).toBe(String(response.body.length));
    expect(response.body.toString()).toBe(await wholeAttachmentsBody(world.users.owner.id));
  });

  test('GraphQL attachments gives every file with its messages, in order', async () => {
    const response = await graphql(
      server.url,
      world.users.member.auth,
      '{ attachments { uploadSpaceUsed attachments { id name size createTime messages { id } } } }',
    );
    expect(response.status).toBe(200);
    const { data } = JSON.parse(response.body.toString());
    const expected = JSON.parse(await wholeAttachmentsBody(world.users.member.id));
    expect(data.attachments.uploadSpaceUsed).toBe(expected.upload_space_used);
    expect(data.attachments.attachments).toEqual(
      expected.attachments.map((a: { id: number; name: string; size: number; create_time: number; message_ids: number[] }) => ({
        id: a.id,
        name: a.name,
        size: a.size,
        createTime: a.create_time,
        messages: a.message_ids.map((id) => ({ id })),
      })),
    );
  });

  test("GET /invites streams exactly the whole list's body: an administrator's, and a member's own", async () => {
    const admin = await raw(server.url, '/api/v1/invites', { authorization: world.users.admin.auth });
    expect(admin.status).toBe(200);
    expect(admin.headers['content-length']).toBeUndefined();
    expect(admin.body.toString()).toBe(await wholeInvitesBody());
    const body = JSON.parse(admin.body.toString());
    expect(body.invites.length).toBeGreaterThan(INVITATION_PAGE_SIZE);
    // The member's own pending invitations fit in one page: answered whole.
    const member = await raw(server.url, '/api/v1/invites', { authorization: world.users.member.auth });
    expect(member.headers['content-length']).toBe(String(member.body.length));
    expect(member.body.toString()).toBe(await wholeInvitesBody(world.users.member.id));
  });

  test('GraphQL invitations: newest first across pages (ties by id), pending only unless asked', async () => {
    for (const includeInactive of [false, true]) {
      const response = await graphql(
        server.url,
        world.users.admin.auth,
        `{ invitations(includeInactive: ${includeInactive}) { id status expiresAt } }`,
      );
      expect(response.status).toBe(200);
      const { data } = JSON.parse(response.body.toString());
      const now = new Date();
      const rows = await server.app.prisma.invitation.findMany({
        where: {
          organizationId: world.org.id,
          ...(includeInactive ? {} : { status: 'PENDING', OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] }),
        },
        orderBy: [{ invitedAt: 'desc' }, { id: 'desc' }],
      });
      expect(rows.length).toBeGreaterThan(INVITATION_PAGE_SIZE);
      const status = (r: (typeof rows)[number]) =>
        r.status === 'PENDING' && r.expiresAt !== null && r.expiresAt <= now ? 'EXPIRED' : r.status;
      expect(data.invitations).toEqual(
        rows.map((r) => ({ id: r.id, status: status(r), expiresAt: r.expiresAt ? Math.floor(r.expiresAt.getTime() / 1000) : null })),
      );
    }
  });
});

describe('the memory budget', () => {
  test('while it is taken, large lists answer 503 with Retry-After on both doors and small ones are answered; then the large ones in full', async () => {
    const budget = tight.app.memoryBudget!;
    const held = await budget.reserve(1024 * 1024);
    try {
      const rest = await raw(tight.url, '/api/v1/attachments', { authorization: world.users.member.auth });
      expect(rest.status).toBe(503);
      expect(rest.headers['retry-after']).toBe('2');
      expect(JSON.parse(rest.body.toString())).toEqual({ result: 'error', msg: MEMORY_BUSY_MESSAGE, code: 'BAD_REQUEST' });
      const invites = await raw(tight.url, '/api/v1/invites', { authorization: world.users.admin.auth });
      expect(invites.status).toBe(503);
      expect(invites.headers['retry-after']).toBe('2');

      const query = await graphql(tight.url, world.users.member.auth, '{ attachments { attachments { id } } }');
      expect(query.status).toBe(503);
      expect(query.headers['retry-after']).toBe('2');
      const { errors } = JSON.parse(query.body.toString());
      expect(errors).toEqual([expect.objectContaining({ message: MEMORY_BUSY_MESSAGE, extensions: { code: 'SERVICE_UNAVAILABLE' } })]);
      const invitations = await graphql(tight.url, world.users.admin.auth, '{ invitations { id } }');
      expect(invitations.status).toBe(503);

      // Small answers reserve nothing: another user's list and GraphQL query go through.
      const small = await raw(tight.url, '/api/v1/attachments', { authorization: world.users.owner.auth });
      expect(small.status).toBe(200);
      expect(small.body.toString()).toBe(await wholeAttachmentsBody(world.users.owner.id));
      expect((await graphql(tight.url, world.users.owner.auth, '{ attachments { attachments { id } } }')).status).toBe(200);
    } finally {
      held.release();
    }
    const rest = await raw(tight.url, '/api/v1/attachments', { authorization: world.users.member.auth });
    expect(rest.status).toBe(200);
    expect(rest.body.toString()).toBe(await wholeAttachmentsBody(world.users.member.id));
    const query = await graphql(tight.url, world.users.member.auth, '{ attachments { attachments { id } } }');
    expect(query.status).toBe(200);
    expect(JSON.parse(query.body.toString()).data.attachments.attachments).toHaveLength(FILES + 2);
    // Every reservation was given back.
    expect(budget.reserved).toBe(0);
  });

  test('a client that goes away in the middle of a streamed list gives its reservation back', async () => {
    const budget = tight.app.memoryBudget!;
    // A list of 25 pages (some 8 MB), far more than the sockets' buffers take before the client goes away.
    const pages = 25;
    const big = await createWorld(server.app.prisma);
    await addFiles(big, big.users.member.id, pages * ATTACHMENT_PAGE_SIZE);
    const pageReads = captureStatements(/"ownerId" = ANY\(ARRAY\[\$1::int\]\)/);
    const pagesRead = () => pageReads.filter((read) => read.values[0] === big.users.member.id).length;
    await new Promise<void>((resolve, reject) => {
      const req = request(`${tight.url}/api/v1/attachments`, { headers: { authorization: big.users.member.auth } }, (res) => {
        expect(res.statusCode).toBe(200);
        res.once('data', () => {
          // Streaming: the page's reservation (a page of 4 MiB is cut to the whole budget) is held.
          expect(budget.reserved).toBe(1024 * 1024);
          req.destroy();
          resolve();
        });
      });
      req.on('error', (error) => (req.destroyed ? undefined : reject(error)));
      req.end();
    });
    await vi.waitFor(() => expect(budget.reserved).toBe(0), { timeout: 10_000 });
    // Given back by the cancelled stream, not by its end: most pages were never read.
    expect(pagesRead()).toBeGreaterThan(0);
    expect(pagesRead()).toBeLessThan(pages);
    // A request that needs the whole budget is admitted (it would wait 100 ms, then be refused), and the next list is answered in full.
    (await budget.reserve(1024 * 1024)).release();
    const again = await raw(tight.url, '/api/v1/attachments', { authorization: world.users.member.auth });
    expect(again.status).toBe(200);
    expect(again.body.toString()).toBe(await wholeAttachmentsBody(world.users.member.id));
  });

  test('a waiting request is admitted, in order, when room comes; one larger than the budget runs alone', async () => {
    const { MemoryBudget } = await import('../../src/http/memory-budget.js');
    const budget = new MemoryBudget({ bytes: 100, waitMs: 60_000 });
    const first = await budget.reserve(70);
    // Each admission with what the budget holds as it is admitted.
    const admitted: [string, number][] = [];
    const huge = budget.reserve(1_000).then((r) => (admitted.push(['huge', budget.reserved]), r));
    const small = budget.reserve(10).then((r) => (admitted.push(['small', budget.reserved]), r));
    first.release();
    // The huge one holds the whole budget, alone: the small one waits until it is released.
    expect(budget.reserved).toBe(100);
    (await huge).release();
    expect(budget.reserved).toBe(10);
    (await small).release();
    expect(admitted).toEqual([
      ['huge', 100],
      ['small', 10],
    ]);
    expect(budget.reserved).toBe(0);
  });

  test('MEMORY_BUDGET_MIB: default 160 MiB, 0 for no limit, anything else refused at start-up', () => {
    expect(loadConfig({}).memoryBudget.bytes).toBe(160 * 1024 * 1024);
    expect(loadConfig({ MEMORY_BUDGET_MIB: '64' }).memoryBudget.bytes).toBe(64 * 1024 * 1024);
    expect(loadConfig({ MEMORY_BUDGET_MIB: '0' }).memoryBudget.bytes).toBe(0);
    for (const bad of ['-1', '1.5', 'lots']) expect(() => loadConfig({ MEMORY_BUDGET_MIB: bad })).toThrow(StartupError);
  });
});
