// Traces (docs/guide/operations.md, "Traces"): with an OTLP endpoint set, each request is one trace
// exported to a real OTLP/HTTP receiver in this process: the server span, GraphQL's phases, a span
// per SQL statement; a trusted caller's traceparent continues its trace, anyone else's does not; no
// attribute holds a credential, an address or a variable; the request's log lines name the span.
// Without an endpoint, no tracing module is loaded at all (a child process's resolved modules).
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { createMailTransport } from '../../src/domain/email/transport.js';
import { OutboxWorker } from '../../src/domain/email/worker.js';
import { createInvitation, uniqueEmail } from '../support/invitations.js';
import { capturedLogger } from '../support/log-capture.js';
import { callApi } from '../support/rest.js';
import { listeningUrl, startServerProcess, stopServerProcess, testDatabaseEnvironment } from '../support/process.js';
import { testDatabaseUrl } from '../support/server.js';
import { givePassword, PASSWORD } from '../support/sessions.js';
import { createWorld, type World } from '../support/world.js';

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

const SERVER_KIND = 2;

/** An OTLP/HTTP (JSON) receiver: what each POST /v1/traces carried, as sent and as spans. */
function otlpReceiver() {
  const bodies: string[] = [];
  const spans: ExportedSpan[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      if (request.method === 'POST' && request.url === '/v1/traces') {
        bodies.push(body);
        spans.push(...spansOf(JSON.parse(body)));
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return { server, bodies, spans };
}

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
interface OtlpSpan extends Omit<ExportedSpan, 'attributes'> {
  attributes?: { key: string; value: OtlpValue }[];
}

function spansOf(body: { resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[] }): ExportedSpan[] {
  return (body.resourceSpans ?? []).flatMap((resource) =>
    (resource.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        ...span,
        attributes: Object.fromEntries((span.attributes ?? []).map(({ key, value }) => [key, Object.values(value)[0]])),
      })),
    ),
  );
}

const receiver = otlpReceiver();
const { logger, lines } = capturedLogger('debug');
/** The peer address trusted as a proxy; requests from 127.0.0.1 come from an untrusted peer. */
const TRUSTED_PEER = '127.0.0.2';
let server: RunningServer;
let dataDir: string;
let endpoint: string;
let w: World;

beforeAll(async () => {
  await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(receiver.server.address() as AddressInfo).port}`;
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint;
  process.env.OTEL_BSP_SCHEDULE_DELAY = '20';
  process.env.OTEL_SERVICE_NAME = 'traces-test';
  dataDir = await mkdtemp(join(tmpdir(), 'teamchat-traces-'));
  const config = { ...loadConfig({}), host: '127.0.0.1', port: 0, dataDir, tracing: true, trustedProxies: [TRUSTED_PEER] };
  server = await startServer(config, { databaseUrl: await testDatabaseUrl() }, { outbox: false, logger });
  server.app.config.serverUrl = server.url;
  w = await createWorld(server.app.prisma);
});

afterAll(async () => {
  await server?.close();
  await new Promise((resolve) => receiver.server.close(resolve));
  await rm(dataDir, { recursive: true, force: true });
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
});

interface Answer {
  status: number;
  body: string;
  requestId: string;
}

interface SendOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  localAddress?: string;
}

/** An HTTP request from `localAddress` (the peer the server sees). */
function send(path: string, options: SendOptions = {}): Promise<Answer> {
  const url = new URL(path, server.url);
  const { method = 'GET', headers, localAddress = '127.0.0.1' } = options;
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(url, { method, headers, localAddress }, (response) => {
      let body = '';
      response.on('data', (chunk) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, body, requestId: String(response.headers['x-request-id']) }));
    });
    outgoing.on('error', reject);
    outgoing.end(options.body);
  });
}

/** The request's `request` log line: it names the trace and the server span. */
const requestLine = (requestId: string) => lines.find((line) => line.msg === 'request' && line.requestId === requestId)!;

const nextTurn = () => new Promise((resolve) => setTimeout(resolve, 10));

/** The spans of a trace, once its server span has arrived (its children end before it). */
async function traceOf(traceId: string): Promise<ExportedSpan[]> {
  while (!receiver.spans.some((span) => span.traceId === traceId && span.kind === SERVER_KIND)) await nextTurn();
  return receiver.spans.filter((span) => span.traceId === traceId);
}

/** The spans of the trace of a request, found through its log line. */
async function traceOfRequest(answer: Answer) {
  const line = requestLine(answer.requestId);
  expect(line, 'the request line').toBeDefined();
  const spans = await traceOf(String(line.traceId));
  const root = spans.find((span) => span.kind === SERVER_KIND)!;
  expect(root.spanId).toBe(line.spanId);
  const children = (parent: ExportedSpan) => spans.filter((span) => span.parentSpanId === parent.spanId);
  const descendants = (parent: ExportedSpan): ExportedSpan[] => children(parent).flatMap((child) => [child, ...descendants(child)]);
  return { spans, root, children, descendants };
}

const isStatement = (span: ExportedSpan) => span.attributes['db.system.name'] === 'postgresql';

const PREVIEW = `query PreviewForTrace($input: SendInvitationsInput!) {
  previewInvitations(input: $input) { __typename }
}`;

test("a GraphQL request: the server span, then parse, validate and execute, the resolvers' statements under execute", async () => {
  const invitee = `invitee-${randomBytes(4).toString('hex')}@example.org`;
  const answer = await send('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: w.users.admin.auth },
    body: JSON.stringify({ query: PREVIEW, variables: { input: { inviteeEmails: [invitee], streamIds: [] } } }),
  });
  expect(answer.status).toBe(200);
  expect(answer.body).toContain('__typename');
  const { root, children, descendants } = await traceOfRequest(answer);
  expect(root.parentSpanId || undefined).toBeUndefined();
  expect(root.name).toBe('POST /graphql');
  expect(root.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/graphql', 'http.response.status_code': 200 });
  const phases = children(root).filter((span) => span.name.startsWith('graphql.'));
  expect(phases.map((span) => span.name)).toEqual(['graphql.parse', 'graphql.validate', 'graphql.execute']);
  const execute = phases[2]!;
  expect(execute.attributes).toMatchObject({ 'graphql.operation.name': 'PreviewForTrace', 'graphql.operation.type': 'query' });
  const statements = descendants(execute).filter(isStatement);
  expect(statements.length).toBeGreaterThan(0);
  for (const statement of statements) expect(statement.attributes['db.query.text']).toEqual(expect.stringMatching(/^\s*\S/));
  // Authentication runs before parsing: its statements are the server span's own children.
  expect(children(root).filter(isStatement).length).toBeGreaterThan(0);
  expect(JSON.stringify(receiver.bodies)).not.toContain(invitee);
});

test('a REST request: the server span by its route, the statements under it', async () => {
  const answer = await send('/api/v1/users/me', { headers: { authorization: w.users.member.auth } });
  expect(answer.status).toBe(200);
  const { root, descendants } = await traceOfRequest(answer);
  expect(root.name).toBe('GET /api/v1/users/me');
  expect(root.attributes).toMatchObject({ 'http.route': '/api/v1/users/me', 'http.response.status_code': 200 });
  const statements = descendants(root).filter(isStatement);
  expect(statements.length).toBeGreaterThan(0);
  expect(statements.every((span) => typeof span.attributes['db.query.text'] === 'string')).toBe(true);
});

test("a trusted proxy's traceparent continues its trace; an untrusted peer's starts a new one", async () => {
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  const traceparent = `00-${traceId}-${parentId}-01`;
  const auth = w.users.member.auth;
  const trusted = await send('/api/v1/users/me', { headers: { authorization: auth, traceparent }, localAddress: TRUSTED_PEER });
  const { root } = await traceOfRequest(trusted);
  expect([root.traceId, root.parentSpanId]).toEqual([traceId, parentId]);

  const untrusted = await send('/api/v1/users/me', { headers: { authorization: w.users.member.auth, traceparent } });
  const fresh = await traceOfRequest(untrusted);
  expect(fresh.root.traceId).not.toBe(traceId);
  expect(fresh.root.parentSpanId || undefined).toBeUndefined();

  // A trusted peer's malformed header is no parent: the request is served, in a trace of its own.
  const twice = `00-${traceId}-${parentId}-01, 00-${traceId}-${parentId}-01`;
  for (const malformed of ['00-not-a-trace-01', `00-${'a'.repeat(8000)}-${parentId}-01`, twice]) {
    const headers = { authorization: auth, traceparent: malformed, tracestate: 'x'.repeat(8000) };
    const answer = await send('/api/v1/users/me', { headers, localAddress: TRUSTED_PEER });
    expect(answer.status).toBe(200);
    const own = await traceOfRequest(answer);
    expect(own.root.parentSpanId || undefined).toBeUndefined();
  }
});

test('no attribute holds an API key, a password, an e-mail address or a variable; every line of a request names its span', async () => {
  await givePassword(server.app.prisma, w.users.member.id);
  const signIn = await send('/api/v1/fetch_api_key', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ username: w.users.member.email, password: PASSWORD, realm: w.org.stringId }).toString(),
  });
  expect(signIn.status).toBe(200);
  const byEmail = await send(`/api/v1/users/${w.users.owner.email}`, { headers: { authorization: w.users.admin.auth } });
  const traced = [signIn, byEmail];
  for (const answer of traced) await traceOfRequest(answer);

  const exported = receiver.bodies.join('\n');
  expect(exported).toContain('db.query.text');
  const secrets = [PASSWORD, ...Object.values(w.users).flatMap((user) => [user.apiKey, user.email, user.auth.slice('Basic '.length)])];
  for (const secret of secrets) expect(exported).not.toContain(secret);

  for (const answer of traced) {
    const { traceId, spanId } = requestLine(answer.requestId);
    const ofRequest = lines.filter((line) => line.requestId === answer.requestId);
    expect(ofRequest.length).toBeGreaterThan(1);
    for (const line of ofRequest) expect([line.msg, line.traceId, line.spanId]).toEqual([line.msg, traceId, spanId]);
  }
});

test("a waiting long poll: the delivery that answers it is a span of its request's trace, its statements under it", async () => {
  const authorization = w.users.admin.auth;
  const registered = await callApi(server.url, 'POST', '/register', { authorization, form: { event_types: '["invites_changed"]' } });
  expect(registered.status).toBe(200);
  const query = new URLSearchParams({ queue_id: registered.body.queue_id, last_event_id: '-1' });
  const polling = send(`/api/v1/events?${query}`, { headers: { authorization: w.users.admin.auth } });
  while (server.app.eventPolls!.size === 0) await nextTurn();
  const form = { invitee_emails: uniqueEmail('poll'), stream_ids: '[]' };
  const invited = await callApi(server.url, 'POST', '/invites', { authorization, form });
  expect(invited.status).toBe(200);
  const answer = await polling;
  expect(JSON.parse(answer.body).events).toEqual([expect.objectContaining({ type: 'invites_changed' })]);
  const { root, descendants } = await traceOfRequest(answer);
  // The poll's first look at its queue (before the event) is a delivery span too, one that answers nothing.
  const delivery = descendants(root).find((span) => span.name === 'events.deliver' && span.attributes['events.count'] !== undefined)!;
  expect(Number(delivery.attributes['events.count'])).toBe(1);
  expect(descendants(delivery).filter(isStatement).length).toBeGreaterThan(0);
});

test('each e-mail attempt of the outbox is a trace of its own: its id and outcome, never the address', async () => {
  const email = uniqueEmail('traced-mail');
  await createInvitation(server, w, { email });
  const outboxEmail = await server.app.prisma.outboxEmail.findFirstOrThrow({ where: { toAddress: email } });
  await new OutboxWorker(server.app.prisma, createMailTransport(server.app.config)).deliverAllDue();
  const isSend = (span: ExportedSpan) => span.name === 'email.send' && Number(span.attributes['email.id']) === outboxEmail.id;
  const sentSpan = () => receiver.spans.find(isSend);
  while (!sentSpan()) await nextTurn();
  expect(sentSpan()!.parentSpanId || undefined).toBeUndefined();
  expect(sentSpan()!.attributes).toMatchObject({ 'email.attempt': 1, 'email.outcome': 'sent' });
  expect(receiver.bodies.join('\n')).not.toContain(email);
});

test('without an OTLP endpoint no tracing module is loaded; with one, they are', async () => {
  const loadedModules = async (env: Record<string, string>) => {
    const file = join(dataDir, `modules-${randomBytes(4).toString('hex')}.txt`);
    const hook = fileURLToPath(new URL('./record-modules.mjs', import.meta.url));
    const started = startServerProcess({
      ...env,
      NODE_OPTIONS: `--import ${hook}`,
      LOADED_MODULES_FILE: file,
      ...(await testDatabaseEnvironment()),
      DATA_DIR: join(dataDir, `process-${randomBytes(4).toString('hex')}`),
      EMAIL_WORKER: 'off',
    });
    const url = await listeningUrl(started);
    const graphql = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: w.users.member.auth },
      body: JSON.stringify({ query: '{ me { id } }' }),
    });
    expect(graphql.status).toBe(200);
    expect((await fetch(`${url}/api/v1/users/me`, { headers: { authorization: w.users.member.auth } })).status).toBe(200);
    await stopServerProcess(started);
    return (await readFile(file, 'utf8')).split('\n');
  };
  const isTracing = (url: string) => url.includes('/@opentelemetry/') || /\/tracing\/(setup|statements)\.js$/.test(url);

  const unset = await loadedModules({ OTEL_EXPORTER_OTLP_ENDPOINT: '' });
  expect(unset.some((url) => url.endsWith('/dist/server.js'))).toBe(true);
  expect(unset.filter(isTracing)).toEqual([]);

  const set = await loadedModules({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint });
  expect(set.filter(isTracing).length).toBeGreaterThan(0);
}, 180_000);
