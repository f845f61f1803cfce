// Property-based fuzzing of both doors with fast-check (fixed seed, bounded runs): thousands of
// generated requests to every REST route and every GraphQL mutation, with hostile values (NUL
// characters, huge numbers, wrong types, malformed JSON, other organizations' ids). Every answer must
// be a JSON envelope and never a 5xx, and every refused request must leave the database unchanged.
import fc from 'fast-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorld, type World } from '../support/world.js';

const SEED = 20261123;
const REST_RUNS = 1200;
const GRAPHQL_RUNS = 800;

let server: TestServer;
let world: World;
let other: World;
beforeAll(async () => {
  server = await startTestServer({ rateLimits: [] });
  world = await createWorld(server.app.prisma);
  other = await createWorld(server.app.prisma);
}, 60_000);
afterAll(() => server?.close());

/** Every table a request of these doors may write, as one fingerprint (rate-limit counters excluded). */
const DOMAIN_TABLES = [
  'organization',
  'user_account',
  'channel',
  'subscription',
  'user_group',
  'user_group_member',
  'custom_emoji',
  'attachment',
  'message',
  'message_attachment',
  'invitation',
  'invitation_channel',
  'invitation_group',
  'outbox_email',
  'audit_log_entry',
];

async function fingerprint(): Promise<string> {
  const parts = DOMAIN_TABLES.map((table) => `(SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM "${table}" t)`);
  const rows = await server.app.prisma.$queryRawUnsafe<{ f: string }[]>(`SELECT concat_ws(',', ${parts.join(', ')}) AS f`);
  return rows[0]!.f;
}

const hostileString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', '\u0000', 'a\u0000b', 'hi%00', '[', '{"a":', '[1,', 'null', 'true', '1e309', '-1', '0', '1.0', '9007199254740993', '[1,2,3]', '["x"]', '[[1]]', ' ', '\uD800'),
  fc.integer().map(String),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
  fc.array(fc.integer({ min: -5, max: 2 ** 31 + 5 }), { maxLength: 8 }).map((ids) => JSON.stringify(ids)),
  fc.emailAddress(),
);

const REST_PARAMETERS = ['invitee_emails', 'stream_ids', 'group_ids', 'invite_as', 'invite_expires_in_minutes', 'include_realm_default_subscriptions', 'notify_referrer_on_join', 'welcome_message_custom_text', 'include_deactivated', 'unknown_thing'];

/** Percent-encodes every byte (encodeURIComponent throws on lone surrogates). */
const percentEncoded = (value: string) => [...Buffer.from(value, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');

const pathSegment = fc.oneof(hostileString.filter((s) => s.length > 0).map(percentEncoded), fc.nat({ max: 3_000_000_000 }).map(String), fc.constantFrom('green_tick', 'lighthouse', '1', '%00', '..%2F..'));

const restRequest = fc.record({
  method: fc.constantFrom('GET', 'POST', 'DELETE', 'PATCH', 'PUT', 'HEAD'),
  path: fc.oneof(
    fc.constant('/invites'),
    pathSegment.map((id) => `/invites/${id}`),
    pathSegment.map((id) => `/invites/${id}/resend`),
    fc.constant('/realm/emoji'),
    pathSegment.map((name) => `/realm/emoji/${name}`),
    fc.constant('/attachments'),
    pathSegment.map((id) => `/attachments/${id}`),
    fc.constant('/server_settings'),
    fc.constant('/users/me'),
  ),
  params: fc.dictionary(fc.constantFrom(...REST_PARAMETERS), hostileString, { maxKeys: 6 }),
  encoding: fc.constantFrom('form', 'multipart', 'query', 'json', 'garbage'),
  who: fc.constantFrom('owner', 'admin', 'moderator', 'member', 'guest', 'bot', 'deactivated', 'otherOwner', 'nobody', 'wrongKey'),
});

type RestRequest = typeof restRequest extends fc.Arbitrary<infer T> ? T : never;

function authorization(who: RestRequest['who']): string | undefined {
  if (who === 'nobody') return undefined;
  if (who === 'wrongKey') return 'Basic ' + Buffer.from(`${world.users.owner.email}:${'x'.repeat(32)}`).toString('base64');
  if (who === 'otherOwner') return other.users.owner.auth;
  return world.users[who].auth;
}

function restInit({ method, params, encoding, who }: RestRequest): { init: RequestInit; query: string } {
  const headers: Record<string, string> = {};
  const auth = authorization(who);
  if (auth) headers.authorization = auth;
  const hasBody = method !== 'GET' && method !== 'HEAD';
  if (!hasBody || encoding === 'query') return { init: { method, headers }, query: `?${new URLSearchParams(params)}` };
  if (encoding === 'multipart') {
    const form = new FormData();
    for (const [name, value] of Object.entries(params)) form.append(name, value);
    return { init: { method, headers, body: form }, query: '' };
  }
  if (encoding === 'json') return { init: { method, headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(params) }, query: '' };
  if (encoding === 'garbage') return { init: { method, headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, body: '%%%=&&=%zz\u0000' }, query: '' };
  return { init: { method, headers, body: new URLSearchParams(params) }, query: '' };
}

/** How many answers of each kind a run saw: the generators must reach both success and refusal. */
function tally() {
  const counts = { accepted: 0, refused: 0 };
  return { counts, count: (refused: boolean) => counts[refused ? 'refused' : 'accepted']++ };
}

test('REST: every generated request gets a JSON envelope, never a 5xx; refused ones change nothing', async () => {
  const { counts, count } = tally();
  await fc.assert(
    fc.asyncProperty(restRequest, async (request) => {
      const before = await fingerprint();
      const { init, query } = restInit(request);
      const response = await fetch(`${server.url}/api/v1${request.path}${query}`, init);
      const text = await response.text();
      expect(response.status, `${request.method} ${request.path} answered ${response.status}: ${text}`).toBeLessThan(500);
      if (request.method === 'HEAD') return;
      const body = JSON.parse(text) as { result?: string; msg?: string; sent_invitations?: boolean };
      expect(['success', 'error']).toContain(body.result);
      expect(typeof body.msg).toBe('string');
      // INVITATION_FAILED with sent_invitations: true reports a partial success (behaviour.md 3.2).
      const refused = response.status >= 400 && body.sent_invitations !== true;
      count(refused);
      if (refused) expect(await fingerprint(), `${request.method} ${request.path} was refused but wrote`).toBe(before);
    }),
    { seed: SEED, numRuns: REST_RUNS, endOnFailure: true },
  );
  expect(counts.accepted).toBeGreaterThan(REST_RUNS / 20);
  expect(counts.refused).toBeGreaterThan(REST_RUNS / 4);
}, 600_000);

const MUTATIONS = {
  sendInvitations: `mutation($input: SendInvitationsInput!) { sendInvitations(input: $input) { __typename ... on Error { message code } ... on InvitationFailedError { sentInvitations } } }`,
  deactivateCustomEmoji: `mutation($name: String!) { deactivateCustomEmoji(emojiName: $name) { __typename ... on Error { message code } } }`,
  revokeInvitation: `mutation($id: Int!) { revokeInvitation(id: $id) { __typename ... on Error { message code } } }`,
  resendInvitation: `mutation($id: Int!) { resendInvitation(id: $id) { __typename ... on Error { message code } } }`,
};

const anyJson: fc.Arbitrary<unknown> = fc.oneof(hostileString, fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.array(fc.oneof(hostileString, fc.integer()), { maxLength: 5 }));

const sendInput = fc.record(
  {
    inviteeEmails: fc.oneof(fc.array(fc.oneof(fc.emailAddress(), hostileString), { maxLength: 5 }), anyJson),
    streamIds: fc.oneof(fc.array(fc.integer(), { maxLength: 5 }), anyJson),
    groupIds: fc.oneof(fc.array(fc.integer(), { maxLength: 5 }), anyJson),
    inviteAs: fc.oneof(fc.constantFrom('OWNER', 'ADMINISTRATOR', 'MODERATOR', 'MEMBER', 'GUEST'), anyJson),
    inviteExpiresInMinutes: fc.oneof(fc.integer(), anyJson),
    welcomeMessageCustomText: fc.oneof(hostileString, anyJson),
    includeRealmDefaultSubscriptions: fc.oneof(fc.boolean(), anyJson),
  },
  { requiredKeys: [] },
);

/** Well-formed values most of the time, so that the runs also reach the writes behind the checks. */
const plausibleInput = fc.record({
  inviteeEmails: fc.array(fc.emailAddress(), { minLength: 1, maxLength: 3 }),
  streamIds: fc.constant([]),
  inviteAs: fc.constantFrom('MEMBER', 'GUEST'),
});

const graphqlRequest = fc.record({
  operation: fc.constantFrom(...(Object.keys(MUTATIONS) as (keyof typeof MUTATIONS)[])),
  variables: fc.record(
    {
      input: fc.oneof({ weight: 2, arbitrary: plausibleInput }, { weight: 1, arbitrary: sendInput }),
      name: fc.oneof(fc.constantFrom('green_tick', 'lighthouse', 'retired_logo'), hostileString, anyJson),
      id: fc.oneof(fc.integer({ min: 1, max: 3000 }), anyJson),
    },
    { requiredKeys: [] },
  ),
  who: fc.constantFrom('owner', 'owner', 'admin', 'admin', 'member', 'guest', 'bot', 'otherOwner', 'nobody', 'wrongKey') as fc.Arbitrary<RestRequest['who']>,
});

test('GraphQL: every generated mutation gets a JSON answer, never a 5xx; refused ones change nothing', async () => {
  const { counts, count } = tally();
  await fc.assert(
    fc.asyncProperty(graphqlRequest, async ({ operation, variables, who }) => {
      const before = await fingerprint();
      const auth = authorization(who);
      const response = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
        body: JSON.stringify({ query: MUTATIONS[operation], variables }),
      });
      const text = await response.text();
      expect(response.status, `${operation} answered ${response.status}: ${text}`).toBeLessThan(500);
      const body = JSON.parse(text) as { data?: Record<string, { __typename: string; sentInvitations?: boolean } | null> | null; errors?: unknown[] };
      const result = body.data?.[operation];
      const refused = body.errors !== undefined || !result || (result.__typename.endsWith('Error') && result.sentInvitations !== true);
      count(refused);
      if (refused) expect(await fingerprint(), `${operation} was refused but wrote: ${text}`).toBe(before);
    }),
    { seed: SEED, numRuns: GRAPHQL_RUNS, endOnFailure: true },
  );
  expect(counts.accepted).toBeGreaterThan(0);
  expect(counts.refused).toBeGreaterThan(GRAPHQL_RUNS / 4);
}, 600_000);
