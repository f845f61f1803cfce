// GraphQL documents compiled to JavaScript (graphql-jit) once they are parsed and validated: a list
// of 500 attachments resolves in a fraction of graphql-js's time, because the generic walk (argument
// values and an info object per field) is compiled away.
import { useGraphQlJit } from '@envelop/graphql-jit';
import {
  getOperationAST,
  isAbstractType,
  isObjectType,
  type DocumentNode,
  type GraphQLSchema,
  type Source,
  type SourceLocation,
} from 'graphql';
import { createGraphQLError, isAsyncIterable, isPromise, type Plugin } from 'graphql-yoga';
import type { Logger } from '../logging.js';

/** The request's logger, from the GraphQL context: the second argument of resolveType and isTypeOf alike. */
const requestLogOf = (args: unknown[], fallback: Logger) => (args[1] as { log?: Logger } | undefined)?.log ?? fallback;

/** `callback` whose throw or rejection is logged and answered with `fallback`, never left unhandled. */
function guarded<Args extends unknown[], Result>(
  log: Logger,
  name: string,
  fallback: Result,
  callback: (...args: Args) => Result | Promise<Result>,
) {
  const recover = (error: unknown, args: Args) => {
    requestLogOf(args, log).error({ err: error }, `GraphQL ${name} failed`);
    return fallback;
  };
  return (...args: Args): Result | Promise<Result> => {
    try {
      const result = callback(...args);
      return isPromise(result) ? result.catch((error: unknown) => recover(error, args)) : result;
    } catch (error) {
      return recover(error, args);
    }
  };
}

/**
 * Prepares the schema's type-deciding callbacks for graphql-jit:
 * - it calls resolveType(value, context, info) without the abstract type, which Pothos's resolvers
 *   read: passed along;
 * - a resolveType or isTypeOf that throws (or rejects) under an asynchronous parent is left unhandled
 *   by its compiled code: the request never answers and the process meets an unhandled rejection.
 *   Here such a failure is logged and the value is of no type, which the answer reports as a field
 *   error, as graphql-js would.
 */
function guardTypeCallbacks(schema: GraphQLSchema, log: Logger): void {
  for (const type of Object.values(schema.getTypeMap())) {
    if (isAbstractType(type) && type.resolveType) {
      const resolveType = type.resolveType;
      type.resolveType = guarded(log, `resolveType of ${type.name}`, undefined, (value, context, info, abstractType) =>
        resolveType(value, context, info, abstractType ?? type),
      );
    }
    if (isObjectType(type) && type.isTypeOf) {
      type.isTypeOf = guarded(log, `isTypeOf of ${type.name}`, false, type.isTypeOf);
    }
  }
}

/** The offset in `source` of a 1-based line and column. */
function positionOf(source: Source, { line, column }: SourceLocation): number {
  let offset = 0;
  for (let current = 1; current < line; current++) offset = source.body.indexOf('\n', offset) + 1;
  return offset + column - 1;
}

/**
 * graphql-jit's errors carry their locations but not the document nodes Yoga rebuilds them from (so
 * the locations would be lost), and its compiled JSON writer is not used for results with errors.
 */
const locatedErrors: Plugin = {
  onExecute: ({ args }) => ({
    onExecuteDone: ({ result, setResult }) => {
      const source = (args.document as DocumentNode).loc?.source;
      if (isAsyncIterable(result) || !result.errors?.length || !source) return;
      const errors = result.errors.map((error) =>
        error.nodes || !error.locations
          ? error
          : createGraphQLError(error.message, {
              source,
              positions: error.locations.map((location: SourceLocation) => positionOf(source, location)),
              path: error.path,
              originalError: error.originalError,
              extensions: error.extensions,
            }),
      );
      setResult({ data: result.data, errors, ...(result.extensions && { extensions: result.extensions }) });
    },
  }),
};

export function compiledExecution(schema: GraphQLSchema, log: Logger): Plugin[] {
  guardTypeCallbacks(schema, log);
  const compiled = useGraphQlJit(
    {},
    {
      // Subscriptions stay on graphql-js: graphql-jit hands a subscription's subscribe the operation's
      // variables instead of the field's arguments (an open graphql-jit issue).
      enableIf: (args) => getOperationAST(args.document, args.operationName)?.operation !== 'subscription',
      onError: (result) => log.warn({ errors: result.errors }, 'GraphQL document could not be compiled'),
    },
  ) as Plugin;
  return [compiled, locatedErrors];
}
