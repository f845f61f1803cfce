// The hot paths' named statements (db/sql.ts `namedStatement`), prepared once per connection where
// DATABASE_PREPARED_STATEMENTS allows it (db/prepared-statements.ts). Two proofs for each server: the
// driver is handed the statement's name (the statement counter keeps what each query carried), and
// PostgreSQL holds the statement prepared on the server's own connections: every connection of its
// pool is borrowed at once and asked for its pg_prepared_statements (a session's own view).
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { loadConfig, type Config } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { preparesStatements } from '../../src/db/prepared-statements.js';
import { captureStatements } from '../../src/db/statement-counter.js';
import { FAMILY_TEXT_LIMIT, namedStatementFamily, type NamedStatement } from '../../src/db/sql.js';
import { StartupError } from '../../src/startup-error.js';
import { callApi } from '../support/rest.js';
import { startTestServer, testDatabaseUrls, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

const throughPooler = inject('pooledDatabaseUrl') !== inject('databaseUrl');

/** The hot statements a few requests send: the attachment list, the invitation list, and their counts. */
const HOT = /FROM attachment|FROM invitation/;

/** Every statement prepared on any connection of the server's pool, by name. */
async function preparedOnServerConnections(server: TestServer): Promise<Map<string, string>> {
  const { pool } = server.database;
  const clients = await Promise.all(Array.from({ length: pool.options.max }, () => pool.connect()));
  try {
    const prepared = new Map<string, string>();
    for (const client of clients) {
      const { rows } = await client.query<{ name: string; statement: string }>('SELECT name, statement FROM pg_prepared_statements');
      for (const row of rows) prepared.set(row.name, row.statement);
    }
    return prepared;
  } finally {
    for (const client of clients) client.release();
  }
}

async function hotRequests(server: TestServer, world: World) {
  const captured = captureStatements(HOT);
  for (let i = 0; i < 2; i++) {
    expect((await callApi(server.url, 'GET', '/attachments', { authorization: world.users.member.auth })).status).toBe(200);
    expect((await callApi(server.url, 'GET', '/invites', { authorization: world.users.admin.auth })).status).toBe(200);
  }
  expect(captured.length).toBeGreaterThanOrEqual(4);
  return captured;
}

test('auto prepares without a pooler and not through one; on always; off never', () => {
  expect(preparesStatements('auto', false)).toBe(true);
  expect(preparesStatements('auto', true)).toBe(false);
  expect(preparesStatements('on', false)).toBe(true);
  expect(preparesStatements('on', true)).toBe(true);
  expect(preparesStatements('off', false)).toBe(false);
  expect(preparesStatements('off', true)).toBe(false);
});

test('DATABASE_PREPARED_STATEMENTS is auto, on or off; anything else is a one-line start-up error', () => {
  expect(loadConfig({}).databasePreparedStatements).toBe('auto');
  for (const value of ['auto', 'on', 'off'] as const)
    expect(loadConfig({ DATABASE_PREPARED_STATEMENTS: value }).databasePreparedStatements).toBe(value);
  for (const value of ['yes', 'ON', ' on', 'on\0', 'x'.repeat(10_000)]) {
    expect(() => loadConfig({ DATABASE_PREPARED_STATEMENTS: value })).toThrow(StartupError);
    expect(() => loadConfig({ DATABASE_PREPARED_STATEMENTS: value })).toThrow(
      /^DATABASE_PREPARED_STATEMENTS must be auto, on or off, got /,
    );
  }
});

test('a family names each distinct text once, and past its limit sends further texts unnamed', () => {
  const family = namedStatementFamily('test.family');
  const first = family('SELECT 1') as NamedStatement;
  expect(family('SELECT 1')).toBe(first);
  expect(Object.isFrozen(first)).toBe(true);
  expect(first.name).toMatch(/^test\.family\.[0-9a-f]{10}$/);
  for (let i = 2; i <= FAMILY_TEXT_LIMIT; i++) expect(typeof family(`SELECT ${i}`)).toBe('object');
  expect(family(`SELECT ${FAMILY_TEXT_LIMIT + 1}`)).toBe(`SELECT ${FAMILY_TEXT_LIMIT + 1}`);
  expect(family('SELECT 1')).toBe(first);
});

describe.each([
  ['on', true],
  ['auto', true],
  ['off', false],
] as const)('DATABASE_PREPARED_STATEMENTS=%s, connected to PostgreSQL itself', (setting, prepares) => {
  let server: TestServer;
  let world: World;
  beforeAll(async () => {
    server = await startTestServer({ databasePreparedStatements: setting } satisfies Partial<Config>, { outbox: false }, 'direct');
    world = await createWorld(server.app.prisma);
  });
  afterAll(() => server?.close());

  test(
    prepares
      ? 'the hot statements go named, and PostgreSQL holds them prepared on the server’s connections'
      : 'no statement goes named, and none is prepared',
    async () => {
      expect(server.database.preparesStatements).toBe(prepares);
      const captured = await hotRequests(server, world);
      const prepared = await preparedOnServerConnections(server);
      if (!prepares) {
        expect(captured.filter((statement) => statement.name !== undefined)).toEqual([]);
        expect([...prepared.keys()]).toEqual([]);
        return;
      }
      for (const statement of captured) expect(statement.name).toMatch(/^(attachments|invitations)\.(page|count)\.[0-9a-f]{10}$/);
      for (const label of ['attachments.page', 'invitations.page']) {
        const sent = captured.find((statement) => statement.name!.startsWith(`${label}.`))!;
        expect(prepared.get(sent.name!)).toBe(sent.text);
      }
      // One text per list: the second request of each reused the first one's statement.
      expect(new Set(captured.map((statement) => statement.name)).size).toBe(2);
    },
  );
});

describe.skipIf(!throughPooler)(
  'through PgBouncer (runs when DATABASE_DIRECT_URL is set and DATABASE_URL goes through the pooler, as in .ci/run)',
  () => {
    test('auto does not prepare through the pooler, and the lists answer', async () => {
      const server = await startTestServer({ databasePreparedStatements: 'auto' });
      try {
        const world = await createWorld(server.app.prisma);
        expect(server.database.preparesStatements).toBe(false);
        const captured = await hotRequests(server, world);
        expect(captured.filter((statement) => statement.name !== undefined)).toEqual([]);
      } finally {
        await server.close();
      }
    });

    test('on through a pooler that loses named statements (PgBouncer 1.18 in transaction mode) refuses to start, saying why', async () => {
      const refusal = await openDatabase({ ...(await testDatabaseUrls()), preparedStatements: 'on' }).then(
        async (database) => {
          await database.close();
          return undefined;
        },
        (error: unknown) => error,
      );
      expect(refusal).toBeInstanceOf(StartupError);
      expect((refusal as Error).message).toMatch(
        /^DATABASE_PREPARED_STATEMENTS=on: the pooler at DATABASE_URL loses named statements .*prepared statement .* does not exist/,
      );
    });
  },
);
