// rate-limits.md Decisions 5 and 6 over real HTTP (checks RL5 and RL6): /graphql carries the same
// X-RateLimit-* headers as REST, one request per operation on the same per-user counter;
// Query.rateLimit reports what those headers say and the document's cost; a dry run prices the
// document without running its other fields or counting; `X-GraphQL-Cost: include` asks for
// extensions.cost. Each test has fresh users of its own world, so its counts start at zero.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { countStatementsMatching } from '../../src/db/statement-counter.js';
import { DEFAULT_GRAPHQL_LIMITS } from '../../src/graphql/limits.js';
import { callApi } from '../support/rest.js';
import { basicAuth, startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

/** The limited server's largest cost: the bare queries below cost less, PRICEY more. */
const MAX_COST = 100;
let server: TestServer;
let limited: TestServer;
let w: World;
beforeAll(async () => {
  const graphqlLimits = { ...DEFAULT_GRAPHQL_LIMITS, authenticated: { ...DEFAULT_GRAPHQL_LIMITS.authenticated, cost: MAX_COST } };
  const rateLimits = [{ windowSeconds: 60, maxRequests: 3 }];
  [server, limited] = await Promise.all([startTestServer(), startTestServer({ rateLimits, graphqlLimits })]);
  w = await createWorld(server.app.prisma);
});
afterAll(() => Promise.all([server?.close(), limited?.close()]));

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

interface Extra {
  variables?: object;
  headers?: Record<string, string>;
}

async function graphql(url: string, authorization: string, query: string, extra: Extra = {}): Promise<Answer> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json', ...extra.headers },
    body: JSON.stringify({ query, variables: extra.variables }),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

const remainingOf = (answer: Answer) => Number(answer.headers.get('x-ratelimit-remaining'));
const BUDGET = '{ rateLimit { limit remaining used resetAt cost maxCost } }';
const PRICEY = 'me { attachmentPage(first: 50) { edges { node { id name messages { id } } } } }';

test('RL5: the headers on /graphql, one less per operation, and rateLimit equal to them', async () => {
  const auth = w.users.member.auth;
  const first = await graphql(server.url, auth, '{ me { email } }');
  const second = await graphql(server.url, auth, BUDGET);
  expect(first.status).toBe(200);
  expect(first.headers.get('x-ratelimit-limit')).toBe('200');
  expect(remainingOf(first)).toBe(199);
  expect(remainingOf(second)).toBe(198);
  const reset = Number(second.headers.get('x-ratelimit-reset'));
  expect(second.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/);
  expect(reset).toBeLessThanOrEqual(Math.trunc(Date.now() / 1000) + 60);
  const maxCost = DEFAULT_GRAPHQL_LIMITS.authenticated.cost;
  expect(second.body.data.rateLimit).toEqual({ limit: 200, remaining: 198, used: 2, resetAt: reset, cost: expect.any(Number), maxCost });
  expect(second.body.data.rateLimit.cost).toBeGreaterThanOrEqual(1);
  // REST and GraphQL share the counter.
  const rest = await callApi(server.url, 'GET', '/users/me', { authorization: auth });
  expect(rest.headers.get('x-ratelimit-remaining')).toBe('197');
});

test('RL6: a dry run prices the whole document, runs nothing else, and is not counted', async () => {
  const auth = w.users.owner.auth;
  const bare = await graphql(server.url, auth, '{ rateLimit { remaining cost } }');
  const dry = await graphql(server.url, auth, `{ rateLimit(dryRun: true) { remaining cost } ${PRICEY} }`);
  expect(dry.status).toBe(200);
  expect(dry.body.data).toEqual({ rateLimit: { remaining: bare.body.data.rateLimit.remaining, cost: expect.any(Number) } });
  expect(dry.body.data.rateLimit.cost).toBeGreaterThan(bare.body.data.rateLimit.cost);
  expect(remainingOf(dry)).toBe(remainingOf(bare));
  // Through a variable too.
  const priced = `query Price($dry: Boolean!) { rateLimit(dryRun: $dry) { remaining } ${PRICEY} }`;
  const viaVariable = await graphql(server.url, auth, priced, { variables: { dry: true } });
  expect(viaVariable.body.data).toEqual({ rateLimit: { remaining: remainingOf(bare) } });
  const next = await graphql(server.url, auth, `{ rateLimit(dryRun: false) { remaining } ${PRICEY} }`);
  expect(next.body.data.rateLimit.remaining).toBe(remainingOf(bare) - 1);
  expect(next.body.data.me.attachmentPage.edges.length).toBeGreaterThan(0);
});

test('X-GraphQL-Cost: include adds extensions.cost; without it the answer has none', async () => {
  const auth = w.users.admin.auth;
  const plain = await graphql(server.url, auth, `{ ${PRICEY} }`);
  expect(plain.body.extensions?.cost).toBeUndefined();
  const asked = await graphql(server.url, auth, `{ rateLimit { cost maxCost } ${PRICEY} }`, { headers: { 'x-graphql-cost': 'include' } });
  const { cost, maxCost } = asked.body.data.rateLimit;
  expect(asked.body.extensions.cost).toEqual({ requestedQueryCost: cost, maximumAvailable: maxCost });
  // A document refused for its cost says what it would have cost.
  const refused = await graphql(limited.url, w.users.admin.auth, `{ ${PRICEY} }`, { headers: { 'x-graphql-cost': 'include' } });
  expect(refused.body.errors[0].message).toMatch(/^Query cost limit of 100 exceeded/);
  expect(refused.body.extensions.cost).toEqual({ requestedQueryCost: expect.any(Number), maximumAvailable: MAX_COST });
  expect(refused.body.extensions.cost.requestedQueryCost).toBeGreaterThan(MAX_COST);
});

test('the 429 of /graphql carries the headers; a wrong key gets none; a dry run still reads the budget', async () => {
  const auth = w.users.moderator.auth;
  for (let i = 0; i < 3; i++) expect((await graphql(limited.url, auth, '{ me { email } }')).status).toBe(200);
  const dry = await graphql(limited.url, auth, `{ rateLimit(dryRun: true) { limit remaining used } }`);
  expect(dry.body.data.rateLimit).toEqual({ limit: 3, remaining: 0, used: 3 });
  const refused = await graphql(limited.url, auth, '{ me { email } }');
  expect(refused.status).toBe(429);
  expect(refused.body.errors[0]).toMatchObject({ message: 'API usage exceeded rate limit', extensions: { code: 'RATE_LIMIT_HIT' } });
  expect(refused.headers.get('x-ratelimit-limit')).toBe('3');
  expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
  expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
  // A document that does not validate counts all the same.
  const invalid = await graphql(limited.url, w.users.guest.auth, '{ noSuchField }');
  expect(invalid.status).toBe(200);
  expect(remainingOf(invalid)).toBe(2);
  const wrong = await graphql(limited.url, basicAuth(w.users.guest.email, 'x'.repeat(32)), '{ me { email } }');
  expect(wrong.status).toBe(401);
  expect(wrong.headers.get('x-ratelimit-limit')).toBeNull();
});

test('one limiter statement per GraphQL request: an operation, a dry run, several mutation fields, an invalid document', async () => {
  const limiterStatements = countStatementsMatching(/rate_counter/);
  const auth = w.users.bot.auth;
  const statementsOf = async (query: string) => {
    const before = limiterStatements();
    await graphql(server.url, auth, query);
    return limiterStatements() - before;
  };
  expect(await statementsOf('{ me { email } }')).toBe(1);
  expect(await statementsOf(`{ rateLimit(dryRun: true) { remaining } ${PRICEY} }`)).toBe(1);
  expect(await statementsOf('{ noSuchField }')).toBe(1);
  expect(await statementsOf('mutation { a: deleteAttachment(id: -1) { __typename } b: deleteAttachment(id: -2) { __typename } }')).toBe(1);
});
