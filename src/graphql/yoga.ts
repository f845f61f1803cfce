// Builds the GraphQL HTTP handler: the Pothos schema, Basic auth and session cookies, document
// limits, CSRF prevention, persisted documents (trusted and automatic), privately cacheable GET
// answers, and the per-user rate limit: one request per operation (none for a dry run of
// Query.rateLimit), one more for every mutation field past the first; extensions.cost on request.
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import {
  getOperationAST,
  Kind,
  type DocumentNode,
  type ExecutionArgs,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type SelectionNode,
} from 'graphql';
import {
  createGraphQLError,
  createYoga,
  isAsyncIterable,
  maskError,
  type MaskError,
  type Plugin,
  type YogaServerOptions,
} from 'graphql-yoga';
import type { ServerContext } from '../server-context.js';
import { authenticateRequest, authenticateSession, authenticateUncounted } from '../domain/auth/authenticate.js';
import { RateLimitReport } from '../domain/auth/rate-limit.js';
import { DomainError } from '../domain/errors.js';
import { isAdministrator } from '../domain/users/roles.js';
import { sessionTokenOf } from '../http/cookies.js';
import { RETRY_AFTER_SECONDS, type DatabaseStatus } from '../http/database-status.js';
import type { AnswerReservations } from '../http/memory-budget.js';
import { encodedBodyResponse } from '../http/response-body.js';
import { logger, type Logger } from '../logging.js';
import { graphqlMetrics } from '../metrics/graphql.js';
import { graphqlTracing } from '../tracing/graphql.js';
import { tracing } from '../tracing/spans.js';
import { authPlugin } from './auth-plugin.js';
import { privatelyCacheable } from './cacheable-get.js';
import { anonymousCaller, newContext, type Caller, type GraphQLContext, type RequestBudget } from './context.js';
import { compiledExecution } from './jit.js';
import { documentSizePlugin, limitsPlugin } from './limits.js';
import { persistedDocumentsPlugins, webSocketDocument, type WebSocketDocument } from './persisted-documents.js';
import { requestError } from './schema/errors.js';
import { DeferredLogLines, deferredLinesWritten, deferLines } from './replaced-errors.js';
import { schema } from './schema/index.js';
import { selectedFieldCount } from './selection.js';

/** Any one of these headers marks a request a browser could only send after a CORS preflight. */
export const CSRF_HEADERS = ['x-graphql-yoga-csrf', 'graphql-require-preflight'];

/** Who is calling, known before the document is parsed (the limits depend on it). */
export interface YogaServerContext {
  caller: Caller;
  /** The peer's address (src/http/client-address.ts): who a caller without credentials is. */
  clientAddress: string;
  /** The answer's memory reservations (src/http/memory-budget.ts). */
  answer?: AnswerReservations;
  /** The request's logger (its id on every line). */
  log: Logger;
  /** Over HTTP: the request's limits and cost, shared with its GraphQL context. */
  budget?: RequestBudget;
}

/** What a request may authenticate with: an Authorization header (HTTP's, or a WebSocket's connection_init payload's), or a browser session's cookie. */
export interface OfferedCredentials {
  authorization: string | null;
  sessionToken: string | undefined;
}

/**
 * The caller of the offered credentials; an Authorization header goes before the session cookie.
 * `counted`: false when the request is counted against the per-user limit later (requestCount).
 */
export async function identifyCaller(
  app: ServerContext,
  offered: OfferedCredentials,
  clientAddress: string,
  counted = true,
  rateLimits?: RateLimitReport,
): Promise<Caller> {
  const { authorization, sessionToken } = offered;
  try {
    if (authorization) {
      const authenticated = counted ? authenticateRequest : authenticateUncounted;
      const actor = await authenticated(app, authorization, clientAddress, rateLimits);
      return { actor, authError: null, credentials: { authorization } };
    }
    if (!sessionToken) return anonymousCaller();
    const session = await authenticateSession(app, sessionToken, clientAddress, { counted });
    return {
      actor: session.actor,
      authError: null,
      credentials: { sessionToken, sessionId: session.sessionId, apiKeyHash: session.apiKeyHash },
    };
  } catch (error) {
    if (error instanceof DomainError) return { ...anonymousCaller(), authError: error };
    throw error;
  }
}

/**
 * Yoga's own log lines. Its debug lines (the steps of each request) know no request, so they would
 * break the rule that every line of a request carries its id: they are not written. Its error lines
 * repeat each error maskError replaced, which replaced-errors.ts logs with the request's id.
 */
const yogaLogging = (log: Logger) => ({
  debug: () => {},
  info: (...args: unknown[]) => log.info({ yoga: args }, 'graphql-yoga'),
  warn: (...args: unknown[]) => log.warn({ yoga: args }, 'graphql-yoga'),
  error: () => {},
});

/** GET never changes anything (mutations over GET are refused), so only other methods need the header. */
function csrfPrevention(): Plugin {
  const { onRequestParse } = useCSRFPrevention({ requestHeaders: CSRF_HEADERS });
  return {
    onRequestParse(payload) {
      if (payload.request.method !== 'GET') return onRequestParse!(payload);
    },
  };
}

/**
 * Root fields that cost what a request does: every field of a mutation, and a query's
 * previewInvitations (a send's whole check order, without the writes).
 */
function rateCountedFields(operation: OperationDefinitionNode, fragments: Record<string, FragmentDefinitionNode>) {
  if (operation.operation === 'mutation') return { fields: selectedFieldCount(operation.selectionSet, fragments), kind: 'mutation' };
  if (operation.operation === 'query')
    return {
      fields: selectedFieldCount(operation.selectionSet, fragments, (name) => name === 'previewInvitations'),
      kind: 'previewInvitations',
    };
  return { fields: 0, kind: '' };
}

/** Whether the operation asks for Query.rateLimit(dryRun: true) among its root fields. */
function isDryRun(operation: OperationDefinitionNode, variables: Record<string, unknown> | null | undefined): boolean {
  if (operation.operation !== 'query') return false;
  return operation.selectionSet.selections.some((selection) => {
    if (selection.kind !== Kind.FIELD || selection.name.value !== 'rateLimit') return false;
    const value = selection.arguments?.find((argument) => argument.name.value === 'dryRun')?.value;
    if (value?.kind === Kind.BOOLEAN) return value.value;
    if (value?.kind !== Kind.VARIABLE) return false;
    const name = value.name.value;
    const given = variables?.[name];
    if (given !== undefined) return given === true;
    const fallback = operation.variableDefinitions?.find((definition) => definition.variable.name.value === name)?.defaultValue;
    return fallback?.kind === Kind.BOOLEAN && fallback.value;
  });
}

/** The document with the operation's root fields cut to its rateLimit fields: what a dry run runs. */
const dryRunDocuments = new WeakMap<DocumentNode, Map<OperationDefinitionNode, DocumentNode>>();
function dryRunDocument(document: DocumentNode, operation: OperationDefinitionNode): DocumentNode {
  let byOperation = dryRunDocuments.get(document);
  if (!byOperation) dryRunDocuments.set(document, (byOperation = new Map()));
  let cut = byOperation.get(operation);
  if (!cut) {
    const isRateLimit = (selection: SelectionNode) => selection.kind === Kind.FIELD && selection.name.value === 'rateLimit';
    const selections = operation.selectionSet.selections.filter(isRateLimit);
    const only = { ...operation, selectionSet: { ...operation.selectionSet, selections } };
    cut = { ...document, definitions: document.definitions.map((definition) => (definition === operation ? only : definition)) };
    byOperation.set(operation, cut);
  }
  return cut;
}

/**
 * The per-user rate limit of an operation: at most `max` rate-counted fields, each one beyond the
 * first counting as one more request. Over HTTP the request itself counts here too (once its
 * document is known) in the same statement, unless it is a dry run, which only reads its budget.
 */
function requestCountPlugin(app: ServerContext, max: number): Plugin<GraphQLContext> {
  const count = async (args: ExecutionArgs, stop: (result: { errors: ReturnType<typeof requestError>[] }) => void): Promise<void> => {
    const document = args.document as DocumentNode;
    const operation = getOperationAST(document, args.operationName);
    const context = args.contextValue as GraphQLContext;
    const { actor, budget } = context;
    if (!operation || !actor) return;
    const fragments = Object.fromEntries(
      document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((f) => [f.name.value, f]),
    );
    const dryRun = isDryRun(operation, args.variableValues);
    const { fields, kind } = dryRun ? { fields: 0, kind: '' } : rateCountedFields(operation, fragments);
    if (fields > max) {
      const message = `An operation may run at most ${max} ${kind} fields; this one has ${fields}.`;
      stop({ errors: [createGraphQLError(message, { extensions: { code: 'BAD_REQUEST', http: { status: 400 } } })] });
      return;
    }
    const request = budget && !budget.counted ? (dryRun ? 0 : 1) : 0;
    const weight = request + Math.max(0, fields - 1);
    if (dryRun) args.document = dryRunDocument(document, operation);
    if (!budget && weight === 0) return;
    if (budget) budget.counted = true;
    try {
      await app.rateLimiter.hit(actor.id, weight, (context as Partial<YogaServerContext>).clientAddress, budget?.rateLimits);
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      stop({ errors: [requestError(error, { refusesRequest: true })] });
    }
  };
  return {
    onExecute: ({ args, setResultAndStopExecution }) => count(args, setResultAndStopExecution),
    onSubscribe: ({ args, setResultAndStopExecution }) => count(args, setResultAndStopExecution),
  };
}

/** `X-GraphQL-Cost: include` asks for the document's cost in the answer's extensions (rate-limits.md Decision 6). */
const costExtension: Plugin = {
  onResultProcess({ request, result, setResult }) {
    if (request.headers.get('x-graphql-cost')?.toLowerCase() !== 'include') return;
    const budget = serverContexts.get(request)?.budget;
    if (!budget || budget.cost === null || Array.isArray(result) || isAsyncIterable(result)) return;
    const single = result as { extensions?: Record<string, unknown> };
    const cost = { requestedQueryCost: budget.cost, maximumAvailable: budget.maxCost };
    setResult({ ...single, extensions: { ...single.extensions, cost } } as typeof result);
  },
};

/**
 * A subscriber that goes away frees its subscription at once, not at the next keep-alive ping: Yoga's
 * useExecutionCancellation for subscriptions alone. For queries and mutations it read the request's
 * abort signal (an AbortController per request) that compiled execution never looks at.
 */
const subscriptionCancellation: Plugin = {
  onSubscribe({ args, context }) {
    (args as { signal?: AbortSignal }).signal = (context as { request?: Request }).request?.signal;
  },
};

const callerOf = (context: object) => (context as Partial<YogaServerContext>).caller?.actor ?? null;

/**
 * An APQ registration makes the server keep a document: a caller without credentials pays for it
 * against the rate limit by its address (an authenticated request counts as one anyway).
 */
function registrationCounter(app: ServerContext) {
  return async (context: object) => {
    const { caller, clientAddress, budget } = context as Partial<YogaServerContext>;
    if (caller?.actor || clientAddress === undefined) return;
    try {
      await app.rateLimiter.hitAddress(clientAddress, 1, budget?.rateLimits);
    } catch (error) {
      throw error instanceof DomainError ? requestError(error, { refusesRequest: true }) : error;
    }
  };
}

/**
 * The server context travels beside the request, not as the adapter's argument: the adapter copies
 * an argument descriptor by descriptor onto an object made from it (`completeAssign`), which V8
 * keeps as a slow object that every later read of the context paid for (measured: a fifth of the CPU
 * of `{ me { id } }`). Without one, the adapter's context is a plain object, which the first hook
 * of the request fills.
 */
const serverContexts = new WeakMap<Request, YogaServerContext>();

const serverContextOfRequest: Plugin<object, YogaServerContext> = {
  onRequest({ request, serverContext }) {
    Object.assign(serverContext, serverContexts.get(request));
  },
};

/** With GRAPHQL_TRUSTED_DOCUMENTS=only, administrators alone may run documents outside the list. */
const anyDocumentAllowed = (trusted: ServerContext['config']['graphqlTrustedDocuments']) => (context: object) =>
  !trusted.only || isAdministrator(callerOf(context)?.role ?? 0);

export function createGraphQLHandler(app: ServerContext, database: DatabaseStatus) {
  const trusted = app.config.graphqlTrustedDocuments;
  const mayRunAnyDocument = anyDocumentAllowed(trusted);
  const yoga = createYoga<YogaServerContext, GraphQLContext>({
    ...yogaSettings(app),
    maskedErrors: { maskError: maskedError(database) },
    plugins: yogaPlugins(app, mayRunAnyDocument),
    context: ({ caller, answer, log, budget }) => newContext(app, caller, log, answer, budget),
  });
  const serve = servingWithContext(yoga);
  return {
    getEnveloped: yoga.getEnveloped,
    /** The document a WebSocket message names, or its refusal (HTTP requests: the plugins). */
    webSocketDocument: (caller: Caller, message: WebSocketDocument) => webSocketDocument(trusted, mayRunAnyDocument({ caller }), message),
    /** `secure`: whether the request arrived over https, which names the session cookie. */
    handle: httpRequestHandler(app, serve),
  };
}

/** Yoga's settings that hold for every request; what depends on the request is in the plugins. */
function yogaSettings(app: ServerContext): YogaServerOptions<YogaServerContext, GraphQLContext> {
  return {
    schema,
    graphqlEndpoint: '/graphql',
    // The runtime's Response (under @hono/node-server, its lightweight one, which writes a string or
    // byte body straight to the socket; large answers encoded once, response-body.ts) rather than
    // Yoga's ponyfill, whose body the adapter would read as a stream.
    // The runtime's ReadableStream for SSE bodies too: the ponyfill's wraps a Node stream, one more
    // layer of buffers and listeners that each open subscription held (bench: 65 -> 50 MiB for 1,000).
    fetchAPI: { Response: encodedBodyResponse(), ReadableStream: globalThis.ReadableStream },
    landingPage: false,
    // Bodies are limited before Yoga, as they arrive (src/http/app.ts: 1 MiB, multipart one file more).
    // Yoga's own check piped every POST body through a TransformStream into a new fetch Request (about
    // 3% of a GraphQL list's CPU in the bench's profile).
    maxRequestBodySize: false,
    logging: yogaLogging(app.log ?? logger),
    // The page is served by graphiql-page.ts (src/http/app.ts routes browsers there first).
    graphiql: false,
    // Cross-origin access is decided once for both doors (src/http/cross-origin.ts).
    cors: false,
    // The limits depend on the caller: limitsPlugin caches parsing and validation per kind of caller.
    parserAndValidationCache: false,
  };
}

/** Unexpected errors stay masked; an unreachable database becomes a 503 with Retry-After. */
function maskedError(database: DatabaseStatus): MaskError {
  return (error, message, isDev) => {
    const original = (error as { originalError?: unknown }).originalError ?? error;
    const lines = new DeferredLogLines();
    const unavailable = database.noteFailure(original, lines);
    if (unavailable) {
      const replacement = createGraphQLError(unavailable, {
        extensions: { code: 'SERVICE_UNAVAILABLE', http: { status: 503, headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) } } },
      });
      deferLines(replacement, lines);
      return replacement;
    }
    const masked = maskError(error, message, isDev);
    if (masked !== error) {
      lines.error({ err: original }, 'unexpected error');
      deferLines(masked, lines);
    }
    return masked;
  };
}

/** The plugins in the order they wrap each request. */
function yogaPlugins(app: ServerContext, mayRunAnyDocument: (context: object) => boolean) {
  const isAuthenticated = (context: object) => callerOf(context) != null;
  return [
    serverContextOfRequest,
    // Outermost: its spans time each phase whole.
    ...(tracing ? [graphqlTracing()] : []),
    // First: it times and counts every execution, those the plugins below stop early included.
    ...(app.metrics ? graphqlMetrics(app.metrics) : []),
    deferredLinesWritten,
    // Executes queries and mutations compiled (this API has no @defer or @stream).
    ...compiledExecution(schema, app.log ?? logger),
    subscriptionCancellation,
    csrfPrevention(),
    documentSizePlugin(app.config.graphqlLimits, isAuthenticated),
    ...persistedDocumentsPlugins(app.config.graphqlTrustedDocuments, mayRunAnyDocument, registrationCounter(app)),
    limitsPlugin(app.config.graphqlLimits, isAuthenticated),
    authPlugin(),
    requestCountPlugin(app, app.config.graphqlLimits.mutationFields),
    costExtension,
  ];
}

type ServeRequest = (request: Request, context: YogaServerContext) => Promise<Response> | Response;

/**
 * Taken once: each property read of Yoga's server adapter (a Proxy) binds its function anew. Its
 * handleRequest rather than its fetch, which reads the request's abort signal (an AbortController
 * per request) to race the answer against a client that left: @hono/node-server already stops
 * writing to a closed connection. Called without a context, which serverContextOfRequest gives it.
 */
function servingWithContext(yoga: { handleRequest: unknown }): ServeRequest {
  const handleRequest = yoga.handleRequest as (request: Request) => Promise<Response> | Response;
  return (request, context) => {
    serverContexts.set(request, context);
    return handleRequest(request);
  };
}

/** What the HTTP door knows of a request before its caller is identified. */
type HttpRequestScope = Omit<YogaServerContext, 'caller' | 'budget'> & { rateLimits?: RateLimitReport };

/** An HTTP request: its caller identified (not yet counted), served, then counted if no operation ran. */
function httpRequestHandler(app: ServerContext, serve: ServeRequest) {
  return async (request: Request, scope: HttpRequestScope, secure: boolean): Promise<Response> => {
    const { clientAddress, log, answer, rateLimits = new RateLimitReport() } = scope;
    if (request.method === 'OPTIONS') return serve(request, { caller: anonymousCaller(), clientAddress, log });
    const offered = { authorization: request.headers.get('authorization'), sessionToken: sessionTokenOf(request, secure) };
    const caller = await identifyCaller(app, offered, clientAddress, false, rateLimits);
    const maxCost = app.config.graphqlLimits[caller.actor ? 'authenticated' : 'anonymous'].cost;
    const budget: RequestBudget = { rateLimits, counted: false, cost: null, maxCost };
    const served = await serve(request, { caller, clientAddress, log, answer, budget });
    const response = (await countUnexecuted(app, caller, clientAddress, budget)) ?? served;
    return request.method === 'GET' ? privatelyCacheable(request, response) : response;
  };
}

/** A request that ended before its operation ran (an invalid or refused document) counts all the same. */
async function countUnexecuted(app: ServerContext, caller: Caller, clientAddress: string, budget: RequestBudget): Promise<Response | null> {
  if (!caller.actor || budget.counted) return null;
  budget.counted = true;
  try {
    await app.rateLimiter.hit(caller.actor.id, 1, clientAddress, budget.rateLimits);
    return null;
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    const body = { errors: [{ message: error.message, extensions: { code: error.code, ...error.data } }] };
    const headers = { 'Content-Type': 'application/json', ...error.headers };
    return new Response(JSON.stringify(body), { status: error.status, headers });
  }
}

export type GraphQLHandler = ReturnType<typeof createGraphQLHandler>;
