import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld } from '../support/world.js';

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

  test('bodies over 1 MiB are refused before anything reads them, on both doors', async () => {
    const world = await createWorld(server.app.prisma);
    const huge = Array.from({ length: 60_000 }, (_, i) => `person${i}@elsewhere.example`).join(',');
    const rest = await fetch(`${server.url}/api/v1/invites`, {
      method: 'POST',
      headers: { authorization: world.users.owner.auth },
      body: new URLSearchParams({ invitee_emails: huge, stream_ids: '[]' }),
    });
    const tooLarge = { result: 'error', msg: 'Request body too large (limit: 1 MiB)', code: 'BAD_REQUEST' };
    expect({ status: rest.status, body: await rest.json() }).toEqual({ status: 413, body: tooLarge });
    const graphql = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { authorization: world.users.owner.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ me { id } }', variables: { padding: huge } }),
    });
    expect({ status: graphql.status, body: await graphql.json() }).toEqual({ status: 413, body: tooLarge });
    expect(await server.app.prisma.invitation.count({ where: { organizationId: world.org.id } })).toBe(0);
  });

  test('a chunked body (no declared length) is counted as it arrives: under 1 MiB read, over it refused', async () => {
    const world = await createWorld(server.app.prisma);
    const chunked = (text: string) => {
      const bytes = new TextEncoder().encode(text);
      const body = new ReadableStream({
        start(controller) {
          for (let at = 0; at < bytes.length; at += 64 * 1024) controller.enqueue(bytes.subarray(at, at + 64 * 1024));
          controller.close();
        },
      });
      const headers = { authorization: world.users.owner.auth, 'content-type': 'application/x-www-form-urlencoded' };
      return fetch(`${server.url}/api/v1/invites`, { method: 'POST', headers, body, duplex: 'half' } as RequestInit);
    };
    // The small one first: the server closes a connection whose refused body it did not read.
    const accepted = await chunked(new URLSearchParams({ invitee_emails: 'chunked@elsewhere.example', stream_ids: '[]' }).toString());
    expect({ status: accepted.status, body: await accepted.json() }).toEqual({ status: 200, body: { result: 'success', msg: '' } });
    const huge = Array.from({ length: 60_000 }, (_, i) => `person${i}@elsewhere.example`).join(',');
    const refused = await chunked(new URLSearchParams({ invitee_emails: huge, stream_ids: '[]' }).toString());
    expect({ status: refused.status, body: await refused.json() }).toEqual({
      status: 413,
      body: { result: 'error', msg: 'Request body too large (limit: 1 MiB)', code: 'BAD_REQUEST' },
    });
    expect(await server.app.prisma.invitation.count({ where: { organizationId: world.org.id } })).toBe(1);
  });
});
