// A paged list: the caller's files fifty at a time, each page asked with the cursor of the last one
// (`after`), as an infinite scroll loads them. A cursor stays valid when files are added or deleted
// meanwhile.
import { graphql } from './gql/index.js';
import type { FilesPageQuery, FilesPageQueryVariables } from './gql/graphql.js';
import { request, type Connection } from './client.js';

export const FilesPage = graphql(`
  query FilesPage($first: Int!, $after: String) {
    me {
      attachmentPage(first: $first, after: $after) {
        totalCount
        nodes {
          id
          name
          size
          createTime
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
`);

/** Every page of the caller's files, oldest first. */
export async function* filePages(connection: Connection, pageSize = 50): AsyncGenerator<FilesPageQuery['me']['attachmentPage']> {
  let after: string | null = null;
  for (;;) {
    const variables: FilesPageQueryVariables = { first: pageSize, after };
    const { me } = await request(connection, FilesPage, variables);
    const page = me.attachmentPage;
    yield page;
    if (!page.pageInfo.hasNextPage) return;
    after = page.pageInfo.endCursor;
  }
}
