// GraphQL requests with files, per the GraphQL multipart request specification: the operation in
// an `operations` field, a `map` of file parts to variable paths, then the files. Every request
// carries the CSRF-prevention headers the server requires of non-JSON requests.
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print } from 'graphql';
import type { GraphQLResponse } from './graphql.js';

export const CSRF_HEADERS = { 'x-graphql-csrf': '1', 'graphql-require-preflight': '1' };

export interface GraphQLFile {
  /** The variable that receives the file, e.g. `file` for `variables.file`. */
  variable: string;
  name: string;
  type: string;
  content: string | Uint8Array;
}

export async function gqlMultipart<T, V>(
  serverUrl: string,
  document: TypedDocumentNode<T, V>,
  variables: Omit<V, 'file'>,
  files: GraphQLFile[],
  authorization?: string,
): Promise<GraphQLResponse<T>> {
  const form = new FormData();
  const withNulls = { ...variables, ...Object.fromEntries(files.map((f) => [f.variable, null])) };
  form.append('operations', JSON.stringify({ query: print(document), variables: withNulls }));
  form.append('map', JSON.stringify(Object.fromEntries(files.map((f, i) => [String(i), [`variables.${f.variable}`]]))));
  files.forEach((f, i) => form.append(String(i), new Blob([f.content as BlobPart], { type: f.type }), f.name));
  const response = await fetch(`${serverUrl}/graphql`, {
    method: 'POST',
    headers: { ...CSRF_HEADERS, ...(authorization ? { authorization } : {}) },
    body: form,
  });
  return { status: response.status, ...(await response.json()) };
}
