// Limits on GraphQL documents, tighter without credentials,
// applied to introspection too; suggestions hidden from anonymous callers; mutation fields capped and
// each one counted by the rate limit. Every edge is tested at the limit and one over.
import { getIntrospectionQuery } from 'graphql';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DEFAULT_GRAPHQL_LIMITS } from '../../src/graphql/limits.js';
import { storedInvitations } from '../support/invites.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

let server: TestServer;
let tight: TestServer;
let w: World;
beforeAll(async () => {
  server = await startTestServer();
  tight = await startTestServer({
    graphqlLimits: { ...DEFAULT_GRAPHQL_LIMITS, authenticated: { ...DEFAULT_GRAPHQL_LIMITS.authenticated, cost: 42 } },
    rateLimits: [{ windowSeconds: 3600, maxRequests: 8 }],
  });
  w = await createWorld(server.app.prisma);
});
afterAll(async () => {
  await server?.close();
  await tight?.close();
});

async function post(query: string, options: { auth?: string; variables?: object; url?: string } = {}) {
  const response = await fetch(`${options.url ?? server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(options.auth ? { authorization: options.auth } : {}) },
    body: JSON.stringify({ query, variables: options.variables }),
  });
  const body = (await response.json()) as { data?: any; errors?: { message: string; extensions?: { code?: string } }[] };
  return { status: response.status, ...body };
}

const anonymous = DEFAULT_GRAPHQL_LIMITS.anonymous;
const introspection = getIntrospectionQuery({
  descriptions: true,
  specifiedByUrl: true,
  directiveIsRepeatable: true,
  schemaDescription: true,
  inputValueDeprecation: true,
});
const member = () => w.users.member.auth;
/** Depth `levels + 3` and `9 + 3 * levels` tokens. */
const nested = (levels: number) => `{ __schema { queryType { ${'ofType { '.repeat(levels)}name${' }'.repeat(levels)} } } }`;
const aliases = (count: number, selection: string) => `{ ${Array.from({ length: count }, (_, i) => `a${i}: ${selection}`).join(' ')} }`;
const refusedWith = (message: RegExp) =>
  expect.objectContaining({ errors: expect.arrayContaining([expect.objectContaining({ message: expect.stringMatching(message) })]) });

describe('without credentials (introspection only)', () => {
  test("GraphiQL's full introspection query is allowed", async () => {
    const answer = await post(introspection);
    expect(answer.errors).toBeUndefined();
    expect(answer.data.__schema.types.length).toBeGreaterThan(10);
  });

  test('row 1: 35,000 aliased __schema queries are refused at once while /health answers', async () => {
    const attack = `${aliases(35_000, '__schema { ...S }')} fragment S on __Schema { types { name fields { name args { name } type { name ofType { name } } } } }`;
    const [answer, health] = await Promise.all([post(attack), fetch(`${server.url}/health`)]);
    // Past GRAPHQL_ANONYMOUS_MAX_DOCUMENT_BYTES it is not even parsed (test/security/anonymous-documents.test.ts).
    expect(answer.status).toBe(413);
    expect(answer).toEqual(refusedWith(/^Document too large/));
    expect(health.status).toBe(200);
    // Within the byte limit, the token limit refuses it while parsing.
    const smaller = `${aliases(2_000, '__schema { ...S }')} fragment S on __Schema { types { name } }`;
    expect(Buffer.byteLength(smaller)).toBeLessThan(anonymous.documentBytes);
    expect(await post(smaller)).toEqual(refusedWith(/more that 1000 tokens/));
  });

  test('two full introspections in one document exceed the cost limit', async () => {
    const [operation, ...fragments] = introspection.split(/\n\s*fragment /);
    const selection = operation!.slice(operation!.indexOf('{') + 1, operation!.lastIndexOf('}'));
    const twice = `query { a: ${selection} b: ${selection} } ${fragments.map((f) => `fragment ${f}`).join(' ')}`;
    expect(await post(twice)).toEqual(refusedWith(/Query cost limit of 60000 exceeded, found 106802/));
  });

  test(`aliases: ${anonymous.aliases} pass, one more is refused`, async () => {
    expect((await post(aliases(anonymous.aliases, '__schema { queryType { name } }'))).errors).toBeUndefined();
    expect(await post(aliases(anonymous.aliases + 1, '__schema { queryType { name } }'))).toEqual(
      refusedWith(/Aliases limit of 5 exceeded/),
    );
  });

  test(`depth: ${anonymous.depth} passes, one more is refused`, async () => {
    expect((await post(nested(anonymous.depth - 3))).errors).toBeUndefined();
    expect(await post(nested(anonymous.depth - 2))).toEqual(refusedWith(/Query depth limit of 24 exceeded, found 25/));
  });

  test(`tokens: ${anonymous.tokens} pass, one more is refused`, async () => {
    // 8 + 4 * 248 + typenames tokens; graphql-js counts all but the first, so 2 typenames make exactly 1000
    // (the unused variables are a validation error once parsed).
    const document = (typenames: number) =>
      `query Q(${Array.from({ length: 248 }, (_, i) => `$v${i}: Int`).join(' ')}) { ${'__typename '.repeat(typenames)}}`;
    expect((await post(document(2))).errors?.[0]?.message).toBe('Variable "$v0" is never used in operation "Q".');
    expect(await post(document(3))).toEqual(refusedWith(/more that 1000 tokens/));
  });

  test(`directives: ${anonymous.directives} pass, one more is refused`, async () => {
    const directives = (count: number) => `{ ${'__typename @include(if: true) '.repeat(count)}}`;
    expect((await post(directives(anonymous.directives))).errors).toBeUndefined();
    expect(await post(directives(anonymous.directives + 1))).toEqual(refusedWith(/Directives limit of 10 exceeded/));
  });

  test('row 7: 2,000 nested ofType answer a JSON 400, not a crash; so does nesting past the parser stack', async () => {
    for (const auth of [undefined, member()]) {
      const answer = await post(nested(2000), { auth });
      expect(answer.status).toBeLessThan(500);
      expect(answer.errors?.[0]?.message).toMatch(/Document contains more that (1000|2000) tokens/);
    }
  });

  test('row 12: no field suggestions without credentials; with credentials they stay', async () => {
    const hidden = await post('{ mee { email } }');
    expect(hidden.errors?.[0]?.message).toBe('Cannot query field "mee" on type "Query".');
    const shown = await post('{ mee { email } }', { auth: member() });
    expect(shown.errors?.[0]?.message).toMatch(/Did you mean "me"\?/);
  });
});

describe('parsing and validation are cached per kind of caller', () => {
  test('a document within the authenticated limits stays refused without credentials, in either order, each time', async () => {
    const document = aliases(anonymous.aliases + 1, '__schema { queryType { name } }');
    for (let round = 0; round < 2; round++) {
      expect((await post(document, { auth: member() })).errors).toBeUndefined();
      expect(await post(document)).toEqual(refusedWith(/Aliases limit of 5 exceeded/));
    }
  });

  test('suggestions stay hidden from anonymous callers after an authenticated caller saw them for the same document', async () => {
    const document = '{ mee { name } }';
    expect((await post(document, { auth: member() })).errors?.[0]?.message).toMatch(/Did you mean "me"\?/);
    expect((await post(document)).errors?.[0]?.message).toBe('Cannot query field "mee" on type "Query".');
    expect((await post(document, { auth: member() })).errors?.[0]?.message).toMatch(/Did you mean "me"\?/);
  });

  test('the cost is computed for each request: the same document costs what its variables include', async () => {
    const [operation, ...fragments] = introspection.split(/\n\s*fragment /);
    const selection = operation!.slice(operation!.indexOf('{') + 1, operation!.lastIndexOf('}'));
    const document = `query ($twice: Boolean!) { a: ${selection} b: ${selection.replace('__schema', '__schema @include(if: $twice)')} } ${fragments.map((f) => `fragment ${f}`).join(' ')}`;
    expect((await post(document, { variables: { twice: false } })).errors).toBeUndefined();
    expect(await post(document, { variables: { twice: true } })).toEqual(refusedWith(/Query cost limit of 60000 exceeded/));
    expect((await post(document, { variables: { twice: false } })).errors).toBeUndefined();
  });
});

describe('with credentials', () => {
  const limits = DEFAULT_GRAPHQL_LIMITS.authenticated;

  test('row 8: 10,000 aliases of attachments are refused at once', async () => {
    const answer = await post(aliases(10_000, 'attachments { attachments { messages { id } } }'), { auth: member() });
    expect(answer.status).toBeLessThan(500);
    expect(answer.errors?.[0]?.message).toMatch(/more that 2000 tokens/);
  });

  test(`aliases: ${limits.aliases} pass, one more is refused`, async () => {
    expect((await post(aliases(limits.aliases, 'me { email }'), { auth: member() })).errors).toBeUndefined();
    expect(await post(aliases(limits.aliases + 1, 'me { email }'), { auth: member() })).toEqual(
      refusedWith(/Aliases limit of 30 exceeded/),
    );
  });

  test('cost counts list fields ten times: 42 passes, 43 is refused', async () => {
    const tightWorld = await createWorld(tight.app.prisma);
    const query = (extra: string) => `{ a: invitableChannels { id } b: invitableChannels { id } me { email } ${extra} }`;
    const at = await post(query(''), { auth: tightWorld.users.owner.auth, url: tight.url });
    expect(at.errors).toBeUndefined();
    const over = await post(query('__typename'), { auth: tightWorld.users.owner.auth, url: tight.url });
    expect(over).toEqual(refusedWith(/Query cost limit of 42 exceeded, found 43/));
  });

  const invite = (i: number) =>
    `m${i}: sendInvitations(input: { inviteeEmails: ["limit-${i}-${Math.random()}@example.net"], streamIds: [] }) { __typename }`;
  const mutation = (count: number) => `mutation { ${Array.from({ length: count }, (_, i) => invite(i)).join(' ')} }`;

  test(`row 8: ${DEFAULT_GRAPHQL_LIMITS.mutationFields} mutation fields run; one more (or 300) is refused and writes nothing`, async () => {
    const own = await createWorld(server.app.prisma);
    const at = await post(mutation(DEFAULT_GRAPHQL_LIMITS.mutationFields), { auth: own.users.owner.auth });
    expect(Object.values(at.data).map((r: any) => r.__typename)).toEqual(Array(5).fill('SendInvitationsSuccess'));
    expect(await storedInvitations(server.app.prisma, own.org.id)).toHaveLength(5);
    for (const count of [DEFAULT_GRAPHQL_LIMITS.mutationFields + 1, 300]) {
      const over = await post(mutation(count), { auth: own.users.owner.auth });
      expect(over.data).toBeUndefined();
      expect(over.errors?.[0]?.message).toMatch(count === 300 ? /more that 2000 tokens/ : /at most 5 mutation fields; this one has 6/);
    }
    const viaFragments = await post(
      `mutation { ...A ...B } fragment A on Mutation { ${invite(1)} ${invite(2)} ${invite(3)} } fragment B on Mutation { ${invite(4)} ${invite(5)} ${invite(6)} }`,
      {
        auth: own.users.owner.auth,
      },
    );
    expect(viaFragments.errors?.[0]?.message).toBe('An operation may run at most 5 mutation fields; this one has 6.');
    expect(await storedInvitations(server.app.prisma, own.org.id)).toHaveLength(5);
    expect(await server.app.prisma.outboxEmail.count({ where: { organizationId: own.org.id } })).toBe(5);
  });

  test('each mutation field counts against the per-user rate limit (8 per hour here)', async () => {
    const own = await createWorld(tight.app.prisma);
    const auth = own.users.owner.auth;
    expect((await post(mutation(5), { auth, url: tight.url })).errors).toBeUndefined(); // 5 counted
    expect((await post(mutation(3), { auth, url: tight.url })).errors).toBeUndefined(); // 8 counted
    const refused = await post(mutation(1), { auth, url: tight.url });
    expect(refused.status).toBe(429);
    expect(refused.errors?.[0]?.extensions?.code).toBe('RATE_LIMIT_HIT');
    expect(await storedInvitations(tight.app.prisma, own.org.id)).toHaveLength(8);
  });

  const preview = (i: number) =>
    `p${i}: previewInvitations(input: { inviteeEmails: ["preview-${i}@example.net"], streamIds: [] }) { __typename }`;
  const previews = (count: number) => `{ ${Array.from({ length: count }, (_, i) => preview(i)).join(' ')} }`;

  test('previewInvitations fields count as mutation fields do: at most 5 an operation, each beyond the first one request more', async () => {
    const own = await createWorld(tight.app.prisma);
    const auth = own.users.owner.auth;
    expect((await post(previews(6), { auth, url: tight.url })).errors?.[0]?.message).toBe(
      'An operation may run at most 5 previewInvitations fields; this one has 6.',
    );
    expect((await post(previews(5), { auth, url: tight.url })).errors).toBeUndefined(); // 6 counted (the refused request 1)
    expect((await post(previews(2), { auth, url: tight.url })).errors).toBeUndefined(); // 8
    const refused = await post(previews(2), { auth, url: tight.url });
    expect(refused.status).toBe(429);
    expect(refused.errors?.[0]?.extensions?.code).toBe('RATE_LIMIT_HIT');
  });
});
