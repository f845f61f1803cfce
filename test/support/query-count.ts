// The real HTTP application over the test database, counting every SQL statement the driver sends
// (Prisma's and the hand-written ones), so a test can prove that a request's statement count does not
// grow with the data it returns (no N+1). Requests run in-process and one at a time, so each count is exact.
import { openStorage } from '../../src/storage/open-storage.js';
import { PrismaPg } from '@prisma/adapter-pg';
import { loadConfig } from '../../src/config.js';
import type { DatabaseClient } from '../../src/db/database.js';
import { listenForNotifications } from '../../src/db/notifications.js';
import { PrismaClient } from '../../src/generated/prisma/client.js';
import { sqlOver } from '../../src/db/sql.js';
import { countStatements } from '../../src/db/statement-counter.js';
import pg from 'pg';
import { createApp } from '../../src/http/app.js';
import { createServerContext, notificationSubscribers } from '../../src/server-context.js';
import { testDatabaseUrl } from './server.js';

export const COUNTING_SERVER_URL = 'http://counting.test';

export async function startCountingApp() {
  const connectionString = await testDatabaseUrl();
  const statements = countStatements();
  const pool = new pg.Pool({ connectionString });
  const client = new PrismaClient({ adapter: new PrismaPg(pool) });
  const prisma = client as unknown as DatabaseClient;
  // As in the server with API_RATE_LIMIT=off: authenticated users and what permission checks read are
  // cached, and dropped when the database notifies a change; failed-login lockouts are known from
  // notifications too.
  const config = { ...loadConfig({ API_RATE_LIMIT: 'off' }), serverUrl: COUNTING_SERVER_URL };
  const app = createServerContext({ config, prisma, sql: sqlOver(pool), storage: await openStorage(config) });
  const stopListening = await listenForNotifications(connectionString, notificationSubscribers(app));
  const { http } = createApp(app);
  return {
    prisma,
    http,
    /** The response to one request and the number of SQL statements serving it took. */
    async request(path: string, init: RequestInit): Promise<{ response: Response; statements: number }> {
      const before = statements();
      const response = await http.request(`${COUNTING_SERVER_URL}${path}`, init);
      await response.clone().arrayBuffer();
      return { response, statements: statements() - before };
    },
    async close() {
      await stopListening();
      await client.$disconnect();
      await pool.end();
    },
  };
}
