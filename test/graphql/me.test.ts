import { afterAll, beforeAll, expect, test } from 'vitest';
import { graphql } from '../generated/gql.js';
import { gql } from '../support/graphql.js';
import { basicAuth, startTestServer, type TestServer } from '../support/server.js';
import { generateApiKey, hashApiKey } from '../../src/domain/users/api-keys.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const Me = graphql(`
  query Me {
    me {
      id
      email
      fullName
      role
      isBot
    }
  }
`);

test('me answers the authenticated user', async () => {
  const apiKey = generateApiKey();
  const org = await server.app.prisma.organization.create({ data: { stringId: `me-${apiKey}`, name: 'Me Org' } });
  const user = await server.app.prisma.user.create({
    data: {
      organizationId: org.id,
      email: 'Ada@Example.com',
      emailKey: 'ada@example.com',
      fullName: 'Ada',
      role: 200,
      apiKeyHash: hashApiKey(apiKey),
    },
  });
  const result = await gql(server.url, Me, {}, basicAuth('ada@example.com', apiKey));
  expect(result).toEqual({
    status: 200,
    data: { me: { id: user.id, email: 'Ada@Example.com', fullName: 'Ada', role: 'ADMINISTRATOR', isBot: false } },
  });
  const wrongKey = await gql(server.url, Me, {}, basicAuth('ada@example.com', generateApiKey()));
  expect(wrongKey.status).toBe(401);
  expect(wrongKey.errors?.[0]).toMatchObject({ message: 'Invalid API key', extensions: { code: 'UNAUTHORIZED' } });
});
