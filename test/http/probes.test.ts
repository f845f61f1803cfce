// Liveness and readiness over real HTTP: /livez answers whatever the database does; /readyz answers
// 503 while the database is unreachable (an outage through a TCP proxy that is cut) and while the
// server drains after SIGTERM; while draining, every answer closes its connection (a slow request in
// flight completes, and the request pipelined behind it goes to another process).
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { startServerProcess, testDatabaseEnvironment, waitForOutput } from '../support/process.js';
import { testDatabaseUrl } from '../support/server.js';
import { startDatabaseProxy, type DatabaseProxy } from '../support/tcp-proxy.js';

const probe = async (url: string) => {
  const response = await fetch(url);
  return { status: response.status, body: await response.json() };
};

describe('during a database outage', () => {
  let proxy: DatabaseProxy;
  let server: RunningServer;
  let dataDir: string;
  beforeAll(async () => {
    proxy = await startDatabaseProxy(await testDatabaseUrl());
    dataDir = await mkdtemp(join(tmpdir(), 'teamchat-probes-'));
    server = await startServer({ ...loadConfig({}), host: '127.0.0.1', port: 0, dataDir }, { databaseUrl: proxy.url }, { outbox: false });
  });
  afterAll(async () => {
    await server?.close().catch(() => {});
    await proxy?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  test('/livez stays 200, /readyz is 503 until the database is back', async () => {
    expect(await probe(`${server.url}/livez`)).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await probe(`${server.url}/readyz`)).toEqual({ status: 200, body: { status: 'ok' } });

    await proxy.cut();
    expect(await probe(`${server.url}/readyz`)).toEqual({ status: 503, body: { status: 'database unavailable' } });
    expect(await probe(`${server.url}/livez`)).toEqual({ status: 200, body: { status: 'ok' } });
    expect((await fetch(`${server.url}/health`)).status).toBe(503);

    await proxy.restore();
    // The server finds the database back by itself (a probe each second); wait however long it takes.
    while ((await fetch(`${server.url}/readyz`)).status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await probe(`${server.url}/livez`)).toEqual({ status: 200, body: { status: 'ok' } });
  });
});

/** Sends `first`, then (once `between` has run) `rest`, on one connection; resolves with all it received until the server closed it. */
function conversation(url: string, first: string, between: () => Promise<unknown>, rest: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    socket.on('data', (chunk) => (received += chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(received));
    socket.write(first);
    between().then(() => socket.write(rest), reject);
  });
}

test('after SIGTERM: the slow request in flight completes with 200 and closes its connection, so that the request behind it goes elsewhere', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'teamchat-draining-'));
  try {
    const server = startServerProcess({ DATA_DIR: dataDir, ...(await testDatabaseEnvironment()), LOG_LEVEL: 'debug' });
    const [, url, email, apiKey] = await waitForOutput(server, /Server listening on (http:\/\/\S+)[\s\S]*Owner: +(\S+) +API key: (\S+)/);
    const body = new URLSearchParams({ invitee_emails: 'draining@example.net', stream_ids: '[]' }).toString();
    const headers = [
      'POST /api/v1/invites HTTP/1.1',
      `Host: ${new URL(url!).host}`,
      `Authorization: Basic ${Buffer.from(`${email}:${apiKey}`).toString('base64')}`,
      'Content-Type: application/x-www-form-urlencoded',
      `Content-Length: ${body.length}`,
    ].join('\r\n');
    const half = Math.floor(body.length / 2);
    // Half the body; once the server has the request in hand, SIGTERM; then the rest and /readyz behind it.
    const sigterm = async () => {
      await waitForOutput(server, /"path":"\/api\/v1\/invites","msg":"request received"/);
      server.child.kill('SIGTERM');
      await waitForOutput(server, /SIGTERM received: finishing requests in flight, then exiting\./);
    };
    const received = await conversation(
      url!,
      `${headers}\r\n\r\n${body.slice(0, half)}`,
      sigterm,
      `${body.slice(half)}GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n`,
    );

    // One answer, then the connection closes: a client keeping it alive (a long poll asking again at
    // once) would otherwise keep the drain from ever ending.
    expect([...received.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((m) => Number(m[1]))).toEqual([200]);
    expect(received).toMatch(/\r\nconnection: close\r\n/i);
    expect(received).toContain('{"result":"success","msg":""}');
    expect(await server.exited).toBe(0);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}, 120_000);

test('while starting (waiting for its database): /livez 200, /readyz 503 starting', async () => {
  const free = createServer();
  await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
  const port = (free.address() as AddressInfo).port;
  await new Promise((resolve) => free.close(resolve));
  const dataDir = await mkdtemp(join(tmpdir(), 'teamchat-starting-'));
  const server = startServerProcess({
    DATA_DIR: dataDir,
    PORT: String(port),
    DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/teamchat',
    DATABASE_WAIT_SECONDS: '600',
  });
  try {
    // It listens before it waits for the database, and says so at every try.
    await waitForOutput(server, /is unreachable .*trying again in 2 s \(try 1\)/);
    expect(await probe(`http://127.0.0.1:${port}/livez`)).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await probe(`http://127.0.0.1:${port}/readyz`)).toEqual({ status: 503, body: { status: 'starting' } });
    expect((await fetch(`http://127.0.0.1:${port}/api/v1/server_settings`)).status).toBe(503);
  } finally {
    server.child.kill('SIGKILL');
    await server.exited;
    await rm(dataDir, { recursive: true, force: true });
  }
});
