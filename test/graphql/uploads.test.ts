// uploadFile, deleteAttachment, addCustomEmoji (GraphQL multipart requests) and the new fields:
// the same services as REST, so the same messages and codes (reference cases U3, U5, U6, U7, D1-D3,
// E1, E2, E7, E8, E10-E12).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { graphql } from '../generated/gql.js';
import { gql } from '../support/graphql.js';
import { gqlMultipart } from '../support/graphql-multipart.js';
import { animatedGif, imageInfo, pngImage, tiffImage } from '../support/images.js';
import { startUploadServer, type UploadServer } from '../support/uploads.js';
import { createWorld, type World } from '../support/world.js';

const UploadFile = graphql(`
  mutation UploadFile($file: File!) {
    uploadFile(file: $file) {
      __typename
      ... on UploadFileSuccess { filename attachment { id name pathId url size createTime messageIds } }
      ... on Error { message code }
    }
  }
`);

const DeleteAttachment = graphql(`
  mutation DeleteAttachment($id: Int!) {
    deleteAttachment(id: $id) {
      __typename
      ... on DeleteAttachmentSuccess { id uploadSpaceUsed }
      ... on Error { message code }
    }
  }
`);

const AddCustomEmoji = graphql(`
  mutation AddCustomEmoji($name: String!, $file: File!) {
    addCustomEmoji(name: $name, file: $file) {
      __typename
      ... on AddCustomEmojiSuccess { emoji { id name deactivated sourceUrl stillUrl author { email } } }
      ... on Error { message code }
    }
  }
`);

const Limits = graphql(`
  query UploadLimits {
    attachments { uploadSpaceUsed uploadQuota maxFileUploadSize }
    customEmoji { id name sourceUrl stillUrl }
  }
`);

let uploads: UploadServer;
let png: Buffer;
beforeAll(async () => {
  uploads = await startUploadServer('directory');
  png = await pngImage();
});
afterAll(() => uploads.close());

const prisma = () => uploads.server.app.prisma;
const newWorld = (customize?: Parameters<typeof createWorld>[1]) => createWorld(prisma(), customize);
const counter = async (world: World) => (await prisma().organization.findUniqueOrThrow({ where: { id: world.org.id } })).uploadSpaceUsed;
const upload = (
  serverUrl: string,
  world: World,
  name: string,
  content: string | Uint8Array,
  type = 'text/plain',
  user: keyof World['users'] = 'member',
) => gqlMultipart(serverUrl, UploadFile, {}, [{ variable: 'file', name, type, content }], world.users[user].auth);

describe('uploadFile', () => {
  test('U6: stores the file, returns the attachment and the name, counts N bytes at once; the bytes come back', async () => {
    const world = await newWorld();
    const before = await counter(world);
    const result = await upload(uploads.server.url, world, 'zulip.txt', 'zulip!');
    expect(result.errors).toBeUndefined();
    const success = result.data!.uploadFile;
    if (success.__typename !== 'UploadFileSuccess') throw new Error(JSON.stringify(success));
    expect(success.filename).toBe('zulip.txt');
    expect(success.attachment).toMatchObject({ name: 'zulip.txt', size: 6, messageIds: [] });
    expect(success.attachment.pathId).toMatch(new RegExp(`^${world.org.id}/[0-9a-f]{1,2}/[A-Za-z0-9_-]{24}/zulip\\.txt$`));
    expect(success.attachment.url).toBe(`${uploads.server.url}/user_uploads/${success.attachment.pathId}`);
    expect(await counter(world)).toBe(before + 6n);
    const served = await fetch(success.attachment.url, { headers: { authorization: world.users.member.auth } });
    expect(await served.text()).toBe('zulip!');
  });

  test('U7: the stored path is sanitized, the name kept', async () => {
    const world = await newWorld();
    const result = await upload(uploads.server.url, world, 'foo bar--baz', 'x');
    const success = result.data!.uploadFile;
    if (success.__typename !== 'UploadFileSuccess') throw new Error(JSON.stringify(success));
    expect(success.filename).toBe('foo bar--baz');
    expect(success.attachment.pathId.split('/').pop()).toBe('foo-bar-baz');
  });

  test('U5: the quota refuses with REALM_UPLOAD_QUOTA and stores nothing', async () => {
    const world = await newWorld((file) => (file.organization.upload_quota_gb = 1));
    await prisma().organization.update({ where: { id: world.org.id }, data: { uploadSpaceUsed: (1n << 30n) - 5n } });
    const keys = await uploads.storedKeys();
    const result = await upload(uploads.server.url, world, 'a.txt', '123456');
    expect(result.data!.uploadFile).toEqual({
      __typename: 'BadRequestError',
      message: "Upload would exceed your organization's upload quota.",
      code: 'REALM_UPLOAD_QUOTA',
    });
    expect(await uploads.storedKeys()).toEqual(keys);
    expect(await counter(world)).toBe((1n << 30n) - 5n);
    const limits = await gql(uploads.server.url, Limits, {}, world.users.member.auth);
    expect(limits.data!.attachments).toEqual({ uploadSpaceUsed: 2 ** 30 - 5, uploadQuota: 2 ** 30, maxFileUploadSize: 100 * 1024 * 1024 });
  });

  test('U3: the size limit, and no credentials', async () => {
    const small = await startUploadServer('directory', { maxFileUploadSizeMib: 1 });
    try {
      const world = await createWorld(small.server.app.prisma);
      const result = await upload(small.server.url, world, 'big.bin', new Uint8Array(1024 * 1024 + 1), 'application/octet-stream');
      expect(result.data!.uploadFile).toEqual({
        __typename: 'BadRequestError',
        message: "File is larger than this server's configured maximum upload size (1 MiB).",
        code: 'BAD_REQUEST',
      });
      expect(await small.storedKeys()).toEqual([]);
      const limits = await gql(small.server.url, Limits, {}, world.users.member.auth);
      expect(limits.data!.attachments.maxFileUploadSize).toBe(1024 * 1024);
      expect(limits.data!.attachments.uploadQuota).toBeNull();
    } finally {
      await small.close();
    }
    const anonymous = await gqlMultipart(uploads.server.url, UploadFile, {}, [
      { variable: 'file', name: 'a.txt', type: 'text/plain', content: 'x' },
    ]);
    expect(anonymous.status).toBe(401);
  });
});

describe('deleteAttachment', () => {
  test('D1, D2: the owner deletes bytes and row, the total drops; others get Invalid attachment', async () => {
    const world = await newWorld();
    const before = await counter(world);
    const uploaded = (await upload(uploads.server.url, world, 'bye.txt', 'bye')).data!.uploadFile;
    if (uploaded.__typename !== 'UploadFileSuccess') throw new Error(JSON.stringify(uploaded));
    const id = uploaded.attachment.id;
    const refused = await gql(uploads.server.url, DeleteAttachment, { id }, world.users.owner.auth);
    expect(refused.data!.deleteAttachment).toEqual({ __typename: 'BadRequestError', message: 'Invalid attachment', code: 'BAD_REQUEST' });
    const deleted = await gql(uploads.server.url, DeleteAttachment, { id }, world.users.member.auth);
    expect(deleted.data!.deleteAttachment).toEqual({ __typename: 'DeleteAttachmentSuccess', id, uploadSpaceUsed: Number(before) });
    expect(await uploads.storedKeys()).not.toContain(`files/${uploaded.attachment.pathId}`);
    expect(await counter(world)).toBe(before);
  });

  test('D3: a storage failure after the row is gone: the deletion stands (the bytes are left to the sweep)', async () => {
    const broken = await startUploadServer('directory');
    try {
      const world = await createWorld(broken.server.app.prisma);
      const used = async () =>
        Number((await broken.server.app.prisma.organization.findUniqueOrThrow({ where: { id: world.org.id } })).uploadSpaceUsed);
      const before = await used();
      const uploaded = (await upload(broken.server.url, world, 'stuck.txt', 'stuck')).data!.uploadFile;
      if (uploaded.__typename !== 'UploadFileSuccess') throw new Error(JSON.stringify(uploaded));
      await broken.breakStorage();
      const result = await gql(broken.server.url, DeleteAttachment, { id: uploaded.attachment.id }, world.users.member.auth);
      expect(result.data!.deleteAttachment).toEqual({
        __typename: 'DeleteAttachmentSuccess',
        id: uploaded.attachment.id,
        uploadSpaceUsed: before,
      });
      expect(await used()).toBe(before);
      expect(await broken.server.app.prisma.attachment.count({ where: { id: uploaded.attachment.id } })).toBe(0);
    } finally {
      await broken.close();
    }
  });
});

describe('addCustomEmoji', () => {
  const addEmoji = (
    world: World,
    user: keyof World['users'],
    name: string,
    content: Uint8Array,
    fileName = 'img.png',
    type = 'image/png',
  ) =>
    gqlMultipart(
      uploads.server.url,
      AddCustomEmoji,
      { name },
      [{ variable: 'file', name: fileName, type, content }],
      world.users[user].auth,
    );

  test('E1, E12: a new emoji with its id and URLs; an animated one has a still image', async () => {
    const world = await newWorld();
    const result = await addEmoji(world, 'member', 'my_emoji', png);
    const added = result.data!.addCustomEmoji;
    if (added.__typename !== 'AddCustomEmojiSuccess') throw new Error(JSON.stringify(added));
    const row = await prisma().customEmoji.findFirstOrThrow({ where: { organizationId: world.org.id, name: 'my_emoji' } });
    expect(added.emoji).toEqual({
      id: row.id,
      name: 'my_emoji',
      deactivated: false,
      sourceUrl: `/user_avatars/${world.org.id}/emoji/images/${row.fileName}`,
      stillUrl: null,
      author: { email: world.users.member.email },
    });
    const image = await fetch(`${uploads.server.url}${added.emoji.sourceUrl}`);
    expect(await imageInfo(new Uint8Array(await image.arrayBuffer()))).toEqual({ format: 'png', width: 64, height: 64, pages: 1 });
    const gif = (await addEmoji(world, 'member', 'party', await animatedGif(), 'party.gif', 'image/gif')).data!.addCustomEmoji;
    if (gif.__typename !== 'AddCustomEmojiSuccess') throw new Error(JSON.stringify(gif));
    expect(gif.emoji.stillUrl).toMatch(new RegExp(`^/user_avatars/${world.org.id}/emoji/images/still/[0-9a-f]{8}\\.png$`));
    const listed = await gql(uploads.server.url, Limits, {}, world.users.member.auth);
    expect(listed.data!.customEmoji.map((e) => e.name)).toEqual(['green_tick', 'lighthouse', 'my_emoji', 'party']);
  });

  test('E2, E7, E8, E10, E11: the REST messages and codes', async () => {
    const world = await newWorld();
    const refusal = async (user: keyof World['users'], name: string, content: Uint8Array, fileName?: string, type?: string) =>
      (await addEmoji(world, user, name, content, fileName, type)).data!.addCustomEmoji;
    expect(await refusal('member', 'my_EMoji', png)).toEqual({
      __typename: 'BadRequestError',
      message: 'Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.',
      code: 'BAD_REQUEST',
    });
    expect(await refusal('member', 'tif', await tiffImage(), 'img.tif', 'image/tiff')).toEqual({
      __typename: 'BadRequestError',
      message: 'Invalid image format',
      code: 'BAD_IMAGE',
    });
    expect(await refusal('member', 'green_tick', png)).toEqual({
      __typename: 'BadRequestError',
      message: 'A custom emoji with this name already exists.',
      code: 'BAD_REQUEST',
    });
    expect(await refusal('member', 'smile', png)).toEqual({
      __typename: 'BadRequestError',
      message: 'Only administrators can override default emoji.',
      code: 'BAD_REQUEST',
    });
    expect(await refusal('guest', 'hello', png)).toEqual({
      __typename: 'BadRequestError',
      message: 'Not allowed for guest users',
      code: 'BAD_REQUEST',
    });
    expect(await prisma().customEmoji.count({ where: { organizationId: world.org.id } })).toBe(3);
  });
});
