// GraphQL subscriptions through the clients frontends use: graphql-sse's (fetch-based Server-Sent
// Events, distinct connections) and graphql-ws's (WebSocket), behind one small interface.
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print, type ExecutionResult } from 'graphql';
import { createClient as createSseClient } from 'graphql-sse';
import { createClient as createWsClient } from 'graphql-ws';
import WebSocket from 'ws';

export type Transport = 'sse' | 'ws';
export const TRANSPORTS: Transport[] = ['sse', 'ws'];

export type Received<T> = ExecutionResult<T, { code?: string }> | 'ended' | 'silent';

export interface OpenSubscription<T> {
  /** The next payload, 'ended' when the stream completed, 'silent' when nothing came within `ms`. */
  next(ms?: number): Promise<Received<T>>;
  close(): Promise<void>;
  /** Set when the connection itself failed (a WebSocket closed by the server, an HTTP refusal). */
  failure(): unknown;
}

export interface SubscribeOptions {
  headers?: Record<string, string>;
  /** WebSocket: the connection_init payload (default: { Authorization }). */
  connectionParams?: Record<string, unknown>;
  /** The request's extensions (a persisted document's hash). */
  extensions?: Record<string, unknown>;
}

export function subscribe<T, V>(
  transport: Transport,
  serverUrl: string,
  authorization: string | undefined,
  /** A typed document, or the exact text to send. */
  document: TypedDocumentNode<T, V> | string,
  variables: V,
  options: SubscribeOptions = {},
): OpenSubscription<T> {
  const request = {
    query: typeof document === 'string' ? document : print(document),
    variables: variables as Record<string, unknown>,
    ...(options.extensions && { extensions: options.extensions }),
  };
  let failure: unknown;
  const onNonLazyError = (error: unknown) => void (failure = error);
  const client =
    transport === 'sse'
      ? createSseClient({
          url: `${serverUrl}/graphql`,
          headers: { 'x-graphql-yoga-csrf': '1', ...(authorization ? { authorization } : {}), ...options.headers },
          retryAttempts: 0,
        })
      : createWsClient({
          url: `${serverUrl.replace(/^http/, 'ws')}/graphql`,
          webSocketImpl: class extends WebSocket {
            constructor(url: string, protocols: string | string[]) {
              super(url, protocols, { headers: options.headers });
            }
          },
          connectionParams: options.connectionParams ?? (authorization ? { Authorization: authorization } : {}),
          retryAttempts: 0,
          lazy: true,
          onNonLazyError,
          on: { closed: (event) => void (failure ??= event) },
        });
  const iterator = client.iterate<T>(request)[Symbol.asyncIterator]();
  type Step = IteratorResult<ExecutionResult<T, { code?: string }>>;
  let pending: Promise<Step> | undefined;
  return {
    async next(ms = 5_000) {
      pending ??= iterator.next() as Promise<Step>;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'silent'>((resolve) => (timer = setTimeout(() => resolve('silent'), ms)));
      const outcome = await Promise.race([
        pending.then(
          (result) => ({ result }),
          (error: unknown) => ({ error }),
        ),
        timeout,
      ]);
      clearTimeout(timer);
      if (outcome === 'silent') return 'silent';
      pending = undefined;
      if ('error' in outcome) {
        // graphql-ws's "error" message (an operation refused before it ran) ends the iteration with its errors.
        if (Array.isArray(outcome.error)) return { errors: outcome.error };
        failure ??= outcome.error;
        return 'ended';
      }
      return outcome.result.done ? 'ended' : outcome.result.value;
    },
    async close() {
      await iterator.return?.();
      client.dispose();
    },
    failure: () => failure,
  };
}

/** Until `condition` holds (checked every 20 ms), or fails after `ms`. */
export async function eventually(condition: () => boolean | Promise<boolean>, ms = 2_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Until `subscription` follows the log. What committed before a subscription started is never
 * delivered to it, so only a marker that reaches it proves it: markers are committed one after another
 * (`commitMarker(0)`, `commitMarker(1)`, ...) until one arrives, then those committed after it are
 * drained. Its next payload is then the first event committed after this returns. `markerNumber`
 * says which marker a payload is, and fails the test for anything else.
 */
export async function untilFollowing<T>(
  subscription: OpenSubscription<T>,
  commitMarker: (n: number) => Promise<void>,
  markerNumber: (received: Received<T>) => number,
): Promise<void> {
  let committed = 0;
  await commitMarker(committed);
  // A pause before the next marker, never a verdict: a marker that arrives late is drained below.
  for (let pause = 200; ; pause = Math.min(2 * pause, 3_200)) {
    const received = await subscription.next(pause);
    if (received !== 'silent') {
      for (let n = markerNumber(received); n < committed; ) n = markerNumber(await subscription.next());
      return;
    }
    await commitMarker(++committed);
  }
}
