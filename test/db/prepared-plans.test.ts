// After five executions of a prepared statement PostgreSQL may switch to a generic plan, made without
// the values: for the file lists, whose selectivity varies per user, that plan must be as good as the
// custom one on hostile data (one user with 60,000 files beside users with a few). Each list statement
// is prepared as the server sends it and EXPLAINed under plan_cache_mode = force_generic_plan and
// force_custom_plan (EXPLAIN (GENERIC_PLAN) needs PostgreSQL 16; Debian's is 15): both read the
// attachments from the (owner, organization, id) index, never a scan of the whole table. The whole
// list with messages is the exception the server makes: it goes unnamed (attachments.ts says why).
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ownAttachmentsListStatement } from '../../src/domain/attachments/statements.js';
import { captureStatements } from '../../src/db/statement-counter.js';
import { callApi } from '../support/rest.js';
import { connectToTestDatabase, startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

const HEAVY_FILES = 60_000;
const LIGHT_FILES = 3;

let server: TestServer;
let world: World;
let client: pg.Client;

beforeAll(async () => {
  server = await startTestServer({}, { outbox: false }, 'direct');
  world = await createWorld(server.app.prisma);
  await addFiles(world.users.member.id, HEAVY_FILES);
  for (const user of [world.users.owner, world.users.admin, world.users.guest]) await addFiles(user.id, LIGHT_FILES);
  client = await connectToTestDatabase();
  await client.query('ANALYZE attachment');
}, 120_000);
afterAll(async () => {
  await client?.end();
  await server?.close();
});

async function addFiles(ownerId: number, count: number) {
  await server.app.sql.rows(
    `INSERT INTO attachment ("organizationId", "ownerId", name, "pathId", size)
     SELECT $1::int, $2::int, 'skew-' || n || '.txt', $1::int::text || '/sk/' || md5(random()::text || n) || '/skew-' || n || '.txt', 10
       FROM generate_series(1, $3::int) n`,
    [world.org.id, ownerId, count],
  );
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

/** How the plan reads `attachment`, under `mode`, for the prepared statement `name` with these (integer) values. */
async function attachmentReads(name: string, mode: 'force_generic_plan' | 'force_custom_plan', values: unknown[]) {
  await client.query(`SET plan_cache_mode = ${mode}`);
  const literals = values.map((value) => {
    if (typeof value !== 'number' || !Number.isInteger(value)) throw new Error(`not an integer: ${String(value)}`);
    return String(value);
  });
  const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    `EXPLAIN (FORMAT JSON) EXECUTE ${name}(${literals.join(', ')})`,
  );
  const plan = rows[0]!['QUERY PLAN'][0].Plan;
  return nodesOf(plan)
    .filter((node) => node['Relation Name'] === 'attachment')
    .map((node) => [node['Node Type'], node['Index Name']]);
}

describe.each([
  ['the REST list (a whole page)', false, undefined],
  ['the list with messages (a whole page)', true, undefined],
  ['the GraphQL page (first 51)', true, 51],
])('%s', (_name, withMessages, limit) => {
  test('the generic plan reads the same index as the custom one, for the 60,000-file user and a 3-file user', async () => {
    const statement = ownAttachmentsListStatement({ id: world.users.member.id, organizationId: world.org.id }, withMessages, limit);
    const name = `plan_check_${withMessages ? 'messages' : 'plain'}_${limit ?? 'page'}`;
    await client.query(`PREPARE ${name} AS ${statement.text}`);
    try {
      for (const user of [world.users.member, world.users.guest]) {
        const values = [user.id, world.org.id, ...statement.values.slice(2)];
        const custom = await attachmentReads(name, 'force_custom_plan', values);
        const generic = await attachmentReads(name, 'force_generic_plan', values);
        expect(custom).toEqual([['Index Scan', 'attachment_ownerId_organizationId_id_idx']]);
        expect(generic).toEqual(custom);
      }
    } finally {
      await client.query(`DEALLOCATE ${name}`);
      await client.query('RESET plan_cache_mode');
    }
  });
});

test('the whole list with messages goes unnamed (planned for its owner each time); its pages and the REST list go named', async () => {
  const captured = captureStatements(/FROM attachment/);
  const ask = async (query: string) => {
    const response = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: world.users.guest.auth },
      body: JSON.stringify({ query }),
    });
    expect(((await response.json()) as { errors?: unknown }).errors, query).toBeUndefined();
  };
  await ask('{ attachments { attachments { id messages { id } } } }');
  await ask('{ me { attachmentPage(first: 2) { nodes { id } } } }');
  expect((await callApi(server.url, 'GET', '/attachments', { authorization: world.users.guest.auth })).status).toBe(200);
  const pages = captured.filter((statement) => /LIMIT \$/.test(statement.text));
  expect(pages.map((statement) => [statement.values.at(-1), statement.name !== undefined])).toEqual([
    [2000, false],
    [3, true],
    [2000, true],
  ]);
});
