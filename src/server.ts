// Starts the application on a port: database (migrated), services, HTTP server.
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { AppContext } from './app-context.js';
import type { Config } from './config.js';
import { databaseOptionsFor, openDatabase, type Database, type DatabaseOptions } from './db/database.js';
import { RateLimiter } from './domain/auth/rate-limit.js';
import { createApp } from './http/app.js';

export interface RunningServer {
  url: string;
  app: AppContext;
  database: Database;
  /** Stops accepting connections, lets requests in flight finish, then closes the database. */
  close(): Promise<void>;
}


export async function startServer(config: Config, databaseOptions: DatabaseOptions = databaseOptionsFor(config)): Promise<RunningServer> {
  const database = await openDatabase(databaseOptions);
  const app: AppContext = {
    prisma: database.prisma,
    config,
    rateLimiter: new RateLimiter(config.rateLimits),
    notifyOutbox: () => {},
  };
  const http = createApp(app);
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: http.fetch, hostname: config.host, port: config.port }, () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${config.host}:${port}`,
    app,
    database,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.();
      });
      await database.close();
    },
  };
}
