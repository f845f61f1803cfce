// The live-updates scenario's clients (scripts/bench/live-updates.ts), in a process of their own so
// that neither their memory nor their work is the measured server's or the bench's: GraphQL
// subscriptions through the clients frontends use (graphql-sse's, graphql-ws's over `ws`, one
// connection each) and REST long polls (register, then GET /api/v1/events again and again).
// Driven over IPC (child_process.fork): each command is answered with the same `id`.
import { performance } from 'node:perf_hooks';
import { createClient as createSseClient } from 'graphql-sse';
import { createClient as createWsClient } from 'graphql-ws';
import WebSocket from 'ws';

export type ClientKind = 'sse' | 'ws' | 'poll';

export type Command =
  | {
      op: 'open';
      group: string;
      kind: ClientKind;
      url: string;
      authorizations: string[];
      count: number;
      query?: string;
      eventTypes?: string[];
    }
  | { op: 'close'; group: string }
  /** Resolves once `count` subscribers have received the deactivation of `name` (or after `timeoutMs`). */
  | { op: 'receipts'; name: string; count: number; timeoutMs: number };

export interface Receipts {
  name: string;
  count: number;
  /** performance.timeOrigin + performance.now() of the first and the last receipt (a clock both processes share). */
  first: number;
  last: number;
}

/** The same wall clock in every process of the machine, with sub-millisecond resolution. */
export const now = () => performance.timeOrigin + performance.now();

const groups = new Map<string, (() => void)[]>();
const receipts = new Map<string, Receipts>();
const waiters: { name: string; count: number; resolve: () => void }[] = [];
let failures = 0;
const failureSamples: string[] = [];

function failed(error: unknown) {
  failures++;
  if (failureSamples.length < 5) failureSamples.push(String((error as Error)?.message ?? JSON.stringify(error)).slice(0, 300));
}

interface EmojiPayload {
  data?: { customEmojiChanged?: { change: string; emoji: { name: string } } } | null;
  errors?: readonly unknown[];
}

function received(payload: EmojiPayload) {
  if (payload.errors) return failed(payload.errors);
  const change = payload.data?.customEmojiChanged;
  if (!change) return;
  const at = now();
  const entry = receipts.get(change.emoji.name) ?? { name: change.emoji.name, count: 0, first: at, last: at };
  entry.count++;
  entry.last = at;
  receipts.set(change.emoji.name, entry);
  for (const waiter of waiters.filter((w) => w.name === entry.name && entry.count >= w.count)) {
    waiters.splice(waiters.indexOf(waiter), 1);
    waiter.resolve();
  }
}

const sink = { next: received, error: failed, complete: () => {} };

function openSse(url: string, authorization: string, query: string): () => void {
  const client = createSseClient({ url: `${url}/graphql`, headers: { authorization, 'x-graphql-yoga-csrf': '1' }, retryAttempts: 0 });
  const unsubscribe = client.subscribe({ query }, sink);
  return () => {
    unsubscribe();
    client.dispose();
  };
}

function openWs(url: string, authorization: string, query: string): () => void {
  const client = createWsClient({
    url: `${url.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { Authorization: authorization },
    retryAttempts: 0,
    lazy: true,
  });
  const unsubscribe = client.subscribe({ query }, sink);
  return () => {
    unsubscribe();
    void client.dispose();
  };
}

/** A queue and its long poll, repeated (with the last event acknowledged) until closed. */
function openPoll(url: string, authorization: string, eventTypes: string[]): () => void {
  const abort = new AbortController();
  const headers = { authorization };
  void (async () => {
    const registered = await fetch(`${url}/api/v1/register`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ event_types: JSON.stringify(eventTypes) }).toString(),
      signal: abort.signal,
    });
    const { queue_id: queueId, msg } = (await registered.json()) as { queue_id?: string; msg?: string };
    if (!queueId) throw new Error(`register: ${registered.status} ${msg}`);
    let lastEventId = -1;
    while (!abort.signal.aborted) {
      const response = await fetch(`${url}/api/v1/events?queue_id=${queueId}&last_event_id=${lastEventId}`, {
        headers,
        signal: abort.signal,
      });
      const body = (await response.json()) as { events?: { id: number }[]; msg?: string };
      if (!response.ok) throw new Error(`events: ${response.status} ${body.msg}`);
      for (const event of body.events ?? []) lastEventId = Math.max(lastEventId, event.id);
    }
  })().catch((error) => abort.signal.aborted || failed(error));
  return () => abort.abort();
}

function open(command: Extract<Command, { op: 'open' }>) {
  const closers = groups.get(command.group) ?? [];
  groups.set(command.group, closers);
  for (let i = 0; i < command.count; i++) {
    const authorization = command.authorizations[i % command.authorizations.length]!;
    if (command.kind === 'poll') closers.push(openPoll(command.url, authorization, command.eventTypes!));
    else closers.push((command.kind === 'sse' ? openSse : openWs)(command.url, authorization, command.query!));
  }
}

function awaitReceipts({ name, count, timeoutMs }: Extract<Command, { op: 'receipts' }>): Promise<Receipts | undefined> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      resolve(receipts.get(name));
    };
    const timer = setTimeout(done, timeoutMs);
    if ((receipts.get(name)?.count ?? 0) >= count) return done();
    waiters.push({ name, count, resolve: done });
  });
}

async function handle(command: Command): Promise<unknown> {
  switch (command.op) {
    case 'open':
      return open(command);
    case 'close':
      for (const close of groups.get(command.group) ?? []) close();
      groups.delete(command.group);
      return now();
    case 'receipts':
      return awaitReceipts(command);
  }
}

if (process.send) {
  process.on('message', (message: { id: number; command: Command }) => {
    void handle(message.command).then(
      (result) => process.send!({ id: message.id, result, failures, failureSamples }),
      (error) => process.send!({ id: message.id, error: String(error), failures, failureSamples }),
    );
  });
  process.on('disconnect', () => process.exit(0));
}
