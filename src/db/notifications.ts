// One connection per process LISTENs for the changes other processes announce with NOTIFY (at
// commit). Whoever keeps state derived from the database in memory subscribes here, and must not
// trust that state while the connection is down: subscribers are told when listening starts (with
// the connection, to read the current state first) and when it stops. A process without a listener
// (the CLI) hears its own change's notification with changeHeardBy.
import pg from 'pg';

const RECONNECT_MS = 1_000;
/** How the listening connection shows in pg_stat_activity. */
export const LISTENER_NAME = 'teamchat notifications';

export interface NotificationSubscriber {
  readonly channel: string;
  notified(payload: string): void;
  /** `client` is the listening connection, already LISTENing, when `on` is true. */
  listening(on: boolean, client?: pg.Client): void | Promise<void>;
}

/** Keeps a connection LISTENing on every subscriber's channel, reconnecting after failures; returns its stop function. */
export async function listenForNotifications(
  connectionString: string,
  subscribers: NotificationSubscriber[],
): Promise<() => Promise<void>> {
  const byChannel = new Map(subscribers.map((subscriber) => [subscriber.channel, subscriber]));
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  const turnOff = () => Promise.all(subscribers.map((subscriber) => subscriber.listening(false)));
  const connect = async () => {
    const next = new pg.Client({ connectionString, application_name: LISTENER_NAME });
    next.on('notification', (message) => message.payload && byChannel.get(message.channel)?.notified(message.payload));
    next.on('error', () => lost(next));
    next.on('end', () => lost(next));
    client = next;
    await next.connect();
    for (const channel of byChannel.keys()) await next.query(`LISTEN ${channel}`);
    for (const subscriber of subscribers) if (!stopped && client === next) await subscriber.listening(true, next);
  };
  // A connection's failure may be heard twice (its 'error' or 'end', and its connect() rejecting): the
  // first one retries; a later one finds another client, or none, current and does nothing.
  const lost = (which: pg.Client | undefined) => {
    if (which === undefined || client !== which) return;
    void turnOff();
    client = undefined;
    which.end().catch(() => {});
    if (!stopped) retry = setTimeout(() => void connect().catch(() => lost(client)), RECONNECT_MS).unref();
  };
  try {
    await connect();
  } catch {
    // Not fatal: every subscriber falls back to the database until the connection comes back.
    if (client) lost(client);
  }
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await turnOff();
    const last = client;
    client = undefined;
    await last?.end().catch(() => {});
  };
}

/**
 * Runs `change` while a connection of its own LISTENs on `channel`, then waits until the notification
 * named by the change's `awaited` payload has arrived (at most `withinMs`), so that a process without
 * a listener answers only once its change has been announced to every listening process.
 */
export async function changeHeardBy<T>(
  connectionString: string,
  channel: string,
  change: () => Promise<{ value: T; awaited: string }>,
  withinMs = 2_000,
): Promise<T> {
  const client = new pg.Client({ connectionString });
  const heard = new Set<string>();
  let arrived = () => {};
  client.on('notification', (message) => {
    if (message.payload) heard.add(message.payload);
    arrived();
  });
  client.on('error', () => arrived());
  await client.connect();
  try {
    await client.query(`LISTEN ${channel}`);
    const { value, awaited } = await change();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, withinMs).unref();
      arrived = () => heard.has(awaited) && (clearTimeout(timer), resolve());
      arrived();
    });
    return value;
  } finally {
    await client.end().catch(() => {});
  }
}
