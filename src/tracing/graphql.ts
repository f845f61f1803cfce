// GraphQL's parse, validate and execute as spans of the request's trace, through envelop's
// instrumentation, which wraps each phase whole (the plugins' hooks and caches, and graphql-jit's
// compiled execution, included): the resolvers' statements are children of the execute span. The
// execute span holds the operation's name and type, never the document (its literals may be
// secrets), the variables or the result. src/graphql/yoga.ts adds it only when tracing.
import { getOperationAST, type DocumentNode } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import { inSpan, tracing } from './spans.js';

/** Only within a request's trace: operations over WebSocket, which has no server span, are not traced. */
// biome-ignore lint/suspicious/noConfusingVoidType: envelop's instrumentation hooks are typed to return void, and the wrapped phase's promise must pass through them.
const phase = (name: string) => (_payload: unknown, wrapped: () => unknown) => inSpan(name, {}, wrapped, { withinTrace: true }) as void;

export function graphqlTracing(): Plugin {
  return {
    instrumentation: {
      parse: phase('graphql.parse'),
      validate: phase('graphql.validate'),
      execute: phase('graphql.execute'),
    },
    onExecute({ args }) {
      const span = tracing?.activeSpan();
      if (!span) return;
      const operation = getOperationAST(args.document as DocumentNode, args.operationName);
      span.setAttribute('graphql.operation.type', operation?.operation ?? 'unknown');
      if (operation?.name) span.setAttribute('graphql.operation.name', operation.name.value);
      return {
        onExecuteDone({ result }) {
          if (!isAsyncIterable(result) && result.errors?.length) tracing?.fail(span, 'GraphQLError');
        },
      };
    },
  };
}
