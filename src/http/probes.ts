// Probes for orchestrators and load balancers. /livez: the process answers (never the database's
// fault, so an outage does not get healthy processes restarted). /readyz: send it traffic, or not
// (while starting, while draining after SIGTERM, while the database is unreachable). /health keeps
// its meaning: the database answers. Each answers its state only (`ok`, `starting`, `draining`,
// `database unavailable`), to anyone: no host, port, driver message or version.
import type { Hono } from 'hono';
import { jsonResponse } from '../rest/envelope.js';
import { unavailableStateResponse, type DatabaseStatus } from './database-status.js';

export const LIVE_PATH = '/livez';
export const READY_PATH = '/readyz';

export const live = () => jsonResponse({ status: 'ok' });
export const notReady = (status: 'starting' | 'draining') => jsonResponse({ status }, 503, { 'Retry-After': '1' });

export interface Lifecycle {
  /** True from SIGTERM (RunningServer.close) on: requests in flight finish, new traffic goes elsewhere. */
  draining(): boolean;
}

export function mountProbes(http: Hono, database: DatabaseStatus, lifecycle: Lifecycle): void {
  http.get(LIVE_PATH, live);
  http.get(READY_PATH, async () => {
    if (lifecycle.draining()) return notReady('draining');
    // Known down: answer at once; otherwise ask, so an outage no request has met yet is seen too.
    if (database.down || !(await database.check())) return unavailableStateResponse();
    return jsonResponse({ status: 'ok' });
  });
}

/** Before the application is up: alive, not ready; every other request is told to come back. */
export function whileStarting(request: Request, otherwise: () => Response): Response {
  const path = new URL(request.url).pathname;
  if (path === LIVE_PATH) return live();
  if (path === READY_PATH) return notReady('starting');
  return otherwise();
}
