// Request bodies as the server meets them on the network: a body over the limit that arrives slowly
// is refused while it is still arriving; a large upload without valid credentials is refused before
// its body is read; a file over 5 MiB goes to S3 as a multipart upload and comes back whole.
import { createHash } from 'node:crypto';
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { postFiles, startUploadServer, type UploadServer } from '../support/uploads.js';
import { createWorld, type World } from '../support/world.js';

let uploads: UploadServer;
let world: World;
beforeAll(async () => {
  uploads = await startUploadServer('s3');
  world = await createWorld(uploads.server.app.prisma);
});
afterAll(() => uploads?.close());

const MiB = 1024 * 1024;
const CHUNK = new Uint8Array(64 * 1024).fill(0x61);

/**
 * Starts a POST whose body the test writes itself and never ends: the server's answer, if it comes
 * within 10 s, is what it decided before the body was over.
 */
function openPost(path: string, headers: Record<string, string>) {
  const url = new URL(path, uploads.server.url);
  const req: ClientRequest = request(url, { method: 'POST', headers });
  req.on('error', () => {});
  const answer = new Promise<IncomingMessage>((resolve, reject) => {
    req.on('response', resolve);
    setTimeout(() => reject(new Error(`no answer to POST ${path} within 10 s while its body was unfinished`)), 10_000).unref();
  });
  const write = (bytes: Uint8Array) =>
    new Promise<void>((resolve, reject) => req.write(bytes, (error) => (error ? reject(error) : resolve())));
  return { req, answer, write };
}

async function jsonOf(response: IncomingMessage) {
  let text = '';
  for await (const chunk of response) text += chunk;
  return { status: response.statusCode, body: JSON.parse(text) };
}

/** Sends `start`, then up to 1.25 MiB more, a 64 KiB chunk every 20 ms, never ending the body; expects the 413 before the end. */
async function expectRefusedWhileArriving(post: ReturnType<typeof openPost>, start = new Uint8Array()) {
  let answered = false;
  void post.answer.then(
    () => (answered = true),
    () => {},
  );
  if (start.length > 0) await post.write(start);
  let sent = start.length;
  while (!answered && sent < 1.25 * MiB) {
    await post.write(CHUNK).catch(() => {});
    sent += CHUNK.length;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  try {
    const refused = await jsonOf(await post.answer);
    expect(refused).toEqual({ status: 413, body: { result: 'error', msg: 'Request body too large (limit: 1 MiB)', code: 'BAD_REQUEST' } });
    expect(sent).toBeGreaterThan(MiB);
  } finally {
    post.req.destroy();
  }
}

test('a chunked body over 1 MiB, arriving slowly, is refused with 413 before it ends', async () => {
  await expectRefusedWhileArriving(
    openPost('/api/v1/invites', {
      authorization: world.users.owner.auth,
      'content-type': 'application/x-www-form-urlencoded',
      'transfer-encoding': 'chunked',
    }),
  );
  expect(await uploads.server.app.prisma.invitation.count({ where: { organizationId: world.org.id } })).toBe(0);
});

test('a chunked GraphQL body over 1 MiB is refused with 413 before it ends (Yoga has no limit of its own)', async () => {
  const post = openPost('/graphql', {
    authorization: world.users.owner.auth,
    'content-type': 'application/json',
    'transfer-encoding': 'chunked',
  });
  await expectRefusedWhileArriving(post, new TextEncoder().encode('{"query":"{ me { id } }","padding":"'));
});

test('an upload declaring 50 MiB with a wrong key is answered 401 after 64 KiB of its body', async () => {
  const boundary = 'unfinished-boundary';
  const wrongKey = `Basic ${Buffer.from(`${world.users.member.email}:${'y'.repeat(32)}`).toString('base64')}`;
  const post = openPost('/api/v1/user_uploads', {
    authorization: wrongKey,
    'content-type': `multipart/form-data; boundary=${boundary}`,
    'content-length': String(50 * MiB),
  });
  const keysBefore = await uploads.storedKeys();
  await post.write(
    Buffer.from(
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`,
    ),
  );
  await post.write(CHUNK);
  try {
    expect(await jsonOf(await post.answer)).toEqual({
      status: 401,
      body: { result: 'error', msg: 'Invalid API key', code: 'UNAUTHORIZED' },
    });
  } finally {
    post.req.destroy();
  }
  expect(await uploads.storedKeys()).toEqual(keysBefore);
});

test('a 6 MiB file goes to S3 as a multipart upload (a small one in one request) and is served back byte for byte', async () => {
  /** The upload's URL and how the S3 server says it stored the object. */
  const store = async (name: string, content: Uint8Array) => {
    const uploaded = await postFiles(uploads.server.url, '/user_uploads', world.users.member.auth, [{ name, content }]);
    expect(uploaded.status).toBe(200);
    const key = `files/${(uploaded.body.url as string).slice('/user_uploads/'.length)}`;
    return {
      url: uploaded.body.url as string,
      stored: uploads
        .s3Events()
        .filter((e) => e.key === key)
        .map(({ name, size }) => ({ name, size })),
    };
  };
  const small = await store('small.bin', new Uint8Array(1024));
  expect(small.stored).toEqual([{ name: 'ObjectCreated:Put', size: 1024 }]);
  const content = new Uint8Array(6 * MiB + 123).map((_, i) => (i * 7919) % 251);
  const uploaded = await store('large.bin', content);
  // CompleteMultipartUpload is the S3 server's 'ObjectCreated:Post'.
  expect(uploaded.stored).toEqual([{ name: 'ObjectCreated:Post', size: content.length }]);
  const served = await fetch(`${uploads.server.url}${uploaded.url}`, { headers: { authorization: world.users.member.auth } });
  expect(served.status).toBe(200);
  const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
  expect(sha256(new Uint8Array(await served.arrayBuffer()))).toBe(sha256(content));
});
