// Builds the GraphQL HTTP handler: the Pothos schema, bundled GraphiQL (no CDN), Basic auth.
import { createYoga } from 'graphql-yoga';
import type { AppContext } from '../app-context.js';
import { authenticateRequest } from '../domain/auth/authenticate.js';
import { DomainError } from '../domain/errors.js';
import { authPlugin } from './auth-plugin.js';
import { newContext, type GraphQLContext } from './context.js';
import { schema } from './schema/index.js';

export const GRAPHIQL_OPTIONS = {
  title: 'Team chat administration API',
  headers: JSON.stringify({ Authorization: 'Basic <base64 of email:api_key>' }),
  shouldPersistHeaders: true,
};

export function createGraphQLHandler(app: AppContext) {
  return createYoga<Record<string, unknown>, GraphQLContext>({
    schema,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    // The page is served by graphiql-page.ts (src/http/app.ts routes browsers there first).
    graphiql: false,
    plugins: [authPlugin()],
    context: async ({ request }) => {
      const header = request.headers.get('authorization');
      if (!header) return newContext(app, null, null);
      try {
        return newContext(app, await authenticateRequest(app, header), null);
      } catch (error) {
        if (error instanceof DomainError) return newContext(app, null, error);
        throw error;
      }
    },
  });
}
