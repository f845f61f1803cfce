// Entry point: start the server, create the demo organization on an empty database, print how to use it.
import './db/statement-counter.js';
import { loadConfig } from './config.js';
import { DataDirInUseError } from './db/database.js';
import { startupBanner } from './demo/banner.js';
import { ensureDemoOrganization } from './demo/create-demo.js';
import { startServer } from './server.js';

const config = loadConfig();
let server;
try {
  server = await startServer(config);
} catch (error) {
  if (error instanceof DataDirInUseError) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
}
const running = server;
// With PORT=0 the configured URL names port 0; links must name the port actually bound.
if (!process.env.SERVER_URL && config.port === 0) running.app.config.serverUrl = running.url;

const demo = await ensureDemoOrganization(running.database.prisma);
const facts = {
  baseUrl: running.app.config.serverUrl,
  mailDestination: running.outbox?.destination,
  embeddedDatabase: running.database.kind === 'pglite',
};
console.log(startupBanner(facts, demo));

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  console.log(`${signal} received: finishing requests in flight, then exiting.`);
  await running.close();
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
