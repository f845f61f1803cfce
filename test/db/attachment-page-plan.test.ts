// The plan PostgreSQL takes for a page of the caller's files when their files all came after most of
// the table's: still the (owner, organization, id) index, reading the page's rows and no others. By id
// alone the primary key's order is the same, and the planner (which assumes an owner's files spread
// evenly over the ids) took it and filtered every older file of the table (the benchmark's external run:
// 25 ms for the first page of a 60,000-file user). Each statement is EXPLAINed as the server sent it.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { captureStatements } from '../../src/db/statement-counter.js';
import { graphql } from '../generated/gql.js';
import { gql } from '../support/graphql.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';
import { nodesOf, type PlanNode } from '../support/plans.js';

let server: TestServer;
let world: World;
const OLDER_FILES = 40_000;
const OWN_FILES = 3_000;

beforeAll(async () => {
  server = await startTestServer();
  world = await createWorld(server.app.prisma);
  // Others' files first, in no order of owner (as files come in), then all of the member's: the
  // member's are the table's newest, and owners do not follow the table's order.
  await addFiles([world.users.owner.id, world.users.guest.id, world.users.admin.id], OLDER_FILES);
  await addFiles([world.users.member.id], OWN_FILES);
  await server.app.sql.rows('ANALYZE attachment', []);
}, 60_000);
afterAll(() => server?.close());

/** `count` files, each of one of `owners` in turn. */
async function addFiles(owners: number[], count: number) {
  await server.app.sql.rows(
    `INSERT INTO attachment ("organizationId", "ownerId", name, "pathId", size)
     SELECT $1::int, ($2::int[])[1 + n % cardinality($2::int[])], 'plan-' || n || '.txt', $1::int::text || '/pl/' || md5(random()::text || n) || '/plan-' || n || '.txt', 10
       FROM generate_series(1, $3::int) n`,
    [world.org.id, owners, count],
  );
}

const Page = graphql(`
  query FilesPageForPlan($first: Int, $last: Int) {
    me {
      attachmentPage(first: $first, last: $last) {
        nodes {
          id
        }
      }
    }
  }
`);

test.each([
  ['the first page', { first: 50 }],
  ['the last page (read backward)', { last: 50 }],
])('%s of the newest owner’s files reads them from the owner’s index, and nothing else', async (_name, variables) => {
  const pages = captureStatements(/SELECT \* FROM attachment\s+WHERE "ownerId"/);
  const answer = await gql(server.url, Page, variables, world.users.member.auth);
  expect(answer.data?.me.attachmentPage.nodes).toHaveLength(50);
  expect(pages).toHaveLength(1);
  const [
    {
      'QUERY PLAN': [explained],
    },
  ] = (await server.app.sql.rows<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    `EXPLAIN (ANALYZE, FORMAT JSON) ${pages[0]!.text}`,
    pages[0]!.values,
  )) as [{ 'QUERY PLAN': [{ Plan: PlanNode }] }];
  const reads = nodesOf(explained.Plan).filter((node) => node['Relation Name'] === 'attachment');
  expect(reads.map((node) => [node['Node Type'], node['Index Name']])).toEqual([
    ['Index Scan', 'attachment_ownerId_organizationId_id_idx'],
  ]);
  // The page and the one row that tells whether there is another.
  expect(reads[0]!['Actual Rows']).toBe(51);
  expect(reads[0]!['Rows Removed by Filter'] ?? 0).toBe(0);
});
