// The smallest typed client a frontend needs: a document from GraphQL Code Generator's `graphql()`
// (its client preset, with persisted documents) is sent by its hash, not its text, so it runs on a
// server that runs trusted documents only (GRAPHQL_TRUSTED_DOCUMENTS=this folder's
// gql/persisted-documents.json, GRAPHQL_TRUSTED_ONLY=true). Result and variables are typed by the document.
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';

export interface Connection {
  /** The server's base URL, e.g. http://localhost:3000 */
  url: string;
  /** `Basic <base64 of email:api_key>` */
  authorization: string;
}

/** The id the client preset gives a document (`sha256:<hex>`), which the server looks up in its manifest. */
export function documentIdOf(document: TypedDocumentNode<unknown, never>): string {
  const id = (document as { __meta__?: { hash?: string } }).__meta__?.hash;
  if (!id) throw new Error('not a persisted document: run `npm run codegen`');
  return id;
}

export class GraphQLRequestError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

export async function request<Result, Variables>(
  connection: Connection,
  document: TypedDocumentNode<Result, Variables>,
  variables: Variables,
): Promise<Result> {
  const response = await fetch(`${connection.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: connection.authorization },
    body: JSON.stringify({ documentId: documentIdOf(document as TypedDocumentNode<unknown, never>), variables }),
  });
  const body = (await response.json()) as { data?: Result; errors?: { message: string; extensions?: { code?: string } }[] };
  const [error] = body.errors ?? [];
  if (error) throw new GraphQLRequestError(error.message, error.extensions?.code);
  return body.data!;
}
