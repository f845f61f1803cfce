// Every way of losing the database is an outage, not an error. Through a proxy that
// speaks TLS to the server (sslmode=require) and breaks in each way a database is lost (the path cut,
// a rotated password, a role pg_hba refuses, too many connections, a database starting up, TLS no
// longer offered) and through a backend terminated mid-statement: both doors answer 503 with
// Retry-After, /readyz and /health answer the state only, the log has one line when it goes (naming
// the cause's codes) and one when it comes back (with the count of what failed meanwhile), never a
// stack, while the event reader polls for a subscriber; the server recovers by itself.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { classifyDatabaseError } from '../../src/db/outage-errors.js';
import { POOL_SIZE } from '../../src/db/database.js';
import type { EventReader } from '../../src/domain/events/reader.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { makeCertificates, type Certificates } from '../support/certificates.js';
import { capturedLogger, type LogLine } from '../support/log-capture.js';
import { connectToTestDatabase, testDatabaseUrl } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';
import { terminateLockWaiter } from '../support/contention.js';
import { startDatabaseProxy, type DatabaseProxy } from '../support/tcp-proxy.js';

const { logger, lines, clear } = capturedLogger('info');

let certificates: Certificates;
let proxy: DatabaseProxy;
let server: RunningServer;
let dataDir: string;
let w: World;
beforeAll(async () => {
  certificates = await makeCertificates('teamchat outage test CA');
  proxy = await startDatabaseProxy(await testDatabaseUrl(), { tls: certificates });
  const databaseUrl = new URL(proxy.url);
  databaseUrl.searchParams.set('sslmode', 'require');
  dataDir = await mkdtemp(join(tmpdir(), 'teamchat-outage-'));
  server = await startServer(
    { ...loadConfig({}), host: '127.0.0.1', port: 0, dataDir },
    { databaseUrl: databaseUrl.href },
    { outbox: false, logger },
  );
  w = await createWorld(server.app.prisma);
});
afterAll(async () => {
  await server?.close().catch(() => {});
  await proxy?.close();
  await certificates?.remove();
  await rm(dataDir, { recursive: true, force: true });
});

const answer = async (response: Response) => ({
  status: response.status,
  retryAfter: response.headers.get('retry-after'),
  body: await response.json(),
});
const rest = (path = '/api/v1/users/me') => fetch(`${server.url}${path}`, { headers: { authorization: w.users.owner.auth } }).then(answer);
const graphql = (query = '{ me { email } }') =>
  fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: w.users.owner.auth },
    body: JSON.stringify({ query }),
  }).then(answer);
const probe = (path: string) => fetch(`${server.url}${path}`).then(answer);

const REST_UNAVAILABLE = {
  status: 503,
  retryAfter: '5',
  body: { result: 'error', msg: 'The database is unavailable; try again shortly.', code: 'BAD_REQUEST' },
};
const GRAPHQL_UNAVAILABLE = {
  status: 503,
  retryAfter: '5',
  body: { errors: [{ message: 'The database is unavailable; try again shortly.', extensions: { code: 'SERVICE_UNAVAILABLE' } }] },
};
const STATE_UNAVAILABLE = { status: 503, retryAfter: '5', body: { status: 'database unavailable' } };
const OK = { status: 200, retryAfter: null, body: { status: 'ok' } };

const stateLines = () => lines.filter((line) => /^database (unavailable|available again)/.test(line.msg));
const until = async (condition: () => boolean | Promise<boolean>) => {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 50));
};

let unsubscribe = () => {};
/** A subscriber of the server's event reader (as a waiting long poll or a subscription is), so that the reader polls the log throughout the outage. */
async function readerSubscriber(): Promise<void> {
  const reader = (server.app.eventPolls as unknown as { reader: EventReader }).reader;
  unsubscribe = reader.subscribe({ organizationId: w.org.id, userId: w.users.owner.id, types: null }, () => {});
  await reader.ready();
}

/** While the fault lasts: both doors and the probes as promised; the reader's failures counted, not logged. */
async function expectOutageAnswers(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    expect(await rest()).toEqual(REST_UNAVAILABLE);
    expect(await graphql()).toEqual(GRAPHQL_UNAVAILABLE);
  }
  expect(await probe('/readyz')).toEqual(STATE_UNAVAILABLE);
  expect(await probe('/health')).toEqual(STATE_UNAVAILABLE);
  expect(await probe('/livez')).toEqual(OK);
  // The reader keeps polling for its subscriber and keeps failing: counted, never logged.
  const counted = server.databaseStatus.failuresSoFar;
  await until(() => server.databaseStatus.failuresSoFar >= counted + 5);
}

/** After the fault: one line back (with the count of what failed), both doors answer, and nothing else was logged at warn or above, no stack. */
async function expectRecovery(started: LogLine): Promise<void> {
  await until(() => stateLines().length === 2);
  expect(stateLines()[1]).toMatchObject({
    level: 30,
    msg: expect.stringMatching(/^database available again after [\d.]+ s; \d+ requests or background passes failed meanwhile$/),
  });
  expect(stateLines()[1]!.failed).toBeGreaterThanOrEqual(12);
  expect((await rest()).status).toBe(200);
  expect((await graphql()).status).toBe(200);
  expect(await probe('/readyz')).toEqual(OK);
  expect(await probe('/health')).toEqual(OK);
  expect(lines.filter((line) => line.level >= 40)).toEqual([started]);
  expect(lines.filter((line) => line.err !== undefined)).toEqual([]);
}

afterEach(async () => {
  // A failed test leaves neither the fault nor the outage behind for the next one.
  unsubscribe();
  await proxy.restore();
  await until(async () => !server.databaseStatus.down || (await server.databaseStatus.check()));
});

describe('every way of losing the database is an outage: 503 with Retry-After on both doors, the state only on the probes, one line each way, recovery by itself', () => {
  // Each with what the log line that opens the outage must name (a SQLSTATE, a driver code or kind, the driver's words).
  const faults: [string, () => void | Promise<void>, RegExp][] = [
    ['the path to PostgreSQL cut', () => proxy.cut(), /ECONNREFUSED|DatabaseNotReachable/],
    ['the password rotated', () => proxy.refuse('28P01', 'password authentication failed for user "teamchat"'), /28P01/],
    [
      'a role that pg_hba.conf refuses',
      () => proxy.refuse('28000', 'no pg_hba.conf entry for host "127.0.0.1", user "teamchat", database "teamchat", SSL encryption'),
      /28000/,
    ],
    ['too many connections', () => proxy.refuse('53300', 'sorry, too many clients already'), /53300/],
    ['a database starting up', () => proxy.refuse('57P03', 'the database system is starting up'), /57P03/],
    ['TLS no longer offered (sslmode=require)', () => proxy.refuseTls(), /TlsConnectionError|does not support SSL/],
  ];
  test.each(faults)('%s', async (_name, fault, cause) => {
    expect((await rest()).status).toBe(200);
    await readerSubscriber();
    clear();
    await fault();

    // The first request (or the server itself, having lost its idle connections) finds it out.
    expect(await rest()).toEqual(REST_UNAVAILABLE);
    await until(() => stateLines().length > 0);
    const [started] = stateLines();
    expect(stateLines()).toEqual([
      {
        level: 50,
        msg: 'database unavailable: answering 503 until it is back',
        codes: expect.any(Array),
        reason: expect.any(String),
        ...(started!.requestId ? { requestId: started!.requestId } : {}),
        time: expect.any(Number),
      },
    ]);
    expect(JSON.stringify([started!.codes, started!.reason])).toMatch(cause);
    await expectOutageAnswers();

    await proxy.restore();
    await expectRecovery(started!);
  });

  test('a backend terminated in the middle of a statement (pg_terminate_backend): that request 503, not 500; the next one served', async () => {
    expect((await rest('/api/v1/invites')).status).toBe(200);
    clear();
    const admin = await connectToTestDatabase();
    try {
      await admin.query('BEGIN');
      await admin.query('LOCK TABLE invitation IN ACCESS EXCLUSIVE MODE');
      const listing = rest('/api/v1/invites');
      await terminateLockWaiter(admin);
      expect(await listing).toEqual(REST_UNAVAILABLE);
    } finally {
      await admin.query('ROLLBACK');
      await admin.end();
    }
    // The database itself answers: the connection is replaced, no outage begins, nothing is logged as an error.
    expect((await rest('/api/v1/invites')).status).toBe(200);
    expect(lines.filter((line) => line.msg.startsWith('a database connection was lost'))).toEqual([
      expect.objectContaining({ level: 30, codes: expect.arrayContaining(['57P01']) }),
    ]);
    expect(lines.filter((line) => line.level >= 40)).toEqual([]);
  });
});

describe('the forms a lost connection takes through the driver and Prisma are outages too, not bugs (found by the fault soak)', () => {
  test('node-postgres\'s "not queryable" client, as the driver throws it and as Prisma rethrows it (no code, the invocation site first)', async () => {
    const client = await connectToTestDatabase();
    client.on('error', () => {});
    const admin = await connectToTestDatabase();
    let thrown: unknown;
    try {
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await until(
        async () =>
          (thrown = await client.query('SELECT 1').then(
            () => undefined,
            (error: unknown) => error,
          )) !== undefined && /not queryable/.test(String(thrown)),
      );
    } finally {
      await admin.end();
      await client.end().catch(() => {});
    }
    expect(classifyDatabaseError(thrown)).toBe('lost');
    const rethrown = Object.assign(new Error(`\nInvalid \`prisma.invitation.findMany()\` invocation:\n\n\n${(thrown as Error).message}`), {
      clientVersion: '7',
    });
    expect(classifyDatabaseError(rethrown)).toBe('lost');
  });

  test("Prisma's P2028 when no connection could begin a transaction in time; other misuses of the transaction API stay bugs", async () => {
    // Every connection of the pool lent out: no transaction can begin within its wait.
    const held = await Promise.all(Array.from({ length: POOL_SIZE }, () => server.database.pool.connect()));
    let notStarted: unknown;
    try {
      notStarted = await server.app.prisma
        .$transaction(async () => {}, { maxWait: 50 })
        .then(
          () => null,
          (caught: unknown) => caught,
        );
    } finally {
      for (const client of held) client.release();
    }
    expect(notStarted).toMatchObject({
      code: 'P2028',
      message: expect.stringContaining('Unable to start a transaction in the given time'),
    });
    expect(classifyDatabaseError(notStarted)).toBe('unavailable');
    expect(classifyDatabaseError(Object.assign(new Error('Transaction API error: Transaction not found.'), { code: 'P2028' }))).toBeNull();
  });
});

/** Whether this run's role may create roles (the embedded PostgreSQL's superuser; CI's role, which .ci/run gives CREATEROLE). */
async function mayCreateRoles(): Promise<boolean> {
  const admin = await connectToTestDatabase();
  try {
    const { rows } = await admin.query<{ may: boolean }>(
      'SELECT rolsuper OR rolcreaterole AS may FROM pg_roles WHERE rolname = current_user',
    );
    return rows[0]!.may;
  } finally {
    await admin.end();
  }
}

/** Why the real rotation cannot run here, or null. The embedded PostgreSQL trusts its Unix socket: no password is asked there. */
async function whyNoRealRotation(): Promise<string | null> {
  if (new URL(await testDatabaseUrl()).searchParams.has('host')) return 'the embedded PostgreSQL trusts its socket, no password is checked';
  return (await mayCreateRoles()) ? null : "this run's role may not create roles (CREATEROLE; .ci/run gives it)";
}

const noRealRotation = await whyNoRealRotation();
if (noRealRotation) console.warn(`test/security/outage.test.ts: the real password rotation is SKIPPED: ${noRealRotation}`);

describe.skipIf(noRealRotation !== null)(
  `the password of the server's own role rotated for real (ALTER ROLE ... PASSWORD on a role made for this test)${noRealRotation ? `: SKIPPED, ${noRealRotation}` : ''}`,
  () => {
    const role = `teamchat_outage_${process.pid}_${Date.now()}`;
    const own = capturedLogger('info');
    let admin: pg.Client;
    let rotated: RunningServer;
    let rotatedDir: string;
    const asAdmin = (text: string) => admin.query(text);
    const endSessions = () => admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [role]);
    beforeAll(async () => {
      admin = await connectToTestDatabase();
      await asAdmin(`CREATE ROLE ${role} LOGIN PASSWORD 'first-password'`);
      // The role may use the test's tables; the test's own role may end its sessions (as a member of it).
      await asAdmin(`GRANT USAGE ON SCHEMA public TO ${role}`);
      await asAdmin(`GRANT ALL ON ALL TABLES IN SCHEMA public TO ${role}`);
      await asAdmin(`GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO ${role}`);
      await asAdmin(`GRANT ${role} TO CURRENT_USER`);
      const url = new URL(await testDatabaseUrl());
      url.username = role;
      url.password = 'first-password';
      rotatedDir = await mkdtemp(join(tmpdir(), 'teamchat-rotated-'));
      rotated = await startServer(
        { ...loadConfig({}), host: '127.0.0.1', port: 0, dataDir: rotatedDir },
        { databaseUrl: url.href },
        { outbox: false, logger: own.logger },
      );
    });
    afterAll(async () => {
      await rotated?.close().catch(() => {});
      await rm(rotatedDir, { recursive: true, force: true });
      await endSessions();
      await asAdmin(`DROP OWNED BY ${role}`);
      await asAdmin(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
    });

    test('503 with Retry-After on both doors and /readyz while the password is refused (28P01), then back by itself when it is accepted again', async () => {
      const get = (path: string, auth = true) =>
        fetch(`${rotated.url}${path}`, { headers: auth ? { authorization: w.users.owner.auth } : {} }).then(answer);
      expect((await get('/api/v1/invites')).status).toBe(200);
      own.clear();
      await asAdmin(`ALTER ROLE ${role} PASSWORD 'second-password'`);
      // Its connections outlive the change; a pooler or a restart of PostgreSQL would end them: end them.
      await endSessions();

      expect(await get('/api/v1/invites')).toEqual(REST_UNAVAILABLE);
      const states = () => own.lines.filter((line) => /^database (unavailable|available again)/.test(line.msg));
      await until(() => states().length > 0);
      expect(states()).toEqual([expect.objectContaining({ level: 50, codes: expect.arrayContaining(['28P01']) })]);
      expect(await get('/readyz', false)).toEqual(STATE_UNAVAILABLE);
      const graphqlDown = await fetch(`${rotated.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: w.users.owner.auth },
        body: JSON.stringify({ query: '{ me { email } }' }),
      }).then(answer);
      expect(graphqlDown).toEqual(GRAPHQL_UNAVAILABLE);

      await asAdmin(`ALTER ROLE ${role} PASSWORD 'first-password'`);
      await until(() => states().length === 2);
      expect((await get('/api/v1/invites')).status).toBe(200);
      expect(await get('/readyz', false)).toEqual(OK);
      expect(own.lines.filter((line) => line.level >= 40)).toEqual([states()[0]]);
    });
  },
);
