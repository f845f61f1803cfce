// A real server on port 0 over a real database: a fresh PGlite copy of the migrated template, or the
// shared PostgreSQL server when DATABASE_URL is set (tests then isolate by creating their own
// organizations, never by resetting data).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import { loadConfig, type Config } from '../../src/config.js';
import type { DatabaseOptions } from '../../src/db/database.js';
import { startServer, type RunningServer } from '../../src/server.js';

export type TestServer = RunningServer;

export async function testDatabaseOptions(): Promise<DatabaseOptions> {
  if (process.env.DATABASE_URL) return { databaseUrl: process.env.DATABASE_URL };
  const template = await readFile(inject('templatePath'));
  return { memory: true, loadDataDir: new Blob([template]) };
}

/** A server of its own on port 0, with a private data directory (e-mail files land there). */
export async function startTestServer(overrides: Partial<Config> = {}): Promise<TestServer> {
  const dataDir = await mkdtemp(join(tmpdir(), 'teamchat-test-'));
  const config = { ...loadConfig({}), host: '127.0.0.1', port: 0, dataDir, ...overrides };
  const server = await startServer(config, await testDatabaseOptions());
  if (!overrides.serverUrl) server.app.config.serverUrl = server.url;
  const close = server.close.bind(server);
  server.close = async () => {
    await close();
    await rm(dataDir, { recursive: true, force: true });
  };
  return server;
}

/** `Basic base64(email:apiKey)` */
export const basicAuth = (email: string, apiKey: string) =>
  'Basic ' + Buffer.from(`${email}:${apiKey}`).toString('base64');
