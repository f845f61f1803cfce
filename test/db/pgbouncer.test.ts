// DATABASE_URL through PgBouncer in transaction mode, DATABASE_DIRECT_URL to PostgreSQL itself: a
// server connection serves whichever client comes next, so nothing may outlive its transaction there.
// The lock wait limit is set per transaction and ends with it; start-up parameters the pooler does
// not know are not sent (it would refuse the connection). The rest of the suite runs through the
// pooler as well in that run (servers of test/support/server.ts): LISTEN (the auth cache's tests),
// the 503 on a lock wait (test/security/lock-wait.test.ts), migrations (migrations.test.ts).
import type { Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { openDatabase, type Database } from '../../src/db/database.js';
import { StartupError } from '../../src/startup-error.js';
import { testDatabaseUrls } from '../support/server.js';

const throughPooler = inject('pooledDatabaseUrl') !== inject('databaseUrl');

const SETTING = `SELECT current_setting('lock_timeout') AS "lockTimeout", pg_backend_pid() AS pid`;
type Setting = { lockTimeout: string; pid: number };

describe.skipIf(!throughPooler)(
  'through PgBouncer (runs when DATABASE_DIRECT_URL is set and DATABASE_URL goes through the pooler, as in .ci/run)',
  () => {
    let database: Database;
    let serverDefault: string;
    beforeAll(async () => {
      database = await openDatabase({ ...(await testDatabaseUrls()), lockWaitSeconds: 3 });
      [{ lockTimeout: serverDefault }] = await database.sql.rows<Setting>(SETTING, []);
    });
    afterAll(() => database?.close());

    test('the pool really goes through PgBouncer in transaction mode: two client connections, one after the other, are served by one backend, whose peer is not the client', async () => {
      const { databaseUrl } = await testDatabaseUrls();
      const seen: { pid: number; backendPeerPort: number; clientPort: number }[] = [];
      for (let i = 0; i < 2; i++) {
        const client = new pg.Client({ connectionString: databaseUrl });
        await client.connect();
        try {
          const { rows } = await client.query<{ pid: number; port: number }>(
            'SELECT pid, client_port AS port FROM pg_stat_activity WHERE pid = pg_backend_pid()',
          );
          const clientPort = (client as unknown as { connection: { stream: Socket } }).connection.stream.localPort!;
          seen.push({ pid: rows[0]!.pid, backendPeerPort: rows[0]!.port, clientPort });
        } finally {
          await client.end();
        }
      }
      // Directly, each client connection has a backend of its own, whose peer is that client's socket.
      expect(seen[1]!.pid).toBe(seen[0]!.pid);
      for (const { backendPeerPort, clientPort } of seen) expect(backendPeerPort).not.toBe(clientPort);
      expect(serverDefault).not.toBe('3s');
    });

    test('a driver transaction waits at most DATABASE_LOCK_WAIT_SECONDS, and the next client of its server connection does not', async () => {
      const [inside] = await database.sql.transaction((tx) => tx.rows<Setting>(SETTING, []));
      const [after] = await database.sql.rows<Setting>(SETTING, []);
      expect(after!.pid).toBe(inside!.pid);
      expect({ inside: inside!.lockTimeout, after: after!.lockTimeout }).toEqual({ inside: '3s', after: serverDefault });
    });

    test('a Prisma transaction likewise', async () => {
      const [inside] = await database.prisma.$transaction((tx) => tx.$queryRawUnsafe<Setting[]>(SETTING));
      const [after] = await database.prisma.$queryRawUnsafe<Setting[]>(SETTING);
      expect(after!.pid).toBe(inside!.pid);
      expect({ inside: inside!.lockTimeout, after: after!.lockTimeout }).toEqual({ inside: '3s', after: serverDefault });
    });

    test('DATABASE_URL to PgBouncer without DATABASE_DIRECT_URL stops the start in one line that names the fix', async () => {
      const { databaseUrl } = await testDatabaseUrls();
      const opening = openDatabase({ databaseUrl, lockWaitSeconds: 3 });
      await expect(opening).rejects.toThrow(StartupError);
      await expect(opening).rejects.toThrow(
        /^Cannot use PostgreSQL at .+: unsupported startup parameter: lock_timeout \(a pooler such as PgBouncer: set DATABASE_DIRECT_URL to PostgreSQL itself\)$/,
      );
    });
  },
);
