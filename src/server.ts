// Starts the application on a port: listening socket first (so a taken port fails before anything
// is written), then the data directory, the database (migrated), services, e-mail worker, file sweep.
import type { Server } from 'node:http';
import { openStorage } from './storage/open-storage.js';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createAdaptorServer } from '@hono/node-server';
import { createServerContext, notificationSubscribers, type ServerContext } from './server-context.js';
import type { Config } from './config.js';
import { databaseOptionsFor, openDatabase, type Database, type DatabaseOptions } from './db/database.js';
import { listenForNotifications } from './db/notifications.js';
import { EndedSessions } from './domain/auth/ended-sessions.js';
import { createMailTransport } from './domain/email/transport.js';
import { OutboxWorker, type OutboxOptions } from './domain/email/worker.js';
import { FileSweeper } from './domain/uploads/file-sweeper.js';
import { REQUEST_ARRIVAL_LIMIT_MS } from './domain/uploads/upload-file.js';
import { prepareDataDir } from './data-dir.js';
import { createApp } from './http/app.js';
import { DatabaseStatus } from './http/database-status.js';
import { clientAddressOf } from './http/client-address.js';
import { connectionOriginAllowed } from './http/cross-origin.js';
import { serveGraphQLOverWebSocket } from './graphql/websocket.js';
import { whileStarting } from './http/probes.js';
import { logger as processLogger, type Logger } from './logging.js';
import { metricsOnly } from './metrics/endpoint.js';
import { createServerMetrics, instrumentServer } from './metrics/instrument.js';
import { jsonResponse } from './rest/envelope.js';
import { StartupError } from './startup-error.js';

export interface RunningServer {
  url: string;
  /** http://HOST:port/metrics of METRICS_PORT's listener; undefined without METRICS_PORT. */
  metricsUrl?: string;
  app: ServerContext;
  database: Database;
  /** Whether the database answers, as this process sees it (src/http/database-status.ts). */
  databaseStatus: DatabaseStatus;
  /** Null when started with `outbox: false` or EMAIL_WORKER=off. */
  outbox: OutboxWorker | null;
  /** The periodic file sweep (uploads.md Decision 7); null with FILE_SWEEP_MINUTES=0 or off. */
  fileSweeper: FileSweeper | null;
  /**
   * Stops accepting connections (draining: /readyz answers 503) and lets requests in flight finish,
   * meanwhile stops the e-mail worker after the e-mail in flight and the file sweep; then closes the database.
   */
  close(): Promise<void>;
}

export interface ServerOptions {
  /** Worker tuning, or false for no worker in this process (mail stays queued for another one; so does EMAIL_WORKER=off). */
  outbox?: Partial<OutboxOptions> | false;
  /** Start-up progress (waiting for PostgreSQL, creating the embedded database). */
  log?: (line: string) => void;
  /** Where the running application logs (default: src/logging.ts's logger). */
  logger?: Logger;
}

const STARTING = () =>
  jsonResponse({ result: 'error', msg: 'The server is starting; try again in a moment.', code: 'BAD_REQUEST' }, 503, {
    'Retry-After': '1',
  });

export async function startServer(config: Config, databaseOptions?: DatabaseOptions, options: ServerOptions = {}): Promise<RunningServer> {
  let handle: Handler = (request) => whileStarting(request, STARTING);
  let draining = false;
  // The second argument carries the Node request (the client's address for the failed-login limit).
  const server = await listen(config.host, config.port, 'PORT', (request, env) => handle(request, env));
  const metrics = createServerMetrics(config, options.logger ?? processLogger);
  let metricsServer: Server | undefined;
  let database: Database | undefined;
  try {
    if (metrics && config.metrics.port !== undefined)
      metricsServer = await listen(config.host, config.metrics.port, 'METRICS_PORT', metricsOnly(metrics, config.metrics.token));
    await prepareDataDir(config.dataDir);
    database = await openDatabase(databaseOptions ?? databaseOptionsFor(config, 'server', options.log));
  } catch (error) {
    await closeServer(server);
    if (metricsServer) await closeServer(metricsServer);
    throw error;
  }
  const log = options.logger ?? processLogger;
  const tracing = config.tracing ? await startTracing() : undefined;
  tracing?.tracePool(database.pool);
  // One view of the database for the whole process: requests and background work report to it.
  const databaseStatus = new DatabaseStatus(database.sql, log);
  const unlessOutage = (message: string) => (error: unknown) =>
    void (databaseStatus.noteFailure(error) ?? log.warn({ err: error }, message));
  database.onIdleConnectionError((error) => databaseStatus.noteIdleConnectionLost(error));
  const outbox =
    options.outbox === false || !config.emailWorker
      ? null
      : new OutboxWorker(database.prisma, createMailTransport(config), {
          passFailed: unlessOutage('e-mail outbox: delivery pass failed'),
          ...options.outbox,
        });
  const app = createServerContext({
    config,
    prisma: database.prisma,
    sql: database.sql,
    storage: await openStorage(config),
    log: options.logger,
    metrics,
    notifyOutbox: () => outbox?.wake(),
    eventReadFailed: unlessOutage('reading the event log failed'),
    endedSessions: await EndedSessions.open(join(config.dataDir, 'ended-sessions')),
  });
  const finishSignOuts = () => app.endedSessions?.flush(app.sql).catch(unlessOutage('ending signed-out sessions failed'));
  databaseStatus.onAvailableAgain(finishSignOuts);
  void finishSignOuts();
  const sweepEvery = config.fileSweepMinutes * 60_000;
  const sweepFailed = unlessOutage('file sweep failed');
  const fileSweeper = sweepEvery > 0 ? new FileSweeper(app, { intervalMs: sweepEvery, directUrl: database.directUrl, sweepFailed }) : null;
  const { eventPolls, eventStreams } = app;
  const stopListening = await listenForNotifications(database.directUrl, notificationSubscribers(app));
  eventPolls.start();
  if (metrics) {
    const events = { streams: eventStreams, polls: eventPolls };
    instrumentServer(metrics, { pool: database.pool, sql: database.sql, rateLimiter: app.rateLimiter, outbox, fileSweeper, events });
  }
  const { http, graphql, secureRequest } = createApp(app, { draining: () => draining }, databaseStatus);
  handle = (request, env) => http.fetch(request, env);
  const originAllowed = connectionOriginAllowed(config.allowedOrigins, () => config.serverUrl);
  const addressOf = clientAddressOf(config.trustedProxies);
  const closeWebSockets = serveGraphQLOverWebSocket(server, app, graphql, {
    originAllowed: (origin, request) => originAllowed(origin, `http://${request.headers.host ?? config.host}${request.url ?? '/'}`),
    clientAddress: addressOf,
    secure: secureRequest,
    draining: () => draining,
  });
  outbox?.start();
  fileSweeper?.start();
  const { port } = server.address() as AddressInfo;
  const opened = database;
  return {
    url: `http://${config.host}:${port}`,
    metricsUrl: metricsServer && `http://${config.host}:${(metricsServer.address() as AddressInfo).port}/metrics`,
    app,
    database: opened,
    databaseStatus,
    outbox,
    fileSweeper,
    async close() {
      // /readyz answers 503 on the connections still open while requests in flight finish.
      draining = true;
      // Waiting long polls are answered and subscriptions end at once: a drain never waits for one.
      eventStreams.close();
      await Promise.all([eventPolls.close(), closeWebSockets()]);
      // The worker stops at once (its queued mail waits for the next process), not after the requests;
      // so does the file sweep (a sweep in progress stops after its current batch).
      await Promise.all([closeServer(server), outbox?.stop(), fileSweeper?.stop()]);
      if (metricsServer) await closeServer(metricsServer);
      await stopListening();
      databaseStatus.stop();
      await opened.close();
      await tracing?.shutdown();
    },
  };
}

/** Loaded only when configured: without an OTLP endpoint no OpenTelemetry module is loaded at all. */
const startTracing = async () => (await import('./tracing/setup.js')).startTracing();

type Handler = (request: Request, env?: unknown) => Response | Promise<Response>;

/** `variable` names the setting that chose the port (PORT or METRICS_PORT) in the start-up error. */
async function listen(host: string, port: number, variable: string, fetch: Handler): Promise<Server> {
  // A request arrives whole within REQUEST_ARRIVAL_LIMIT_MS or is cut (408): an upload's stored bytes
  // wait for their row at most that long plus the commit, the file sweep's grace (upload-file.ts).
  const server = createAdaptorServer({ fetch, serverOptions: { requestTimeout: REQUEST_ARRIVAL_LIMIT_MS } }) as Server;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      const where = `${host}:${port}`;
      if (error.code === 'EADDRINUSE')
        reject(new StartupError(`Port ${port} is already in use on ${host}: stop what runs there, or set ${variable}.`));
      else if (error.code === 'EACCES')
        reject(new StartupError(`Not allowed to listen on ${where}: choose a ${variable} above 1023, or set HOST.`));
      else if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND')
        reject(new StartupError(`HOST ${host} is not an address of this machine.`));
      else reject(error);
    });
    server.listen(port, host, () => resolve());
  });
  return server;
}

function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}
