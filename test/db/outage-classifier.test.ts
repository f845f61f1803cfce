// The outage classifier (src/db/outage-errors.ts) and what it decides at the REST door
// (src/rest/dispatch.ts with src/http/database-status.ts), on errors made for real where practical:
// PostgreSQL's, Prisma's and Node's own, met against the test database, a closed port, a missing
// socket and a missing file. Bugs stay bugs (500, the stack logged, no outage opened), whatever
// their words say; the ways of losing the database are outages (503 with Retry-After, no stack).
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { classifyDatabaseError } from '../../src/db/outage-errors.js';
import { DatabaseStatus } from '../../src/http/database-status.js';
import { dispatchRest, type RestRoute } from '../../src/rest/dispatch.js';
import { capturedLogger } from '../support/log-capture.js';
import { connectToTestDatabase, startTestServer, testDatabaseUrl, type TestServer } from '../support/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

/** The error `work` fails with (it must fail). */
async function errorOf(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

/** A statement's error from a connection of its own to the test database. */
async function statementError(text: string): Promise<unknown> {
  const client = await connectToTestDatabase();
  try {
    return await errorOf(() => client.query(text));
  } finally {
    await client.end();
  }
}

/** A port nothing listens on (taken, then let go). */
async function closedPort(): Promise<number> {
  const listener = createServer();
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as { port: number };
  await new Promise((resolve) => listener.close(resolve));
  return port;
}

const connectionError = (config: pg.ClientConfig) => errorOf(() => new pg.Client(config).connect());

/** The statement's backend terminated by another session while it runs (57P01). */
async function terminatedBackendError(): Promise<unknown> {
  const victim = await connectToTestDatabase();
  victim.on('error', () => {});
  const admin = await connectToTestDatabase();
  try {
    const { rows } = await victim.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const running = errorOf(() => victim.query('SELECT pg_sleep(30)'));
    const sleeping = `SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = 'active' AND query LIKE 'SELECT pg_sleep%'`;
    while (!(await admin.query(sleeping, [rows[0]!.pid])).rowCount) await new Promise((resolve) => setImmediate(resolve));
    await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
    return await running;
  } finally {
    await admin.end();
    await victim.end().catch(() => {});
  }
}

const shaped = (message: string, fields: Record<string, unknown>) => Object.assign(new Error(message), fields);

interface Case {
  name: string;
  make: () => Promise<unknown>;
}

const prisma = () => server.app.prisma;
const counter = (key: string) => ({ data: { key, count: 1, windowEnd: new Date() } });
const undefinedConnection = undefined as unknown as { connection: { end(): void } };

const BUGS: Case[] = [
  {
    name: 'PostgreSQL 23505 (unique violation)',
    make: () => statementError('CREATE TEMP TABLE t (x int UNIQUE); INSERT INTO t VALUES (1), (1)'),
  },
  { name: 'PostgreSQL 42P01 (no such table)', make: () => statementError('SELECT * FROM no_such_table_here') },
  { name: 'PostgreSQL 42601 (syntax error)', make: () => statementError('SELEC 1') },
  { name: 'PostgreSQL 22P02 (invalid text for a number)', make: () => statementError("SELECT 'twelve'::int") },
  {
    name: 'PostgreSQL 42P01 through Prisma (raw)',
    make: () => errorOf(() => prisma().$queryRawUnsafe('SELECT * FROM no_such_table_here')),
  },
  {
    name: 'PostgreSQL 22P02 through the hot-path driver (sql.ts)',
    make: () => errorOf(() => server.app.sql.rows("SELECT 'twelve'::int", [])),
  },
  {
    name: 'Prisma P2002 (unique constraint)',
    make: async () => {
      const key = `outage-classifier-${process.pid}-${Date.now()}`;
      await prisma().rateCounter.create(counter(key));
      return errorOf(() => prisma().rateCounter.create(counter(key)));
    },
  },
  {
    name: 'Prisma P2025 (record to update not found)',
    make: () => errorOf(() => prisma().rateCounter.update({ where: { key: 'no such counter' }, data: { count: 2 } })),
  },
  { name: "a missing upload file's ENOENT", make: () => errorOf(() => readFile('/nonexistent/uploads/2/ab/cd/file.png')) },
  { name: 'a plain Error saying "connection"', make: async () => new Error('connection settings of the upload store are invalid') },
  { name: 'a TypeError', make: async () => errorOf(async () => undefinedConnection.connection.end()) },
];

const OUTAGES: (Case & { kind: 'lost' | 'unavailable' })[] = [
  {
    name: 'connection refused (ECONNREFUSED)',
    kind: 'unavailable',
    make: async () => connectionError({ host: '127.0.0.1', port: await closedPort(), connectionTimeoutMillis: 5_000 }),
  },
  {
    name: "the embedded database's socket missing (ENOENT on connect)",
    kind: 'unavailable',
    make: () => connectionError({ host: '/nonexistent-socket-dir', port: 5432 }),
  },
  {
    name: 'PostgreSQL 3D000 (no such database)',
    kind: 'unavailable',
    make: async () => {
      const url = new URL(await testDatabaseUrl());
      url.pathname = '/no_such_database_here';
      return connectionError({ connectionString: url.href });
    },
  },
  { name: 'PostgreSQL 57P01 (backend terminated)', kind: 'lost', make: terminatedBackendError },
  { name: 'PostgreSQL 08006 (connection failure)', kind: 'lost', make: async () => shaped('connection failure', { code: '08006' }) },
  {
    name: 'PostgreSQL 53300 (too many connections)',
    kind: 'unavailable',
    make: async () => shaped('sorry, too many clients already', { code: '53300' }),
  },
  {
    name: 'PostgreSQL 28P01 (password rotated)',
    kind: 'unavailable',
    make: async () => shaped('password authentication failed', { code: '28P01' }),
  },
  {
    name: 'Prisma P1001 (cannot reach the server)',
    kind: 'unavailable',
    make: async () => shaped("Can't reach database server", { code: 'P1001' }),
  },
  {
    name: "Prisma's wrapped driver error (ConnectionClosed)",
    kind: 'lost',
    make: async () =>
      shaped('Invalid `prisma.user.findMany()` invocation:\n\nServer has closed the connection.', {
        code: 'P1017',
        meta: { driverAdapterError: { kind: 'ConnectionClosed' } },
      }),
  },
];

const made = new Map<string, unknown>();
beforeAll(async () => {
  for (const entry of [...BUGS, ...OUTAGES]) made.set(entry.name, await entry.make());
}, 60_000);

describe('the classifier', () => {
  test.each(BUGS.map((entry) => entry.name))('a bug: %s', (name) => {
    expect(classifyDatabaseError(made.get(name))).toBeNull();
  });

  test.each(OUTAGES.map((entry) => [entry.name, entry.kind]))('an outage: %s (%s)', (name, kind) => {
    expect(classifyDatabaseError(made.get(name))).toBe(kind);
  });
});

describe('at the REST door', () => {
  const { logger, lines, clear } = capturedLogger('info');

  /** GET /api/v1/failing through the REST dispatcher, its handler failing with `error`, with a database status of its own. */
  async function answerTo(error: unknown) {
    const status = new DatabaseStatus(server.app.sql, logger);
    const routes: RestRoute[] = [{ pattern: /^\/failing$/, methods: {}, publicMethods: { GET: async () => Promise.reject(error) } }];
    clear();
    try {
      const request = new Request('http://127.0.0.1/api/v1/failing');
      const response = await dispatchRest(routes, request, server.app, { clientAddress: '127.0.0.1', log: logger, database: status });
      const retryAfter = response.headers.get('retry-after');
      return { status: response.status, retryAfter, body: await response.json(), outageOpened: status.down };
    } finally {
      status.stop();
    }
  }

  test.each(BUGS.map((entry) => entry.name))('a bug answers 500, its stack logged, no outage opened: %s', async (name) => {
    const error = made.get(name) as Error;
    expect(await answerTo(error)).toEqual({
      status: 500,
      retryAfter: null,
      body: { result: 'error', msg: 'Internal server error', code: 'BAD_REQUEST' },
      outageOpened: false,
    });
    const logged = lines.filter((line) => line.msg === 'unexpected error');
    expect(logged).toHaveLength(1);
    expect((logged[0]!.err as { stack?: string }).stack).toContain(error.stack!.split('\n')[0]);
    expect(lines.filter((line) => /database/.test(line.msg))).toEqual([]);
  });

  const outages = OUTAGES.map((entry) => [entry.name, entry.kind]);
  test.each(outages)('an outage answers 503 with Retry-After, no stack: %s (%s)', async (name, kind) => {
    const answer = await answerTo(made.get(name));
    expect(answer).toEqual({
      status: 503,
      retryAfter: '5',
      body: { result: 'error', msg: 'The database is unavailable; try again shortly.', code: 'BAD_REQUEST' },
      // A lost connection opens an outage only when a probe then fails (the test database answers).
      outageOpened: kind === 'unavailable',
    });
    expect(lines.filter((line) => line.msg === 'unexpected error')).toEqual([]);
    expect(lines.some((line) => 'err' in line)).toBe(false);
  });
});
