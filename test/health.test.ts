import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from './support/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

describe('foundation', () => {
  test('health check answers from the database', async () => {
    const response = await fetch(`${server.url}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  test('unknown routes answer JSON 404', async () => {
    const response = await fetch(`${server.url}/nowhere`);
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ result: 'error', msg: 'Not Found', code: 'BAD_REQUEST' });
  });

  test('GraphQL data without credentials is 401 UNAUTHORIZED; introspection is open', async () => {
    const post = (query: string) =>
      fetch(`${server.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
    const me = await post('{ me { id } }');
    expect(me.status).toBe(401);
    const body = await me.json();
    expect(body.errors[0].extensions.code).toBe('UNAUTHORIZED');
    const introspection = await post('{ __schema { queryType { name } } }');
    expect(introspection.status).toBe(200);
    expect((await introspection.json()).data.__schema.queryType.name).toBe('Query');
  });
});
