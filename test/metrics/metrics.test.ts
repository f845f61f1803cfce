// GET /metrics over real HTTP, parsed with a Prometheus text-format parser: off by default, behind
// METRICS_TOKEN on the main port, alone on METRICS_PORT; and after real requests (REST, GraphQL with
// and without errors, an invitation whose e-mail is queued and then delivered, 429s of both kinds)
// the series that describe them exist with the right labels and have grown by what happened.
import { createRequire } from 'node:module';
import { createServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { StartupError } from '../../src/startup-error.js';
import { basicAuth, startTestServer, type TestServer } from '../support/server.js';
import { subscribe, TRANSPORTS } from '../support/subscriptions.js';
import { createWorld, type World } from '../support/world.js';

type Labels = Record<string, string>;
interface Sample {
  labels?: Labels;
  value?: string;
}
interface Family {
  name: string;
  type: string;
  metrics: Sample[];
}
const parsePrometheus = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => Family[];

const TOKEN = 'metrics-test-token-0123456789abcdef';
const bearer = { authorization: `Bearer ${TOKEN}` };

/**
 * One scrape, parsed: the families with their types, and every sample by its name (a histogram's
 * `_count`, `_sum` and `_bucket` included). The parser merges a histogram's labelled series into one
 * without their labels, so the samples are read from the text parsed again without the histograms'
 * TYPE lines: each `_count` (and so on) is then a sample of its own with its labels.
 */
class Scrape {
  readonly families: Map<string, Family>;
  private readonly series = new Map<string, Sample[]>();

  constructor(readonly text: string) {
    this.families = new Map(parsePrometheus(text).map((family) => [family.name, family]));
    for (const family of parsePrometheus(text.replace(/^# TYPE \S+ histogram$/gm, ''))) {
      this.series.set(family.name, [...(this.series.get(family.name) ?? []), ...family.metrics]);
    }
  }

  /** The samples named `name` whose labels include `labels`. */
  samples(name: string, labels: Labels = {}): Sample[] {
    return (this.series.get(name) ?? []).filter((sample) => Object.entries(labels).every(([key, value]) => sample.labels?.[key] === value));
  }

  /** The sum over those samples; 0 when there is none. */
  value(name: string, labels: Labels = {}): number {
    return this.samples(name, labels).reduce((sum, sample) => sum + Number(sample.value), 0);
  }
}

async function scrape(url: string, headers: Record<string, string> = bearer): Promise<Scrape> {
  const response = await fetch(url, { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return new Scrape(await response.text());
}

/** Runs `check` until it passes (it may wait on background work), failing with its last error after `seconds`. */
async function eventually(check: () => Promise<void>, seconds = 30): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

const graphql = (server: TestServer, query: string, authorization?: string) =>
  fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(authorization && { authorization }) },
    body: JSON.stringify({ query }),
  });

/** Requests counted by the latency histogram. */
const HTTP = 'teamchat_http_request_duration_seconds_count';

test('off by default: /metrics is the usual JSON 404', async () => {
  const server = await startTestServer();
  try {
    const response = await fetch(`${server.url}/metrics`, { headers: bearer });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ result: 'error', msg: 'Not Found', code: 'BAD_REQUEST' });
    expect(server.metricsUrl).toBeUndefined();
  } finally {
    await server.close();
  }
});

describe('with METRICS_TOKEN on the main port, and METRICS_PORT on a server beside it', () => {
  let main: TestServer;
  let beside: TestServer;
  let world: World;
  const metricsOf = (server: TestServer) => `${server.url}/metrics`;

  beforeAll(async () => {
    main = await startTestServer(
      {
        metrics: { token: TOKEN },
        rateLimits: [{ windowSeconds: 3600, maxRequests: 20 }],
        failedLoginLimit: { windowSeconds: 600, maxRequests: 3 },
      },
      // A worker that wakes when this server queues mail (not on a timer that could take the other server's).
      { outbox: { pollMs: 3_600_000 } },
    );
    beside = await startTestServer({ metrics: { port: 0 } });
    world = await createWorld(main.app.prisma);
  });
  afterAll(async () => {
    await beside?.close();
    await main?.close();
  });

  test('the main port: 401 without the token, with a wrong one or another scheme; 200 with it', async () => {
    for (const headers of [
      {} as Record<string, string>,
      { authorization: `Bearer ${TOKEN}x` },
      { authorization: 'Bearer ' },
      { authorization: `Basic ${TOKEN}` },
    ]) {
      const response = await fetch(metricsOf(main), { headers });
      expect(response.status, JSON.stringify(headers)).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
      expect((await response.json()).code).toBe('UNAUTHORIZED');
    }
    const scraped = await scrape(metricsOf(main), { authorization: `bearer ${TOKEN}` });
    expect(scraped.value('teamchat_db_pool_max_connections')).toBe(10);
  });

  test('METRICS_PORT serves /metrics without a token and nothing else; its main port answers 404', async () => {
    expect(beside.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(new URL(beside.metricsUrl!).port).not.toBe(new URL(beside.url).port);
    const scraped = await scrape(beside.metricsUrl!, {});
    expect(scraped.value('process_resident_memory_bytes')).toBeGreaterThan(0);
    expect((await fetch(metricsOf(beside), { headers: bearer })).status).toBe(404);
    expect((await fetch(new URL('/graphql', beside.metricsUrl!), { method: 'POST' })).status).toBe(404);
    expect((await fetch(new URL('/api/v1/server_settings', beside.metricsUrl!))).status).toBe(404);
  });

  test('a server with both: the token is required on METRICS_PORT too', async () => {
    const both = await startTestServer({ metrics: { token: TOKEN, port: 0 } });
    try {
      expect((await fetch(both.metricsUrl!)).status).toBe(401);
      await scrape(both.metricsUrl!);
    } finally {
      await both.close();
    }
  });

  test("process memory, event-loop delay, GC and the pool's counts are there", async () => {
    const scraped = await scrape(metricsOf(main));
    expect(scraped.value('process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(scraped.value('nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    expect(scraped.families.get('nodejs_eventloop_lag_p99_seconds')?.type).toBe('GAUGE');
    expect(scraped.families.get('nodejs_gc_duration_seconds')?.type).toBe('HISTOGRAM');
    // Walked every open handle at each scrape: left out.
    for (const perHandle of ['nodejs_active_handles', 'nodejs_active_requests_total', 'nodejs_active_resources']) {
      expect(scraped.families.has(perHandle)).toBe(false);
    }
    expect(
      scraped
        .samples('teamchat_db_pool_connections')
        .map((sample) => sample.labels?.state)
        .sort(),
    ).toEqual(['idle', 'in_use']);
    expect(scraped.value('teamchat_db_pool_connections')).toBeGreaterThan(0);
    expect(scraped.value('teamchat_db_pool_waiting')).toBe(0);
  });

  test('open subscriptions and waiting long polls: counted while open, no longer once closed', async () => {
    const member = world.users.member.auth;
    const counts = async () => {
      const scraped = await scrape(metricsOf(main));
      return { streams: scraped.value('teamchat_event_streams'), polls: scraped.value('teamchat_event_polls_waiting') };
    };
    expect(await counts()).toEqual({ streams: 0, polls: 0 });
    const subscriptions = TRANSPORTS.map((transport) =>
      subscribe(transport, main.url, member, 'subscription { customEmojiChanged { cursor } }', {}),
    );
    const registered = await fetch(`${main.url}/api/v1/register`, {
      method: 'POST',
      headers: { authorization: member, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'event_types=%5B%22invites_changed%22%5D',
    });
    const { queue_id: queueId } = await registered.json();
    const abort = new AbortController();
    const poll = fetch(`${main.url}/api/v1/events?queue_id=${queueId}&last_event_id=-1`, {
      headers: { authorization: member },
      signal: abort.signal,
    }).catch(() => 'aborted');
    try {
      await eventually(async () => expect(await counts()).toEqual({ streams: 2, polls: 1 }), 5);
      await subscriptions[0]!.close();
      await eventually(async () => expect(await counts()).toEqual({ streams: 1, polls: 1 }), 1);
    } finally {
      abort.abort();
      await poll;
      for (const subscription of subscriptions) await subscription.close();
    }
    await eventually(async () => expect(await counts()).toEqual({ streams: 0, polls: 0 }), 1);
  });

  test('REST requests by route template and status, never the raw path; their statements are timed', async () => {
    const before = await scrape(metricsOf(main));
    const owner = world.users.owner.auth;
    expect((await fetch(`${main.url}/api/v1/attachments`, { headers: { authorization: owner } })).status).toBe(200);
    const missing = await fetch(`${main.url}/api/v1/realm/emoji/no_such_emoji_4f7a`, {
      method: 'DELETE',
      headers: { authorization: owner },
    });
    expect(missing.status).toBe(404);
    expect((await fetch(`${main.url}/accounts/do_confirm/SECRETKEY0123456789abcdef`)).status).toBe(404);
    expect((await fetch(`${main.url}/no/such/page`)).status).toBe(404);
    const after = await scrape(metricsOf(main));

    const grew = (labels: Labels) => after.value(HTTP, labels) - before.value(HTTP, labels);
    expect(grew({ door: 'rest', route: '/api/v1/attachments', method: 'GET', status: '200' })).toBe(1);
    expect(grew({ door: 'rest', route: '/api/v1/realm/emoji/{emoji_name}', method: 'DELETE', status: '404' })).toBe(1);
    expect(grew({ door: 'pages', route: '/accounts/do_confirm/{key}', method: 'GET', status: '404' })).toBe(1);
    expect(grew({ door: 'other', route: 'unmatched', method: 'GET', status: '404' })).toBe(1);
    expect(after.families.get('teamchat_http_request_duration_seconds')?.type).toBe('HISTOGRAM');
    expect(after.value('teamchat_http_request_duration_seconds_bucket', { route: '/api/v1/attachments', status: '200', le: '+Inf' })).toBe(
      after.value(HTTP, { route: '/api/v1/attachments', status: '200' }),
    );
    for (const secret of ['no_such_emoji_4f7a', 'SECRETKEY0123456789abcdef', '/no/such/page']) expect(after.text).not.toContain(secret);
    // Authentication, the rate limit and the listing: several statements, each one observed.
    const statements = 'teamchat_db_statement_duration_seconds_count';
    expect(after.value(statements) - before.value(statements)).toBeGreaterThanOrEqual(2);
  });

  test('GraphQL operations by name and result, errors by code and phase (documents run compiled by graphql-jit)', async () => {
    const before = await scrape(metricsOf(main));
    expect((await graphql(main, 'query MetricsMe { me { email } }', world.users.owner.auth)).status).toBe(200);
    expect((await graphql(main, 'query MetricsAnonymous { me { email } }')).status).toBe(401);
    const guest = await (await graphql(main, 'query MetricsGuestInvitations { invitations { id } }', world.users.guest.auth)).json();
    expect(guest.errors[0].path).toEqual(['invitations']);
    const resolverCode = guest.errors[0].extensions.code as string;
    expect(resolverCode).not.toBe('INTERNAL_SERVER_ERROR');
    const broken = await (await graphql(main, 'query MetricsBroken { me {', world.users.owner.auth)).json();
    expect(broken.errors[0].message).toMatch(/^Syntax Error/);
    const unknownField = await (await graphql(main, 'query MetricsUnknownField { noSuchField }', world.users.owner.auth)).json();
    expect(unknownField.errors[0].message).toMatch(/noSuchField/);
    const after = await scrape(metricsOf(main));

    const grew = (name: string, labels: Labels) => after.value(name, labels) - before.value(name, labels);
    const operations = 'graphql_envelop_request';
    const errors = 'graphql_envelop_error_result';
    expect(grew(operations, { operationName: 'MetricsMe', operationType: 'query', result: 'ok' })).toBe(1);
    expect(grew(operations, { operationName: 'MetricsAnonymous', operationType: 'query', result: 'error' })).toBe(1);
    expect(grew(operations, { operationName: 'MetricsGuestInvitations', result: 'error' })).toBe(1);
    expect(grew('graphql_envelop_request_duration_count', { operationName: 'MetricsMe', result: 'ok' })).toBe(1);
    expect(grew(errors, { operationName: 'MetricsAnonymous', phase: 'execute', code: 'UNAUTHORIZED' })).toBe(1);
    expect(grew(errors, { operationName: 'MetricsGuestInvitations', phase: 'execute', code: resolverCode })).toBe(1);
    expect(grew(errors, { phase: 'parse', code: 'GRAPHQL_PARSE_FAILED' })).toBe(1);
    expect(grew(errors, { operationName: 'MetricsUnknownField', phase: 'validate', code: 'GRAPHQL_VALIDATION_FAILED' })).toBe(1);
    expect(grew(errors, { operationName: 'MetricsMe' })).toBe(0);
    // Errors of parse, validation and resolvers answer 200 (application/json); a missing login 401.
    expect(grew(HTTP, { door: 'graphql', route: '/graphql', method: 'POST', status: '200' })).toBe(4);
    expect(grew(HTTP, { door: 'graphql', route: '/graphql', method: 'POST', status: '401' })).toBe(1);
  });

  test('client errors count with their own code or BAD_USER_INPUT, never INTERNAL_SERVER_ERROR', async () => {
    const auth = world.users.owner.auth;
    const send = async (body: Record<string, unknown>) =>
      (
        await fetch(`${main.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: auth },
          body: JSON.stringify(body),
        })
      ).json();
    const before = await scrape(metricsOf(main));
    const missing = await send({ query: 'query ClientMissingVariable($limit: Int!) { directMessages(limit: $limit) { id } }' });
    expect(missing.errors[0].message).toBe('Variable "$limit" of required type "Int!" was not provided.');
    const mistyped = await send({
      query: 'query ClientMistypedVariable($limit: Int!) { directMessages(limit: $limit) { id } }',
      variables: { limit: 'ten' },
    });
    expect(mistyped.errors[0].message).toMatch(/^Variable "\$limit" got invalid value "ten"/);
    const undeclared = await send({ query: 'query ClientUndeclaredVariable { directMessages(limit: $limit) { id } }' });
    expect(undeclared.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    const aliases = Array.from({ length: 31 }, (_, i) => `a${i}: me { email }`).join(' ');
    expect((await send({ query: `query ClientTooManyAliases { ${aliases} }` })).errors[0].message).toMatch(/Aliases limit/);
    const mutations = Array.from({ length: 6 }, (_, i) => `r${i}: revokeInvitation(id: 0) { __typename }`).join(' ');
    expect((await send({ query: `mutation ClientTooManyMutations { ${mutations} }` })).errors[0].extensions.code).toBe('BAD_REQUEST');
    const after = await scrape(metricsOf(main));

    const errors = 'graphql_envelop_error_result';
    const grew = (labels: Labels) => after.value(errors, labels) - before.value(errors, labels);
    expect(grew({ operationName: 'ClientMissingVariable', phase: 'execute', code: 'BAD_USER_INPUT' })).toBe(1);
    expect(grew({ operationName: 'ClientMistypedVariable', phase: 'execute', code: 'BAD_USER_INPUT' })).toBe(1);
    expect(grew({ operationName: 'ClientUndeclaredVariable', phase: 'validate', code: 'GRAPHQL_VALIDATION_FAILED' })).toBe(1);
    expect(grew({ operationName: 'ClientTooManyAliases', phase: 'validate', code: 'GRAPHQL_VALIDATION_FAILED' })).toBe(1);
    expect(grew({ operationName: 'ClientTooManyMutations', phase: 'execute', code: 'BAD_REQUEST' })).toBe(1);
    expect(grew({ code: 'INTERNAL_SERVER_ERROR' })).toBe(0);
  });

  test("an invitation's queued e-mail: pending, the oldest one's age, then its delivery", async () => {
    const address = `metrics-${Date.now()}@example.net`;
    const before = await scrape(beside.metricsUrl!, {});
    const invite = async (server: TestServer, email: string) => {
      const body = new URLSearchParams({ invitee_emails: email, stream_ids: '[]', invite_as: '400' });
      expect(
        (await fetch(`${server.url}/api/v1/invites`, { method: 'POST', headers: { authorization: world.users.owner.auth }, body })).status,
      ).toBe(200);
    };
    // The server beside runs no e-mail worker: the e-mail stays queued.
    await invite(beside, address);
    const anHourAgo = new Date(Date.now() - 3_600_000);
    expect((await beside.app.prisma.outboxEmail.updateMany({ where: { toAddress: address }, data: { createdAt: anHourAgo } })).count).toBe(
      1,
    );
    const queued = await scrape(beside.metricsUrl!, {});
    expect(
      queued.value('teamchat_outbox_emails', { status: 'pending' }) - before.value('teamchat_outbox_emails', { status: 'pending' }),
    ).toBe(1);
    expect(queued.value('teamchat_outbox_emails', { status: 'failed' })).toBe(0);
    const age = queued.value('teamchat_outbox_oldest_pending_age_seconds');
    expect(age).toBeGreaterThanOrEqual(3600);
    expect(age).toBeLessThan(3600 + 300);

    // The main server's worker delivers what is due (its own invitation's e-mail and the one above).
    const sentRows = () => main.app.prisma.outboxEmail.count({ where: { status: 'SENT' } });
    const [sentBefore, deliveredBefore] = [
      await sentRows(),
      (await scrape(metricsOf(main))).value('teamchat_outbox_deliveries_total', { outcome: 'sent' }),
    ];
    await invite(main, `metrics-main-${Date.now()}@example.net`);
    await eventually(async () => {
      const scraped = await scrape(metricsOf(main));
      expect(scraped.value('teamchat_outbox_emails', { status: 'pending' })).toBe(0);
      expect(scraped.value('teamchat_outbox_deliveries_total', { outcome: 'sent' }) - deliveredBefore).toBe(
        (await sentRows()) - sentBefore,
      );
    });
    const delivered = await scrape(metricsOf(main));
    expect(delivered.value('teamchat_outbox_deliveries_total', { outcome: 'sent' }) - deliveredBefore).toBeGreaterThanOrEqual(2);
    expect(delivered.value('teamchat_outbox_deliveries_total', { outcome: 'failed' })).toBe(0);
    expect(delivered.value('teamchat_outbox_oldest_pending_age_seconds')).toBe(0);
  });

  test('a delivery that fails counts as failed', async () => {
    const refusingSmtp = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => refusingSmtp.listen(0, '127.0.0.1', resolve));
    const smtpUrl = `smtp://127.0.0.1:${(refusingSmtp.address() as AddressInfo).port}`;
    // The e-mail must be attempted by this server's worker alone: main's, on the same database, would deliver it.
    await main.outbox?.stop();
    const failing = await startTestServer(
      { metrics: { port: 0 }, smtpUrl },
      { outbox: { pollMs: 3_600_000, retryDelayMs: () => 3_600_000 } },
    );
    try {
      const address = `metrics-failing-${Date.now()}@example.net`;
      const body = new URLSearchParams({ invitee_emails: address, stream_ids: '[]', invite_as: '400' });
      expect(
        (await fetch(`${failing.url}/api/v1/invites`, { method: 'POST', headers: { authorization: world.users.owner.auth }, body })).status,
      ).toBe(200);
      await eventually(async () => {
        const row = await failing.app.prisma.outboxEmail.findFirstOrThrow({ where: { toAddress: address } });
        expect(row.lastError).not.toBeNull();
        const scraped = await scrape(failing.metricsUrl!, {});
        expect(scraped.value('teamchat_outbox_deliveries_total', { outcome: 'failed' })).toBe(1);
        expect(scraped.value('teamchat_outbox_deliveries_total', { outcome: 'sent' })).toBe(0);
        // Retried in an hour: still pending.
        expect(scraped.value('teamchat_outbox_emails', { status: 'pending' })).toBe(1);
      });
    } finally {
      await failing.close();
      refusingSmtp.close();
    }
  });

  test('METRICS_PORT in use stops the start with one line naming it', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const starting = startTestServer({ metrics: { port } });
      await expect(starting).rejects.toThrow(StartupError);
      await expect(starting).rejects.toThrow(`Port ${port} is already in use on 127.0.0.1: stop what runs there, or set METRICS_PORT.`);
    } finally {
      taken.close();
    }
  });

  test('429s by kind: the per-user limit, then the failed-login lockout (last: it locks this address out)', async () => {
    const refusals = 'teamchat_rate_limit_refusals_total';
    const before = await scrape(metricsOf(main));
    const kinds = before.samples(refusals).map((sample) => sample.labels?.kind);
    expect(kinds.sort()).toEqual(['failed_login', 'per_address', 'per_user', 'sign_in']);
    const me = (authorization: string) => fetch(`${main.url}/api/v1/users/me`, { headers: { authorization } });
    let status = 200;
    for (let request = 0; request < 21 && status === 200; request++) status = (await me(world.users.member.auth)).status;
    expect(status).toBe(429);
    const limited = await scrape(metricsOf(main));
    expect(limited.value(refusals, { kind: 'per_user' }) - before.value(refusals, { kind: 'per_user' })).toBe(1);
    expect(limited.value(refusals, { kind: 'failed_login' })).toBe(before.value(refusals, { kind: 'failed_login' }));

    const wrongKey = basicAuth(world.users.member.email, 'not-the-key-0123456789abcdefghij');
    const statuses = [];
    for (let attempt = 0; attempt < 4; attempt++) statuses.push((await me(wrongKey)).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
    const lockedOut = await scrape(metricsOf(main));
    expect(lockedOut.value(refusals, { kind: 'failed_login' }) - limited.value(refusals, { kind: 'failed_login' })).toBe(1);
    expect(
      lockedOut.value(HTTP, { door: 'rest', route: '/api/v1/users/me', status: '429' }) -
        before.value(HTTP, { door: 'rest', route: '/api/v1/users/me', status: '429' }),
    ).toBe(2);
  });
});
