// After five executions of a prepared statement PostgreSQL may switch to a generic plan, made without
// the values: for the file lists, whose selectivity varies per user, that plan must be as good as the
// custom one on hostile data (one user with 60,000 files beside users with a few). Each list statement
// is prepared as the server sends it and EXPLAINed under plan_cache_mode = force_generic_plan and
// force_custom_plan (EXPLAIN (GENERIC_PLAN) needs PostgreSQL 16; Debian's is 15): both read the
// attachments from the (owner, organization, id) index, never a scan of the whole table. A whole
// list's chunk size is written into its text (src/domain/connections.ts says why), so for the
// 60,000-file user its generic plan is the custom one, node for node.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ownAttachmentsListStatement } from '../../src/domain/attachments/statements.js';
import { captureStatements } from '../../src/db/statement-counter.js';
import { callApi } from '../support/rest.js';
import { connectToTestDatabase, startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';
import { nodesOf, type PlanNode } from '../support/plans.js';

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

/** The plan, under `mode`, of the prepared statement `name` with these (integer) values. */
async function planOf(name: string, mode: 'force_generic_plan' | 'force_custom_plan', values: unknown[]): Promise<PlanNode[]> {
  await client.query(`SET plan_cache_mode = ${mode}`);
  const literals = values.map((value) => {
    if (typeof value !== 'number' || !Number.isInteger(value)) throw new Error(`not an integer: ${String(value)}`);
    return String(value);
  });
  const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    `EXPLAIN (FORMAT JSON) EXECUTE ${name}(${literals.join(', ')})`,
  );
  return nodesOf(rows[0]!['QUERY PLAN'][0].Plan);
}

const attachmentReads = (plan: PlanNode[]) =>
  plan.filter((node) => node['Relation Name'] === 'attachment').map((node) => [node['Node Type'], node['Index Name']]);
/** Each node, and the rows the planner expects of the page's LIMIT: what decides how the messages are joined. */
const shape = (plan: PlanNode[]) =>
  plan.map((node) => [node['Node Type'], node['Relation Name'], node['Index Name'], node['Node Type'] === 'Limit' && node['Plan Rows']]);

describe.each([
  ['the REST list (a whole list)', false, undefined],
  ['the list with messages (a whole list)', true, undefined],
  ['the GraphQL page (first 51)', true, 51],
])('%s', (_name, withMessages, pageLimit) => {
  test('the generic plan reads the same index as the custom one, for the 60,000-file user and a 3-file user', async () => {
    const statement = ownAttachmentsListStatement({ id: world.users.member.id, organizationId: world.org.id }, withMessages, pageLimit);
    const name = `plan_check_${withMessages ? 'messages' : 'plain'}_${pageLimit ?? 'whole'}`;
    await client.query(`PREPARE ${name} AS ${statement.text}`);
    try {
      for (const user of [world.users.member, world.users.guest]) {
        const values = [user.id, world.org.id, ...statement.values.slice(2)];
        const custom = await planOf(name, 'force_custom_plan', values);
        const generic = await planOf(name, 'force_generic_plan', values);
        expect(attachmentReads(custom)).toEqual([['Index Scan', 'attachment_ownerId_organizationId_id_idx']]);
        expect(attachmentReads(generic)).toEqual(attachmentReads(custom));
        if (pageLimit === undefined && user === world.users.member) expect(shape(generic)).toEqual(shape(custom));
      }
    } finally {
      await client.query(`DEALLOCATE ${name}`);
      await client.query('RESET plan_cache_mode');
    }
  });
});

test('every list goes named: a whole list with its chunk size in the text, a page with its size a parameter', async () => {
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
  const lists = captured.filter((statement) => /FROM attachment\s+WHERE "ownerId"/.test(statement.text));
  expect(
    lists.map((statement) => [statement.text.match(/LIMIT (\S+)\)/)?.[1], statement.values.length, statement.name !== undefined]),
  ).toEqual([
    ['2000', 2, true],
    ['$3', 3, true],
    ['2000', 2, true],
  ]);
});
