// A page in a real browser draws an image on a canvas, uploads it as a custom emoji through a
// GraphQL multipart request (the way a settings page would), and shows the stored emoji.
import { expect, test } from 'vitest';
import { browserWithWorld } from '../support/browser.js';
import { CSRF_HEADERS } from '../support/graphql-multipart.js';

const files = browserWithWorld();

const ADD_EMOJI = `mutation ($name: String!, $file: File!) {
  addCustomEmoji(name: $name, file: $file) {
    __typename
    ... on AddCustomEmojiSuccess { emoji { id name sourceUrl } }
    ... on Error { message code }
  }
}`;

test('a page uploads a canvas drawing as an emoji over GraphQL multipart and shows it at 64x64', async () => {
  const context = await files.browser.newContext();
  const page = await context.newPage();
  // Any page of the server's own origin will do as the settings page's stand-in.
  await page.goto(`${files.server.url}/health`);
  const result = await page.evaluate(
    async ({ query, authorization, csrf }) => {
      const canvas = document.createElement('canvas');
      canvas.width = 200;
      canvas.height = 120;
      const draw = canvas.getContext('2d')!;
      draw.fillStyle = '#e63';
      draw.fillRect(0, 0, 200, 120);
      const png = await new Promise<Blob>((resolve) => canvas.toBlob((blob) => resolve(blob!), 'image/png'));
      const form = new FormData();
      form.append('operations', JSON.stringify({ query, variables: { name: 'canvas_art', file: null } }));
      form.append('map', JSON.stringify({ 0: ['variables.file'] }));
      form.append('0', png, 'canvas.png');
      const response = await fetch('/graphql', { method: 'POST', headers: { authorization, ...csrf }, body: form });
      const body = await response.json();
      const emoji = body.data.addCustomEmoji.emoji;
      const image = document.createElement('img');
      image.alt = emoji.name;
      document.body.append(image);
      await new Promise((resolve, reject) => {
        image.onload = resolve;
        image.onerror = reject;
        image.src = emoji.sourceUrl;
      });
      return { status: response.status, body, width: image.naturalWidth, height: image.naturalHeight };
    },
    { query: ADD_EMOJI, authorization: files.world.users.member.auth, csrf: CSRF_HEADERS },
  );
  expect(result.status).toBe(200);
  expect(result.body.data.addCustomEmoji).toMatchObject({ __typename: 'AddCustomEmojiSuccess', emoji: { name: 'canvas_art' } });
  expect({ width: result.width, height: result.height }).toEqual({ width: 64, height: 64 });
  await expect(page.locator('img[alt="canvas_art"]').isVisible()).resolves.toBe(true);
  const row = await files.server.app.prisma.customEmoji.findFirstOrThrow({
    where: { organizationId: files.world.org.id, name: 'canvas_art' },
  });
  expect(row).toMatchObject({ authorId: files.world.users.member.id, deactivated: false });
  await context.close();
});
