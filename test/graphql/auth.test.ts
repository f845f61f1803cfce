// Credentials on the GraphQL door: the REST door's messages and codes, HTTP 401, and nothing of
// the server's internals (such as the HTTP hints it gives Yoga) in the body, whatever the client accepts.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { basicAuth, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const ACCEPTS = [
  'application/json',
  'application/graphql-response+json, application/json, multipart/mixed',
  'application/graphql-response+json',
  'multipart/mixed',
];

test.each(ACCEPTS)('a wrong key answers 401 UNAUTHORIZED with a clean body (Accept: %s)', async (accept) => {
  const response = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { accept, 'content-type': 'application/json', authorization: basicAuth('nobody@example.com', 'x'.repeat(32)) },
    body: JSON.stringify({ query: '{ me { email } }' }),
  });
  expect(response.status).toBe(401);
  expect(response.headers.get('www-authenticate')).toBe('Basic realm="zulip"');
  const text = await response.text();
  expect(text).toContain('"code":"UNAUTHORIZED"');
  expect(text).toContain('Invalid API key');
  expect(text).not.toContain('"http"');
});

test('without credentials: 401 with the reference message', async () => {
  const response = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ me { email } }' }),
  });
  expect(response.status).toBe(401);
  expect(await response.json()).toEqual({
    errors: [{ message: 'Not logged in: API authentication or user session required', extensions: { code: 'UNAUTHORIZED' } }],
  });
});
