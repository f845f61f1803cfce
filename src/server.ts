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
import { createApp, type HttpApp } from './http/app.js';
import { DatabaseStatus } from './http/database-status.js';
import { clientAddressOf } from './http/client-address.js';
import { connectionOriginAllowed } from './http/cross-origin.js';
import { serveGraphQLOverWebSocket } from './graphql/websocket.js';
import { whileStarting } from './http/probes.js';
import { logger as processLogger, type Logger } from './logging.js';
import { metricsOnly } from './metrics/endpoint.js';
import { createServerMetrics, instrumentServer } from './metrics/instrument.js';
import type { ServerMetrics } from './metrics/metrics.js';
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
  const front: Front = { handle: (request) => whileStarting(request, STARTING), draining: false };
  // The second argument carries the Node request (the client's address for the failed-login limit).
  const server = await listen(config.host, config.port, 'PORT', (request, env) => front.handle(request, env));
  const log = options.logger ?? processLogger;
  const metrics = createServerMetrics(config, log);
  const { metricsServer, database } = await openMetricsPortAndDatabase(config, metrics, server, databaseOptions, options.log);
  const tracing = await startTracingIfConfigured(config, database);
  const { databaseStatus, unlessOutage } = watchDatabase(database, log);
  const outbox = createOutbox(config, database, options.outbox, unlessOutage);
  const app = await createContext(config, database, { logger: options.logger, metrics, outbox, unlessOutage });
  finishSignOutsWhenAvailable(app, databaseStatus, unlessOutage);
  const fileSweeper = createFileSweeper(config, app, database, unlessOutage);
  const stopListening = await startNotificationListeners(app, database);
  if (metrics) instrument(metrics, app, database, { outbox, fileSweeper });
  const { http, graphql, secureRequest } = createApp(app, { draining: () => front.draining }, databaseStatus);
  front.handle = (request, env) => http.fetch(request, env);
  const closeWebSockets = serveWebSockets(config, server, app, { graphql, secureRequest, front });
  outbox?.start();
  fileSweeper?.start();
  const parts = {
    front,
    server,
    metricsServer,
    app,
    database,
    databaseStatus,
    outbox,
    fileSweeper,
    stopListening,
    closeWebSockets,
    tracing,
  };
  return runningServer(config, parts);
}

/** What the main port answers with: the starting answer until the application is ready; whether it is draining. */
interface Front {
  handle: Handler;
  draining: boolean;
}

/** METRICS_PORT's listener, the data directory and the database (migrated); on failure both listeners close again. */
async function openMetricsPortAndDatabase(
  config: Config,
  metrics: ServerMetrics | undefined,
  server: Server,
  databaseOptions: DatabaseOptions | undefined,
  progress: ServerOptions['log'],
): Promise<{ metricsServer: Server | undefined; database: Database }> {
  let metricsServer: Server | undefined;
  try {
    if (metrics && config.metrics.port !== undefined)
      metricsServer = await listen(config.host, config.metrics.port, 'METRICS_PORT', metricsOnly(metrics, config.metrics.token));
    await prepareDataDir(config.dataDir);
    const database = await openDatabase(databaseOptions ?? databaseOptionsFor(config, 'server', progress));
    return { metricsServer, database };
  } catch (error) {
    await closeServer(server);
    if (metricsServer) await closeServer(metricsServer);
    throw error;
  }
}

async function startTracingIfConfigured(config: Config, database: Database) {
  const tracing = config.tracing ? await startTracing() : undefined;
  tracing?.tracePool(database.pool);
  return tracing;
}

/** Reports a background failure to the log unless it is the database's outage, which the status reports. */
type UnlessOutage = (message: string) => (error: unknown) => void;

/** One view of the database for the whole process: requests and background work report to it. */
function watchDatabase(database: Database, log: Logger): { databaseStatus: DatabaseStatus; unlessOutage: UnlessOutage } {
  const databaseStatus = new DatabaseStatus(database.sql, log);
  const unlessOutage: UnlessOutage = (message) => (error) => void (databaseStatus.noteFailure(error) ?? log.warn({ err: error }, message));
  database.onIdleConnectionError((error) => databaseStatus.noteIdleConnectionLost(error));
  return { databaseStatus, unlessOutage };
}

function createOutbox(
  config: Config,
  database: Database,
  tuning: ServerOptions['outbox'],
  unlessOutage: UnlessOutage,
): OutboxWorker | null {
  if (tuning === false || !config.emailWorker) return null;
  return new OutboxWorker(database.prisma, createMailTransport(config), {
    passFailed: unlessOutage('e-mail outbox: delivery pass failed'),
    ...tuning,
  });
}

interface ContextParts {
  logger: Logger | undefined;
  metrics: ServerMetrics | undefined;
  outbox: OutboxWorker | null;
  unlessOutage: UnlessOutage;
}

async function createContext(config: Config, database: Database, { logger, metrics, outbox, unlessOutage }: ContextParts) {
  return createServerContext({
    config,
    prisma: database.prisma,
    sql: database.sql,
    storage: await openStorage(config),
    log: logger,
    metrics,
    notifyOutbox: () => outbox?.wake(),
    eventReadFailed: unlessOutage('reading the event log failed'),
    endedSessions: await EndedSessions.open(join(config.dataDir, 'ended-sessions')),
  });
}

/** Sign-outs recorded while the database was unreachable end now, and whenever it is back. */
function finishSignOutsWhenAvailable(app: ServerContext, databaseStatus: DatabaseStatus, unlessOutage: UnlessOutage): void {
  const finishSignOuts = () => app.endedSessions?.flush(app.sql).catch(unlessOutage('ending signed-out sessions failed'));
  databaseStatus.onAvailableAgain(finishSignOuts);
  void finishSignOuts();
}

function createFileSweeper(config: Config, app: ServerContext, database: Database, unlessOutage: UnlessOutage): FileSweeper | null {
  const sweepEvery = config.fileSweepMinutes * 60_000;
  const sweepFailed = unlessOutage('file sweep failed');
  return sweepEvery > 0 ? new FileSweeper(app, { intervalMs: sweepEvery, directUrl: database.directUrl, sweepFailed }) : null;
}

/** The database's notifications reach the caches and the event queues; long polls are answered from then on. */
async function startNotificationListeners(app: ServerContext, database: Database): Promise<() => Promise<void>> {
  const stopListening = await listenForNotifications(database.directUrl, notificationSubscribers(app));
  app.eventPolls.start();
  return stopListening;
}

function instrument(
  metrics: ServerMetrics,
  app: ServerContext,
  database: Database,
  workers: Pick<RunningServer, 'outbox' | 'fileSweeper'>,
) {
  const events = { streams: app.eventStreams, polls: app.eventPolls };
  instrumentServer(metrics, { pool: database.pool, sql: database.sql, rateLimiter: app.rateLimiter, ...workers, events });
}

interface WebSocketParts {
  graphql: HttpApp['graphql'];
  secureRequest: HttpApp['secureRequest'];
  front: Front;
}

/** GraphQL subscriptions over WebSocket on the main port, with the HTTP door's origin check, addresses and scheme. */
function serveWebSockets(config: Config, server: Server, app: ServerContext, { graphql, secureRequest, front }: WebSocketParts) {
  const originAllowed = connectionOriginAllowed(config.allowedOrigins, () => config.serverUrl);
  const addressOf = clientAddressOf(config.trustedProxies);
  return serveGraphQLOverWebSocket(server, app, graphql, {
    originAllowed: (origin, request) => originAllowed(origin, `http://${request.headers.host ?? config.host}${request.url ?? '/'}`),
    clientAddress: addressOf,
    secure: secureRequest,
    draining: () => front.draining,
  });
}

/** Everything a running server closes, in closeInOrder's order. */
interface RunningParts extends Omit<RunningServer, 'url' | 'metricsUrl' | 'close'> {
  front: Front;
  server: Server;
  metricsServer: Server | undefined;
  stopListening: () => Promise<void>;
  closeWebSockets: () => Promise<void>;
  tracing: Awaited<ReturnType<typeof startTracingIfConfigured>>;
}

function runningServer(config: Config, parts: RunningParts): RunningServer {
  const { server, metricsServer, app, database, databaseStatus, outbox, fileSweeper } = parts;
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${config.host}:${port}`,
    metricsUrl: metricsServer && `http://${config.host}:${(metricsServer.address() as AddressInfo).port}/metrics`,
    app,
    database,
    databaseStatus,
    outbox,
    fileSweeper,
    close: () => closeInOrder(parts),
  };
}

async function closeInOrder(parts: RunningParts): Promise<void> {
  const { front, app, server, metricsServer, outbox, fileSweeper } = parts;
  // /readyz answers 503 on the connections still open while requests in flight finish.
  front.draining = true;
  // Waiting long polls are answered and subscriptions end at once: a drain never waits for one.
  app.eventStreams.close();
  await Promise.all([app.eventPolls.close(), parts.closeWebSockets()]);
  // The worker stops at once (its queued mail waits for the next process), not after the requests;
  // so does the file sweep (a sweep in progress stops after its current batch).
  await Promise.all([closeServer(server), outbox?.stop(), fileSweeper?.stop()]);
  if (metricsServer) await closeServer(metricsServer);
  await parts.stopListening();
  parts.databaseStatus.stop();
  await parts.database.close();
  await parts.tracing?.shutdown();
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
