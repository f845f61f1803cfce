// The HTTP application: GraphQL, the REST compatibility layer, the invitation acceptance pages,
// health check, JSON 404s.
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { compress } from 'hono/compress';
import type { AppContext } from '../app-context.js';
import { graphiqlPage, wantsGraphiQL } from '../graphql/graphiql-page.js';
import { createGraphQLHandler, GRAPHIQL_OPTIONS } from '../graphql/yoga.js';
import { jsonResponse } from '../rest/envelope.js';
import { API_PREFIX, dispatchRest } from '../rest/dispatch.js';
import { restRoutes } from '../rest/routes.js';
import { crossOriginRules } from './cross-origin.js';
import { mountAcceptancePages } from './pages/acceptance.js';

/** No request of this API needs more (no uploads here); bigger bodies are refused before parsing. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** The peer's address (no proxy headers are trusted); empty when served in-process. */
export function clientAddress(c: Context): string {
  const incoming = (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming;
  return incoming?.socket?.remoteAddress ?? '';
}

export function createApp(app: AppContext): Hono {
  const http = new Hono();
  const graphql = createGraphQLHandler(app);
  const graphiql = graphiqlPage(GRAPHIQL_OPTIONS, app.config.dataDir);

  http.use(
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: () => jsonResponse({ result: 'error', msg: 'Request body too large (limit: 1 MiB)', code: 'BAD_REQUEST' }, 413),
    }),
  );
  // gzip or deflate as the client accepts, streamed; bodies under 1 KiB that declare their length stay as they are.
  http.use(compress());
  const crossOrigin = crossOriginRules(app.config.allowedOrigins, () => app.config.serverUrl);
  http.use('/graphql', crossOrigin);
  http.use(`${API_PREFIX}/*`, crossOrigin);
  http.get('/health', async () => {
    await app.prisma.$queryRaw`SELECT 1`;
    return jsonResponse({ status: 'ok' });
  });
  http.on(['GET', 'POST', 'OPTIONS'], '/graphql', (c) => (wantsGraphiQL(c.req.raw) ? graphiql(c.req.raw) : graphql.handle(c.req.raw, clientAddress(c))));
  mountAcceptancePages(http, app);
  http.all(`${API_PREFIX}/*`, (c) => dispatchRest(restRoutes, c.req.raw, app));
  http.notFound(() => jsonResponse({ result: 'error', msg: 'Not Found', code: 'BAD_REQUEST' }, 404));
  return http;
}
