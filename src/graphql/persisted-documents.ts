// Documents named by hash instead of sent whole: the trusted documents of the manifest
// (GRAPHQL_TRUSTED_DOCUMENTS) and automatic persisted queries (Apollo's APQ), with trusted-only mode
// (GRAPHQL_TRUSTED_ONLY) for callers who are not administrators. A document found by its hash becomes
// the request's query text, so it is parsed, validated and limited (limits.ts) like any other.
import { useAPQ } from '@graphql-yoga/plugin-apq';
import { usePersistedOperations } from '@graphql-yoga/plugin-persisted-operations';
import { createGraphQLError, type GraphQLParams, type Plugin } from 'graphql-yoga';
import { LRUCache } from 'lru-cache';
import { cachedTextBytes } from './limits.js';
import { sha256Hex, sha256OfId, type TrustedDocumentsConfig } from './trusted-documents.js';

/** Documents registered through APQ: the most recently used ones, each for a day at most, 8 MiB together. */
const APQ_DOCUMENTS = 1000;
const APQ_BYTES = 8 * 1024 * 1024;
const APQ_TTL_MS = 24 * 60 * 60 * 1000;

export const PERSISTED_QUERY_ONLY_MESSAGE =
  'This server runs trusted documents only: send the id of a document of its manifest (documentId, or extensions.persistedQuery.sha256Hash) without the query text. Administrators may send any document.';

const persistedQueryOnly = () =>
  createGraphQLError(PERSISTED_QUERY_ONLY_MESSAGE, { extensions: { code: 'PERSISTED_QUERY_ONLY', http: { status: 400 } } });

/** As @graphql-yoga/plugin-apq answers an unknown hash: the message and code Apollo Client and urql retry on. */
const persistedQueryNotFound = () =>
  createGraphQLError('PersistedQueryNotFound', { extensions: { code: 'PERSISTED_QUERY_NOT_FOUND', http: { status: 404 } } });

const noDocument = () =>
  createGraphQLError('Must provide query string or the id of a persisted document (documentId, or extensions.persistedQuery.sha256Hash).', {
    extensions: { code: 'BAD_REQUEST', http: { status: 400 } },
  });

/**
 * `documentId` (GraphQL over HTTP's persisted documents: in the JSON body, or a GET parameter, which
 * Yoga's GET parser does not keep), else Apollo's `extensions.persistedQuery.sha256Hash`.
 */
function documentIdOf(params: GraphQLParams & { documentId?: unknown }, request: Request): string | null {
  const documentId = request.method === 'GET' ? new URL(request.url).searchParams.get('documentId') : params.documentId;
  if (typeof documentId === 'string') return documentId;
  const persistedQuery = params.extensions?.persistedQuery as { version?: unknown; sha256Hash?: unknown } | undefined;
  return persistedQuery?.version === 1 && typeof persistedQuery.sha256Hash === 'string' ? persistedQuery.sha256Hash : null;
}

/** In trusted-only mode, a caller who may not send documents of their own is refused before any parsing. */
function trustedOnlyPolicy(mayRunAnyDocument: (context: object) => boolean): Plugin {
  return {
    onParams({ params, context }) {
      if (params.query != null && !mayRunAnyDocument(context)) throw persistedQueryOnly();
    },
  };
}

/** A request that sends a document with its hash registers it (APQ): `count` may refuse it first. */
function countedRegistrations(count: (context: object) => Promise<void>): Plugin {
  return {
    async onParams({ params, context }) {
      const persistedQuery = params.extensions?.persistedQuery as { sha256Hash?: unknown } | undefined;
      if (params.query != null && typeof persistedQuery?.sha256Hash === 'string') await count(context);
    },
  };
}

/**
 * `mayRunAnyDocument` reads the initial context (the caller is known before parsing): true unless
 * trusted-only mode is on and the caller is not an administrator. Such callers get the manifest's
 * documents only; the others also the documents registered through APQ, and may register more, each
 * registration counted by `countRegistration` (the rate limit).
 */
export function persistedDocumentsPlugins(
  config: TrustedDocumentsConfig,
  mayRunAnyDocument: (context: object) => boolean,
  countRegistration: (context: object) => Promise<void>,
): Plugin[] {
  const manifest = config.manifest ?? new Map<string, string>();
  const registered = new LRUCache<string, string>({
    max: APQ_DOCUMENTS,
    maxSize: APQ_BYTES,
    sizeCalculation: cachedTextBytes,
    ttl: APQ_TTL_MS,
  });
  return [
    trustedOnlyPolicy(mayRunAnyDocument),
    countedRegistrations(countRegistration),
    usePersistedOperations({
      allowArbitraryOperations: true,
      extractPersistedOperationId: documentIdOf,
      getPersistedOperation(id, _request, context) {
        const hash = sha256OfId(id);
        if (!hash) return null;
        return manifest.get(hash) ?? (mayRunAnyDocument(context) ? registered.get(hash) : null) ?? null;
      },
      customErrors: { notFound: persistedQueryNotFound, keyNotFound: noDocument },
    }) as Plugin,
    // Checks that a query sent with its hash has that hash (400 PERSISTED_QUERY_MISMATCH otherwise)
    // and registers it; the manifest's documents need no second copy.
    useAPQ({
      store: {
        get: (hash) => registered.get(hash),
        set: (hash, query) => (manifest.has(hash) ? undefined : registered.set(hash, query)),
      },
    }),
  ];
}

/** What a graphql-ws subscribe message names: its query text, or (text empty) a hash in its extensions. */
export interface WebSocketDocument {
  query: string;
  extensions?: Record<string, unknown> | null;
}

/**
 * Over WebSocket (no HTTP parameters, so none of the plugins above): the text to run, or the refusal.
 * A message with an empty query names a manifest document by hash (`documentId` or
 * `persistedQuery.sha256Hash` in its extensions); a caller held to trusted documents may otherwise
 * send only a text of the manifest.
 */
export function webSocketDocument(config: TrustedDocumentsConfig, mayRunAnyDocument: boolean, message: WebSocketDocument) {
  if (message.query === '') {
    const id = message.extensions?.documentId ?? (message.extensions?.persistedQuery as { sha256Hash?: unknown } | undefined)?.sha256Hash;
    const hash = typeof id === 'string' ? sha256OfId(id) : null;
    const text = hash === null ? undefined : config.manifest?.get(hash);
    return text ?? (hash === null ? noDocument() : persistedQueryNotFound());
  }
  return mayRunAnyDocument || config.manifest?.has(sha256Hex(message.query)) ? message.query : persistedQueryOnly();
}
