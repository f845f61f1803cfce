// What callers without credentials can make the server hold. A document over
// GRAPHQL_ANONYMOUS_MAX_DOCUMENT_BYTES is refused (413) before it is parsed or registered; an APQ
// registration counts against the rate limit by the client's address; and 300 distinct 900 KB
// documents (150 of them registrations) grow a server process's RSS by less than 150 MiB, whether they
// are refused by size or, with the limit raised, parsed and kept by the byte-bounded caches.
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { runAnonymousDocuments } from '../../scripts/bench/anonymous-documents.js';
import { DEFAULT_GRAPHQL_LIMITS } from '../../src/graphql/limits.js';
import { listeningUrl, startServerProcessAsNpmStarts, stopServerProcess } from '../support/process.js';
import { runOnTestDatabase, startTestServer, testDatabaseUrl, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

const LIMIT = DEFAULT_GRAPHQL_LIMITS.anonymous.documentBytes;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const apq = (query: string) => ({ persistedQuery: { version: 1, sha256Hash: sha256(query) } });

/** `{ __typename }` after a comment, `bytes` long in UTF-8 (`filler` is one character of `fillerBytes` bytes). */
function documentOf(bytes: number, tag: string, filler = 'x', fillerBytes = 1): string {
  const head = `# ${tag} `;
  const tail = '\n{ __typename }';
  const room = bytes - Buffer.byteLength(head + tail);
  return head + filler.repeat(Math.floor(room / fillerBytes)) + 'x'.repeat(room % fillerBytes) + tail;
}

async function post(url: string, body: object, authorization?: string) {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization && { authorization }) },
    body: JSON.stringify(body),
  });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() };
}

const tooLarge = (limit: number, who: 'with' | 'without') => ({
  status: 413,
  retryAfter: null,
  body: {
    errors: [{ message: `Document too large: at most ${limit} bytes ${who} credentials.`, extensions: { code: 'DOCUMENT_TOO_LARGE' } }],
  },
});
const typename = { status: 200, retryAfter: null, body: { data: { __typename: 'Query' } } };
const notFound = {
  status: 404,
  retryAfter: null,
  body: { errors: [{ message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }] },
};

/** Rate counters of client addresses (APQ registrations): each test starts without any. */
const forgetAddressCounters = () => runOnTestDatabase(`DELETE FROM rate_counter WHERE key LIKE 'address:%'`);

describe('in one process', () => {
  let server: TestServer;
  let limited: TestServer;
  let world: World;
  beforeAll(async () => {
    server = await startTestServer();
    limited = await startTestServer({ rateLimits: [{ windowSeconds: 60, maxRequests: 3 }] });
    world = await createWorld(server.app.prisma);
  });
  afterAll(async () => {
    await server?.close();
    await limited?.close();
  });

  test(`without credentials a document of ${LIMIT} bytes runs, one byte more is refused with 413 (UTF-8 bytes, not characters); with credentials it runs`, async () => {
    const tag = `${Date.now()}`;
    expect(await post(server.url, { query: documentOf(LIMIT, `${tag}-at`) })).toEqual(typename);
    expect(await post(server.url, { query: documentOf(LIMIT + 1, `${tag}-over`) })).toEqual(tooLarge(LIMIT, 'without'));
    // 'é' is 2 bytes: fewer characters than the limit, more bytes.
    const accented = documentOf(LIMIT + 2, `${tag}-accented`, 'é', 2);
    expect(accented.length).toBeLessThan(LIMIT);
    expect(await post(server.url, { query: accented })).toEqual(tooLarge(LIMIT, 'without'));
    expect(await post(server.url, { query: documentOf(LIMIT + 1, `${tag}-member`) }, world.users.member.auth)).toEqual(typename);
  });

  test('a registration over the limit is refused before it is stored: its hash stays unknown', async () => {
    await forgetAddressCounters();
    const query = documentOf(LIMIT + 1, `${Date.now()}-registration`);
    expect(await post(server.url, { query, extensions: apq(query) })).toEqual(tooLarge(LIMIT, 'without'));
    expect(await post(server.url, { extensions: apq(query) })).toEqual(notFound);
  });

  test("anonymous APQ registrations count against the rate limit by the client's address; the refused one is not stored; plain queries do not count", async () => {
    await forgetAddressCounters();
    const tag = `${Date.now()}-rate`;
    const queries = Array.from({ length: 4 }, (_, i) => documentOf(1000, `${tag}-${i}`));
    for (const query of queries.slice(0, 3)) expect(await post(limited.url, { query, extensions: apq(query) })).toEqual(typename);
    const refused = await post(limited.url, { query: queries[3]!, extensions: apq(queries[3]!) });
    expect(refused).toMatchObject({ status: 429, body: { errors: [{ extensions: { code: 'RATE_LIMIT_HIT' } }] } });
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    expect(await post(limited.url, { extensions: apq(queries[3]!) })).toEqual(notFound);
    expect(await post(limited.url, { extensions: apq(queries[0]!) })).toEqual(typename);
    expect(await post(limited.url, { query: queries[3]! })).toEqual(typename);
  });
});

/** 270 MB sent and a process started: on a busy machine, longer than the default test time. */
const SCENARIO_MS = 300_000;

describe('a server process under 300 anonymous documents of 900 KB, 150 of them APQ registrations', () => {
  const dataDirs: string[] = [];
  afterAll(async () => {
    await Promise.all(dataDirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  async function scenario(env: NodeJS.ProcessEnv) {
    await forgetAddressCounters();
    const dataDir = await mkdtemp(join(tmpdir(), 'teamchat-anonymous-'));
    dataDirs.push(dataDir);
    const started = startServerProcessAsNpmStarts({ DATABASE_URL: await testDatabaseUrl(), DATA_DIR: dataDir, ...env });
    const url = await listeningUrl(started);
    // The process has answered GraphQL before it is measured (its first answers load code).
    expect((await post(url, { query: '{ __typename }' })).status).toBe(200);
    const result = await runAnonymousDocuments(url, started.child.pid!);
    await stopServerProcess(started);
    return result;
  }

  test(
    'refused by size (413) before they are parsed: RSS grows by less than 150 MiB',
    async () => {
      const result = await scenario({});
      expect(result.statuses).toEqual({ 413: 300 });
      expect(result.violations).toEqual([]);
    },
    SCENARIO_MS,
  );

  test(
    'with the limit raised they run, and the caches hold them by bytes: RSS grows by less than 150 MiB',
    async () => {
      const result = await scenario({ GRAPHQL_ANONYMOUS_MAX_DOCUMENT_BYTES: String(1024 * 1024) });
      expect(result.statuses).toEqual({ 200: 300 });
      expect(result.violations).toEqual([]);
    },
    SCENARIO_MS,
  );
});
