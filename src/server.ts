// Starts the application on a port: listening socket first (so a taken port fails before anything
// is written), then the data directory, the database (migrated), services, e-mail worker.
import { constants } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Server } from 'node:http';
import { openStorage } from './storage/open-storage.js';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import type { AppContext } from './app-context.js';
import type { Config } from './config.js';
import { databaseOptionsFor, openDatabase, type Database, type DatabaseOptions } from './db/database.js';
import { AuthCache } from './domain/auth/auth-cache.js';
import { listenForNotifications } from './db/notifications.js';
import { RateLimiter } from './domain/auth/rate-limit.js';
import { createMailTransport } from './domain/email/transport.js';
import { OutboxWorker, type OutboxOptions } from './domain/email/worker.js';
import { createApp } from './http/app.js';
import type { Logger } from './logging.js';
import { jsonResponse } from './rest/envelope.js';
import { StartupError } from './startup-error.js';

export interface RunningServer {
  url: string;
  app: AppContext;
  database: Database;
  /** Null when started with `outbox: false`. */
  outbox: OutboxWorker | null;
  /** Stops accepting connections and lets requests in flight finish, meanwhile stops the e-mail worker after the e-mail in flight; then closes the database. */
  close(): Promise<void>;
}

export interface ServerOptions {
  /** Worker tuning, or false for no worker in this process (mail stays queued for another one). */
  outbox?: Partial<OutboxOptions> | false;
  /** Start-up progress (waiting for PostgreSQL, creating the embedded database). */
  log?: (line: string) => void;
  /** Where the running application logs (default: src/logging.ts's logger). */
  logger?: Logger;
}

const STARTING = () => jsonResponse({ result: 'error', msg: 'The server is starting; try again in a moment.', code: 'BAD_REQUEST' }, 503, { 'Retry-After': '1' });

export async function startServer(
  config: Config,
  databaseOptions?: DatabaseOptions,
  options: ServerOptions = {},
): Promise<RunningServer> {
  let handle: Handler = STARTING;
  // The second argument carries the Node request (the client's address for the failed-login limit).
  const server = await listen(config, (request, env) => handle(request, env));
  let database: Database | undefined;
  try {
    await prepareDataDir(config.dataDir);
    database = await openDatabase(databaseOptions ?? databaseOptionsFor(config, 'server', options.log));
  } catch (error) {
    await closeServer(server);
    throw error;
  }
  const outbox = options.outbox === false ? null : new OutboxWorker(database.prisma, createMailTransport(config), options.outbox);
  const authCache = new AuthCache();
  const rateLimiter = new RateLimiter(database.sql, { perUser: config.rateLimits, failedLogins: config.failedLoginLimit });
  const stopListening = await listenForNotifications(database.url, [authCache, rateLimiter.lockouts]);
  const app: AppContext = {
    prisma: database.prisma,
    sql: database.sql,
    config,
    rateLimiter,
    authCache,
    notifyOutbox: () => outbox?.wake(),
    storage: await openStorage(config),
    log: options.logger,
  };
  const http = createApp(app);
  handle = (request, env) => http.fetch(request, env);
  outbox?.start();
  const { port } = server.address() as AddressInfo;
  const opened = database;
  return {
    url: `http://${config.host}:${port}`,
    app,
    database: opened,
    outbox,
    async close() {
      // The worker stops at once (its queued mail waits for the next process), not after the requests.
      await Promise.all([closeServer(server), outbox?.stop()]);
      await stopListening();
      await opened.close();
    },
  };
}

type Handler = (request: Request, env?: unknown) => Response | Promise<Response>;

async function listen(config: Config, fetch: Handler): Promise<Server> {
  const server = createAdaptorServer({ fetch }) as Server;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      const where = `${config.host}:${config.port}`;
      if (error.code === 'EADDRINUSE') reject(new StartupError(`Port ${config.port} is already in use on ${config.host}: stop what runs there, or set PORT.`));
      else if (error.code === 'EACCES') reject(new StartupError(`Not allowed to listen on ${where}: choose a PORT above 1023, or set HOST.`));
      else if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND') reject(new StartupError(`HOST ${config.host} is not an address of this machine.`));
      else reject(error);
    });
    server.listen(config.port, config.host, () => resolve());
  });
  return server;
}

/** mkdir -p, one level at a time: Node's recursive mkdir never returns for some paths (e.g. under /proc). */
async function makeFolder(path: string): Promise<void> {
  try {
    await mkdir(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return;
    if (code !== 'ENOENT' || dirname(path) === path) throw error;
    await makeFolder(dirname(path));
    await mkdir(path).catch((again: NodeJS.ErrnoException) => {
      if (again.code !== 'EEXIST') throw again;
    });
  }
}

async function prepareDataDir(dataDir: string): Promise<void> {
  try {
    await makeFolder(dataDir);
    if (!(await stat(dataDir)).isDirectory()) throw Object.assign(new Error('not a folder'), { code: 'ENOTDIR' });
    await access(dataDir, constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new StartupError(`DATA_DIR ${dataDir} is not a writable folder (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}): set DATA_DIR elsewhere.`);
  }
}

function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}
