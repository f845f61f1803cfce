// Documents named by hash: the trusted documents of the manifest that `npm run codegen` writes
// (test/generated/persisted-documents.json, from the documents of these tests), trusted-only mode,
// automatic persisted queries, cacheable GET answers, and the settings that turn them on.
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DocumentNode } from 'graphql';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { DEFAULT_GRAPHQL_LIMITS } from '../../src/graphql/limits.js';
import { PERSISTED_QUERY_ONLY_MESSAGE } from '../../src/graphql/persisted-documents.js';
import { StartupError } from '../../src/startup-error.js';
import { graphql } from '../generated/gql.js';
import { callApi } from '../support/rest.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { eventually, subscribe, type OpenSubscription } from '../support/subscriptions.js';
import { createWorld, type World } from '../support/world.js';

const MANIFEST = fileURLToPath(new URL('../generated/persisted-documents.json', import.meta.url));

const TrustedMe = graphql(`
  query TrustedMe {
    me {
      email
      role
    }
  }
`);

const TrustedEmoji = graphql(`
  query TrustedEmoji($includeDeactivated: Boolean) {
    customEmoji(includeDeactivated: $includeDeactivated) {
      name
      deactivated
    }
  }
`);

const TrustedDeactivateEmoji = graphql(`
  mutation TrustedDeactivateEmoji($emojiName: String!) {
    deactivateCustomEmoji(emojiName: $emojiName) {
      __typename
    }
  }
`);

/** The id the client preset gives a document (`sha256:<hex>`), and the bare hex APQ sends. */
const documentId = (document: DocumentNode) => (document as unknown as { __meta__: { hash: string } }).__meta__.hash;
const hexOf = (document: DocumentNode) => documentId(document).slice('sha256:'.length);
const apq = (sha256Hash: string) => ({ persistedQuery: { version: 1, sha256Hash } });
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const trustedDocuments = (env: Record<string, string>) => loadConfig(env).graphqlTrustedDocuments;

let open: TestServer;
let trustedOnly: TestServer;
let w: World;
beforeAll(async () => {
  open = await startTestServer({ graphqlTrustedDocuments: trustedDocuments({ GRAPHQL_TRUSTED_DOCUMENTS: MANIFEST }) });
  trustedOnly = await startTestServer({
    graphqlTrustedDocuments: trustedDocuments({ GRAPHQL_TRUSTED_DOCUMENTS: MANIFEST, GRAPHQL_TRUSTED_ONLY: 'true' }),
  });
  w = await createWorld(open.app.prisma);
});
afterAll(async () => {
  await open?.close();
  await trustedOnly?.close();
});

interface Answer {
  status: number;
  body: unknown;
  headers: Headers;
}

async function answer(response: Response): Promise<Answer> {
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null, headers: response.headers };
}

async function post(server: TestServer, body: object, authorization?: string): Promise<Answer> {
  return answer(
    await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
      body: JSON.stringify(body),
    }),
  );
}

async function get(
  server: TestServer,
  params: Record<string, object | string>,
  authorization?: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const query = new URLSearchParams(
    Object.entries(params).map(([name, value]) => [name, typeof value === 'string' ? value : JSON.stringify(value)]),
  );
  return answer(
    await fetch(`${server.url}/graphql?${query}`, {
      headers: { accept: 'application/json', ...(authorization ? { authorization } : {}), ...headers },
    }),
  );
}

const meOf = (user: 'member' | 'admin' | 'owner') => ({
  data: { me: { email: w.users[user].email, role: { member: 'MEMBER', admin: 'ADMINISTRATOR', owner: 'OWNER' }[user] } },
});
const error = (message: string, code: string) => ({ errors: [{ message, extensions: { code } }] });
const NOT_FOUND = error('PersistedQueryNotFound', 'PERSISTED_QUERY_NOT_FOUND');
const ONLY_TRUSTED = error(PERSISTED_QUERY_ONLY_MESSAGE, 'PERSISTED_QUERY_ONLY');
const MISMATCH = error('PersistedQueryMismatch', 'PERSISTED_QUERY_MISMATCH');

describe('a manifest document runs by its hash', () => {
  test('by documentId and by APQ hash, over POST and GET, with or without trusted-only mode', async () => {
    for (const server of [open, trustedOnly]) {
      const ways = [
        () => post(server, { documentId: documentId(TrustedMe) }, w.users.member.auth),
        () => post(server, { extensions: apq(hexOf(TrustedMe)) }, w.users.member.auth),
        () => get(server, { documentId: documentId(TrustedMe) }, w.users.member.auth),
        () => get(server, { extensions: apq(hexOf(TrustedMe)) }, w.users.member.auth),
      ];
      for (const way of ways) expect(await way()).toMatchObject({ status: 200, body: meOf('member') });
    }
  });

  test('with variables, over GET too', async () => {
    const expected = {
      data: {
        customEmoji: [
          { name: 'green_tick', deactivated: false },
          { name: 'lighthouse', deactivated: false },
        ],
      },
    };
    const byPost = await post(
      trustedOnly,
      { documentId: documentId(TrustedEmoji), variables: { includeDeactivated: false } },
      w.users.member.auth,
    );
    expect(byPost).toMatchObject({ status: 200, body: expected });
    const byGet = await get(
      trustedOnly,
      { extensions: apq(hexOf(TrustedEmoji)), variables: { includeDeactivated: false } },
      w.users.member.auth,
    );
    expect(byGet).toMatchObject({ status: 200, body: expected });
  });

  test("the manifest is what codegen wrote: every id is the sha256 of its document, and the tests' documents are in it", async () => {
    const manifest = trustedDocuments({ GRAPHQL_TRUSTED_DOCUMENTS: MANIFEST }).manifest!;
    for (const [hash, document] of manifest) expect(sha256(document)).toBe(hash);
    expect(manifest.get(hexOf(TrustedMe))).toBe('query TrustedMe { me { email role } }');
  });

  test('a hashed document is still refused a mutation over GET, and still needs credentials', async () => {
    const mutation = await get(
      trustedOnly,
      { documentId: documentId(TrustedDeactivateEmoji), variables: { emojiName: 'lighthouse' } },
      w.users.owner.auth,
    );
    expect(mutation).toMatchObject({
      status: 405,
      body: error('Can only perform a mutation operation from a POST request.', 'BAD_REQUEST'),
    });
    const anonymous = await post(trustedOnly, { documentId: documentId(TrustedMe) });
    expect(anonymous).toMatchObject({
      status: 401,
      body: error('Not logged in: API authentication or user session required', 'UNAUTHORIZED'),
    });
    expect(await emojiState('lighthouse')).toBe(false);
  });

  test('CSRF prevention applies: a form-encoded persisted mutation without the header is refused and changes nothing', async () => {
    const body = new URLSearchParams({
      extensions: JSON.stringify(apq(hexOf(TrustedDeactivateEmoji))),
      variables: JSON.stringify({ emojiName: 'lighthouse' }),
    });
    const refused = await fetch(`${trustedOnly.url}/graphql`, { method: 'POST', body, headers: { authorization: w.users.owner.auth } });
    expect(await answer(refused)).toMatchObject({ status: 403, body: { errors: [{ message: 'Required CSRF header(s) not present' }] } });
    expect(await emojiState('lighthouse')).toBe(false);
  });
});

async function emojiState(name: string): Promise<boolean> {
  const row = await open.app.prisma.customEmoji.findFirstOrThrow({ where: { organizationId: w.org.id, name } });
  return row.deactivated;
}

describe('trusted-only mode', () => {
  const ownDocument = '{ me { email role } }';

  test('refuses a document of their own to members and callers without credentials, before it is parsed', async () => {
    for (const authorization of [w.users.member.auth, w.users.moderator.auth, undefined]) {
      expect(await post(trustedOnly, { query: ownDocument }, authorization)).toMatchObject({ status: 400, body: ONLY_TRUSTED });
      expect(await get(trustedOnly, { query: ownDocument }, authorization)).toMatchObject({ status: 400, body: ONLY_TRUSTED });
    }
    expect(await post(trustedOnly, { query: '{ me { ' }, w.users.member.auth)).toMatchObject({ status: 400, body: ONLY_TRUSTED });
  });

  test('administrators and owners keep any document (GraphiQL works for them)', async () => {
    for (const user of ['admin', 'owner'] as const) {
      expect(await post(trustedOnly, { query: ownDocument }, w.users[user].auth)).toMatchObject({ status: 200, body: meOf(user) });
    }
    const introspection = await post(trustedOnly, { query: '{ __schema { queryType { name } } }' }, w.users.admin.auth);
    expect(introspection).toMatchObject({ status: 200, body: { data: { __schema: { queryType: { name: 'Query' } } } } });
  });

  test("refuses APQ registration to a member; an administrator's registration serves administrators only", async () => {
    const query = 'query MemberApq { me { email } }';
    const registration = { query, extensions: apq(sha256(query)) };
    expect(await post(trustedOnly, registration, w.users.member.auth)).toMatchObject({ status: 400, body: ONLY_TRUSTED });
    expect(await post(trustedOnly, { extensions: apq(sha256(query)) }, w.users.member.auth)).toMatchObject({
      status: 404,
      body: NOT_FOUND,
    });
    expect(await post(trustedOnly, registration, w.users.admin.auth)).toMatchObject({
      status: 200,
      body: { data: { me: { email: w.users.admin.email } } },
    });
    expect(await post(trustedOnly, { extensions: apq(sha256(query)) }, w.users.admin.auth)).toMatchObject({
      status: 200,
      body: { data: { me: { email: w.users.admin.email } } },
    });
    expect(await post(trustedOnly, { extensions: apq(sha256(query)) }, w.users.member.auth)).toMatchObject({
      status: 404,
      body: NOT_FOUND,
    });
  });
});

describe('unknown and false hashes', () => {
  test('an unknown hash, or an id that is no sha256, answers 404 PERSISTED_QUERY_NOT_FOUND', async () => {
    const unknown = sha256('query Nobody { me { id } }');
    for (const server of [open, trustedOnly]) {
      for (const body of [
        { documentId: `sha256:${unknown}` },
        { documentId: unknown },
        { extensions: apq(unknown) },
        { documentId: 'sha256:xyz' },
        { documentId: 'x'.repeat(10_000) },
      ]) {
        expect(await post(server, body, w.users.member.auth), JSON.stringify(body).slice(0, 80)).toMatchObject({
          status: 404,
          body: NOT_FOUND,
        });
      }
      expect(await get(server, { documentId: `sha256:${unknown}` }, w.users.member.auth)).toMatchObject({ status: 404, body: NOT_FOUND });
    }
  });

  test('neither a query nor an id: 400 naming both', async () => {
    expect(await post(open, { variables: {} }, w.users.member.auth)).toMatchObject({
      status: 400,
      body: error(
        'Must provide query string or the id of a persisted document (documentId, or extensions.persistedQuery.sha256Hash).',
        'BAD_REQUEST',
      ),
    });
  });

  test('a query sent with a hash that is not its sha256 is refused and registers nothing', async () => {
    const query = 'query Mismatched { me { fullName } }';
    const wrongHash = sha256(`${query} `);
    expect(await post(open, { query, extensions: apq(wrongHash) }, w.users.member.auth)).toMatchObject({ status: 400, body: MISMATCH });
    expect(await post(open, { extensions: apq(wrongHash) }, w.users.member.auth)).toMatchObject({ status: 404, body: NOT_FOUND });
    // A manifest hash with other text neither runs that text nor changes what the hash names.
    expect(await post(open, { query, extensions: apq(hexOf(TrustedMe)) }, w.users.member.auth)).toMatchObject({
      status: 400,
      body: MISMATCH,
    });
    expect(await post(open, { extensions: apq(hexOf(TrustedMe)) }, w.users.member.auth)).toMatchObject({
      status: 200,
      body: meOf('member'),
    });
  });
});

test('automatic persisted queries without trusted-only mode: hash alone, then hash and query, then hash alone (POST and GET)', async () => {
  const query = 'query ApqRoundTrip { me { email role } }';
  const hash = sha256(query);
  expect(await post(open, { extensions: apq(hash) }, w.users.member.auth)).toMatchObject({ status: 404, body: NOT_FOUND });
  expect(await get(open, { extensions: apq(hash) }, w.users.member.auth)).toMatchObject({ status: 404, body: NOT_FOUND });
  expect(await post(open, { query, extensions: apq(hash) }, w.users.member.auth)).toMatchObject({ status: 200, body: meOf('member') });
  expect(await post(open, { extensions: apq(hash) }, w.users.member.auth)).toMatchObject({ status: 200, body: meOf('member') });
  expect(await get(open, { extensions: apq(hash) }, w.users.admin.auth)).toMatchObject({ status: 200, body: meOf('admin') });
  expect(await post(open, { query: '{ me { email role } }' }, w.users.member.auth)).toMatchObject({ status: 200, body: meOf('member') });
});

describe('GET answers', () => {
  test('private to the caller, revalidated with an ETag: 304 when unchanged, a new answer for another caller or a change', async () => {
    const params = { documentId: documentId(TrustedEmoji), variables: { includeDeactivated: true } };
    const first = await get(trustedOnly, params, w.users.member.auth);
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toBe('private, no-cache');
    expect(first.headers.get('vary')).toMatch(/Authorization, Cookie, Accept/);
    const etag = first.headers.get('etag')!;
    // Weak (W/) when the answer was compressed.
    expect(etag).toMatch(/^(W\/)?"[A-Za-z0-9_-]{27}"$/);

    const again = await get(trustedOnly, params, w.users.member.auth, { 'if-none-match': etag });
    expect(again).toMatchObject({ status: 304, body: null });
    expect(again.headers.get('etag')).toBe(etag.replace(/^W\//, ''));
    expect(again.headers.get('cache-control')).toBe('private, no-cache');
    expect(await get(trustedOnly, params, w.users.member.auth, { 'if-none-match': `"other", ${etag.replace(/^W\//, '')}` })).toMatchObject({
      status: 304,
    });

    const otherCaller = await get(trustedOnly, { documentId: documentId(TrustedMe) }, w.users.admin.auth, { 'if-none-match': etag });
    expect(otherCaller).toMatchObject({ status: 200, body: meOf('admin') });
    expect(otherCaller.headers.get('etag')).not.toBe(etag);

    await open.app.prisma.customEmoji.updateMany({ where: { organizationId: w.org.id, name: 'green_tick' }, data: { deactivated: true } });
    const changed = await get(trustedOnly, params, w.users.member.auth, { 'if-none-match': etag });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
    await open.app.prisma.customEmoji.updateMany({ where: { organizationId: w.org.id, name: 'green_tick' }, data: { deactivated: false } });
  });

  test('refusals are never stored', async () => {
    for (const refused of [
      await get(trustedOnly, { documentId: `sha256:${sha256('nothing')}` }, w.users.member.auth),
      await get(trustedOnly, { documentId: documentId(TrustedMe) }),
      await get(trustedOnly, { query: '{ me { email } }' }, w.users.member.auth),
    ]) {
      expect(refused.status).toBeGreaterThanOrEqual(400);
      expect(refused.headers.get('cache-control')).toBe('no-store');
      expect(refused.headers.get('etag')).toBeNull();
    }
  });

  test('POST answers carry no cache headers', async () => {
    const byPost = await post(trustedOnly, { documentId: documentId(TrustedMe) }, w.users.member.auth);
    expect(byPost.headers.get('cache-control')).toBeNull();
    expect(byPost.headers.get('etag')).toBeNull();
  });
});

test('a document named by hash goes through the same limits as one sent whole', async () => {
  const tight = await startTestServer({
    graphqlTrustedDocuments: trustedDocuments({ GRAPHQL_TRUSTED_DOCUMENTS: MANIFEST }),
    graphqlLimits: { ...DEFAULT_GRAPHQL_LIMITS, authenticated: { ...DEFAULT_GRAPHQL_LIMITS.authenticated, tokens: 12, depth: 1 } },
  });
  try {
    const text = trustedDocuments({ GRAPHQL_TRUSTED_DOCUMENTS: MANIFEST }).manifest!.get(hexOf(TrustedEmoji));
    const whole = await post(tight, { query: text }, w.users.member.auth);
    expect(whole.body).toMatchObject({
      errors: [
        { message: 'Syntax Error: Document contains more that 12 tokens. Parsing aborted.', extensions: { code: 'GRAPHQL_PARSE_FAILED' } },
      ],
    });
    const byHash = await post(tight, { documentId: documentId(TrustedEmoji) }, w.users.member.auth);
    expect([byHash.status, byHash.body]).toEqual([whole.status, whole.body]);
    const deep = await post(tight, { documentId: documentId(TrustedMe) }, w.users.member.auth);
    expect(deep.body).toMatchObject({
      errors: [{ message: 'Syntax Error: Query depth limit of 1 exceeded, found 2.', extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }],
    });
  } finally {
    await tight.close();
  }
});

describe('settings', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'trusted-documents-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const manifestFile = async (name: string, content: string) => {
    const path = join(dir, name);
    await writeFile(path, content);
    return path;
  };
  const refusal = (env: Record<string, string>) => {
    try {
      loadConfig(env);
    } catch (error) {
      expect(error).toBeInstanceOf(StartupError);
      return (error as Error).message;
    }
    throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
  };

  test('off unless set; the generated manifest loads; GRAPHQL_TRUSTED_ONLY takes true or false', () => {
    expect(loadConfig({}).graphqlTrustedDocuments).toEqual({ manifest: null, only: false });
    for (const value of ['false', 'FALSE', '0', 'no', '']) expect(trustedDocuments({ GRAPHQL_TRUSTED_ONLY: value }).only).toBe(false);
    for (const value of ['true', 'True', '1', 'yes'])
      expect(trustedDocuments({ GRAPHQL_TRUSTED_DOCUMENTS: MANIFEST, GRAPHQL_TRUSTED_ONLY: value }).only).toBe(true);
    expect(trustedDocuments({ GRAPHQL_TRUSTED_DOCUMENTS: MANIFEST }).manifest!.size).toBeGreaterThan(3);
    expect(refusal({ GRAPHQL_TRUSTED_DOCUMENTS: MANIFEST, GRAPHQL_TRUSTED_ONLY: 'sure' })).toBe(
      'GRAPHQL_TRUSTED_ONLY must be true or false, got "sure"',
    );
  });

  test('trusted-only mode without a manifest stops the start', () => {
    expect(refusal({ GRAPHQL_TRUSTED_ONLY: 'true' })).toBe(
      'GRAPHQL_TRUSTED_ONLY=true needs the manifest of trusted documents: set GRAPHQL_TRUSTED_DOCUMENTS=<path to persisted-documents.json>',
    );
  });

  test('a missing, unreadable, malformed or false manifest stops the start, naming the file and the problem', async () => {
    const missing = join(dir, 'missing.json');
    expect(refusal({ GRAPHQL_TRUSTED_DOCUMENTS: missing })).toBe(`GRAPHQL_TRUSTED_DOCUMENTS: ${missing} cannot be read (ENOENT)`);
    expect(refusal({ GRAPHQL_TRUSTED_DOCUMENTS: dir })).toBe(`GRAPHQL_TRUSTED_DOCUMENTS: ${dir} cannot be read (EISDIR)`);
    const notJson = await manifestFile('not-json.json', '{"sha256:');
    expect(refusal({ GRAPHQL_TRUSTED_DOCUMENTS: notJson })).toMatch(new RegExp(`^GRAPHQL_TRUSTED_DOCUMENTS: ${notJson} is not JSON \\(`));
    for (const [name, content] of [
      ['array.json', '[]'],
      ['null.json', 'null'],
      ['string.json', '"query"'],
    ]) {
      const path = await manifestFile(name, content);
      expect(refusal({ GRAPHQL_TRUSTED_DOCUMENTS: path })).toBe(
        `GRAPHQL_TRUSTED_DOCUMENTS: ${path} must hold a JSON object of "sha256:<hex>": "<document>" entries (npm run codegen writes one)`,
      );
    }
    const good = '{ me { id } }';
    const entries: [string, Record<string, unknown>, string][] = [
      ['bad-id.json', { 'md5:abc': good }, '"md5:abc" is not named "sha256:<64 hex digits>"'],
      ['not-string.json', { [`sha256:${sha256(good)}`]: { query: good } }, `"sha256:${sha256(good)}" is not a document string`],
      ['false-hash.json', { [`sha256:${sha256('other')}`]: good }, `"sha256:${sha256('other')}" is not the sha256 of its document`],
      [
        'not-graphql.json',
        { [`sha256:${sha256('{ me {')}`]: '{ me {' },
        `"sha256:${sha256('{ me {')}" is not a GraphQL document (Syntax Error: Expected Name, found <EOF>.)`,
      ],
    ];
    for (const [name, content, problem] of entries) {
      const path = await manifestFile(name, JSON.stringify(content));
      expect(refusal({ GRAPHQL_TRUSTED_DOCUMENTS: path })).toBe(`GRAPHQL_TRUSTED_DOCUMENTS: ${path}: the entry ${problem}`);
    }
    const bare = await manifestFile('bare.json', JSON.stringify({ [sha256(good)]: good }));
    expect(trustedDocuments({ GRAPHQL_TRUSTED_DOCUMENTS: bare }).manifest).toEqual(new Map([[sha256(good), good]]));
  });
});

describe('trusted-only mode over WebSocket (graphql-ws sends the text)', () => {
  const TrustedEmojiChanges = graphql(`
    subscription TrustedEmojiChanges {
      customEmojiChanged {
        change
      }
    }
  `);

  /**
   * Accepted: each subscription follows the log and receives the organization's next event (a
   * deactivation through REST, which trusted-only mode does not concern).
   */
  async function expectAccepted(world: World, subscriptions: OpenSubscription<unknown>[], expected: unknown) {
    try {
      await eventually(() => trustedOnly.app.eventStreams!.size === subscriptions.length, 15_000);
      expect((await callApi(trustedOnly.url, 'DELETE', '/realm/emoji/lighthouse', { authorization: world.users.owner.auth })).status).toBe(
        200,
      );
      for (const subscription of subscriptions) expect(await subscription.next()).toEqual(expected);
    } finally {
      await Promise.all(subscriptions.map((subscription) => subscription.close()));
    }
    await eventually(() => trustedOnly.app.eventStreams!.size === 0);
  }

  test("a member may run the manifest's text only; an administrator any document", async () => {
    const world = await createWorld(trustedOnly.app.prisma);
    const manifest = JSON.parse(await readFile(MANIFEST, 'utf8')) as Record<string, string>;
    const text = manifest[documentId(TrustedEmojiChanges)]!;
    const own = 'subscription Own { customEmojiChanged { change } }';
    const refused = subscribe('ws', trustedOnly.url, world.users.member.auth, own, {});
    expect(await refused.next()).toMatchObject({
      errors: [{ message: PERSISTED_QUERY_ONLY_MESSAGE, extensions: { code: 'PERSISTED_QUERY_ONLY' } }],
    });
    await refused.close();
    const asMember = subscribe('ws', trustedOnly.url, world.users.member.auth, text, {});
    const asAdmin = subscribe('ws', trustedOnly.url, world.users.admin.auth, own, {});
    await expectAccepted(world, [asMember, asAdmin], { data: { customEmojiChanged: { change: 'DEACTIVATED' } } });
  });

  test('a message with an empty query names a manifest document by hash in its extensions', async () => {
    const world = await createWorld(trustedOnly.app.prisma);
    const byHash = [{ documentId: documentId(TrustedEmojiChanges) }, apq(hexOf(TrustedEmojiChanges))].map((extensions) =>
      subscribe('ws', trustedOnly.url, world.users.member.auth, '', {}, { extensions }),
    );
    await expectAccepted(world, byHash, { data: { customEmojiChanged: { change: 'DEACTIVATED' } } });
    const unknown = subscribe('ws', trustedOnly.url, w.users.member.auth, '', {}, { extensions: apq(sha256('{ me { id } }')) });
    expect(await unknown.next()).toMatchObject({
      errors: [{ message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }],
    });
    await unknown.close();
    const none = subscribe('ws', trustedOnly.url, w.users.member.auth, '', {}, { extensions: {} });
    expect(await none.next()).toMatchObject({ errors: [{ extensions: { code: 'BAD_REQUEST' } }] });
    await none.close();
  });
});
