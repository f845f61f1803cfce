// GraphQL documents compiled to JavaScript (graphql-jit) once they are parsed and validated: a list
// of 500 attachments resolves in a fraction of graphql-js's time, because the generic walk (argument
// values and an info object per field) is compiled away.
import { useGraphQlJit } from '@envelop/graphql-jit';
import { isAbstractType, type GraphQLSchema } from 'graphql';
import type { Plugin } from 'graphql-yoga';
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

export function compiledExecution(schema: GraphQLSchema, log: Logger): Plugin {
  withAbstractTypeArgument(schema);
  return useGraphQlJit({}, { onError: (result) => log.warn({ errors: result.errors }, 'GraphQL document could not be compiled') }) as Plugin;
}
