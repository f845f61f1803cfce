// zulip-js uploads a file the way its users do (a read stream in a POST: its form-data library
// sends it as a file part) and the file downloads back byte for byte, directly and through a
// temporary URL the client asks for.
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { expectMatchesOpenApi } from '../support/openapi.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';
import { zulipClientFor } from '../support/zulip-js.js';

let server: TestServer;
let world: World;
let directory: string;
beforeAll(async () => {
  server = await startTestServer();
  world = await createWorld(server.app.prisma);
  directory = await mkdtemp(join(tmpdir(), 'teamchat-zulip-js-'));
});
afterAll(async () => {
  await server.close();
  await rm(directory, { recursive: true, force: true });
});

test('callEndpoint POST /user_uploads with a file stream; the bytes come back identical', async () => {
  const bytes = randomBytes(1_500_000);
  const path = join(directory, 'report 2026.bin');
  await writeFile(path, bytes);
  const client = await zulipClientFor(server.url, world, 'member');
  const uploaded = await client.callEndpoint('/user_uploads', 'POST', { file: createReadStream(path) });
  expectMatchesOpenApi('POST', '/user_uploads', { status: 200, body: uploaded });
  expect(uploaded).toMatchObject({ result: 'success', msg: '', filename: 'report 2026.bin' });
  expect(uploaded.url).toMatch(/\/report-2026\.bin$/);

  const download = await fetch(`${server.url}${uploaded.url}`, { headers: { authorization: world.users.member.auth } });
  expect(download.status).toBe(200);
  expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);

  const temporary = await client.callEndpoint(uploaded.url, 'GET');
  expectMatchesOpenApi('GET', '/user_uploads/{realm_id_str}/{filename}', { status: 200, body: temporary });
  const anonymous = await fetch(`${server.url}${temporary.url}`);
  expect(Buffer.from(await anonymous.arrayBuffer()).equals(bytes)).toBe(true);

  const row = await server.app.prisma.attachment.findUniqueOrThrow({ where: { pathId: uploaded.url.slice('/user_uploads/'.length) } });
  expect(row.size).toBe(1_500_000n);
});
