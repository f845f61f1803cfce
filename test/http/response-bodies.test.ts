// Large answers leave as bytes encoded once (src/http/response-body.ts): over real HTTP, a GraphQL
// answer and a one-page REST list of files whose names hold multi-byte characters arrive whole, with
// a Content-Length that counts bytes, not characters.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { encodedBodyResponse, sentBody } from '../../src/http/response-body.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

let server: TestServer;
let world: World;
const FILES = 600;
const nameOf = (n: number) => `résumé-données-✓-日本-${n}.txt`;

beforeAll(async () => {
  server = await startTestServer();
  world = await createWorld(server.app.prisma);
  await server.app.prisma.$executeRawUnsafe(
    `INSERT INTO attachment ("organizationId", "ownerId", name, "pathId", size, "createTime")
     SELECT $1::int, $2::int, 'résumé-données-✓-日本-' || n || '.txt', $1::int::text || '/rb/' || md5(random()::text || n) || '/f-' || n || '.txt', n, now()
       FROM generate_series(1, $3::int) n`,
    world.org.id,
    world.users.member.id,
    FILES,
  );
});
afterAll(async () => {
  await server?.close();
});

/** A raw HTTP exchange: the bytes as they came, and the declared length. */
function exchange(path: string, method: string, headers: Record<string, string>, body?: string) {
  return new Promise<{ status: number; contentLength: string | undefined; body: Buffer }>((resolve, reject) => {
    const req = request(`${server.url}${path}`, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, contentLength: res.headers['content-length'], body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const expectedNames = Array.from({ length: FILES }, (_, k) => nameOf(k + 1));

describe('large answers', () => {
  test('small bodies stay text; large ones become their UTF-8 bytes', () => {
    expect(sentBody('{"a":"é"}')).toBe('{"a":"é"}');
    const large = JSON.stringify({ names: expectedNames });
    const sent = sentBody(large);
    expect(sent).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(sent as Uint8Array).toString('utf8')).toBe(large);
  });

  test('the Response class extends the one in use when it is made, and encodes only large text bodies', async () => {
    class InUse extends Response {}
    const Encoded = encodedBodyResponse(InUse);
    const large = JSON.stringify({ names: expectedNames });
    const response = new Encoded(large, { status: 201, headers: { 'content-type': 'application/json' } });
    expect(response).toBeInstanceOf(InUse);
    expect(response.status).toBe(201);
    expect(await response.text()).toBe(large);
    expect(await new Encoded('{"small":"é"}').text()).toBe('{"small":"é"}');
  });

  test('a GraphQL answer of multi-byte names declares its length in bytes and arrives whole', async () => {
    const response = await exchange(
      '/graphql',
      'POST',
      { authorization: world.users.member.auth, 'content-type': 'application/json' },
      JSON.stringify({ query: '{ attachments { attachments { name } } }' }),
    );
    expect(response.status).toBe(200);
    expect(response.body.length).toBeGreaterThan(16 * 1024);
    expect(response.contentLength).toBe(String(response.body.length));
    const names = JSON.parse(response.body.toString('utf8')).data.attachments.attachments.map((a: { name: string }) => a.name);
    expect(names.filter((name: string) => name.startsWith('résumé')).sort()).toEqual([...expectedNames].sort());
  });

  test('a one-page REST list of multi-byte names declares its length in bytes and arrives whole', async () => {
    const response = await exchange('/api/v1/attachments', 'GET', { authorization: world.users.member.auth });
    expect(response.status).toBe(200);
    expect(response.body.length).toBeGreaterThan(16 * 1024);
    expect(response.contentLength).toBe(String(response.body.length));
    const text = response.body.toString('utf8');
    expect(text.endsWith('}\n')).toBe(true);
    const names = JSON.parse(text).attachments.map((a: { name: string }) => a.name);
    expect(names.filter((name: string) => name.startsWith('résumé')).sort()).toEqual([...expectedNames].sort());
  });
});
