// Property-based fuzzing of both doors with fast-check (fixed seed, bounded runs): thousands of
// generated requests to every REST route (the events API and uploads included) and every GraphQL
// mutation (those taking files too), with hostile values (NUL characters, huge numbers, wrong types,
// malformed JSON, hostile file names and bytes, other organizations' ids). Every answer must be a JSON
// envelope and never a 5xx, and every refused request must leave the database unchanged, events and
// event queues included. Authorization: no credentials, a wrong key or a deactivated user never get a
// 2xx (beyond the public /server_settings), and another organization's owner never gets one for this
// organization's invitations, files or event queues nor changes any of its rows. The limits are off
// (API_RATE_LIMIT, API_IP_RATE_LIMIT, AUTH_FAILURE_LIMIT, SIGNIN_RATE_LIMIT), so a 429 can never stand in for the refusal
// the test must see: any 429 fails. A regenerated API key replaces the caller's credentials for the later runs.
// Each run reports how many answers fell in each outcome class and requires every class to occur.
import fc from 'fast-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { CSRF_HEADERS } from '../support/graphql-multipart.js';
import { pngImage } from '../support/images.js';
import { createInvitations, uniqueEmail } from '../support/invitations.js';
import { callApi } from '../support/rest.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { postFiles } from '../support/uploads.js';
import { createWorld, type World } from '../support/world.js';

const SEED = 20261123;
const REST_RUNS = 1200;
const GRAPHQL_RUNS = 800;

let server: TestServer;
let world: World;
let other: World;
/** An image, so that some generated emoji and files are accepted. */
let png: Buffer;
/** The tables with an organizationId column: what another organization's owner must never change. */
let organizationTables: string[];
beforeAll(async () => {
  server = await startTestServer({ rateLimits: [], addressRateLimits: [], failedLoginLimit: null, signInLimit: null });
  // No background writes between a request and the digests that judge it: the removal of expired
  // queues and old events runs every minute (a fuzzed queue may live a second), and with the polls
  // closed no GET /events waits (it answers at once with what the queue holds, as it does at shutdown).
  await server.app.eventPolls!.close();
  world = await createWorld(server.app.prisma);
  other = await createWorld(server.app.prisma);
  png = await pngImage();
  const tables = await server.app.prisma.$queryRaw<{ table_name: string }[]>`
    SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = 'organizationId' ORDER BY table_name`;
  organizationTables = tables.map((t) => t.table_name);
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
  'event',
  'event_queue',
];

/**
 * Columns that are not a request's writes: an event's position is given after its commit by whichever
 * request next reads the log (a registration, a poll), for every organization's events at once.
 */
const BOOKKEEPING: Record<string, string[]> = { event: ['position'] };

const rowText = (table: string) => (BOOKKEEPING[table] ? `(to_jsonb(t) - '{${BOOKKEEPING[table].join(',')}}'::text[])::text` : 't::text');
const tableDigest = (table: string, where = 'true') =>
  `(SELECT md5(coalesce(string_agg(${rowText(table)}, '|' ORDER BY ${rowText(table)}), '')) FROM "${table}" t WHERE ${where})`;

async function digests(parts: string[]): Promise<string> {
  const rows = await server.app.prisma.$queryRawUnsafe<{ f: string }[]>(`SELECT concat_ws(',', ${parts.join(', ')}) AS f`);
  return rows[0]!.f;
}

const fingerprint = () => digests(DOMAIN_TABLES.map((table) => tableDigest(table)));

/** This organization's own rows (and the rows of every table that names it). */
const worldFingerprint = () =>
  digests([
    tableDigest('organization', `t.id = ${world.org.id}`),
    ...organizationTables.map((table) => tableDigest(table, `t."organizationId" = ${world.org.id}`)),
  ]);

type Who = 'owner' | 'admin' | 'moderator' | 'member' | 'guest' | 'bot' | 'deactivated' | 'otherOwner' | 'nobody' | 'wrongKey';
const UNAUTHENTICATED: Who[] = ['nobody', 'wrongKey', 'deactivated'];

/**
 * The outcome classes every run must reach, counted and reported: the world's users accepted and
 * refused, the unauthenticated refused, another organization's owner refused on this one's objects.
 */
function outcomes(door: string) {
  const counts = { accepted: 0, refused: 0, unauthenticated: 0, otherOrganization: 0 };
  return {
    counts,
    count(who: Who, refused: boolean, namesWorldObject: boolean) {
      if (UNAUTHENTICATED.includes(who)) counts.unauthenticated++;
      else if (who === 'otherOwner') counts[namesWorldObject ? 'otherOrganization' : refused ? 'refused' : 'accepted']++;
      else counts[refused ? 'refused' : 'accepted']++;
    },
    report() {
      console.info(`${door} fuzzing outcomes: ${JSON.stringify(counts)}`);
      for (const [kind, n] of Object.entries(counts)) expect(n, `${door}: no ${kind} outcome`).toBeGreaterThan(0);
    },
  };
}

/** The status answered to `who`: never a 429 (both limits are off), never a 2xx without valid credentials of this organization. */
function expectAuthorized(who: Who, status: number, namesWorldObject: boolean, what: string) {
  expect(status, `${what}: a limit answered`).not.toBe(429);
  const mustRefuse = UNAUTHENTICATED.includes(who) || (who === 'otherOwner' && namesWorldObject);
  if (mustRefuse) expect(status >= 200 && status < 300, `${what} answered ${status} to ${who}`).toBe(false);
}

const hostileString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    '\u0000',
    'a\u0000b',
    'hi%00',
    '[',
    '{"a":',
    '[1,',
    'null',
    'true',
    '1e309',
    '-1',
    '0',
    '1.0',
    '9007199254740993',
    '[1,2,3]',
    '["x"]',
    '[[1]]',
    ' ',
    '\uD800',
  ),
  fc.integer().map(String),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
  fc.array(fc.integer({ min: -5, max: 2 ** 31 + 5 }), { maxLength: 8 }).map((ids) => JSON.stringify(ids)),
  fc.emailAddress(),
);

const REST_PARAMETERS = [
  'invitee_emails',
  'stream_ids',
  'group_ids',
  'invite_as',
  'invite_expires_in_minutes',
  'include_realm_default_subscriptions',
  'notify_referrer_on_join',
  'welcome_message_custom_text',
  'include_deactivated',
  'event_types',
  'fetch_event_types',
  'queue_lifespan_secs',
  'apply_markdown',
  'client_capabilities',
  'narrow',
  'queue_id',
  'last_event_id',
  'dont_block',
  'username',
  'password',
  'realm',
  'old_password',
  'new_password',
  'unknown_thing',
];

/** Percent-encodes every byte (encodeURIComponent throws on lone surrogates). */
const percentEncoded = (value: string) => [...Buffer.from(value, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');

const pathSegment = fc.oneof(
  hostileString.filter((s) => s.length > 0).map(percentEncoded),
  fc.nat({ max: 3_000_000_000 }).map(String),
  fc.constantFrom('green_tick', 'lighthouse', '1', '%00', '..%2F..'),
);
/** An id of this organization's invitations (or files), as the owner of another one would try it. */
const WORLD_ID = 'WORLD_ID';
const idSegment = fc.oneof({ weight: 3, arbitrary: pathSegment }, { weight: 1, arbitrary: fc.constant(WORLD_ID) });
/** An event queue of this organization's owner, as a queue_id. */
const WORLD_QUEUE = 'WORLD_QUEUE';

/** A file part: hostile names and bytes, or an image. */
const filePart = fc.record({
  name: fc.oneof(hostileString, fc.constantFrom('a.png', 'notes.txt', '../../etc/passwd', 'x'.repeat(300), '')),
  content: fc.oneof(fc.uint8Array({ maxLength: 64 }), fc.constant('PNG')),
  type: fc.constantFrom('image/png', 'text/plain', 'application/octet-stream', '', 'image/svg+xml'),
});

const anyone = fc.constantFrom<Who>(
  'owner',
  'admin',
  'moderator',
  'member',
  'guest',
  'bot',
  'deactivated',
  'otherOwner',
  'nobody',
  'wrongKey',
);
/** A name an emoji may have (and, mostly, has not yet). */
const emojiName = fc.stringMatching(/^[a-z][a-z0-9_]{2,11}$/);
const image = fc.constant({ name: 'picture.png', content: 'PNG', type: 'image/png' });

const anyRestRequest = fc.record({
  method: fc.constantFrom('GET', 'POST', 'DELETE', 'PATCH', 'PUT', 'HEAD'),
  path: fc.oneof(
    fc.constant('/invites'),
    idSegment.map((id) => `/invites/${id}`),
    idSegment.map((id) => `/invites/${id}/resend`),
    fc.constant('/realm/emoji'),
    pathSegment.map((name) => `/realm/emoji/${name}`),
    fc.constant('/attachments'),
    idSegment.map((id) => `/attachments/${id}`),
    fc.constant('/server_settings'),
    fc.constant('/users/me'),
    fc.constant('/register'),
    fc.constant('/events'),
    fc.constant('/user_uploads'),
    fc.constant('/fetch_api_key'),
    fc.constant('/settings'),
    fc.constant('/users/me/api_key/regenerate'),
  ),
  params: fc.dictionary(
    fc.constantFrom(...REST_PARAMETERS),
    fc.oneof({ weight: 9, arbitrary: hostileString }, { weight: 1, arbitrary: fc.constant(WORLD_QUEUE) }),
    { maxKeys: 6 },
  ),
  encoding: fc.constantFrom('form', 'multipart', 'query', 'json', 'garbage', 'file'),
  file: filePart,
  who: anyone,
  worldObject: fc.nat(),
});

/** Another organization's owner on the routes that act on this organization's invitations and files. */
const crossOrganizationRequest = fc
  .record({
    route: fc.constantFrom(
      { method: 'DELETE', path: `/invites/${WORLD_ID}`, queue: {} },
      { method: 'POST', path: `/invites/${WORLD_ID}/resend`, queue: {} },
      { method: 'DELETE', path: `/attachments/${WORLD_ID}`, queue: {} },
      { method: 'GET', path: '/events', queue: { queue_id: WORLD_QUEUE, last_event_id: '-1' } },
      { method: 'DELETE', path: '/events', queue: { queue_id: WORLD_QUEUE } },
    ),
    params: fc.dictionary(fc.constantFrom(...REST_PARAMETERS), hostileString, { maxKeys: 2 }),
    encoding: fc.constantFrom('form', 'multipart', 'query', 'json', 'garbage'),
    file: filePart,
    worldObject: fc.nat(),
  })
  .map(({ route: { queue, ...route }, params, ...rest }) => ({
    ...rest,
    ...route,
    params: { ...params, ...(queue as Record<string, string>) } as Record<string, string>,
    who: 'otherOwner' as Who,
  }));

/** Well-formed requests of the events API and uploads, so that the runs also reach their writes. */
const plausibleRestRequest = fc.oneof(
  fc.record({
    method: fc.constantFrom('GET', 'DELETE'),
    path: fc.constant('/events'),
    params: fc.record(
      {
        queue_id: fc.constant(WORLD_QUEUE),
        last_event_id: fc.constantFrom('-1', '0', '1', '2'),
        dont_block: fc.constantFrom('true', 'false'),
      },
      { requiredKeys: ['queue_id'] },
    ),
    encoding: fc.constantFrom('query', 'form'),
    file: filePart,
    who: anyone,
    worldObject: fc.nat(),
  }),
  fc.record({
    method: fc.constant('POST'),
    path: fc.constant('/register'),
    params: fc.record(
      {
        event_types: fc.constantFrom('["realm_emoji"]', '["attachment"]', '["invites_changed"]', 'null'),
        queue_lifespan_secs: fc.constantFrom('0', '1', '600'),
      },
      { requiredKeys: [] },
    ),
    encoding: fc.constantFrom('form', 'multipart'),
    file: filePart,
    who: anyone,
    worldObject: fc.nat(),
  }),
  fc.record({
    method: fc.constant('POST'),
    path: fc.oneof(
      fc.constant('/user_uploads'),
      emojiName.map((name) => `/realm/emoji/${name}`),
    ),
    params: fc.constant({}),
    encoding: fc.constant('file'),
    file: fc.oneof(image, filePart),
    who: anyone,
    worldObject: fc.nat(),
  }),
);

const restRequest = fc.oneof(
  { weight: 7, arbitrary: anyRestRequest },
  { weight: 2, arbitrary: plausibleRestRequest },
  { weight: 1, arbitrary: crossOrganizationRequest },
);

type RestRequest = typeof restRequest extends fc.Arbitrary<infer T> ? T : never;
type FilePart = RestRequest['file'];

/** One of this organization's pending invitations (made when the runs have used them all up). */
async function pendingWorldInvitation(pick: number): Promise<number> {
  const where = { organizationId: world.org.id, status: 'PENDING' as const };
  let pending = await server.app.prisma.invitation.findMany({ where, select: { id: true }, orderBy: { id: 'asc' } });
  if (pending.length === 0)
    pending = await createInvitations(
      server,
      world,
      Array.from({ length: 3 }, () => ({ email: uniqueEmail('fuzzed'), queueEmail: false })),
    );
  return pending[pick % pending.length]!.id;
}

/** One of this organization's files (one uploaded when the runs have deleted them all). */
async function worldAttachment(pick: number): Promise<number> {
  let files = await server.app.prisma.attachment.findMany({
    where: { organizationId: world.org.id },
    select: { id: true },
    orderBy: { id: 'asc' },
  });
  if (files.length === 0) {
    expect((await postFiles(server.url, '/user_uploads', world.users.member.auth, [{ name: 'again.txt', content: 'again' }])).status).toBe(
      200,
    );
    files = await server.app.prisma.attachment.findMany({ where: { organizationId: world.org.id }, select: { id: true } });
  }
  return files[pick % files.length]!.id;
}

/** An event queue of this organization's owner (registered again when the runs have deleted or replaced it). */
async function worldQueue(): Promise<string> {
  const queue = await server.app.prisma.eventQueue.findFirst({
    where: { userId: world.users.owner.id },
    orderBy: { lastPolledAt: 'desc' },
  });
  if (queue) return queue.id;
  const registered = await callApi(server.url, 'POST', '/register', { authorization: world.users.owner.auth });
  expect(registered.status).toBe(200);
  return registered.body.queue_id;
}

/** The path with WORLD_ID replaced by one of this organization's pending invitations or files, and a queue_id of WORLD_QUEUE by its owner's queue. */
async function concreteRequest(request: RestRequest): Promise<{ path: string; params: Record<string, string>; namesWorldObject: boolean }> {
  let { path } = request;
  let params: Record<string, string> = request.params;
  let namesWorldObject = false;
  if (path.includes(WORLD_ID)) {
    const id = path.startsWith('/invites') ? await pendingWorldInvitation(request.worldObject) : await worldAttachment(request.worldObject);
    path = path.replace(WORLD_ID, String(id));
    namesWorldObject = true;
  }
  if (Object.values(params).includes(WORLD_QUEUE)) {
    const queueId = await worldQueue();
    params = Object.fromEntries(Object.entries(params).map(([name, value]) => [name, value === WORLD_QUEUE ? queueId : value]));
    namesWorldObject ||= params.queue_id === queueId && path === '/events';
  }
  return { path, params, namesWorldObject };
}

/** The caller's new key after a successful POST /users/me/api_key/regenerate: the old one no longer works. */
function keepRegeneratedKey(who: Who, apiKey: string): void {
  const user = who === 'otherOwner' ? other.users.owner : world.users[who as Exclude<Who, 'otherOwner' | 'nobody' | 'wrongKey'>];
  user.apiKey = apiKey;
  user.auth = `Basic ${Buffer.from(`${user.email}:${apiKey}`).toString('base64')}`;
}

function authorization(who: Who): string | undefined {
  if (who === 'nobody') return undefined;
  if (who === 'wrongKey') return `Basic ${Buffer.from(`${world.users.owner.email}:${'x'.repeat(32)}`).toString('base64')}`;
  if (who === 'otherOwner') return other.users.owner.auth;
  return world.users[who].auth;
}

/** The file's bytes: its own, or the image. */
const fileBlob = (file: FilePart) => new Blob([(file.content === 'PNG' ? png : file.content) as BlobPart], { type: file.type });

function restInit({ method, encoding, who, file }: RestRequest, params: Record<string, string>): { init: RequestInit; query: string } {
  const headers: Record<string, string> = {};
  const auth = authorization(who);
  if (auth) headers.authorization = auth;
  const hasBody = method !== 'GET' && method !== 'HEAD';
  if (!hasBody || encoding === 'query') return { init: { method, headers }, query: `?${new URLSearchParams(params)}` };
  if (encoding === 'multipart' || encoding === 'file') {
    const form = new FormData();
    for (const [name, value] of Object.entries(params)) form.append(name, value);
    if (encoding === 'file') form.append('file', fileBlob(file), file.name);
    return { init: { method, headers, body: form }, query: '' };
  }
  if (encoding === 'json')
    return { init: { method, headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(params) }, query: '' };
  if (encoding === 'garbage')
    return {
      init: { method, headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, body: '%%%=&&=%zz\u0000' },
      query: '',
    };
  return { init: { method, headers, body: new URLSearchParams(params) }, query: '' };
}

test('REST: every generated request gets a JSON envelope, never a 5xx; refused ones change nothing; no 2xx without authority', async () => {
  const tally = outcomes('REST');
  await fc.assert(
    fc.asyncProperty(restRequest, async (request) => {
      const { path, params, namesWorldObject } = await concreteRequest(request);
      const before = await fingerprint();
      const worldBefore = request.who === 'otherOwner' ? await worldFingerprint() : undefined;
      const { init, query } = restInit(request, params);
      const response = await fetch(`${server.url}/api/v1${path}${query}`, init);
      const text = await response.text();
      const what = `${request.method} ${path}`;
      expect(response.status, `${what} answered ${response.status}: ${text}`).toBeLessThan(500);
      if (path === '/users/me/api_key/regenerate' && response.ok) keepRegeneratedKey(request.who, JSON.parse(text).api_key);
      if (path !== '/server_settings' && path !== '/fetch_api_key') expectAuthorized(request.who, response.status, namesWorldObject, what);
      if (worldBefore !== undefined)
        expect(await worldFingerprint(), `${what} by another organization's owner changed this one`).toBe(worldBefore);
      if (path === '/server_settings') return;
      if (request.method === 'HEAD') {
        tally.count(request.who, response.status >= 400, namesWorldObject);
        return;
      }
      const body = JSON.parse(text) as { result?: string; msg?: string; sent_invitations?: boolean };
      expect(['success', 'error']).toContain(body.result);
      expect(typeof body.msg).toBe('string');
      // INVITATION_FAILED with sent_invitations: true reports a partial success (behaviour.md 3.2).
      const refused = response.status >= 400 && body.sent_invitations !== true;
      tally.count(request.who, refused, namesWorldObject);
      if (refused) expect(await fingerprint(), `${what} was refused but wrote`).toBe(before);
    }),
    { seed: SEED, numRuns: REST_RUNS, endOnFailure: true },
  );
  tally.report();
}, 600_000);

const MUTATIONS = {
  sendInvitations: `mutation($input: SendInvitationsInput!) { sendInvitations(input: $input) { __typename ... on Error { message code } ... on InvitationFailedError { sentInvitations } } }`,
  deactivateCustomEmoji: `mutation($name: String!) { deactivateCustomEmoji(emojiName: $name) { __typename ... on Error { message code } } }`,
  revokeInvitation: `mutation($id: Int!) { revokeInvitation(id: $id) { __typename ... on Error { message code } } }`,
  resendInvitation: `mutation($id: Int!) { resendInvitation(id: $id) { __typename ... on Error { message code } } }`,
  deleteAttachment: `mutation($id: Int!) { deleteAttachment(id: $id) { __typename ... on Error { message code } } }`,
  addCustomEmoji: `mutation($file: File!, $name: String!) { addCustomEmoji(file: $file, name: $name) { __typename ... on Error { message code } } }`,
  uploadFile: `mutation($file: File!) { uploadFile(file: $file) { __typename ... on Error { message code } } }`,
};

/** The mutations that name one of this organization's objects by id (WORLD_ID), and those that take a file. */
const NAMES_WORLD_ID: (keyof typeof MUTATIONS)[] = ['revokeInvitation', 'resendInvitation', 'deleteAttachment'];
const TAKES_FILE: (keyof typeof MUTATIONS)[] = ['addCustomEmoji', 'uploadFile'];

const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.oneof(hostileString, fc.integer()), { maxLength: 5 }),
);

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

const anyGraphqlRequest = fc.record({
  operation: fc.constantFrom(...(Object.keys(MUTATIONS) as (keyof typeof MUTATIONS)[])),
  variables: fc.record(
    {
      input: fc.oneof({ weight: 2, arbitrary: plausibleInput }, { weight: 1, arbitrary: sendInput }),
      name: fc.oneof(fc.constantFrom('green_tick', 'lighthouse', 'retired_logo'), emojiName, hostileString, anyJson),
      id: fc.oneof(fc.integer({ min: 1, max: 3000 }), anyJson, fc.constant(WORLD_ID)),
      file: anyJson,
    },
    { requiredKeys: [] },
  ),
  /** Sent as a multipart request with this file part (for the file variable), or as JSON without one. */
  upload: fc.option(fc.oneof(image, filePart), { nil: undefined }),
  who: fc.constantFrom<Who>(
    'owner',
    'owner',
    'admin',
    'admin',
    'member',
    'guest',
    'bot',
    'deactivated',
    'otherOwner',
    'otherOwner',
    'nobody',
    'wrongKey',
  ),
  worldObject: fc.nat(),
});

/** Another organization's owner on the mutations that act on this organization's invitations and files. */
const crossOrganizationMutation = fc.record({
  operation: fc.constantFrom(...NAMES_WORLD_ID),
  variables: fc.constant({ id: WORLD_ID } as Record<string, unknown>),
  upload: fc.constant(undefined),
  who: fc.constant<Who>('otherOwner'),
  worldObject: fc.nat(),
});

const graphqlRequest = fc.oneof({ weight: 9, arbitrary: anyGraphqlRequest }, { weight: 1, arbitrary: crossOrganizationMutation });

/** The GraphQL multipart request: the operation, the map of its one file to `variables.file`, the file. */
function multipartOperation(query: string, variables: Record<string, unknown>, file: FilePart): FormData {
  const form = new FormData();
  form.append('operations', JSON.stringify({ query, variables: { ...variables, file: null } }));
  form.append('map', JSON.stringify({ 0: ['variables.file'] }));
  form.append('0', fileBlob(file), file.name);
  return form;
}

test('GraphQL: every generated mutation gets a JSON answer, never a 5xx; refused ones change nothing; no success without authority', async () => {
  const tally = outcomes('GraphQL');
  await fc.assert(
    fc.asyncProperty(graphqlRequest, async ({ operation, variables, who, worldObject, upload }) => {
      const namesWorldObject = variables.id === WORLD_ID && NAMES_WORLD_ID.includes(operation);
      if (variables.id === WORLD_ID)
        variables = {
          ...variables,
          id: operation === 'deleteAttachment' ? await worldAttachment(worldObject) : await pendingWorldInvitation(worldObject),
        };
      const before = await fingerprint();
      const worldBefore = who === 'otherOwner' ? await worldFingerprint() : undefined;
      const auth = authorization(who);
      const response = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        ...(upload && TAKES_FILE.includes(operation)
          ? {
              headers: { ...CSRF_HEADERS, ...(auth ? { authorization: auth } : {}) },
              body: multipartOperation(MUTATIONS[operation], variables, upload),
            }
          : {
              headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
              body: JSON.stringify({ query: MUTATIONS[operation], variables }),
            }),
      });
      const text = await response.text();
      expect(response.status, `${operation} answered ${response.status}: ${text}`).toBeLessThan(500);
      expectAuthorized(who, response.status, false, operation);
      if (worldBefore !== undefined)
        expect(await worldFingerprint(), `${operation} by another organization's owner changed this one: ${text}`).toBe(worldBefore);
      const body = JSON.parse(text) as {
        data?: Record<string, { __typename: string; sentInvitations?: boolean } | null> | null;
        errors?: unknown[];
      };
      const result = body.data?.[operation];
      const refused = body.errors !== undefined || !result || (result.__typename.endsWith('Error') && result.sentInvitations !== true);
      if (UNAUTHENTICATED.includes(who) || (who === 'otherOwner' && namesWorldObject))
        expect(refused, `${operation} succeeded for ${who}: ${text}`).toBe(true);
      tally.count(who, refused, namesWorldObject);
      if (refused) expect(await fingerprint(), `${operation} was refused but wrote: ${text}`).toBe(before);
    }),
    { seed: SEED, numRuns: GRAPHQL_RUNS, endOnFailure: true },
  );
  tally.report();
}, 600_000);
