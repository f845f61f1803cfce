// Entry point: start the server, create the demo organization on an empty database, print how to
// use it; drain and stop everything (the embedded PostgreSQL included) on SIGTERM or Ctrl-C.
import './db/statement-counter.js';
import { loadConfig } from './config.js';
import { describeDatabase } from './db/database.js';
import { startupBanner } from './demo/banner.js';
import { ensureDemoOrganization } from './demo/create-demo.js';
import { startServer, type RunningServer } from './server.js';
import { StartupError } from './startup-error.js';

async function start(): Promise<RunningServer> {
  const config = loadConfig();
  const running = await startServer(config, undefined, { log: (line) => console.error(line) });
  // With PORT=0 the configured URL names port 0; links must name the port actually bound.
  if (!process.env.SERVER_URL && config.port === 0) running.app.config.serverUrl = running.url;
  const demo = await ensureDemoOrganization(running.database.prisma, running.app.storage);
  const facts = {
    baseUrl: running.app.config.serverUrl,
    mailDestination: running.outbox?.destination ?? 'queued, delivered by other processes (EMAIL_WORKER=off)',
    database: describeDatabase(running.database),
  };
  console.log(startupBanner(facts, demo));
  return running;
}

// Handlers first: a signal that arrives while starting (or just after the banner) still drains.
const starting = start();
let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  const running = await starting.catch(() => undefined);
  if (!running) return;
  console.log(`${signal} received: finishing requests in flight, then exiting.`);
  // E-mail delivery stops now, whatever else the shutdown waits for: queued mail waits for the next process.
  void running.outbox?.stop();
  await running.close();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

try {
  await starting;
} catch (error) {
  if (!(error instanceof StartupError)) throw error;
  console.error(`Cannot start: ${error.message}`);
  process.exit(1);
}
