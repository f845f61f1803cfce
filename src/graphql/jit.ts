// GraphQL documents compiled to JavaScript (graphql-jit) once they are parsed and validated: a list
// of 500 attachments resolves in a fraction of graphql-js's time, because the generic walk (argument
// values and an info object per field) is compiled away.
import { useGraphQlJit } from '@envelop/graphql-jit';
import { isAbstractType, type DocumentNode, type GraphQLSchema, type Source, type SourceLocation } from 'graphql';
import { createGraphQLError, isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { Logger } from '../logging.js';

/**
 * graphql-jit calls resolveType(value, context, info) without the abstract type, which Pothos's
 * resolvers read; pass it along.
 */
function withAbstractTypeArgument(schema: GraphQLSchema): void {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isAbstractType(type) || !type.resolveType) continue;
    const resolveType = type.resolveType;
    type.resolveType = (value, context, info, abstractType) => resolveType(value, context, info, abstractType ?? type);
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
  withAbstractTypeArgument(schema);
  const compiled = useGraphQlJit({}, { onError: (result) => log.warn({ errors: result.errors }, 'GraphQL document could not be compiled') }) as Plugin;
  return [compiled, locatedErrors];
}
