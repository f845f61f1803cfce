// sslmode in DATABASE_URL and DATABASE_DIRECT_URL means what it means to libpq: `require` encrypts
// without verifying the server (what managed PostgreSQL services hand out), `verify-full` checks the
// certificate against sslrootcert and the host name. Needs the suite's PostgreSQL with TLS on and a
// certificate no public CA signed: TEST_TLS_DATABASE_URL names it by a host name the certificate
// carries, with sslrootcert= its CA (.ci/run: Debian's snake-oil certificate). These tests use this
// file's own database on that server.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { LISTENER_NAME } from '../../src/db/notifications.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { StartupError } from '../../src/startup-error.js';
import { makeCertificates } from '../support/certificates.js';
import { databaseName, withDatabase } from '../support/postgres-databases.js';
import { testDatabaseUrl } from '../support/server.js';
import { createWorld } from '../support/world.js';

const TLS_URL = process.env.TEST_TLS_DATABASE_URL;

/** This file's database through TLS_URL, with these parameters (null: removed). */
async function tlsUrl(params: Record<string, string | null>, host?: string): Promise<string> {
  const url = new URL(withDatabase(TLS_URL!, databaseName(await testDatabaseUrl())));
  for (const [key, value] of Object.entries(params)) {
    if (value === null) url.searchParams.delete(key);
    else url.searchParams.set(key, value);
  }
  if (host) url.hostname = host;
  return url.href;
}

/** Each connection to `database` on the server: whether it is encrypted, and whether it is the LISTENing one. */
async function connectionsTo(database: string): Promise<{ ssl: boolean; listening: boolean }[]> {
  const admin = new pg.Client({ connectionString: inject('databaseUrl') });
  await admin.connect();
  try {
    const { rows } = await admin.query(
      `SELECT s.ssl, a.application_name = $2 AS listening FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.datname = $1`,
      [database, LISTENER_NAME],
    );
    return rows;
  } finally {
    await admin.end();
  }
}

/** The one-line start-up error openDatabase gives for these URLs. */
const refusal = (databaseUrl: string) =>
  openDatabase({ databaseUrl }).then(
    (database) => database.close().then(() => 'opened'),
    (error: unknown) => (error instanceof StartupError ? error.message : `not a StartupError: ${String(error)}`),
  );

describe.skipIf(!TLS_URL)('TLS (runs when TEST_TLS_DATABASE_URL is set, as in .ci/run)', () => {
  let server: RunningServer;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'teamchat-tls-'));
    const config = { ...loadConfig({}), host: '127.0.0.1', port: 0, dataDir };
    const databaseUrl = await tlsUrl({ sslmode: 'require', sslrootcert: null });
    const directUrl = await tlsUrl({ sslmode: 'verify-full' });
    server = await startServer(config, { databaseUrl, directUrl }, { outbox: false });
  });
  afterAll(async () => {
    await server?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  test('sslmode=require (no certificate check) in DATABASE_URL and verify-full in DATABASE_DIRECT_URL: the server works, every connection encrypted', async () => {
    const w = await createWorld(server.app.prisma);
    const me = await fetch(`${server.url}/api/v1/users/me`, { headers: { authorization: w.users.member.auth } });
    expect(me.status).toBe(200);
    const connections = await connectionsTo(databaseName(await testDatabaseUrl()));
    expect(connections.filter((c) => c.listening)).toEqual([{ ssl: true, listening: true }]);
    expect(connections.length).toBeGreaterThanOrEqual(2);
    expect(connections.every((c) => c.ssl)).toBe(true);
  });

  test('verify-full refuses a certificate no trusted CA signed, and a host name the certificate does not carry, in one line', async () => {
    const untrusted = await refusal(await tlsUrl({ sslmode: 'verify-full', sslrootcert: null }));
    expect(untrusted).toMatch(/^Cannot use PostgreSQL at .+: self-signed certificate/);
    const otherName = await refusal(await tlsUrl({ sslmode: 'verify-full' }, '127.0.0.1'));
    expect(otherName).toMatch(/^Cannot use PostgreSQL at 127\.0\.0\.1:\d+\/.+: Hostname\/IP does not match certificate's altnames/);
  });

  test('verify-ca checks the certificate but not the host name', async () => {
    expect(await refusal(await tlsUrl({ sslmode: 'verify-ca' }, '127.0.0.1'))).toBe('opened');
  });

  test("verify-ca refuses a certificate that another CA signed (sslrootcert names a CA of this test's own), in one line", async () => {
    const otherCa = await makeCertificates("another CA, not the database server's");
    try {
      const refused = await refusal(await tlsUrl({ sslmode: 'verify-ca', sslrootcert: otherCa.caFile }, '127.0.0.1'));
      expect(refused).toMatch(
        /^Cannot use PostgreSQL at 127\.0\.0\.1:\d+\/.+: (self-signed certificate|unable to verify the first certificate|unable to get local issuer certificate)$/,
      );
    } finally {
      await otherCa.remove();
    }
  });
});
