// TRUSTED_PROXIES over real HTTP. On Linux all of 127.0.0.0/8 is loopback, so a client that binds
// 127.0.0.2 is the trusted proxy and other 127.x addresses are untrusted peers. From a trusted proxy
// the client named in X-Forwarded-For or Forwarded is what the failed-login limit counts and what
// the request log shows; from anyone else (and without the setting) those headers change nothing,
// and the log says so at most once every ten minutes.
import { request, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { UNTRUSTED_FORWARDING_WARNING_INTERVAL_MS, untrustedForwardingWarning } from '../../src/http/client-address.js';
import { StartupError } from '../../src/startup-error.js';
import { capturedLogger } from '../support/log-capture.js';
import { startServerProcess } from '../support/process.js';
import { basicAuth, startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

const PROXY = '127.0.0.2';
const { logger, lines, clear } = capturedLogger('info');
/** Three failed logins per address are answered 401; from the fourth on the address is locked out (429). */
const failedLoginLimit = { windowSeconds: 600, maxRequests: 3 };

let behindProxy: TestServer;
let plain: TestServer;
let w: World;
beforeAll(async () => {
  behindProxy = await startTestServer({ failedLoginLimit, trustedProxies: [PROXY, '127.0.0.3/32'] }, { outbox: false, logger });
  plain = await startTestServer({ failedLoginLimit });
  w = await createWorld(plain.app.prisma);
});
afterAll(async () => {
  await Promise.all([behindProxy?.close(), plain?.close()]);
});

/** GET /api/v1/users/me over a connection from `localAddress`, with these extra headers; the status. */
function usersMe(server: TestServer, authorization: string, localAddress: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const call = request(`${server.url}/api/v1/users/me`, { headers: { authorization, ...headers }, localAddress }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode!));
    });
    call.on('error', reject);
    call.end();
  });
}

const wrongKey = () => basicAuth(w.users.member.email, 'x'.repeat(32));
const valid = () => w.users.member.auth;
const forgedFor = (address: string) => ({ 'x-forwarded-for': address, forwarded: `for=${address}` });

describe('the setting', () => {
  test('addresses and CIDR ranges, comma-separated; unset: none', () => {
    expect(loadConfig({}).trustedProxies).toEqual([]);
    expect(loadConfig({ TRUSTED_PROXIES: ' 10.0.0.0/8, 192.168.1.10 ,2001:db8::/32,loopback' }).trustedProxies).toEqual([
      '10.0.0.0/8',
      '192.168.1.10',
      '2001:db8::/32',
      'loopback',
    ]);
  });

  test('a bad entry stops the start with one line naming it', async () => {
    for (const entry of ['10.0.0.300', '10.0.0.0/33', 'proxy.internal', '*']) {
      expect(() => loadConfig({ TRUSTED_PROXIES: `127.0.0.1,${entry}` }), entry).toThrow(StartupError);
      expect(() => loadConfig({ TRUSTED_PROXIES: `127.0.0.1,${entry}` }), entry).toThrow(
        `TRUSTED_PROXIES: ${JSON.stringify(entry)} is not an IP address or CIDR range`,
      );
    }
    const started = startServerProcess({ TRUSTED_PROXIES: '10.0.0.0/8,10.0.0.300' });
    expect(await started.exited).toBe(1);
    expect(started.output()).toBe(
      'Cannot start: TRUSTED_PROXIES: "10.0.0.300" is not an IP address or CIDR range (e.g. 10.0.0.0/8, 192.168.1.10, 2001:db8::/32)\n',
    );
  });
});

test('without TRUSTED_PROXIES the headers are ignored: failures with ever-different forged clients all count against the peer', async () => {
  const peer = '127.0.0.51';
  for (const forged of ['198.51.100.1', '198.51.100.2', '198.51.100.3'])
    expect(await usersMe(plain, wrongKey(), peer, forgedFor(forged))).toBe(401);
  expect(await usersMe(plain, wrongKey(), peer, forgedFor('198.51.100.4'))).toBe(429);
  expect(await usersMe(plain, valid(), peer, forgedFor('198.51.100.5'))).toBe(429);
  // Naming the locked-out peer in a header locks out no one else.
  expect(await usersMe(plain, valid(), '127.0.0.52', forgedFor(peer))).toBe(200);
});

test('from an untrusted peer, forged headers do not move the counting: the peer is locked out, the client it names is not', async () => {
  const peer = '127.0.0.53';
  const victim = '198.51.100.20';
  for (let i = 0; i < 3; i++)
    expect(await usersMe(behindProxy, wrongKey(), peer, forgedFor(i === 0 ? victim : `198.51.100.2${i}`))).toBe(401);
  expect(await usersMe(behindProxy, wrongKey(), peer, forgedFor(victim))).toBe(429);
  expect(await usersMe(behindProxy, valid(), peer, forgedFor('198.51.100.29'))).toBe(429);
  // The client the forger named, behind the trusted proxy: untouched, all three of its failures still to come.
  for (let i = 0; i < 3; i++) expect(await usersMe(behindProxy, wrongKey(), PROXY, { 'x-forwarded-for': victim })).toBe(401);
  expect(await usersMe(behindProxy, wrongKey(), PROXY, { 'x-forwarded-for': victim })).toBe(429);
});

test("a trusted proxy's forwarded client is what gets locked out; another client behind the same proxy is not", async () => {
  const client = '203.0.113.5';
  for (let i = 0; i < 3; i++) expect(await usersMe(behindProxy, wrongKey(), PROXY, { 'x-forwarded-for': client })).toBe(401);
  expect(await usersMe(behindProxy, wrongKey(), PROXY, { 'x-forwarded-for': client })).toBe(429);
  expect(await usersMe(behindProxy, valid(), PROXY, { 'x-forwarded-for': client })).toBe(429);
  // The same client named by Forwarded (RFC 7239), or behind a second trusted proxy, or behind an
  // address it made up itself (the leftmost entry, which no trusted proxy wrote): still locked out.
  expect(await usersMe(behindProxy, valid(), PROXY, { forwarded: `for=${client};proto=https` })).toBe(429);
  expect(await usersMe(behindProxy, valid(), PROXY, { 'x-forwarded-for': `${client}, 127.0.0.3` })).toBe(429);
  expect(await usersMe(behindProxy, valid(), PROXY, { 'x-forwarded-for': `${client}:51234` })).toBe(429);
  expect(await usersMe(behindProxy, valid(), PROXY, { 'x-forwarded-for': `198.51.100.77, ${client}` })).toBe(429);
  expect(await usersMe(behindProxy, valid(), PROXY, { forwarded: `for=198.51.100.77, for="${client}:4711"` })).toBe(429);

  expect(await usersMe(behindProxy, valid(), PROXY, { 'x-forwarded-for': '203.0.113.6' })).toBe(200);
  expect(await usersMe(behindProxy, valid(), PROXY, { forwarded: 'for="[2001:db8::6]:4711"' })).toBe(200);
  // The proxy's own address was never counted.
  expect(await usersMe(behindProxy, valid(), PROXY)).toBe(200);
});

test('the request log line shows the client address', async () => {
  clear();
  await usersMe(behindProxy, valid(), PROXY, { 'x-forwarded-for': '203.0.113.40' });
  await usersMe(behindProxy, valid(), PROXY, { forwarded: 'for="[2001:db8::40]:4711"' });
  await usersMe(behindProxy, valid(), '127.0.0.54', forgedFor('203.0.113.41'));
  await usersMe(behindProxy, valid(), PROXY);
  expect(lines.filter((line) => line.msg === 'request').map((line) => line.client)).toEqual([
    '203.0.113.40',
    '2001:db8::40',
    '127.0.0.54',
    PROXY,
  ]);
});

describe('forwarding headers from a peer not in TRUSTED_PROXIES', () => {
  const captured = capturedLogger('info');
  let unconfigured: TestServer;
  beforeAll(async () => {
    unconfigured = await startTestServer({ failedLoginLimit }, { outbox: false, logger: captured.logger });
  });
  afterAll(() => unconfigured?.close());

  const warnings = () => captured.lines.filter((line) => line.level === 40 && /TRUSTED_PROXIES/.test(line.msg));

  test('the request log says so once, naming the peer and the headers; not again at once; not without them', async () => {
    await usersMe(unconfigured, valid(), '127.0.0.60');
    expect(warnings()).toEqual([]);
    expect(await usersMe(unconfigured, valid(), '127.0.0.61', { 'x-forwarded-proto': 'https' })).toBe(200);
    const warned = { peer: '127.0.0.61', headers: ['x-forwarded-proto'], requestId: expect.any(String) };
    expect(warnings()).toEqual([expect.objectContaining(warned)]);
    await usersMe(unconfigured, valid(), '127.0.0.62', forgedFor('198.51.100.60'));
    await usersMe(unconfigured, valid(), '127.0.0.61', { 'x-forwarded-for': '198.51.100.61' });
    expect(warnings()).toHaveLength(1);
  });

  test('repeated after ten minutes; a trusted proxy is never the subject', () => {
    let now = 0;
    const said: string[] = [];
    const warning = untrustedForwardingWarning([PROXY], () => now);
    const check = (message: IncomingMessage) => {
      const found = warning(message);
      if (found) said.push(`${found.peer} ${found.headers.join(',')}`);
    };
    const incoming = (peer: string, headers: Record<string, string>) =>
      ({ socket: { remoteAddress: peer }, headers }) as unknown as IncomingMessage;
    check(incoming(PROXY, { 'x-forwarded-for': '203.0.113.1' }));
    check(incoming('192.0.2.1', { forwarded: 'for=203.0.113.1', 'x-forwarded-proto': 'https' }));
    now += UNTRUSTED_FORWARDING_WARNING_INTERVAL_MS - 1;
    check(incoming('192.0.2.2', { 'x-forwarded-for': '203.0.113.1' }));
    now += 1;
    check(incoming('192.0.2.3', { 'x-forwarded-for': '203.0.113.1' }));
    expect(said).toEqual(['192.0.2.1 forwarded,x-forwarded-proto', '192.0.2.3 x-forwarded-for']);
  });
});
