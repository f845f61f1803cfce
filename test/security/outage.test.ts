// Issue 9 row 9: while the database is unreachable both doors answer a JSON 503 with Retry-After,
// /health answers a JSON 503 naming the cause, the log has one line when it goes and one when it
// comes back, and the server recovers by itself.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { capturedLogger } from '../support/log-capture.js';
import { testDatabaseUrl } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';
import { startDatabaseProxy, type DatabaseProxy } from './tcp-proxy.js';

const { logger, lines } = capturedLogger('info');

let proxy: DatabaseProxy;
let server: RunningServer;
let dataDir: string;
let w: World;
beforeAll(async () => {
  proxy = await startDatabaseProxy(await testDatabaseUrl());
  dataDir = await mkdtemp(join(tmpdir(), 'teamchat-outage-'));
  server = await startServer({ ...loadConfig({}), host: '127.0.0.1', port: 0, dataDir }, { databaseUrl: proxy.url }, {
    outbox: false,
    logger,
  });
  w = await createWorld(server.app.prisma);
});
afterAll(async () => {
  await server?.close().catch(() => {});
  await proxy?.close();
  await rm(dataDir, { recursive: true, force: true });
});

const rest = () => fetch(`${server.url}/api/v1/users/me`, { headers: { authorization: w.users.member.auth } });
const graphql = () =>
  fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: w.users.member.auth },
    body: JSON.stringify({ query: '{ me { email } }' }),
  });
const stateLines = () => lines.filter((line) => /^database (unavailable|available again)/.test(String(line.msg))).map((line) => line.msg);

test('503s with Retry-After during the outage, one log line per change, recovery without a restart', async () => {
  expect((await rest()).status).toBe(200);
  await proxy.cut();

  for (let i = 0; i < 3; i++) {
    const down = await rest();
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('5');
    expect(await down.json()).toEqual({ result: 'error', msg: 'The database is unavailable; try again shortly.', code: 'BAD_REQUEST' });
    const downGraphql = await graphql();
    expect(downGraphql.status).toBe(503);
    expect(downGraphql.headers.get('retry-after')).toBe('5');
    expect((await downGraphql.json()).errors[0]).toMatchObject({ message: 'The database is unavailable; try again shortly.', extensions: { code: 'SERVICE_UNAVAILABLE' } });
  }
  const health = await fetch(`${server.url}/health`);
  expect(health.status).toBe(503);
  expect(health.headers.get('content-type')).toMatch(/^application\/json/);
  expect(await health.json()).toMatchObject({ status: 'unavailable', cause: expect.stringMatching(/^database unreachable: /) });
  expect(stateLines()).toEqual(['database unavailable: answering 503 until it is back']);

  await proxy.restore();
  // The server notices by itself (a probe each second); wait for it, however long it takes.
  while (stateLines().length < 2) await new Promise((resolve) => setTimeout(resolve, 100));
  expect((await fetch(`${server.url}/health`)).status).toBe(200);
  expect((await rest()).status).toBe(200);
  expect((await graphql()).status).toBe(200);
  expect(stateLines()).toEqual(['database unavailable: answering 503 until it is back', 'database available again']);
  // No error lines beyond the two state changes, whatever failed meanwhile.
  expect(lines.filter((line) => Number(line.level) >= 50)).toHaveLength(1);
});
