// Property-based fuzzing of both doors (fast-check, fixed seed, bounded runs and time): thousands of
// generated REST requests and GraphQL mutations. Every answer is JSON in its door's envelope, never
// a 5xx, and a refused request leaves the database exactly as it was.
import fc from 'fast-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { basicAuth, startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

let server: TestServer;
let w: World;
beforeAll(async () => {
  server = await startTestServer({ rateLimits: [], failedLoginLimit: null });
  w = await createWorld(server.app.prisma);
});
afterAll(() => server?.close());

const TABLES = ['invitation', 'invitation_channel', 'invitation_group', 'outbox_email', 'custom_emoji', 'audit_log_entry', 'attachment', 'message_attachment', 'user_account', 'subscription', 'message'];

/**
 * The row count and the sum of row versions (xmin, new for every inserted or updated row) of each
 * table a request could write: any insert, update or delete changes it.
 */
async function snapshot(): Promise<string> {
  const parts = TABLES.map((table) => `(SELECT count(*) || '/' || coalesce(sum(xmin::text::bigint), 0) FROM ${table})`);
  const [row] = await server.app.prisma.$queryRawUnsafe<{ sum: string }[]>(`SELECT ${parts.join(" || ':' || ")} AS sum`);
  return row!.sum;
}

const huge = JSON.stringify(Array.from({ length: 3000 }, (_, i) => i * 7919));
const nasty = fc.constantFrom('', '\u0000', 'a\u0000b', 'null', 'true', '[]', '{}', '[1,2,3]', '[1.0]', '1e999', '-1', '2147483648', '9'.repeat(40), huge, '%00', '../../etc', '<script>', '"', '\\', '💥', ' ', ',', '\n');
const value = fc.oneof(nasty, fc.string({ maxLength: 40 }), fc.json({ maxDepth: 3 }), fc.integer().map(String));
const paramName = fc.oneof(
  fc.constantFrom('invitee_emails', 'stream_ids', 'group_ids', 'invite_as', 'invite_expires_in_minutes', 'include_realm_default_subscriptions', 'notify_referrer_on_join', 'welcome_message_custom_text', 'method'),
  fc.string({ minLength: 1, maxLength: 12 }),
);
const id = fc.oneof(fc.integer({ min: -5, max: 3_000_000_000 }).map(String), fc.constantFrom('0', '00', '1e3', 'abc', '%00', '99999999999999999999'));
const segment = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 20 }).map(encodeURIComponent), fc.constantFrom('green_tick', 'lighthouse', 'a%00b', '%FF', '%', '..'));
const path = fc.oneof(
  fc.constant('/invites'),
  id.map((i) => `/invites/${i}`),
  id.map((i) => `/invites/${i}/resend`),
  fc.constant('/realm/emoji'),
  segment.map((s) => `/realm/emoji/${s}`),
  fc.constant('/attachments'),
  id.map((i) => `/attachments/${i}`),
  fc.constantFrom('/server_settings', '/users/me', '/nope', '/invites/'),
);
const authorization = () =>
  fc.constantFrom<string | undefined>(
    w.users.owner.auth, w.users.admin.auth, w.users.member.auth, w.users.guest.auth, w.users.bot.auth,
    basicAuth(w.users.owner.email, 'x'.repeat(32)), 'Basic', 'Bearer abc', 'Basic %%%', 'Basic ' + Buffer.from('a:b:c').toString('base64'), undefined,
  );

const restRequest = () =>
  fc.record({
    door: fc.constant('rest' as const),
    method: fc.constantFrom('GET', 'POST', 'DELETE', 'PATCH', 'PUT', 'HEAD', 'OPTIONS'),
    path,
    params: fc.array(fc.tuple(paramName, value), { maxLength: 8 }),
    inQuery: fc.boolean(),
    authorization: authorization(),
  });

const SEND = 'mutation ($input: SendInvitationsInput!) { result: sendInvitations(input: $input) { __typename ... on Error { code } } }';
const DEACTIVATE = 'mutation ($name: String!) { result: deactivateCustomEmoji(emojiName: $name) { __typename ... on Error { code } } }';
const REVOKE = 'mutation ($id: Int!) { result: revokeInvitation(id: $id) { __typename ... on Error { code } } }';
const RESEND = 'mutation ($id: Int!) { result: resendInvitation(id: $id) { __typename ... on Error { code } } }';
const gqlId = fc.oneof(fc.integer({ min: -5, max: 2_000 }), fc.integer(), fc.constantFrom(2 ** 31, 1.5, '1', null));
const sendInput = fc.record(
  {
    inviteeEmails: fc.oneof(fc.array(fc.oneof(fc.emailAddress(), nasty, fc.string()), { maxLength: 5 }), value),
    streamIds: fc.oneof(fc.array(gqlId, { maxLength: 5 }), fc.constant(JSON.parse(huge) as number[])),
    groupIds: fc.array(gqlId, { maxLength: 3 }),
    inviteAs: fc.constantFrom('OWNER', 'ADMINISTRATOR', 'MODERATOR', 'MEMBER', 'GUEST', 'KING', 400, null),
    inviteExpiresInMinutes: fc.oneof(fc.integer(), fc.constant(null), fc.constant(2 ** 40)),
    includeRealmDefaultSubscriptions: fc.oneof(fc.boolean(), value),
    notifyReferrerOnJoin: fc.boolean(),
    welcomeMessageCustomText: fc.oneof(value, fc.constant(null)),
  },
  { requiredKeys: [] },
);
const graphqlRequest = () =>
  fc.record({
    door: fc.constant('graphql' as const),
    operation: fc.oneof(
      sendInput.map((input) => ({ query: SEND, variables: { input } })),
      fc.oneof(segment.map(decodeURIComponentSafe), nasty).map((name) => ({ query: DEACTIVATE, variables: { name } })),
      gqlId.map((i) => ({ query: REVOKE, variables: { id: i } })),
      gqlId.map((i) => ({ query: RESEND, variables: { id: i } })),
      fc.tuple(fc.constantFrom(SEND, DEACTIVATE, REVOKE, RESEND), fc.json({ maxDepth: 2 })).map(([query, variables]) => ({ query, variables: JSON.parse(variables) })),
    ),
    authorization: authorization(),
  });

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

type Generated = fc.Arbitrary<unknown> extends never ? never : { door: 'rest' | 'graphql' } & Record<string, any>;

async function send(request: Generated): Promise<{ status: number; refused: boolean; body: any }> {
  const headers: Record<string, string> = request.authorization ? { authorization: request.authorization } : {};
  if (request.door === 'graphql') {
    const response = await fetch(`${server.url}/graphql`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(request.operation) });
    const body = await response.json();
    expect(response.headers.get('content-type')).toMatch(/json/);
    expect(body.data !== undefined || Array.isArray(body.errors)).toBe(true);
    const refused = Array.isArray(body.errors) || !body.data?.result || String(body.data.result.__typename).endsWith('Error');
    return { status: response.status, refused, body };
  }
  const params = new URLSearchParams(request.params);
  // Node refuses request lines over 16 KiB before any application code: long parameters go in the body.
  const withBody = (!request.inQuery || String(params).length > 4000) && !['GET', 'HEAD'].includes(request.method);
  const query = withBody || request.params.length === 0 || String(params).length > 4000 ? '' : `?${params}`;
  const response = await fetch(`${server.url}/api/v1${request.path}${query}`, {
    method: request.method,
    headers,
    body: withBody ? params : undefined,
    redirect: 'manual',
  });
  const text = await response.text();
  if (request.method === 'HEAD' || request.method === 'OPTIONS') return { status: response.status, refused: response.status !== 200, body: text };
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const body = JSON.parse(text);
  expect(['success', 'error']).toContain(body.result);
  expect(typeof body.msg).toBe('string');
  return { status: response.status, refused: body.result === 'error', body };
}

test('thousands of generated requests: JSON envelopes, no 5xx, refused requests change nothing', async () => {
  let before = await snapshot();
  let sent = 0;
  let refused = 0;
  await fc.assert(
    fc.asyncProperty(fc.oneof({ arbitrary: restRequest(), weight: 3 }, { arbitrary: graphqlRequest(), weight: 2 }), async (request) => {
      const answer = await send(request as Generated);
      sent++;
      expect(answer.status, JSON.stringify({ request, body: answer.body }).slice(0, 2000)).toBeLessThan(500);
      const after = await snapshot();
      if (answer.refused) {
        refused++;
        expect(after, `a refused request changed the database: ${JSON.stringify(request).slice(0, 1000)}`).toBe(before);
      }
      before = after;
    }),
    { seed: 20261123, numRuns: 2500, interruptAfterTimeLimit: 30_000, markInterruptAsFailure: false, endOnFailure: true },
  );
  console.info(`fuzz: ${sent} requests, ${refused} refused`);
  expect(sent).toBeGreaterThan(1000);
  expect(refused).toBeGreaterThan(sent / 2);
}, 120_000);
