// Response compression: large bodies go out gzip-compressed to clients that accept it, small ones
// and clients that do not ask stay plain; the bytes after decompression are the plain bytes.
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld } from '../support/world.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

/** A raw HTTP exchange (fetch would ask for compression and undo it by itself). */
function raw(path: string, headers: Record<string, string>, method = 'GET') {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
    const req = request(`${server.url}${path}`, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('the GraphiQL page is sent gzip-compressed, and decompresses to the plain page', async () => {
  const page = { accept: 'text/html' };
  const plain = await raw('/graphql', page);
  const gzipped = await raw('/graphql', { ...page, 'accept-encoding': 'gzip, deflate, br' });
  expect(plain.headers['content-encoding']).toBeUndefined();
  expect(gzipped.headers['content-encoding']).toBe('gzip');
  expect(gzipped.headers.vary).toContain('Accept-Encoding');
  expect(gzipped.body.length).toBeLessThan(plain.body.length / 2);
  expect(gunzipSync(gzipped.body).equals(plain.body)).toBe(true);
});

test('a large REST answer is compressed, a small one is not, and HEAD never is', async () => {
  const world = await createWorld(server.database.prisma);
  await server.database.prisma.customEmoji.createMany({
    data: Array.from({ length: 30 }, (_, i) => ({ organizationId: world.org.id, name: `extra_${i}`, fileName: `extra_${i}.png` })),
  });
  const auth = { authorization: world.users.owner.auth, 'accept-encoding': 'gzip' };
  const large = await raw('/api/v1/realm/emoji', auth);
  const plain = await raw('/api/v1/realm/emoji', { authorization: world.users.owner.auth });
  expect(plain.body.length).toBeGreaterThan(1024);
  // A client that does not ask gets the plain body with its length declared.
  expect(plain.headers['content-encoding']).toBeUndefined();
  expect(plain.headers['content-length']).toBe(String(plain.body.length));
  expect(large.headers['content-encoding']).toBe('gzip');
  // Only the Expires header (a date) may differ between two answers: compare the decoded JSON.
  expect(JSON.parse(gunzipSync(large.body).toString())).toEqual(JSON.parse(plain.body.toString()));
  const small = await raw('/api/v1/server_settings', { 'accept-encoding': 'gzip' });
  expect(small.body.length).toBeLessThan(1024);
  expect(small.headers['content-encoding']).toBeUndefined();
  const head = await raw('/api/v1/realm/emoji', auth, 'HEAD');
  expect(head.headers['content-encoding']).toBeUndefined();
});
