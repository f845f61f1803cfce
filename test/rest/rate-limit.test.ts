import { afterAll, beforeAll, expect, test } from 'vitest';
import { generateApiKey, hashApiKey } from '../../src/domain/users/api-keys.js';
import { basicAuth, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ rateLimits: [{ windowSeconds: 3600, maxRequests: 3 }] });
});
afterAll(() => server.close());

test('the per-user rate limit answers 429 RATE_LIMIT_HIT on both doors', async () => {
  const apiKey = generateApiKey();
  const org = await server.app.prisma.organization.create({ data: { stringId: `rl-${apiKey}`, name: 'Rate' } });
  await server.app.prisma.user.create({
    data: { organizationId: org.id, email: 'r@example.com', emailKey: 'r@example.com', fullName: 'R', apiKeyHash: hashApiKey(apiKey) },
  });
  const authorization = basicAuth('r@example.com', apiKey);
  const graphql = () =>
    fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ me { email } }' }),
    });
  for (let i = 0; i < 3; i++) expect((await graphql()).status).toBe(200);
  const refusedGraphql = await graphql();
  expect(refusedGraphql.status).toBe(429);
  expect((await refusedGraphql.json()).errors[0].extensions.code).toBe('RATE_LIMIT_HIT');

  const rest = await fetch(`${server.url}/api/v1/no-such-route-needs-no-auth`, { headers: { authorization } });
  expect(rest.status).toBe(404);
  const refusedRest = await fetch(`${server.url}/api/v1/attachments`, { headers: { authorization } });
  const body = await refusedRest.json();
  expect(refusedRest.status).toBe(429);
  expect(Object.keys(body)).toEqual(['result', 'msg', 'retry-after', 'code']);
  expect(body).toMatchObject({
    result: 'error',
    msg: 'API usage exceeded rate limit',
    code: 'RATE_LIMIT_HIT',
  });
  expect(Number(refusedRest.headers.get('retry-after'))).toBeGreaterThan(0);
});
