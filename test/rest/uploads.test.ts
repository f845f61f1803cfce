// POST /api/v1/user_uploads (uploads.md section 1, reference cases U1-U11) on both storage backends.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectMatchesOpenApi } from '../support/openapi.js';
import { postFiles, startUploadServer, STORAGE_KINDS, type FilePart, type UploadServer } from '../support/uploads.js';
import { createWorld, type World } from '../support/world.js';
import { Readable } from 'node:stream';
import { sweepOrphanFiles } from '../../src/domain/uploads/sweep-files.js';

describe.each(STORAGE_KINDS)('POST /user_uploads (%s storage)', (kind) => {
  let uploads: UploadServer;
  beforeAll(async () => {
    uploads = await startUploadServer(kind);
  });
  afterAll(() => uploads.close());

  const newWorld = (customize?: Parameters<typeof createWorld>[1]) => createWorld(uploads.server.app.prisma, customize);

  async function upload(authorization: string | undefined, files: FilePart[]) {
    const response = await postFiles(uploads.server.url, '/user_uploads', authorization, files);
    expectMatchesOpenApi('POST', '/user_uploads', response);
    return response;
  }

  const counter = async (world: World, on: UploadServer = uploads) =>
    (await on.server.app.prisma.organization.findUniqueOrThrow({ where: { id: world.org.id }, select: { uploadSpaceUsed: true } }))
      .uploadSpaceUsed;
  const rows = (world: World) =>
    uploads.server.app.prisma.attachment.findMany({ where: { organizationId: world.org.id }, orderBy: { id: 'asc' } });

  /** Runs `refused`, then checks that no row, no stored byte and no counted byte changed. */
  async function expectNothingLeft(world: World, refused: () => Promise<unknown>) {
    const before = { keys: await uploads.storedKeys(), rows: await rows(world), counter: await counter(world) };
    await refused();
    expect({ keys: await uploads.storedKeys(), rows: await rows(world), counter: await counter(world) }).toEqual(before);
  }

  test('U6: the stored file, its row, the response, and N more bytes counted at once', async () => {
    const world = await newWorld();
    const before = await counter(world);
    const response = await upload(world.users.member.auth, [{ name: 'zulip.txt', type: 'text/plain', content: 'zulip!' }]);
    expect(response.status).toBe(200);
    const { url } = response.body;
    expect(response.body).toEqual({ result: 'success', msg: '', uri: url, url, filename: 'zulip.txt' });
    expect(Object.keys(response.body)).toEqual(['result', 'msg', 'uri', 'url', 'filename']);
    expect(url).toMatch(new RegExp(`^/user_uploads/${world.org.id}/[0-9a-f]{1,2}/[A-Za-z0-9_-]{24}/zulip\\.txt$`));
    const pathId = url.slice('/user_uploads/'.length);
    const row = await uploads.server.app.prisma.attachment.findUniqueOrThrow({ where: { pathId }, include: { messages: true } });
    expect(row).toMatchObject({
      name: 'zulip.txt',
      size: 6n,
      contentType: 'text/plain',
      ownerId: world.users.member.id,
      organizationId: world.org.id,
      messages: [],
    });
    expect(Date.now() - row.createTime.getTime()).toBeLessThan(60_000);
    expect(await uploads.storedKeys()).toContain(`files/${pathId}`);
    expect(await counter(world)).toBe(before + 6n);
  });

  test('uploading N bytes raises upload_space_used by exactly N; deleting lowers it by N', async () => {
    const world = await newWorld();
    const before = await counter(world);
    const bytes = new Uint8Array(300_001).map((_, i) => (i * 31) % 256);
    const response = await upload(world.users.guest.auth, [{ name: 'data.bin', content: bytes }]);
    expect(response.status).toBe(200);
    expect(await counter(world)).toBe(before + 300_001n);
    const row = await uploads.server.app.prisma.attachment.findUniqueOrThrow({ where: { pathId: response.body.url.slice(14) } });
    const deleted = await fetch(`${uploads.server.url}/api/v1/attachments/${row.id}`, {
      method: 'DELETE',
      headers: { authorization: world.users.guest.auth },
    });
    expect(deleted.status).toBe(200);
    expect(await counter(world)).toBe(before);
  });

  test('U1: no file part; a text field only; a part without a usable name', async () => {
    const world = await newWorld();
    await expectNothingLeft(world, async () => {
      const none = await fetch(`${uploads.server.url}/api/v1/user_uploads`, {
        method: 'POST',
        headers: { authorization: world.users.member.auth },
      });
      expect(none.status).toBe(400);
      expect(await none.json()).toEqual({ result: 'error', msg: 'You must specify a file to upload', code: 'BAD_REQUEST' });
      const form = new FormData();
      form.append('file', 'not a file');
      const fieldOnly = await fetch(`${uploads.server.url}/api/v1/user_uploads`, {
        method: 'POST',
        headers: { authorization: world.users.member.auth },
        body: form,
      });
      expect(await fieldOnly.json()).toEqual({ result: 'error', msg: 'You must specify a file to upload', code: 'BAD_REQUEST' });
      for (const name of ['..', '.', '/']) {
        const response = await upload(world.users.member.auth, [{ name, content: 'x' }]);
        expect(response.body).toEqual({ result: 'error', msg: 'You must specify a file to upload', code: 'BAD_REQUEST' });
      }
    });
  });

  test('U2: two files are refused, whatever their sizes, and neither is kept', async () => {
    const world = await newWorld();
    await expectNothingLeft(world, async () => {
      const response = await upload(world.users.member.auth, [
        { field: 'f1', name: 'a.txt', content: 'first' },
        { field: 'f2', name: 'b.txt', content: 'second' },
      ]);
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ result: 'error', msg: 'You may only upload one file at a time', code: 'BAD_REQUEST' });
    });
  });

  test('U5: the quota (GiB) refuses the upload that would pass it, with REALM_UPLOAD_QUOTA; no quota, no limit', async () => {
    const world = await newWorld((file) => (file.organization.upload_quota_gb = 4));
    const quota = 4n << 30n;
    const used = await counter(world);
    // Fill the organization up to 11 bytes below its quota, as the reference's test does.
    await uploads.server.app.prisma.organization.update({ where: { id: world.org.id }, data: { uploadSpaceUsed: quota - 11n } });
    const first = await upload(world.users.member.auth, [{ name: 'a.txt', content: '123456' }]);
    expect(first.status).toBe(200);
    await expectNothingLeft(world, async () => {
      const second = await upload(world.users.member.auth, [{ name: 'b.txt', content: '123456' }]);
      expect(second.status).toBe(400);
      expect(second.body).toEqual({
        result: 'error',
        msg: "Upload would exceed your organization's upload quota.",
        code: 'REALM_UPLOAD_QUOTA',
      });
    });
    // Exactly reaching the quota is allowed.
    const exact = await upload(world.users.member.auth, [{ name: 'c.txt', content: '12345' }]);
    expect(exact.status).toBe(200);
    expect(await counter(world)).toBe(quota);
    await uploads.server.app.prisma.organization.update({ where: { id: world.org.id }, data: { uploadQuotaGb: null } });
    expect((await upload(world.users.member.auth, [{ name: 'd.txt', content: '123456' }])).status).toBe(200);
    expect(used).toBeLessThan(quota);
  });

  test('U7, U9: stored paths use the sanitized name, responses the name as sent', async () => {
    const world = await newWorld();
    const cases: [string, string][] = [
      ['../foo', 'foo'],
      ['.. ', 'uploaded-file'],
      ['.!', 'uploaded-file'],
      ['**', 'uploaded-file'],
      ['foo bar--baz', 'foo-bar-baz'],
      ['some file (with spaces).png', 'some-file-with-spaces.png'],
      ['áéБД.txt', 'áéБД.txt'],
      [encodeURIComponent('Здравейте.txt'), 'Здравейте.txt'],
    ];
    for (const [name, stored] of cases) {
      const response = await upload(world.users.member.auth, [{ name, content: 'x' }]);
      expect(response.status).toBe(200);
      expect(response.body.url.split('/').pop()).toBe(stored);
      const sent = name === '../foo' ? 'foo' : decodeURIComponent(name);
      expect(response.body.filename).toBe(sent);
    }
  });

  test('U3: a file over MAX_FILE_UPLOAD_SIZE is refused while streaming; exactly the limit passes', async () => {
    const small = await startUploadServer(kind, { maxFileUploadSizeMib: 1 });
    try {
      const world = await createWorld(small.server.app.prisma);
      const mib = 1024 * 1024;
      const before = await small.storedKeys();
      const exact = await postFiles(small.server.url, '/user_uploads', world.users.member.auth, [
        { name: 'exact.bin', content: new Uint8Array(mib) },
      ]);
      expect(exact.status).toBe(200);
      const tooBig = await postFiles(small.server.url, '/user_uploads', world.users.member.auth, [
        { name: 'big.bin', content: new Uint8Array(3 * mib) },
      ]);
      expect(tooBig.status).toBe(400);
      expect(tooBig.body).toEqual({
        result: 'error',
        msg: "File is larger than this server's configured maximum upload size (1 MiB).",
        code: 'BAD_REQUEST',
      });
      expect(await small.storedKeys()).toEqual([...before, `files/${exact.body.url.slice(14)}`].sort());
      expect(await small.server.app.prisma.attachment.count({ where: { organizationId: world.org.id, name: 'big.bin' } })).toBe(0);
      // Two files of which the first is too big: the count is checked first, as in the reference.
      const two = await postFiles(small.server.url, '/user_uploads', world.users.member.auth, [
        { name: 'big.bin', content: new Uint8Array(2 * mib) },
        { name: 'small.txt', content: 'x' },
      ]);
      expect(two.body.msg).toBe('You may only upload one file at a time');
      expect(await small.storedKeys()).toEqual([...before, `files/${exact.body.url.slice(14)}`].sort());
    } finally {
      await small.close();
    }
  });

  test('U3 with MAX_FILE_UPLOAD_SIZE=0: a 4-byte file is refused, an empty one accepted', async () => {
    const none = await startUploadServer(kind, { maxFileUploadSizeMib: 0 });
    try {
      const world = await createWorld(none.server.app.prisma);
      const refused = await postFiles(none.server.url, '/user_uploads', world.users.member.auth, [{ name: 'a.txt', content: 'zulip' }]);
      expect(refused.body).toEqual({
        result: 'error',
        msg: "File is larger than this server's configured maximum upload size (0 MiB).",
        code: 'BAD_REQUEST',
      });
      const empty = await postFiles(none.server.url, '/user_uploads', world.users.member.auth, [{ name: 'empty.txt', content: '' }]);
      expect(empty.status).toBe(200);
    } finally {
      await none.close();
    }
  });

  test('a body cut off mid-file leaves nothing behind; a malformed body is a 400', async () => {
    const world = await newWorld();
    await expectNothingLeft(world, async () => {
      const boundary = 'cut-off-boundary';
      const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="cut.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`;
      const response = await fetch(`${uploads.server.url}/api/v1/user_uploads`, {
        method: 'POST',
        headers: { authorization: world.users.member.auth, 'content-type': `multipart/form-data; boundary=${boundary}` },
        body: head + 'x'.repeat(100_000),
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ result: 'error', msg: 'Malformed multipart body', code: 'BAD_REQUEST' });
    });
  });

  test("D1: deleting a file removes its bytes, its row and its counted size; D2: not someone else's", async () => {
    const world = await newWorld();
    const before = { keys: await uploads.storedKeys(), counter: await counter(world) };
    const response = await upload(world.users.member.auth, [{ name: 'gone-soon.txt', content: 'bytes' }]);
    const pathId = response.body.url.slice('/user_uploads/'.length);
    const { id } = await uploads.server.app.prisma.attachment.findUniqueOrThrow({ where: { pathId } });
    const remove = (authorization: string) =>
      fetch(`${uploads.server.url}/api/v1/attachments/${id}`, { method: 'DELETE', headers: { authorization } });
    const refused = await remove(world.users.owner.auth);
    expect(await refused.json()).toEqual({ result: 'error', msg: 'Invalid attachment', code: 'BAD_REQUEST' });
    expect(await uploads.storedKeys()).toContain(`files/${pathId}`);
    const deleted = await remove(world.users.member.auth);
    expect(await deleted.json()).toEqual({ result: 'success', msg: '' });
    expect({ keys: await uploads.storedKeys(), counter: await counter(world) }).toEqual(before);
    expect(await uploads.server.app.prisma.attachment.count({ where: { id } })).toBe(0);
    // The file URL now answers 404.
    expect((await fetch(`${uploads.server.url}${response.body.url}`, { headers: { authorization: world.users.member.auth } })).status).toBe(
      404,
    );
  });

  test('D3: when the storage fails, the deletion stands: the row and its count go first, the bytes are left to the sweep', async () => {
    const broken = await startUploadServer(kind);
    try {
      const world = await createWorld(broken.server.app.prisma);
      const before = await counter(world, broken);
      const response = await postFiles(broken.server.url, '/user_uploads', world.users.member.auth, [
        { name: 'stuck.txt', content: 'stuck' },
      ]);
      const { id } = await broken.server.app.prisma.attachment.findUniqueOrThrow({ where: { pathId: response.body.url.slice(14) } });
      await broken.breakStorage();
      const deleted = await fetch(`${broken.server.url}/api/v1/attachments/${id}`, {
        method: 'DELETE',
        headers: { authorization: world.users.member.auth },
      });
      expect(await deleted.json()).toEqual({ result: 'success', msg: '' });
      expect(await broken.server.app.prisma.attachment.count({ where: { id } })).toBe(0);
      expect(await counter(world, broken)).toBe(before);
    } finally {
      await broken.close();
    }
  });

  test('the file sweep removes stored bytes that no row names once older than the grace, and keeps every file that has a row', async () => {
    // Its own server: the sweep lists the bucket, whose signature s3rver checks wrongly (test/support/s3.ts).
    const sweeping = await startUploadServer(kind, {}, { uncheckedSignatures: true });
    try {
      const { app, url } = sweeping.server;
      const world = await createWorld(app.prisma);
      const kept = await postFiles(url, '/user_uploads', world.users.member.auth, [{ name: 'kept.txt', content: 'kept' }]);
      const keptKey = `files/${kept.body.url.slice('/user_uploads/'.length)}`;
      // The bytes of an upload whose process died before its commit: stored, no row.
      const orphanKey = `files/${world.org.id}/ab/${world.org.id}-orphan-token/orphan.txt`;
      await app.storage.write(orphanKey, Readable.from([Buffer.from('orphan')]), 'text/plain');
      const recent = await sweepOrphanFiles(app, { graceMs: 60 * 60_000 });
      expect(recent.removed).not.toContain(orphanKey);
      expect(await sweeping.storedKeys()).toEqual(expect.arrayContaining([keptKey, orphanKey]));

      const swept = await sweepOrphanFiles(app, { graceMs: 0, now: new Date(Date.now() + 2_000) });
      expect(swept.removed).toContain(orphanKey);
      expect(swept.removed).not.toContain(keptKey);
      const stored = await sweeping.storedKeys();
      expect(stored).toContain(keptKey);
      expect(stored).not.toContain(orphanKey);
    } finally {
      await sweeping.close();
    }
  });

  test('a very long name is kept whole in the row and cut (extension kept) in the stored path', async () => {
    const world = await newWorld();
    const name = `${'й'.repeat(300)}.txt`;
    const response = await upload(world.users.member.auth, [{ name, content: 'long' }]);
    expect(response.status).toBe(200);
    expect(response.body.filename).toBe(name);
    const stored = response.body.url.split('/').pop();
    expect(Buffer.byteLength(stored)).toBeLessThanOrEqual(200);
    expect(stored).toMatch(/^й+\.txt$/);
  });

  test('no credentials: 401 before the body is read', async () => {
    const response = await upload(undefined, [{ name: 'a.txt', content: 'x' }]);
    expect(response.status).toBe(401);
    expect(response.body).toEqual({
      result: 'error',
      msg: 'Not logged in: API authentication or user session required',
      code: 'UNAUTHORIZED',
    });
  });
});
