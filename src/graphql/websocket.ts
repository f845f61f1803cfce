// GraphQL over WebSocket (the graphql-ws protocol, what Apollo Client and urql speak) on the HTTP
// port and path of /graphql, through Yoga's own pipeline (getEnveloped): the same limits, plugins and
// error masking as over HTTP. Credentials come in the connection_init payload's Authorization, or
// else are the browser's session cookie sent with the handshake, and are checked again for each
// operation (a deactivated user's connection runs nothing more); a browser's handshake must come
// from an origin that CORS allows.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { GraphQLError, type DocumentNode, type ExecutionArgs, type GraphQLFormattedError } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import type { ServerContext } from '../server-context.js';
import { sessionTokenInCookies } from '../http/cookies.js';
import { logger, requestIdFor, requestLogger } from '../logging.js';
import type { GraphQLContext } from './context.js';
import { writeDeferredLines } from './replaced-errors.js';
import type { GraphQLHandler, OfferedCredentials } from './yoga.js';
import { identifyCaller } from './yoga.js';

export const GRAPHQL_PATH = '/graphql';
/** A message larger than this closes the connection (documents are far smaller; uploads need HTTP). */
const MAX_MESSAGE_BYTES = 256 * 1024;

export interface WebSocketOptions {
  /** Whether a browser page of this origin may connect (src/http/cross-origin.ts). */
  originAllowed(origin: string | undefined, request: IncomingMessage): boolean;
  clientAddress(request: IncomingMessage): string;
  /** Whether the handshake arrived over https (which names the session cookie). */
  secure(request: IncomingMessage): boolean;
  /** Draining: new connections are refused. */
  draining(): boolean;
}

type Enveloped = ReturnType<GraphQLHandler['getEnveloped']>;

/** What a connection keeps besides its socket and handshake request. */
type ConnectionState = { credentials: OfferedCredentials };

const authorizationOf = (params: Record<string, unknown> | undefined) => {
  const value = params?.Authorization ?? params?.authorization;
  return typeof value === 'string' ? value : null;
};

const headerValue = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/** Yoga's HTTP hints (extensions.http: a status, headers) mean nothing on a socket: errors go without them. */
function withoutHttpHints(error: GraphQLError): GraphQLFormattedError {
  const formatted = error.toJSON();
  if (!formatted.extensions?.http) return formatted;
  const { http: _hints, ...extensions } = formatted.extensions;
  return { ...formatted, extensions };
}

function refuseUpgrade(socket: Duplex, status: number, reason: string): void {
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

/** Serves graphql-ws on the server's upgrade requests to /graphql; returns the closing of every connection. */
export function serveGraphQLOverWebSocket(
  server: Server,
  app: ServerContext,
  graphql: GraphQLHandler,
  options: WebSocketOptions,
): () => Promise<void> {
  const sockets = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  const serving = useServer<Record<string, unknown>, ConnectionState>(
    {
      onConnect: async ({ connectionParams, extra }) => {
        const sessionToken = sessionTokenInCookies(extra.request.headers.cookie, options.secure(extra.request));
        const credentials = { authorization: authorizationOf(connectionParams), sessionToken };
        const caller = await identifyCaller(app, credentials, options.clientAddress(extra.request));
        if (!caller.actor) return false;
        extra.credentials = credentials;
        return true;
      },
      onSubscribe: async ({ extra }, _id, params) => {
        const clientAddress = options.clientAddress(extra.request);
        const caller = await identifyCaller(app, extra.credentials ?? { authorization: null, sessionToken: undefined }, clientAddress);
        const query = graphql.webSocketDocument(caller, params);
        if (typeof query !== 'string') return [query];
        // Each operation logs as a request of its own: the handshake's X-Request-Id, or a fresh id.
        const requestId = requestIdFor(headerValue(extra.request.headers['x-request-id']));
        const log = requestLogger(app.log ?? logger, requestId);
        const enveloped = graphql.getEnveloped({ caller, clientAddress, log, params: { ...params, query }, request: extra.request });
        let document: DocumentNode;
        try {
          document = enveloped.parse(query);
        } catch (error) {
          return [error instanceof GraphQLError ? error : new GraphQLError('Syntax Error: the document could not be parsed.')];
        }
        const errors = enveloped.validate(enveloped.schema, document);
        if (errors.length > 0) return errors;
        const args: ExecutionArgs = {
          schema: enveloped.schema,
          document,
          operationName: params.operationName,
          variableValues: params.variables,
          contextValue: await enveloped.contextFactory(),
          rootValue: { execute: enveloped.execute, subscribe: enveloped.subscribe },
        };
        return args;
      },
      onNext: (_context, _id, _payload, args, result) => {
        if (!result.errors) return undefined;
        writeDeferredLines(result.errors, (args.contextValue as GraphQLContext).log);
        return { ...result, errors: result.errors.map(withoutHttpHints) };
      },
      onError: (_context, _id, _payload, errors) => errors.map(withoutHttpHints),
      execute: (args) => (args.rootValue as Enveloped).execute(args),
      subscribe: (args) => (args.rootValue as Enveloped).subscribe(args),
    },
    sockets,
  );
  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (path !== GRAPHQL_PATH) return refuseUpgrade(socket, 404, 'Not Found');
    if (options.draining()) return refuseUpgrade(socket, 503, 'Service Unavailable');
    if (!options.originAllowed(request.headers.origin, request)) return refuseUpgrade(socket, 403, 'Forbidden');
    sockets.handleUpgrade(request, socket, head, (websocket) => sockets.emit('connection', websocket, request));
  });
  // Closes every connection (1001, going away: clients reconnect elsewhere) and the server.
  return async () => void (await serving.dispose());
}
