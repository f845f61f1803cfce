// Starts the application on a port: database (migrated), services, e-mail worker, HTTP server.
import { openStorage } from './storage/open-storage.js';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { AppContext } from './app-context.js';
import type { Config } from './config.js';
import { databaseOptionsFor, openDatabase, type Database, type DatabaseOptions } from './db/database.js';
import { RateLimiter } from './domain/auth/rate-limit.js';
import { createMailTransport } from './domain/email/transport.js';
import { OutboxWorker, type OutboxOptions } from './domain/email/worker.js';
import { createApp } from './http/app.js';

export interface RunningServer {
  url: string;
  app: AppContext;
  database: Database;
  /** Null when started with `outbox: false`. */
  outbox: OutboxWorker | null;
  /** Stops accepting connections, lets requests in flight finish, drains the e-mail worker, then closes the database. */
  close(): Promise<void>;
}

export interface ServerOptions {
  /** Worker tuning, or false for no worker in this process (mail stays queued for another one). */
  outbox?: Partial<OutboxOptions> | false;
}

export async function startServer(
  config: Config,
  databaseOptions: DatabaseOptions = databaseOptionsFor(config),
  options: ServerOptions = {},
): Promise<RunningServer> {
  const database = await openDatabase(databaseOptions);
  const outbox = options.outbox === false ? null : new OutboxWorker(database.prisma, createMailTransport(config), options.outbox);
  const app: AppContext = {
    prisma: database.prisma,
    config,
    rateLimiter: new RateLimiter(config.rateLimits),
    notifyOutbox: () => outbox?.wake(),
    storage: openStorage(config),
  };
  const http = createApp(app);
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: http.fetch, hostname: config.host, port: config.port }, () => resolve(s));
  });
  outbox?.start();
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${config.host}:${port}`,
    app,
    database,
    outbox,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.();
      });
      await outbox?.stop();
      await database.close();
    },
  };
}
