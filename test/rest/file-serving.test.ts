// Serving uploaded files (uploads.md section 2, reference cases S1-S19, U10, U11): who may read,
// the statuses and bodies when not, headers, ranges, temporary URLs.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { temporaryUrl } from '../../src/domain/uploads/temporary-urls.js';
import { expectMatchesOpenApi } from '../support/openapi.js';
import { callApi } from '../support/rest.js';
import { postFiles, startUploadServer, STORAGE_KINDS, type FilePart, type UploadServer } from '../support/uploads.js';
import { createWorld, type World } from '../support/world.js';

const IMAGE_ACCEPT = 'image/avif,image/webp,image/apng,image/*,*/*;q=0.8';

describe.each(STORAGE_KINDS)('GET /user_uploads/... (%s storage)', (kind) => {
  let uploads: UploadServer;
  let world: World;
  beforeAll(async () => {
    uploads = await startUploadServer(kind);
    world = await createWorld(uploads.server.app.prisma);
  });
  afterAll(() => uploads.close());

  const prisma = () => uploads.server.app.prisma;

  async function uploaded(authorization: string, file: FilePart): Promise<{ url: string; pathId: string; id: number }> {
    const response = await postFiles(uploads.server.url, '/user_uploads', authorization, [file]);
    expect(response.status).toBe(200);
    const pathId = response.body.url.slice('/user_uploads/'.length);
    const row = await prisma().attachment.findUniqueOrThrow({ where: { pathId } });
    return { url: response.body.url, pathId, id: row.id };
  }

  const get = (url: string, headers: Record<string, string> = {}) => fetch(`${uploads.server.url}${url}`, { headers, redirect: 'manual' });
  const as = (user: keyof World['users'], extra: Record<string, string> = {}) => ({ authorization: world.users[user].auth, ...extra });

  /** Links the file from a new message, as sending it would. */
  async function linkFrom(fileId: number, senderId: number, target: { channel: string } | { to: number[] }) {
    const channelId = 'channel' in target ? await world.channelId(target.channel) : null;
    const dateSent = new Date();
    await prisma().message.create({
      data: {
        organizationId: world.org.id,
        senderId,
        channelId,
        content: 'see file',
        dateSent,
        attachments: { create: { attachmentId: fileId, dateSent } },
        recipients: 'to' in target ? { create: target.to.map((userId) => ({ userId })) } : undefined,
      },
    });
  }

  test('the owner reads the bytes back with the reference headers; a range gives 206, an impossible one 416', async () => {
    const file = await uploaded(world.users.member.auth, { name: 'zulip.txt', type: 'text/plain', content: 'zulip!' });
    const response = await get(file.url, as('member'));
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('zulip!');
    expect(response.headers.get('content-type')).toBe('text/plain');
    expect(response.headers.get('content-disposition')).toBe('inline; filename="zulip.txt"');
    expect(response.headers.get('cache-control')).toBe('private, immutable');
    expect(response.headers.get('accept-ranges')).toBe('bytes');
    const part = await get(file.url, as('member', { range: 'bytes=1-3' }));
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe('bytes 1-3/6');
    expect(await part.text()).toBe('uli');
    const tail = await get(file.url, as('member', { range: 'bytes=-2' }));
    expect(await tail.text()).toBe('p!');
    const impossible = await get(file.url, as('member', { range: 'bytes=10-20' }));
    expect(impossible.status).toBe(416);
    expect(impossible.headers.get('content-range')).toBe('bytes */6');
  });

  test('a large file comes back byte for byte, also in ranges', async () => {
    const bytes = new Uint8Array(2 * 1024 * 1024 + 17).map((_, i) => (i * 7 + (i >> 11)) % 256);
    const file = await uploaded(world.users.member.auth, { name: 'big.bin', content: bytes });
    // Buffer.equals: toEqual on megabytes compares (and would diff) element by element.
    const whole = Buffer.from(await (await get(file.url, as('member'))).arrayBuffer());
    expect(whole.equals(Buffer.from(bytes))).toBe(true);
    const part = await get(file.url, as('member', { range: 'bytes=1048570-1048589' }));
    expect(Buffer.from(await part.arrayBuffer()).equals(Buffer.from(bytes.slice(1048570, 1048590)))).toBe(true);
  });

  test('S1-S3: no such file is 404, as an image for image requests, as HTML otherwise', async () => {
    const missing = `/user_uploads/${world.org.id}/ff/gg/abc.py`;
    const html = await get(missing, as('member'));
    expect(html.status).toBe(404);
    expect(html.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await html.text()).toContain('This file does not exist or has been deleted.');
    const image = await get(missing, as('member', { accept: IMAGE_ACCEPT }));
    expect(image.status).toBe(404);
    expect(image.headers.get('content-type')).toBe('image/png');
    const other = await get(missing, as('member', { accept: 'audio/*,application/octet-stream' }));
    expect(other.headers.get('content-type')).toBe('text/html; charset=utf-8');
    // Escapes from the storage root name no file either.
    const nul = await fetch(`${uploads.server.url}/api/v1/user_uploads/${world.org.id}/a%00b/c.txt`, { headers: as('member') });
    expect(nul.status).toBe(404);
    const nulToken = Buffer.from(`${world.org.id}/a\0b/c.txt:zz:sig`).toString('hex').toUpperCase();
    expect((await get(`/user_uploads/temporary/${nulToken}/c.txt`)).status).toBe(400);
    for (const path of [
      `/user_uploads/${world.org.id}/%00/x.txt`,
      `/user_uploads/${world.org.id}/%2e%2e/%2e%2e/%2e%2e/etc/passwd`,
      '/user_uploads/..%2f..%2fetc%2fpasswd',
      '/user_avatars/..%2f..%2fetc%2fpasswd',
    ]) {
      expect((await get(path, as('member'))).status).toBe(404);
    }
  });

  test("S4, S5: an unclaimed file is the owner's alone: others 403, spectators to the login page or a 403 image", async () => {
    const file = await uploaded(world.users.member.auth, { name: 'secret.txt', type: 'text/plain', content: 'mine' });
    const other = await get(file.url, as('owner'));
    expect(other.status).toBe(403);
    expect(await other.text()).toBe('<p>You are not authorized to view this file.</p>');
    const spectator = await get(file.url);
    expect(spectator.status).toBe(302);
    expect(spectator.headers.get('location')).toBe(`/login/?next=${encodeURIComponent(file.url)}`);
    const spectatorImage = await get(file.url, { accept: IMAGE_ACCEPT });
    expect(spectatorImage.status).toBe(403);
    expect(spectatorImage.headers.get('content-type')).toBe('image/png');
  });

  test('S7-S9, direct messages: channel subscribers, members for public channels, DM participants', async () => {
    const privateFile = await uploaded(world.users.owner.auth, { name: 'board.txt', type: 'text/plain', content: 'board' });
    await linkFrom(privateFile.id, world.users.owner.id, { channel: 'boardroom' });
    expect((await get(privateFile.url, as('member'))).status).toBe(403);
    await prisma().subscription.create({ data: { userId: world.users.member.id, channelId: await world.channelId('boardroom') } });
    expect((await get(privateFile.url, as('member'))).status).toBe(200);
    expect((await get(privateFile.url, as('moderator'))).status).toBe(403);

    const publicFile = await uploaded(world.users.member.auth, { name: 'public.txt', type: 'text/plain', content: 'public' });
    await linkFrom(publicFile.id, world.users.member.id, { channel: 'general' });
    expect((await get(publicFile.url, as('moderator'))).status).toBe(200);
    expect((await get(publicFile.url, as('admin'))).status).toBe(200);
    // Guests read only what their channels or direct messages show them.
    expect((await get(publicFile.url, as('guest'))).status).toBe(403);
    expect((await get(publicFile.url)).status).toBe(302);

    const dmFile = await uploaded(world.users.member.auth, { name: 'dm.txt', type: 'text/plain', content: 'dm' });
    await linkFrom(dmFile.id, world.users.member.id, { to: [world.users.guest.id] });
    expect((await get(dmFile.url, as('guest'))).status).toBe(200);
    expect((await get(dmFile.url, as('admin'))).status).toBe(403);
  });

  test('S10: files in web-public channels are readable without credentials, /download/ too', async () => {
    await prisma().channel.update({ where: { id: await world.channelId('design') }, data: { isWebPublic: true } });
    const file = await uploaded(world.users.member.auth, { name: 'shown.txt', type: 'text/plain', content: 'shown' });
    await linkFrom(file.id, world.users.member.id, { channel: 'design' });
    expect(await (await get(file.url)).text()).toBe('shown');
    const download = await get(file.url.replace('/user_uploads/', '/user_uploads/download/'));
    expect(download.status).toBe(200);
    expect(download.headers.get('content-disposition')).toBe('attachment; filename="shown.txt"');
  });

  test('S6: a row whose bytes are gone is 404 "File not found"', async () => {
    const file = await uploaded(world.users.member.auth, { name: 'gone.txt', content: 'gone' });
    await uploads.server.app.storage.delete(`files/${file.pathId}`);
    const response = await get(file.url, as('member'));
    expect(response.status).toBe(404);
    expect(await response.text()).toBe('<p>File not found</p>');
  });

  test('S16-S18, U10, U11: inline and attachment types, names in Content-Disposition', async () => {
    const cases: [FilePart, string, string][] = [
      [{ name: 'zulip.jpeg', type: 'image/jpeg', content: 'x' }, 'image/jpeg', 'inline; filename="zulip.jpeg"'],
      [
        { name: 'áéБД.pdf', type: 'application/pdf', content: 'x' },
        'application/pdf',
        "inline; filename*=utf-8''%C3%A1%C3%A9%D0%91%D0%94.pdf",
      ],
      [
        { name: 'some file (with spaces).png', type: 'image/png', content: 'x' },
        'image/png',
        'inline; filename="some file (with spaces).png"',
      ],
      [{ name: 'zulip.html', type: 'text/html', content: 'x' }, 'text/html', 'attachment; filename="zulip.html"'],
      [{ name: 'zulip.sh', type: 'application/x-sh', content: 'x' }, 'application/x-sh', 'attachment; filename="zulip.sh"'],
      [{ name: 'zulip', type: 'application/octet-stream', content: 'x' }, 'application/octet-stream', 'attachment; filename="zulip"'],
      [{ name: '.().', type: 'application/octet-stream', content: 'x' }, 'application/octet-stream', 'attachment; filename=".()."'],
      [{ name: 'somefile', type: 'application/octet-stream', content: 'x' }, 'application/octet-stream', 'attachment; filename="somefile"'],
      [{ name: 'somefile.txt', type: 'application/octet-stream', content: 'x' }, 'text/plain', 'inline; filename="somefile.txt"'],
      [{ name: 'somefile.txt', type: 'image/png', content: 'x' }, 'image/png', 'inline; filename="somefile.txt"'],
      [{ name: 'say "hi".txt', type: 'text/plain', content: 'x' }, 'text/plain', 'inline; filename="say \\"hi\\".txt"'],
    ];
    for (const [part, type, disposition] of cases) {
      const file = await uploaded(world.users.member.auth, part);
      const response = await get(file.url, as('member'));
      expect([part.name, response.headers.get('content-type'), response.headers.get('content-disposition')]).toEqual([
        part.name,
        type,
        disposition,
      ]);
      const download = await get(file.url.replace('/user_uploads/', '/user_uploads/download/'), as('member'));
      expect(download.headers.get('content-disposition')).toBe(disposition.replace(/^inline/, 'attachment'));
    }
    const odd = await uploaded(world.users.member.auth, { name: '.().', content: 'x' });
    expect(odd.url.split('/').pop()).toBe('uploaded-file');
  });

  test('S19: an API key in the query string: invalid 401, valid 200', async () => {
    const file = await uploaded(world.users.member.auth, { name: 'k.txt', type: 'text/plain', content: 'key' });
    const invalid = await get(`${file.url}?api_key=${'x'.repeat(32)}`);
    expect(invalid.status).toBe(401);
    expect(await invalid.json()).toEqual({ result: 'error', msg: 'Invalid API key', code: 'UNAUTHORIZED' });
    const valid = await get(`${file.url}?api_key=${world.users.member.apiKey}`);
    expect(valid.status).toBe(200);
    expect(await valid.text()).toBe('key');
  });

  test('S12-S15: temporary URLs work without credentials, until they expire, for the named file only', async () => {
    const file = await uploaded(world.users.member.auth, { name: 'zulip.txt', type: 'text/plain', content: 'zulip!' });
    const response = await callApi(uploads.server.url, 'GET', `/user_uploads/${file.pathId}`, { authorization: world.users.member.auth });
    expectMatchesOpenApi('GET', '/user_uploads/{realm_id_str}/{filename}', response);
    expect(response.status).toBe(200);
    expect(response.body.url).toMatch(/^\/user_uploads\/temporary\/[0-9A-F]+\/zulip\.txt$/);
    const anonymous = await get(response.body.url);
    expect(anonymous.status).toBe(200);
    expect(await anonymous.text()).toBe('zulip!');
    expect(anonymous.headers.get('content-disposition')).toBe('inline; filename="zulip.txt"');

    const expired = await temporaryUrl(uploads.server.app, file.pathId, new Date(Date.now() - 61_000));
    const invalidToken = { result: 'error', msg: 'Invalid token', code: 'BAD_REQUEST' };
    expect(await (await get(expired)).json()).toEqual(invalidToken);
    expect(await (await get('/user_uploads/temporary/badtoken/file.png')).json()).toEqual(invalidToken);
    // The signature's last character changed (to one it is not).
    const forged = response.body.url.replace(
      /\/temporary\/([0-9A-F]+)\//,
      (_: string, t: string) => `/temporary/${t.slice(0, -2)}${t.endsWith('41') ? '42' : '41'}/`,
    );
    expect((await get(forged)).status).toBe(400);
    const renamed = await get(response.body.url.replace(/zulip\.txt$/, 'other.txt'));
    expect(renamed.status).toBe(400);
    expect(await renamed.json()).toEqual({ result: 'error', msg: 'Invalid filename', code: 'BAD_REQUEST' });
    // Someone who may not read the file gets no temporary URL for it.
    const refused = await fetch(`${uploads.server.url}/api/v1/user_uploads/${file.pathId}`, { headers: as('owner') });
    expect(refused.status).toBe(403);
    await fetch(`${uploads.server.url}/api/v1/attachments/${file.id}`, { method: 'DELETE', headers: as('member') });
    expect(await (await get(response.body.url)).json()).toEqual(invalidToken);
    const missing = await fetch(`${uploads.server.url}/api/v1/user_uploads/${file.pathId}`, { headers: as('member') });
    expect(missing.status).toBe(404);
  });
});
