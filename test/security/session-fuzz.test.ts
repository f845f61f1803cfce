// Property-based fuzzing (fast-check, fixed seed, bounded runs) of the browser session's doors and
// forms (signin.md sections 4 and 5): /json requests with every kind of cookie and CSRF header, and
// the sign-in, sign-out and password reset forms with hostile fields. Never a 5xx; /json answers a
// JSON envelope, refuses without a valid session (401) or, for a method that changes state, without
// the session's CSRF token (403), and a refused request writes nothing; a form POST without its CSRF
// token begins no session and queues no e-mail. The limits are off, so a 429 fails. Every request comes
// from the server's own origin (the origin check has tests of its own: test/sessions/same-site-forms.test.ts).
import fc from 'fast-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { cookieHeader, givePassword, openForm, signIn, type SignedIn } from '../support/sessions.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

const SEED = 20261126;
const JSON_RUNS = 400;
const FORM_RUNS = 300;

let server: TestServer;
let world: World;
let session: SignedIn;
beforeAll(async () => {
  server = await startTestServer({ rateLimits: [], addressRateLimits: [], failedLoginLimit: null, signInLimit: null });
  world = await createWorld(server.app.prisma);
  await givePassword(server.app.prisma, world.users.admin.id);
  session = await signIn(server.url, { username: world.users.admin.email, realm: world.org.stringId });
}, 60_000);
afterAll(() => server?.close());

/** What a refused request must not have changed (sessions and the outbox included). */
const TABLES = [
  'user_account',
  'user_session',
  'invitation',
  'custom_emoji',
  'attachment',
  'outbox_email',
  'event_queue',
  'audit_log_entry',
];
async function fingerprint(): Promise<string> {
  const parts = TABLES.map((table) => `(SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM "${table}" t)`);
  const rows = await server.app.prisma.$queryRawUnsafe<{ f: string }[]>(`SELECT concat_ws(',', ${parts.join(', ')}) AS f`);
  return rows[0]!.f;
}

const hostileString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    '\u0000',
    'a\u0000b',
    '%00',
    '[',
    '{"a":',
    'null',
    '1e309',
    '-1',
    '9007199254740993',
    '\uD800',
    '//evil.example',
    '/\\evil',
    'javascript:alert(1)',
  ),
  fc.emailAddress(),
);

/** Percent-encodes every byte (encodeURIComponent throws on lone surrogates). */
const percentEncoded = (value: string) => [...Buffer.from(value, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');

type CookieKind = 'none' | 'madeUp' | 'malformed' | 'valid';
type CsrfKind = 'none' | 'wrong' | 'right' | 'hostile';

const cookieFor = (kind: CookieKind, hostile: string): string | undefined => {
  if (kind === 'none') return undefined;
  if (kind === 'madeUp') return `sessionid=${'Z'.repeat(43)}`;
  if (kind === 'malformed') return `sessionid=${percentEncoded(hostile)}; sessionid=; csrftoken=${percentEncoded(hostile)}`;
  return session.cookie;
};

const csrfFor = (kind: CsrfKind, hostile: string): string | undefined => {
  if (kind === 'none') return undefined;
  if (kind === 'wrong') return 'W'.repeat(43);
  if (kind === 'hostile') return hostile.replace(/[^\x20-\x7e]/g, '?');
  return session.csrfToken;
};

const jsonRequest = fc.record({
  method: fc.constantFrom('GET', 'POST', 'DELETE', 'PATCH', 'PUT'),
  path: fc.constantFrom(
    '/users/me',
    '/attachments',
    '/invites',
    '/realm/emoji',
    '/register',
    '/events',
    '/settings',
    '/server_settings',
    '/fetch_api_key',
    '/users/me/api_key/regenerate',
    '/invites/1',
    '/nothing',
  ),
  params: fc.dictionary(
    fc.constantFrom(
      'invitee_emails',
      'stream_ids',
      'invite_as',
      'old_password',
      'new_password',
      'queue_id',
      'last_event_id',
      'username',
      'password',
    ),
    hostileString,
    { maxKeys: 4 },
  ),
  cookie: fc.constantFrom<CookieKind>('none', 'madeUp', 'malformed', 'valid', 'valid'),
  csrf: fc.constantFrom<CsrfKind>('none', 'wrong', 'right', 'hostile'),
  hostile: hostileString,
});

test('/json: a JSON envelope, never a 5xx; no valid session -> 401; no CSRF token on a state change -> 403; refused requests write nothing', async () => {
  const seen = new Set<number>();
  await fc.assert(
    fc.asyncProperty(jsonRequest, async (request) => {
      const before = await fingerprint();
      const cookie = cookieFor(request.cookie, request.hostile);
      const csrf = csrfFor(request.csrf, request.hostile);
      const headers: Record<string, string> = { origin: server.url, ...(cookie && { cookie }), ...(csrf && { 'x-csrftoken': csrf }) };
      const hasBody = request.method !== 'GET';
      const query = hasBody ? '' : `?${new URLSearchParams(request.params)}`;
      // dont_block: a valid GET /events must not wait a minute for an event.
      const response = await fetch(`${server.url}/json${request.path}${query}`, {
        method: request.method,
        headers,
        body: hasBody ? new URLSearchParams({ ...request.params, dont_block: 'true' }) : undefined,
      });
      const text = await response.text();
      const what = `${request.method} /json${request.path} (${request.cookie} session, ${request.csrf} CSRF)`;
      expect(response.status, `${what}: ${text}`).toBeLessThan(500);
      expect(response.status, what).not.toBe(429);
      const body = JSON.parse(text) as { result: string; msg: string; code?: string };
      expect(['success', 'error']).toContain(body.result);
      seen.add(response.status);
      const reachesHandler = response.status !== 404 && response.status !== 405;
      if (reachesHandler && request.cookie !== 'valid') expect(response.status, what).toBe(401);
      if (reachesHandler && request.cookie === 'valid' && request.method !== 'GET' && request.csrf !== 'right') {
        expect(response.status, what).toBe(403);
        expect(body.code).toBe('CSRF_FAILED');
      }
      if (response.status >= 400) expect(await fingerprint(), `${what} was refused but wrote`).toBe(before);
    }),
    { seed: SEED, numRuns: JSON_RUNS, endOnFailure: true },
  );
  for (const status of [200, 401, 403, 404]) expect(seen, `no ${status} answer`).toContain(status);
}, 600_000);

const FORMS = [
  '/accounts/login/',
  '/accounts/logout/',
  '/accounts/password/reset/',
  '/accounts/password/reset/MQ/abc-def/',
  '/accounts/password/reset/%00/%00/',
];

const formRequest = fc.record({
  path: fc.constantFrom(...FORMS),
  fields: fc.dictionary(
    fc.constantFrom('username', 'password', 'realm', 'next', 'email', 'new_password1', 'new_password2', 'csrfmiddlewaretoken'),
    hostileString,
    { maxKeys: 5 },
  ),
  csrf: fc.constantFrom<'none' | 'cookieOnly' | 'matching'>('none', 'cookieOnly', 'matching', 'matching'),
  encoding: fc.constantFrom('form', 'multipart', 'garbage'),
});

test('forms: never a 5xx; without a matching CSRF token nothing happens (no session, no e-mail)', async () => {
  const form = await openForm(`${server.url}/accounts/login/`);
  await fc.assert(
    fc.asyncProperty(formRequest, async (request) => {
      const before = await fingerprint();
      const fields = { ...request.fields };
      if (request.csrf === 'matching') fields.csrfmiddlewaretoken = form.token;
      else if (fields.csrfmiddlewaretoken === form.token) delete fields.csrfmiddlewaretoken;
      const cookie = request.csrf === 'none' ? '' : cookieHeader(form.cookies);
      let body: BodyInit;
      const headers: Record<string, string> = { cookie, origin: server.url };
      if (request.encoding === 'multipart') {
        const data = new FormData();
        for (const [name, value] of Object.entries(fields)) data.append(name, value);
        body = data;
      } else if (request.encoding === 'garbage') {
        body = '%%%=&&=%zz\u0000';
        headers['content-type'] = 'application/x-www-form-urlencoded';
      } else {
        body = new URLSearchParams(fields);
      }
      const response = await fetch(`${server.url}${request.path}`, { method: 'POST', headers, body, redirect: 'manual' });
      const what = `POST ${request.path} (${request.csrf}, ${request.encoding})`;
      expect(response.status, `${what}: ${await response.clone().text()}`).toBeLessThan(500);
      expect(response.status, what).not.toBe(429);
      if (request.csrf !== 'matching' || request.encoding === 'garbage') {
        expect(response.status, what).toBe(403);
        expect(await fingerprint(), `${what} was refused but wrote`).toBe(before);
      }
    }),
    { seed: SEED, numRuns: FORM_RUNS, endOnFailure: true },
  );
}, 600_000);
