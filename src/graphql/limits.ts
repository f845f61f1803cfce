// Limits on what one GraphQL document may ask for, tighter for callers without valid credentials
// (they can only introspect), applied to introspection too: tokens (while parsing, so a huge or
// deeply nested document is refused before it is built), then depth, aliases, directives and a cost
// that multiplies list fields. An operation runs at most `mutationFields` mutation fields.
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxDirectivesRule } from '@escape.tech/graphql-armor-max-directives';
import { blockFieldSuggestionsPlugin } from '@escape.tech/graphql-armor-block-field-suggestions';
import {
  GraphQLError,
  getNullableType,
  getOperationAST,
  getVariableValues,
  isListType,
  parse,
  type DocumentNode,
  type OperationDefinitionNode,
  type GraphQLSchema,
  type ValidationContext,
} from 'graphql';
import { getComplexity, type ComplexityEstimator } from 'graphql-query-complexity';
import { createGraphQLError, type Plugin } from 'graphql-yoga';
import { LRUCache } from 'lru-cache';

export interface DocumentLimits {
  /** The document's text in UTF-8, checked before it is parsed (a comment is one token, of any size). */
  documentBytes: number;
  tokens: number;
  depth: number;
  aliases: number;
  directives: number;
  cost: number;
}

export interface GraphQLLimits {
  anonymous: DocumentLimits;
  authenticated: DocumentLimits;
  /** Mutation fields one operation may run (each counts against the per-user rate limit). */
  mutationFields: number;
}

/**
 * GraphiQL's introspection query needs 190 tokens, depth 21 (fragments count as a level) and cost
 * 53,411 (docs/guide/security.md, GraphQL documents).
 */
export const DEFAULT_GRAPHQL_LIMITS: GraphQLLimits = {
  anonymous: { documentBytes: 64 * 1024, tokens: 1000, depth: 24, aliases: 5, directives: 10, cost: 60_000 },
  // The request body's limit (src/http/app.ts) holds authenticated documents already.
  authenticated: { documentBytes: 1024 * 1024, tokens: 2000, depth: 24, aliases: 30, directives: 50, cost: 120_000 },
  mutationFields: 5,
};

/** Every list field is assumed to return this many items when costing a document. */
export const LIST_COST_FACTOR = 10;

const LIMIT_VARIABLES = {
  documentBytes: 'MAX_DOCUMENT_BYTES',
  tokens: 'MAX_TOKENS',
  depth: 'MAX_DEPTH',
  aliases: 'MAX_ALIASES',
  directives: 'MAX_DIRECTIVES',
  cost: 'MAX_COST',
} as const satisfies Record<keyof DocumentLimits, string>;

function positiveInteger(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return value;
}

/** GRAPHQL_MAX_* for authenticated callers, GRAPHQL_ANONYMOUS_MAX_* for the others, GRAPHQL_MAX_MUTATION_FIELDS. */
export function readGraphQLLimits(env: NodeJS.ProcessEnv): GraphQLLimits {
  const read = (prefix: string, defaults: DocumentLimits) =>
    Object.fromEntries(
      Object.entries(LIMIT_VARIABLES).map(([key, suffix]) => [
        key,
        positiveInteger(env, `${prefix}${suffix}`, defaults[key as keyof DocumentLimits]),
      ]),
    ) as unknown as DocumentLimits;
  return {
    anonymous: read('GRAPHQL_ANONYMOUS_', DEFAULT_GRAPHQL_LIMITS.anonymous),
    authenticated: read('GRAPHQL_', DEFAULT_GRAPHQL_LIMITS.authenticated),
    mutationFields: positiveInteger(env, 'GRAPHQL_MAX_MUTATION_FIELDS', DEFAULT_GRAPHQL_LIMITS.mutationFields),
  };
}

/** One point per field; a list field's selection counts LIST_COST_FACTOR times. */
const listCost: ComplexityEstimator = ({ field, childComplexity }) =>
  (isListType(getNullableType(field.type)) ? LIST_COST_FACTOR : 1) * (1 + childComplexity);

/** What Yoga puts in the context before validation: the request's variables and operation name, and (over HTTP) where its cost goes. */
interface RequestParams {
  params?: { variables?: Record<string, unknown>; operationName?: string };
  budget?: { cost: number | null };
}

function validationRules(limits: DocumentLimits) {
  const report = {
    propagateOnRejection: false,
    onReject: [(context: ValidationContext | null, error: GraphQLError) => context?.reportError(error)],
  };
  return [
    maxDepthRule({ n: limits.depth, ignoreIntrospection: false, ...report }),
    maxAliasesRule({ n: limits.aliases, ...report }),
    maxDirectivesRule({ n: limits.directives, ...report }),
  ];
}

/**
 * The cost of an otherwise valid document, or a refusal when it is over the limit. Variables that do
 * not fit the operation are left to the execution, which refuses a caller without credentials (401)
 * before it reports them: here they would be answered 200 to anyone.
 */
function costProblem(schema: GraphQLSchema, document: DocumentNode, limit: number, { params, budget }: RequestParams): GraphQLError | null {
  const operation = getOperationAST(document, params?.operationName);
  if (operation && getVariableValues(schema, operation.variableDefinitions ?? [], params?.variables ?? {}, { maxErrors: 1 }).errors)
    return null;
  let cost: number;
  try {
    cost = operationCost(schema, document, operation, params);
  } catch (error) {
    return error instanceof GraphQLError ? error : createGraphQLError('Query cost could not be computed.');
  }
  if (budget) budget.cost = cost;
  return cost > limit ? createGraphQLError(`Query cost limit of ${limit} exceeded, found ${cost}.`) : null;
}

/** The cost of an operation as the limit computes it (list fields count LIST_COST_FACTOR times). */
export function documentCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Record<string, unknown>,
  operationName?: string,
): number {
  return getComplexity({ schema, query: document, variables, operationName, estimators: [listCost] });
}

/** Costs of operations without variables, which depend on their document alone, by document and operation name. */
const costsWithoutVariables = new WeakMap<DocumentNode, Map<string, number>>();

/** The operation's cost; computed once per document when the operation declares no variables (a walk of the whole document). */
function operationCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode | null | undefined,
  params: RequestParams['params'],
): number {
  const compute = () => documentCost(schema, document, params?.variables ?? {}, params?.operationName);
  if (!operation || operation.variableDefinitions?.length) return compute();
  let costs = costsWithoutVariables.get(document);
  if (!costs) costsWithoutVariables.set(document, (costs = new Map()));
  const name = params?.operationName ?? '';
  const cached = costs.get(name);
  if (cached !== undefined) return cached;
  const cost = compute();
  costs.set(name, cost);
  return cost;
}

/** Parses within the token limit; a stack overflow (nesting) is a syntax error, not a crash. */
function parseWithin(tokens: number) {
  return (source: Parameters<typeof parse>[0], options?: Parameters<typeof parse>[1]) => {
    try {
      return parse(source, { ...options, maxTokens: tokens });
    } catch (error) {
      if (error instanceof RangeError) throw createGraphQLError('Syntax Error: Document is nested too deeply.');
      throw error;
    }
  };
}

/** Parsed documents kept per caller kind (a document within one kind's limits may exceed the other's). */
const CACHED_DOCUMENTS = 1000;
/** What the kept documents may hold together: each keeps its text twice (the key, and its AST's source). */
const CACHED_DOCUMENT_BYTES = 16 * 1024 * 1024;
const ENTRY_OVERHEAD_BYTES = 1024;

/** About what a cached text takes (two bytes a character: V8's strings are Latin-1 or UTF-16). */
export const cachedTextBytes = (text: string) => 2 * text.length + ENTRY_OVERHEAD_BYTES;

const documentTooLarge = (limit: number, authenticated: boolean) =>
  createGraphQLError(`Document too large: at most ${limit} bytes ${authenticated ? 'with' : 'without'} credentials.`, {
    extensions: { code: 'DOCUMENT_TOO_LARGE', http: { status: 413 } },
  });

/**
 * A document over its caller's byte limit is refused before it is parsed or registered (APQ): it
 * must come before the persisted documents' plugins.
 */
export function documentSizePlugin(limits: GraphQLLimits, isAuthenticated: (context: object) => boolean): Plugin {
  return {
    onParams({ params, context }) {
      if (typeof params.query !== 'string') return;
      const authenticated = isAuthenticated(context);
      const limit = limits[authenticated ? 'authenticated' : 'anonymous'].documentBytes;
      if (params.query.length > limit || Buffer.byteLength(params.query) > limit) throw documentTooLarge(limit, authenticated);
    },
  };
}

/**
 * `isAuthenticated` reads the initial context (the caller is known before parsing). Parsing and
 * validation are cached per caller kind, the cost (which depends on the variables) is computed for
 * every request.
 */
export function limitsPlugin(limits: GraphQLLimits, isAuthenticated: (context: object) => boolean): Plugin {
  const suggestions = blockFieldSuggestionsPlugin({ mask: '' }).onValidate!;
  const kindOf = (context: object) => (isAuthenticated(context) ? 'authenticated' : 'anonymous');
  const documents = new LRUCache<string, DocumentNode>({
    max: CACHED_DOCUMENTS,
    maxSize: CACHED_DOCUMENT_BYTES,
    sizeCalculation: (_document, key) => cachedTextBytes(key),
  });
  const validations = {
    authenticated: new WeakMap<DocumentNode, readonly GraphQLError[]>(),
    anonymous: new WeakMap<DocumentNode, readonly GraphQLError[]>(),
  };
  return {
    onParse({ context, params, setParseFn, setParsedDocument }) {
      const kind = kindOf(context);
      const key = `${kind}\0${params.source.toString()}`;
      const cached = documents.get(key);
      if (cached) return setParsedDocument(cached);
      setParseFn(parseWithin(limits[kind].tokens));
      return ({ result }) => {
        if (result && !(result instanceof Error)) documents.set(key, result as DocumentNode);
      };
    },
    onValidate(payload) {
      const kind = kindOf(payload.context);
      const documentLimits = limits[kind];
      const document = payload.params.documentAST;
      const checkCost = (end: { valid: boolean; setResult(errors: GraphQLError[]): void }) => {
        if (!end.valid) return;
        const problem = costProblem(payload.params.schema, document, documentLimits.cost, payload.context as RequestParams);
        if (problem) end.setResult([problem]);
      };
      const cached = validations[kind].get(document);
      if (cached) {
        payload.setResult([...cached]);
        return checkCost;
      }
      for (const rule of validationRules(documentLimits)) payload.addValidationRule(rule);
      const hideSuggestions = kind === 'authenticated' ? undefined : suggestions(payload as never);
      return (end) => {
        if (typeof hideSuggestions === 'function') hideSuggestions(end as never);
        validations[kind].set(document, [...end.result]);
        checkCost(end);
      };
    },
  };
}
