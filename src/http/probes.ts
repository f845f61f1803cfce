// Probes for orchestrators and load balancers. /livez: the process answers (never the database's
// fault, so an outage does not get healthy processes restarted). /readyz: send it traffic, or not
// (while starting, while draining after SIGTERM, while the database is unreachable). /health keeps
// its meaning: the database answers.
import type { Hono } from 'hono';
import { jsonResponse } from '../rest/envelope.js';
import type { DatabaseStatus } from './database-status.js';

export const LIVE_PATH = '/livez';
export const READY_PATH = '/readyz';

export const live = () => jsonResponse({ status: 'ok' });
export const notReady = (status: 'starting' | 'draining' | 'unavailable', extra: Record<string, unknown> = {}) =>
  jsonResponse({ status, ...extra }, 503, { 'Retry-After': '1' });

export interface Lifecycle {
  /** True from SIGTERM (RunningServer.close) on: requests in flight finish, new traffic goes elsewhere. */
  draining(): boolean;
}

export function mountProbes(http: Hono, database: DatabaseStatus, lifecycle: Lifecycle): void {
  http.get(LIVE_PATH, live);
  http.get(READY_PATH, async () => {
    if (lifecycle.draining()) return notReady('draining');
    // Known down: answer at once; otherwise ask, so an outage no request has met yet is seen too.
    if (database.cause !== null || !(await database.check())) return notReady('unavailable', { cause: database.cause });
    return jsonResponse({ status: 'ready' });
  });
}

/** Before the application is up: alive, not ready; every other request is told to come back. */
export function whileStarting(request: Request, otherwise: () => Response): Response {
  const path = new URL(request.url).pathname;
  if (path === LIVE_PATH) return live();
  if (path === READY_PATH) return notReady('starting');
  return otherwise();
}
