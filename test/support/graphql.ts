// Sends a typed GraphQL document (from codegen's `graphql()`) to a running server over HTTP.
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print } from 'graphql';

export interface GraphQLResponse<T> {
  status: number;
  data?: T;
  errors?: { message: string; extensions?: Record<string, unknown> }[];
}

export async function gql<T, V>(
  serverUrl: string,
  document: TypedDocumentNode<T, V>,
  variables: V,
  authorization?: string,
): Promise<GraphQLResponse<T>> {
  const response = await fetch(`${serverUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
    body: JSON.stringify({ query: print(document), variables }),
  });
  return { status: response.status, ...(await response.json()) };
}
