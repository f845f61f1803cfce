// POST /api/v1/realm/emoji/{emoji_name} (uploads.md section 3, reference cases E1-E13) and the
// images it stores, served under /user_avatars and listed by GET /realm/emoji.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectMatchesOpenApi } from '../support/openapi.js';
import { callApi } from '../support/rest.js';
import { animatedGif, imageInfo, jpegImage, pngImage, tiffImage } from '../support/images.js';
import { postFiles, startUploadServer, STORAGE_KINDS, type FilePart, type UploadServer } from '../support/uploads.js';
import { createWorld, type World, type WorldUserName } from '../support/world.js';

describe.each(STORAGE_KINDS)('POST /realm/emoji/{emoji_name} (%s storage)', (kind) => {
  let uploads: UploadServer;
  let png: Buffer;
  beforeAll(async () => {
    uploads = await startUploadServer(kind);
    png = await pngImage();
  });
  afterAll(() => uploads.close());

  const prisma = () => uploads.server.app.prisma;
  const newWorld = (customize?: Parameters<typeof createWorld>[1]) => createWorld(prisma(), customize);

  async function addEmoji(world: World, user: WorldUserName, name: string, files: FilePart[]) {
    const response = await postFiles(uploads.server.url, `/realm/emoji/${name}`, world.users[user].auth, files);
    expectMatchesOpenApi('POST', '/realm/emoji/{emoji_name}', response);
    return response;
  }
  const image = (content: Uint8Array, name = 'img.png', type = 'image/png'): FilePart[] => [{ name, type, content }];
  const error = (msg: string, code = 'BAD_REQUEST') => ({ result: 'error', msg, code });
  const listing = async (world: World) =>
    (await callApi(uploads.server.url, 'GET', '/realm/emoji', { authorization: world.users.member.auth })).body.emoji;

  /** Runs `refused`; no emoji row, audit entry or stored object may appear. */
  async function expectNothingLeft(world: World, refused: () => Promise<unknown>) {
    const state = async () => ({
      keys: await uploads.storedKeys(),
      emoji: await prisma().customEmoji.count({ where: { organizationId: world.org.id } }),
      audit: await prisma().auditLogEntry.count({ where: { organizationId: world.org.id } }),
    });
    const before = await state();
    await refused();
    expect(await state()).toEqual(before);
  }

  test('E1: a member adds an emoji: 64x64 image and the original stored, listed, served, audited', async () => {
    const world = await newWorld();
    const response = await addEmoji(world, 'member', 'my_emoji', image(png));
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ result: 'success', msg: '' });
    const row = await prisma().customEmoji.findFirstOrThrow({ where: { organizationId: world.org.id, name: 'my_emoji' } });
    expect(row).toMatchObject({ authorId: world.users.member.id, deactivated: false, isAnimated: false });
    expect(row.fileName).toMatch(/^[0-9a-f]{8}\.png$/);
    const emoji = await listing(world);
    expect(emoji[String(row.id)]).toEqual({
      id: String(row.id),
      name: 'my_emoji',
      source_url: `/user_avatars/${world.org.id}/emoji/images/${row.fileName}`,
      still_url: null,
      deactivated: false,
      author_id: world.users.member.id,
    });
    expect(Object.keys(emoji)).toHaveLength(4);
    const served = await fetch(`${uploads.server.url}${emoji[String(row.id)].source_url}`);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/png');
    expect(served.headers.get('cache-control')).toBe('max-age=31536000, public, immutable');
    expect(await imageInfo(new Uint8Array(await served.arrayBuffer()))).toEqual({ format: 'png', width: 64, height: 64, pages: 1 });
    expect(await uploads.storedKeys()).toEqual(
      expect.arrayContaining([
        `avatars/${world.org.id}/emoji/images/${row.fileName}`,
        `avatars/${world.org.id}/emoji/images/${row.fileName}.original`,
      ]),
    );
    const audit = await prisma().auditLogEntry.findFirstOrThrow({
      where: { organizationId: world.org.id, eventType: 'REALM_EMOJI_ADDED' },
    });
    expect(audit).toMatchObject({ actorId: world.users.member.id, extraData: { added_emoji: emoji[String(row.id)] } });
  });

  test('E2-E4: names', async () => {
    const world = await newWorld();
    await expectNothingLeft(world, async () => {
      const invalid = 'Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.';
      for (const name of ['my_em*oji', 'my/emoji/with/forward/slash/', 'my_EMoji', 'caf%C3%A9', 'nul%00l']) {
        expect((await addEmoji(world, 'member', name, image(png))).body).toEqual(error(invalid));
      }
      expect((await addEmoji(world, 'member', 'my_emoji_', image(png))).body).toEqual(
        error('Emoji names must end with either a letter or digit.'),
      );
      expect((await addEmoji(world, 'member', '%20', image(png))).body).toEqual(error('Emoji name is missing'));
    });
    // Spaces become underscores.
    expect((await addEmoji(world, 'member', 'two%20words', image(png))).status).toBe(200);
    expect(await prisma().customEmoji.count({ where: { organizationId: world.org.id, name: 'two_words' } })).toBe(1);
  });

  test('E5, E6, E7, E8: one file, the size limit, accepted formats, names taken', async () => {
    const world = await newWorld();
    await expectNothingLeft(world, async () => {
      const two = await addEmoji(world, 'member', 'two', [...image(png, 'a.png'), ...image(png, 'b.png')]);
      expect(two.body).toEqual(error('You must upload exactly one file.'));
      const none = await addEmoji(world, 'member', 'none', []);
      expect(none.body).toEqual(error('You must upload exactly one file.'));
      const tif = await addEmoji(world, 'member', 'tif', image(await tiffImage(), 'img.tif', 'image/tiff'));
      expect(tif.body).toEqual(error('Invalid image format', 'BAD_IMAGE'));
      const notAnImage = await addEmoji(world, 'member', 'text', image(Buffer.from('hello'), 'img.png'));
      expect(notAnImage.body).toEqual(error('Could not decode image; did you upload an image file?', 'BAD_IMAGE'));
      expect((await addEmoji(world, 'member', 'green_tick', image(png))).body).toEqual(
        error('A custom emoji with this name already exists.'),
      );
    });
    const small = await startUploadServer(kind, { maxEmojiFileSizeMib: 0 });
    try {
      const other = await createWorld(small.server.app.prisma);
      const tooBig = await postFiles(small.server.url, '/realm/emoji/big', other.users.member.auth, image(png));
      expect(tooBig.body).toEqual(error('Uploaded file is larger than the allowed limit of 0 MiB'));
      expect(await small.server.app.prisma.customEmoji.count({ where: { organizationId: other.org.id, name: 'big' } })).toBe(0);
    } finally {
      await small.close();
    }
  });

  test('E9: a deactivated name can be used again: a new row, the old one stays', async () => {
    const world = await newWorld();
    expect((await addEmoji(world, 'member', 'again', image(png))).status).toBe(200);
    const removed = await callApi(uploads.server.url, 'DELETE', '/realm/emoji/again', { authorization: world.users.member.auth });
    expect(removed.status).toBe(200);
    expect((await addEmoji(world, 'member', 'again', image(png))).status).toBe(200);
    const rows = await prisma().customEmoji.findMany({ where: { organizationId: world.org.id, name: 'again' }, orderBy: { id: 'asc' } });
    expect(rows.map((r) => r.deactivated)).toEqual([true, false]);
    expect(rows[0]!.fileName).not.toBe(rows[1]!.fileName);
    expect(Object.keys(await listing(world))).toHaveLength(5);
    // The retired_logo of the example file was deactivated too: its name is free.
    expect((await addEmoji(world, 'member', 'retired_logo', image(png))).status).toBe(200);
  });

  test('E10: built-in names may be shadowed by administrators only', async () => {
    const world = await newWorld();
    expect((await addEmoji(world, 'member', 'laughing', image(png))).body).toEqual(
      error('Only administrators can override default emoji.'),
    );
    expect((await addEmoji(world, 'moderator', 'smile', image(png))).body).toEqual(
      error('Only administrators can override default emoji.'),
    );
    expect((await addEmoji(world, 'admin', 'smile', image(png))).status).toBe(200);
    expect((await addEmoji(world, 'owner', 'laughing', image(png))).status).toBe(200);
  });

  test('E11: can_add_custom_emoji_group, guests and bots', async () => {
    const world = await newWorld((file) => (file.organization.can_add_custom_emoji_group = 'role:administrators'));
    expect((await addEmoji(world, 'moderator', 'a1', image(png))).body).toEqual(error('Insufficient permission'));
    expect((await addEmoji(world, 'admin', 'a1', image(png))).status).toBe(200);
    const members = await newWorld();
    expect((await addEmoji(members, 'guest', 'g1', image(png))).body).toEqual(error('Not allowed for guest users'));
    expect((await addEmoji(members, 'bot', 'b1', image(png))).body).toEqual(error('This endpoint does not accept bot requests.'));
    expect((await addEmoji(members, 'member', 'm1', image(png))).status).toBe(200);
    const named = await newWorld((file) => (file.organization.can_add_custom_emoji_group = 'leads'));
    // Mark is in `support`, a subgroup of `leads`; Mona is in neither.
    expect((await addEmoji(named, 'member', 'n1', image(png))).status).toBe(200);
    expect((await addEmoji(named, 'moderator', 'n2', image(png))).body).toEqual(error('Insufficient permission'));
    const anonymous = await newWorld(
      (file) => (file.organization.can_add_custom_emoji_group = { direct_members: ['mona@lighthouse.example'], direct_subgroups: [] }),
    );
    expect((await addEmoji(anonymous, 'moderator', 'x1', image(png))).status).toBe(200);
    expect((await addEmoji(anonymous, 'member', 'x2', image(png))).body).toEqual(error('Insufficient permission'));
    const fullMembers = await newWorld((file) => {
      file.organization.can_add_custom_emoji_group = 'role:fullmembers';
      file.organization.waiting_period_threshold = 100_000;
    });
    expect((await addEmoji(fullMembers, 'member', 'f1', image(png))).body).toEqual(error('Insufficient permission'));
  });

  test('E12: GIFs, animated ones with a still PNG; JPEG stored as .jpg', async () => {
    const world = await newWorld();
    expect((await addEmoji(world, 'member', 'party', image(await animatedGif(), 'party.gif', 'image/gif'))).status).toBe(200);
    const row = await prisma().customEmoji.findFirstOrThrow({ where: { organizationId: world.org.id, name: 'party' } });
    expect(row.isAnimated).toBe(true);
    expect(row.fileName).toMatch(/^[0-9a-f]{8}\.gif$/);
    const dict = (await listing(world))[String(row.id)];
    expect(dict.still_url).toBe(`/user_avatars/${world.org.id}/emoji/images/still/${row.fileName.replace('.gif', '.png')}`);
    const animation = await fetch(`${uploads.server.url}${dict.source_url}`);
    expect(animation.headers.get('content-type')).toBe('image/gif');
    expect(await imageInfo(new Uint8Array(await animation.arrayBuffer()))).toEqual({ format: 'gif', width: 64, height: 64, pages: 3 });
    const still = await fetch(`${uploads.server.url}${dict.still_url}`);
    expect(await imageInfo(new Uint8Array(await still.arrayBuffer()))).toEqual({ format: 'png', width: 64, height: 64, pages: 1 });
    expect((await addEmoji(world, 'member', 'photo', image(await jpegImage(), 'photo.jpeg', 'image/jpeg'))).status).toBe(200);
    const photo = await prisma().customEmoji.findFirstOrThrow({ where: { organizationId: world.org.id, name: 'photo' } });
    expect(photo.fileName).toMatch(/^[0-9a-f]{8}\.jpg$/);
  });

  test('E13: when the storage fails, no row, no audit entry', async () => {
    const broken = await startUploadServer(kind);
    try {
      const world = await createWorld(broken.server.app.prisma);
      await broken.breakStorage();
      const response = await postFiles(broken.server.url, '/realm/emoji/broken', world.users.member.auth, image(png));
      expect(response.status).toBe(500);
      expect(await broken.server.app.prisma.customEmoji.count({ where: { organizationId: world.org.id, name: 'broken' } })).toBe(0);
      expect(
        await broken.server.app.prisma.auditLogEntry.count({ where: { organizationId: world.org.id, eventType: 'REALM_EMOJI_ADDED' } }),
      ).toBe(0);
    } finally {
      await broken.close();
    }
  });

  test('no credentials: 401; /user_avatars answers 404 for unknown images', async () => {
    const world = await newWorld();
    const anonymous = await postFiles(uploads.server.url, '/realm/emoji/anon', undefined, image(png));
    expect(anonymous.status).toBe(401);
    expect((await fetch(`${uploads.server.url}/user_avatars/${world.org.id}/emoji/images/nothing.png`)).status).toBe(404);
  });
});
