// A real server on port 0 over a real PostgreSQL database of this test file (a copy of the migrated
// template; tests isolate by creating their own organizations, never by resetting data).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { loadConfig, type Config } from '../../src/config.js';
import { startServer, type RunningServer, type ServerOptions } from '../../src/server.js';
import { copyTemplate, databaseName, withDatabase } from './postgres-databases.js';

export type TestServer = RunningServer;

let fileDatabaseUrl: Promise<string> | undefined;

/** This test file's own database (created on first use), connected to directly. */
export function testDatabaseUrl(): Promise<string> {
  return (fileDatabaseUrl ??= copyTemplate(inject('databaseUrl')));
}

/** How a server reaches this file's database: through the pooler when the run has one (DATABASE_DIRECT_URL), and directly. */
export async function testDatabaseUrls(): Promise<{ databaseUrl: string; directUrl: string }> {
  const directUrl = await testDatabaseUrl();
  return { databaseUrl: withDatabase(inject('pooledDatabaseUrl'), databaseName(directUrl)), directUrl };
}

/** A connection to this test file's database outside every server's pool. */
export async function connectToTestDatabase(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: await testDatabaseUrl() });
  await client.connect();
  return client;
}

/** One statement on a connection of its own, as an operator's psql would run it. */
export async function runOnTestDatabase(text: string, values: unknown[] = []): Promise<void> {
  const client = await connectToTestDatabase();
  try {
    await client.query(text, values);
  } finally {
    await client.end();
  }
}

/**
 * A server of its own on port 0, with a private data directory. It runs no e-mail worker unless
 * asked to (`{ outbox: {} }`): queued mail then stays visible to the test that queued it.
 */
export async function startTestServer(
  overrides: Partial<Config> = {},
  options: ServerOptions = { outbox: false },
  /** `direct`: to PostgreSQL itself even when the run has a pooler. */
  connection: 'as-the-run' | 'direct' = 'as-the-run',
): Promise<TestServer> {
  const dataDir = await mkdtemp(join(tmpdir(), 'teamchat-test-'));
  const config = { ...loadConfig({}), host: '127.0.0.1', port: 0, dataDir, ...overrides };
  const urls = connection === 'direct' ? { databaseUrl: await testDatabaseUrl() } : await testDatabaseUrls();
  const pool = { lockWaitSeconds: config.databaseLockWaitSeconds, preparedStatements: config.databasePreparedStatements };
  const server = await startServer(config, { ...urls, ...pool }, options);
  if (!overrides.serverUrl) server.app.config.serverUrl = server.url;
  const close = server.close.bind(server);
  server.close = async () => {
    await close();
    await rm(dataDir, { recursive: true, force: true });
  };
  return server;
}

/** `Basic base64(email:apiKey)` */
export const basicAuth = (email: string, apiKey: string) => `Basic ${Buffer.from(`${email}:${apiKey}`).toString('base64')}`;
