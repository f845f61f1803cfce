// graphql-jit leaves a throwing resolveType or isTypeOf under an asynchronous parent unhandled (the
// request never answers, the process meets an unhandled rejection); src/graphql/jit.ts guards them.
// A schema with such callbacks, served by Yoga with the server's compiled execution over real HTTP.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GraphQLInt, GraphQLList, GraphQLObjectType, GraphQLSchema, GraphQLUnionType } from 'graphql';
import { createYoga } from 'graphql-yoga';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { compiledExecution } from '../../src/graphql/jit.js';
import { capturedLogger } from '../support/log-capture.js';

interface Value {
  kind: string;
  n?: number;
}

const Plain = new GraphQLObjectType<Value>({ name: 'Plain', fields: { n: { type: GraphQLInt } } });
const Checked = new GraphQLObjectType<Value>({
  name: 'Checked',
  isTypeOf: (value) => {
    if (value.kind === 'broken') throw new Error('isTypeOf broke');
    return value.kind === 'checked';
  },
  fields: { n: { type: GraphQLInt } },
});
const Either = new GraphQLUnionType({
  name: 'Either',
  types: [Plain],
  resolveType: (value: Value) => {
    if (value.kind === 'throws') throw new Error('resolveType threw');
    if (value.kind === 'rejects') return Promise.reject(new Error('resolveType rejected'));
    return 'Plain';
  },
});
const later =
  <T>(value: T) =>
  async () =>
    value;
const schema = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: 'Query',
    fields: {
      either: { type: new GraphQLList(Either), resolve: later([{ kind: 'plain', n: 1 }, { kind: 'throws' }, { kind: 'rejects' }]) },
      checked: { type: new GraphQLList(Checked), resolve: later([{ kind: 'checked', n: 2 }, { kind: 'broken' }]) },
    },
  }),
});

const { logger: log, lines: logged } = capturedLogger('error');
const unhandled: unknown[] = [];
const noteUnhandled = (reason: unknown) => unhandled.push(reason);
let server: Server;
let url: string;

beforeAll(async () => {
  process.on('unhandledRejection', noteUnhandled);
  const yoga = createYoga({ schema, plugins: compiledExecution(schema, log), logging: false });
  server = createServer(yoga);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
});

afterAll(async () => {
  process.off('unhandledRejection', noteUnhandled);
  await new Promise((resolve) => server.close(resolve));
});

/**
 * The request's execution ended before its answer was sent; Node reports a rejection left unhandled
 * at the end of the event-loop turn it happened in. One more turn, and every one of them is reported.
 */
const unhandledRejectionsReported = () => new Promise((resolve) => setImmediate(resolve));

async function ask(query: string) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
    signal: AbortSignal.timeout(5000),
  });
  return { status: response.status, body: await response.json() };
}

test('a resolveType that throws or rejects makes its item a field error, logged, and the request answers', async () => {
  const { status, body } = await ask('{ either { ... on Plain { n } } }');
  expect(status).toBe(200);
  expect(body.data).toEqual({ either: [{ n: 1 }, null, null] });
  expect(body.errors.map((e: { path: unknown[] }) => e.path)).toEqual([
    ['either', 1],
    ['either', 2],
  ]);
  const failures = logged.filter((line) => line.msg === 'GraphQL resolveType of Either failed');
  expect(failures.map((line) => [line.level, line.err?.message])).toEqual([
    [50, 'resolveType threw'],
    [50, 'resolveType rejected'],
  ]);
  await unhandledRejectionsReported();
  expect(unhandled).toEqual([]);
});

test('an isTypeOf that throws makes its item a field error, logged, and the request answers', async () => {
  const { status, body } = await ask('{ checked { n } }');
  expect(status).toBe(200);
  expect(body.data).toEqual({ checked: [{ n: 2 }, null] });
  expect(body.errors.map((e: { path: unknown[] }) => e.path)).toEqual([['checked', 1]]);
  expect(logged.filter((line) => line.msg === 'GraphQL isTypeOf of Checked failed').map((line) => line.err?.message)).toEqual([
    'isTypeOf broke',
  ]);
  await unhandledRejectionsReported();
  expect(unhandled).toEqual([]);
});
