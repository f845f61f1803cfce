// GraphiQL and introspection work without credentials; every other operation needs a valid
// Basic Authorization header and otherwise fails with HTTP 401 and extensions.code UNAUTHORIZED.
import { Kind, type DocumentNode, type ExecutionArgs, type ExecutionResult, type OperationDefinitionNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { notLoggedIn } from '../domain/auth/authenticate.js';
import type { GraphQLContext } from './context.js';
import { requestError } from './schema/errors.js';

function isIntrospectionOnly(document: DocumentNode, operationName?: string | null): boolean {
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const operation = operationName ? operations.find((o) => o.name?.value === operationName) : operations[0];
  if (operation?.operation !== 'query') return false;
  return operation.selectionSet.selections.every((s) => s.kind === Kind.FIELD && s.name.value.startsWith('__'));
}

export function authPlugin(): Plugin<GraphQLContext> {
  const refuseAnonymous = ({
    args,
    setResultAndStopExecution,
  }: {
    args: ExecutionArgs;
    setResultAndStopExecution(result: ExecutionResult): void;
  }) => {
    const context = args.contextValue as GraphQLContext;
    if (context.actor || isIntrospectionOnly(args.document, args.operationName)) return;
    setResultAndStopExecution({ errors: [requestError(context.authError ?? notLoggedIn(), { refusesRequest: true })] });
  };
  return { onExecute: refuseAnonymous, onSubscribe: refuseAnonymous };
}
