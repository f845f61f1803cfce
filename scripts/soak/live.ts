// The soak's live clients: GraphQL subscriptions over SSE (graphql-sse's client) and WebSocket
// (graphql-ws's), which resume with `after` (the last cursor received) on whichever server runs when
// their stream is cut; and REST long-poll queues, which poll again (acknowledging what they received)
// on either server. Each records the positions of the events it received, in order, for the checks.
import { createClient as createSseClient } from 'graphql-sse';
import { createClient as createWsClient } from 'graphql-ws';
import WebSocket from 'ws';
import type { ServerSlot } from './fleet.js';
import type { History } from './history.js';
import type { Random } from './random.js';
import type { SoakUser } from './workload.js';

export type SubscriptionField = 'customEmojiChanged' | 'attachmentsChanged' | 'invitationsChanged';

/** The event type each field follows (src/graphql/schema/live-updates.ts). */
export const FIELD_TYPES: Record<SubscriptionField, string> = {
  customEmojiChanged: 'realm_emoji',
  attachmentsChanged: 'attachment',
  invitationsChanged: 'invites_changed',
};

export interface LiveClient {
  name: string;
  organizationId: number;
  user: SoakUser;
  types: string[];
  /** Events after this position are the client's (a subscription's first `after`; a queue's registration). */
  startAfter(): Promise<number | undefined>;
  /** Positions received, in order of receipt (duplicates kept: the checks look for them). */
  received: number[];
  /** For each receipt, the number of the connection (stream or poll) it came on: which one repeated an event. */
  receivedOn: number[];
  reconnections: number;
  stop(): void;
}

const CURSOR_PREFIX = 'event:';
/** A cursor names a position in the log (src/domain/events/streams.ts); the soak reads and writes them to check positions. */
export const cursorOf = (position: number) => Buffer.from(`${CURSOR_PREFIX}${position}`).toString('base64url');
const positionOf = (cursor: string) => Number(Buffer.from(cursor, 'base64url').toString().slice(CURSOR_PREFIX.length));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Codes that end a stream as the protocol says a client must resume from (or wait for another server). */
const RESUMABLE = new Set(['TOO_FAR_BEHIND', 'SERVICE_UNAVAILABLE', 'SHUTTING_DOWN']);

interface Payload {
  data?: Record<string, { cursor: string } | null> | null;
  errors?: readonly { message: string; extensions?: Record<string, unknown> }[];
}

/** One subscription that resumes with `after` until stopped; starts after position `from`. */
export function subscribe(
  transport: 'sse' | 'ws',
  field: SubscriptionField,
  user: SoakUser & { organizationId: number },
  from: number,
  servers: ServerSlot[],
  history: History,
  random: Random,
  name: string,
): LiveClient {
  const query = `subscription Soak($after: String) { ${field}(after: $after) { cursor } }`;
  let stopped = false;
  let dispose: () => void = () => {};
  let last = from;
  const client: LiveClient = {
    name,
    organizationId: user.organizationId,
    user,
    types: [FIELD_TYPES[field]],
    startAfter: async () => from,
    received: [],
    receivedOn: [],
    reconnections: 0,
    stop: () => ((stopped = true), dispose()),
  };
  /** One stream, until it ends (resolves) or fails (rejects). */
  const once = (server: ServerSlot) =>
    new Promise<void>((resolve, reject) => {
      const sink = {
        next: (payload: Payload) => {
          const errors = payload.errors ?? [];
          if (errors.length > 0) {
            const codes = errors.map((e) => String(e.extensions?.code ?? ''));
            if (!codes.every((code) => RESUMABLE.has(code)))
              history.violation(`${name}: the stream ended with ${JSON.stringify(errors).slice(0, 300)}`);
            return;
          }
          const cursor = payload.data?.[field]?.cursor;
          if (!cursor) return history.violation(`${name}: a payload without a cursor: ${JSON.stringify(payload).slice(0, 200)}`);
          last = positionOf(cursor);
          client.received.push(last);
          client.receivedOn.push(client.reconnections);
        },
        error: (error: unknown) => reject(error),
        complete: () => resolve(),
      };
      const variables = { after: cursorOf(last) };
      if (transport === 'sse') {
        const sse = createSseClient({
          url: `${server.url}/graphql`,
          headers: { authorization: user.authorization, 'x-graphql-yoga-csrf': '1' },
          retryAttempts: 0,
        });
        const unsubscribe = sse.subscribe({ query, variables }, sink);
        dispose = () => (unsubscribe(), sse.dispose());
      } else {
        const ws = createWsClient({
          url: `${server.url.replace(/^http/, 'ws')}/graphql`,
          webSocketImpl: WebSocket,
          connectionParams: { Authorization: user.authorization },
          retryAttempts: 0,
          lazy: true,
          keepAlive: 5_000,
        });
        const unsubscribe = ws.subscribe({ query, variables }, sink);
        dispose = () => (unsubscribe(), void ws.dispose());
      }
    });
  void (async () => {
    let server = random.pick(servers);
    while (!stopped) {
      await once(server).catch(() => {});
      dispose();
      if (stopped) break;
      client.reconnections++;
      // Cut: resume from the last cursor, on the other server when this one is down.
      const others = servers.filter((s) => s !== server && s.up());
      server =
        !server.up() && others.length
          ? random.pick(others)
          : random.pick(servers.filter((s) => s.up()).length ? servers.filter((s) => s.up()) : servers);
      await sleep(random.int(100, 1_000));
    }
  })();
  return client;
}

/** A queue (registered on any server) and its long poll, repeated until stopped, acknowledging what it received. */
export function longPoll(
  user: SoakUser & { organizationId: number },
  types: string[],
  servers: ServerSlot[],
  history: History,
  random: Random,
  name: string,
  startAfter: (queueId: string) => Promise<number | undefined>,
): LiveClient {
  let stopped = false;
  const abort = new AbortController();
  let queueId: string | undefined;
  const client: LiveClient = {
    name,
    organizationId: user.organizationId,
    user,
    types,
    startAfter: async () => (queueId ? startAfter(queueId) : undefined),
    received: [],
    receivedOn: [],
    reconnections: 0,
    stop: () => ((stopped = true), abort.abort()),
  };
  const up = () => random.pick(servers.filter((s) => s.up()).length ? servers.filter((s) => s.up()) : servers);
  const headers = { authorization: user.authorization };
  void (async () => {
    while (!stopped && !queueId) {
      try {
        const response = await fetch(`${up().url}/api/v1/register`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ event_types: JSON.stringify(types) }).toString(),
          signal: AbortSignal.any([abort.signal, AbortSignal.timeout(30_000)]),
        });
        const body = (await response.json()) as { queue_id?: string; msg?: string };
        if (response.status >= 500 && response.status !== 503)
          history.violation(`${name}: register answered ${response.status} ${body.msg}`);
        else if (response.status !== 200 && response.status !== 503)
          history.violation(`${name}: register refused: ${response.status} ${body.msg}`);
        queueId = body.queue_id;
      } catch {
        // a fault: register again (a queue made by a lost answer is never polled; it expires)
      }
      if (!queueId) await sleep(500);
    }
    let lastEventId = -1;
    let server = up();
    while (!stopped) {
      try {
        const response = await fetch(`${server.url}/api/v1/events?queue_id=${queueId}&last_event_id=${lastEventId}`, {
          headers,
          signal: AbortSignal.any([abort.signal, AbortSignal.timeout(90_000)]),
        });
        const body = (await response.json()) as { events?: { id: number; type: string }[]; msg?: string; code?: string };
        if (response.status === 200) {
          for (const event of body.events ?? []) {
            if (event.id <= lastEventId)
              history.violation(`${name}: event ${event.id} answered again after ${lastEventId} was acknowledged`);
            if (event.type !== 'heartbeat') {
              client.received.push(event.id);
              client.receivedOn.push(client.reconnections);
            }
            lastEventId = Math.max(lastEventId, event.id);
          }
          continue;
        }
        if (response.status !== 503) history.violation(`${name}: GET /events answered ${response.status} ${body.code ?? ''} ${body.msg}`);
      } catch {
        if (stopped) break;
      }
      client.reconnections++;
      server = up();
      await sleep(random.int(100, 1_000));
    }
  })();
  return client;
}
