// The faults the soak injects, one at a time, at moments drawn from the seeded random source:
// SIGKILL of a server then its restart; SIGTERM during a burst of changes then a restart; every
// backend of the application terminated; the TCP path to PostgreSQL cut for a few seconds; the SMTP
// receiver refusing for a while. Each is printed with its time, so a failure can be replayed.
import type pg from 'pg';
import { reportDirectory, type Fleet, type ServerSlot } from './fleet.js';
import type { History } from './history.js';
import type { Random } from './random.js';

export type FaultKind = 'sigkill' | 'sigterm-burst' | 'terminate-backends' | 'cut-database' | 'smtp-refuses';

export const FAULT_KINDS: FaultKind[] = ['sigkill', 'sigterm-burst', 'terminate-backends', 'cut-database', 'smtp-refuses'];

export interface FaultLog {
  at: number;
  kind: FaultKind;
  detail: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface FaultSetting {
  fleet: Fleet;
  history: History;
  random: Random;
  /** The soak's own connections (application_name soak), directly on PostgreSQL when it can. */
  db: pg.Pool;
  /** The database the servers use: only its backends are terminated. */
  database: string;
  /** Sends a burst of changes at one server (the workload's requests, recorded). */
  burst(server: ServerSlot): Promise<unknown>;
  startedAt: number;
}

async function restart(server: ServerSlot, history: History) {
  try {
    await server.start();
  } catch (error) {
    history.violation(`${server.name} did not start again: ${(error as Error).message.slice(0, 2000)}`);
  }
}

export async function injectFault(kind: FaultKind, { fleet, history, random, db, database, burst }: FaultSetting): Promise<string> {
  const server = random.pick(fleet.servers);
  switch (kind) {
    case 'sigkill': {
      await server.signal('SIGKILL');
      await sleep(random.int(500, 3_000));
      await restart(server, history);
      return server.name;
    }
    case 'sigterm-burst': {
      const sent = burst(server);
      await sleep(random.int(20, 300));
      const code = await server.signal('SIGTERM');
      await sent;
      if (code !== 0) history.violation(`${server.name} exited with ${code} after SIGTERM, not status 0 (a diagnostic report of a hung drain is in ${reportDirectory}):\n${server.output.slice(-40).join('\n')}`);
      await sleep(random.int(200, 2_000));
      await restart(server, history);
      return `${server.name}, exit status ${code}`;
    }
    case 'terminate-backends': {
      const { rows } = await db.query<{ terminated: boolean }>(
        `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
          WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name NOT LIKE 'soak%' AND backend_type = 'client backend'`,
        [database],
      );
      return `${rows.filter((row) => row.terminated).length} backends`;
    }
    case 'cut-database': {
      const ms = random.int(1_000, 5_000);
      for (const proxy of fleet.proxies) await proxy.cut();
      await sleep(ms);
      for (const proxy of fleet.proxies) await proxy.restore();
      return `${ms} ms`;
    }
    case 'smtp-refuses': {
      const ms = random.int(1_000, 5_000);
      fleet.mail.setRefusing(true);
      await sleep(ms);
      fleet.mail.setRefusing(false);
      return `${ms} ms`;
    }
  }
}

/**
 * Faults until `until()`, one every few seconds (a pause drawn between 2 and 8 s). The SMTP receiver
 * refuses only in the first half of the run: the outbox retries a refused e-mail a minute later, and
 * the run's end waits for every e-mail.
 */
export async function injectFaults(setting: FaultSetting, until: () => boolean, halfway: () => boolean, log: FaultLog[], kinds: FaultKind[] = FAULT_KINDS): Promise<void> {
  while (!until()) {
    await sleep(setting.random.int(2_000, 8_000));
    if (until()) break;
    const now = kinds.filter((kind) => kind !== 'smtp-refuses' || !halfway());
    if (now.length === 0) continue;
    const kind = setting.random.pick(now);
    const at = (Date.now() - setting.startedAt) / 1000;
    const detail = await injectFault(kind, setting).catch((error: Error) => `failed to inject: ${error.message}`);
    log.push({ at, kind, detail });
    console.error(`soak: ${at.toFixed(1)} s: ${kind} (${detail})`);
  }
}
