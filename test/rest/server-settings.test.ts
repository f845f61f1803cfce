// GET /api/v1/server_settings: public, and says which feature level the server implements.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { ZULIP_FEATURE_LEVEL } from '../../src/rest/handlers/server-settings.js';
import { callApi } from '../support/rest.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const EXPECTED_BODY = () => ({
  result: 'success',
  msg: '',
  // signin.md section 7: e-mail address and password sign in.
  authentication_methods: {
    password: true,
    dev: false,
    email: true,
    ldap: false,
    remoteuser: false,
    github: false,
    azuread: false,
    gitlab: false,
    apple: false,
    google: false,
    saml: false,
    'openid connect': false,
  },
  external_authentication_methods: [],
  zulip_feature_level: 472,
  zulip_version: '12.0',
  zulip_merge_base: '12.0',
  push_notifications_enabled: false,
  is_incompatible: false,
  email_auth_enabled: true,
  require_email_format_usernames: true,
  realm_url: server.url,
  realm_uri: server.url,
});

test('answers without credentials, at feature level 472 or later', async () => {
  const response = await callApi(server.url, 'GET', '/server_settings');
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('application/json');
  expect(response.body).toEqual(EXPECTED_BODY());
  expect(ZULIP_FEATURE_LEVEL).toBeGreaterThanOrEqual(472);
});

test('credentials, even wrong ones, change nothing: the endpoint never authenticates', async () => {
  const response = await callApi(server.url, 'GET', '/server_settings', { authorization: 'Basic bm9ib2R5Om5vdGhpbmc=' });
  expect(response.status).toBe(200);
  expect(response.body).toEqual(EXPECTED_BODY());
});

test('HEAD and OPTIONS work, other methods are 405', async () => {
  expect((await callApi(server.url, 'HEAD', '/server_settings')).status).toBe(200);
  const options = await callApi(server.url, 'OPTIONS', '/server_settings');
  expect(options.status).toBe(204);
  expect(options.headers.get('allow')).toBe('GET, HEAD');
  const post = await callApi(server.url, 'POST', '/server_settings');
  expect(post.status).toBe(405);
  expect(post.body).toEqual({ result: 'error', msg: 'Method Not Allowed', allowed_methods: ['GET', 'HEAD'] });
});
