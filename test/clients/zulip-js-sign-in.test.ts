// zulip-js given a username and a password (signin.md section 1): it posts both, multipart, to
// /fetch_api_key, keeps only `api_key`, and then sends Basic `<address as typed>:<key>`.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { setPassword } from '../../src/domain/auth/sign-in.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';
import { lastZulipStatus, zulipClientWithConfig } from '../support/zulip-js.js';

let server: TestServer;
let world: World;
beforeAll(async () => {
  server = await startTestServer({ failedLoginLimit: null });
  world = await createWorld(server.app.prisma);
  await setPassword(server.app.prisma, world.users.member.id, 'lighthouse-keeper-42');
});
afterAll(() => server.close());

test('zulip({ username, password, realm }) signs in and then calls the API with the fetched key, the address typed in another case', async () => {
  const client = await zulipClientWithConfig({ realm: server.url, username: 'MARK@Lighthouse.Example', password: 'lighthouse-keeper-42' });
  const profile = await client.users.me.getProfile();
  expect(lastZulipStatus()).toBe(200);
  expect(profile).toMatchObject({ result: 'success', user_id: world.users.member.id, email: world.users.member.email });
  const settings = await client.server.settings();
  expect(settings.authentication_methods).toMatchObject({ password: true, email: true });
});

test('a wrong password: zulip-js reads no key, and every later call is refused', async () => {
  const client = await zulipClientWithConfig({ realm: server.url, username: world.users.member.email, password: 'not-the-password' });
  expect(lastZulipStatus()).toBe(401);
  const profile = await client.users.me.getProfile();
  expect(lastZulipStatus()).toBe(401);
  expect(profile).toEqual({ result: 'error', msg: 'Malformed API key', code: 'UNAUTHORIZED' });
});
