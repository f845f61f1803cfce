// Entry point: start the server, create the demo organization on an empty database, print how to use it.
import { loadConfig } from './config.js';
import { DataDirInUseError } from './db/database.js';
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
console.log(`Server listening on ${running.url}`);
console.log(`  GraphiQL:  ${config.serverUrl}/graphql`);
console.log(`  REST base: ${config.serverUrl}/api/v1`);

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
