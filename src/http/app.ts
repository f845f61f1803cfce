// The HTTP application: GraphQL, the REST compatibility layer, the invitation acceptance pages,
// health check, JSON 404s.
import { Hono } from 'hono';
import type { AppContext } from '../app-context.js';
import { createGraphQLHandler } from '../graphql/yoga.js';
import { jsonResponse } from '../rest/envelope.js';
import { API_PREFIX, dispatchRest } from '../rest/dispatch.js';
import { restRoutes } from '../rest/routes.js';
import { mountAcceptancePages } from './pages/acceptance.js';

export function createApp(app: AppContext): Hono {
  const http = new Hono();
  const graphql = createGraphQLHandler(app);

  http.get('/health', async () => {
    await app.prisma.$queryRaw`SELECT 1`;
    return jsonResponse({ status: 'ok' });
  });
  http.on(['GET', 'POST', 'OPTIONS'], '/graphql', (c) => graphql.fetch(c.req.raw));
  mountAcceptancePages(http, app);
  http.all(`${API_PREFIX}/*`, (c) => dispatchRest(restRoutes, c.req.raw, app));
  http.notFound(() => jsonResponse({ result: 'error', msg: 'Not Found', code: 'BAD_REQUEST' }, 404));
  return http;
}
