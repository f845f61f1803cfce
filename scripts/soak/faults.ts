// The faults the soak injects, one at a time, at moments drawn from the seeded random source:
// SIGKILL of a server then its restart; SIGTERM during a burst of changes then a restart; every
// backend of the application terminated; the TCP path to PostgreSQL cut for a few seconds; the SMTP
// receiver refusing for a while. Each is printed with its time, so a failure can be replayed, and
// recorded in the history with its span and the process it struck (the checks excuse by them).
import type pg from 'pg';
import { reportDirectory, type Fleet, type ServerSlot } from './fleet.js';
import type { FaultKind, FaultSpan, History } from './history.js';
import type { Random } from './random.js';

export type { FaultKind } from './history.js';

export const FAULT_KINDS: FaultKind[] = ['sigkill', 'sigterm-burst', 'terminate-backends', 'cut-database', 'smtp-refuses'];

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

type Injected = Omit<FaultSpan, 'kind' | 'start' | 'end'>;

/** Injects one fault and returns what it struck; the caller records its span. */
export async function injectFault(kind: FaultKind, { fleet, history, random, db, database, burst }: FaultSetting): Promise<Injected> {
  const server = random.pick(fleet.servers);
  switch (kind) {
    case 'sigkill': {
      await server.signal('SIGKILL');
      const exited = Date.now();
      await sleep(random.int(500, 3_000));
      await restart(server, history);
      return { target: server.name, exited, detail: server.name };
    }
    case 'sigterm-burst': {
      const sent = burst(server);
      await sleep(random.int(20, 300));
      const code = await server.signal('SIGTERM');
      const exited = Date.now();
      await sent;
      if (code !== 0)
        history.violation(
          `${server.name} exited with ${code} after SIGTERM, not status 0 (a diagnostic report of a hung drain is in ${reportDirectory}):\n${server.output.slice(-40).join('\n')}`,
        );
      await sleep(random.int(200, 2_000));
      await restart(server, history);
      return { target: server.name, exited, detail: `${server.name}, exit status ${code}` };
    }
    case 'terminate-backends': {
      const { rows } = await db.query<{ terminated: boolean }>(
        `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
          WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name NOT LIKE 'soak%' AND backend_type = 'client backend'`,
        [database],
      );
      return { target: null, detail: `${rows.filter((row) => row.terminated).length} backends` };
    }
    case 'cut-database': {
      const ms = random.int(1_000, 5_000);
      for (const proxy of fleet.proxies) await proxy.cut();
      await sleep(ms);
      for (const proxy of fleet.proxies) await proxy.restore();
      return { target: null, detail: `${ms} ms` };
    }
    case 'smtp-refuses': {
      const ms = random.int(1_000, 5_000);
      fleet.mail.setRefusing(true);
      await sleep(ms);
      fleet.mail.setRefusing(false);
      return { target: null, detail: `${ms} ms` };
    }
  }
}

/**
 * Faults until `until()`, one every few seconds (a pause drawn between 2 and 8 s), each recorded in
 * the history with its span. The SMTP receiver refuses only in the first half of the run: the outbox
 * retries a refused e-mail a minute later, and the run's end waits for every e-mail.
 */
export async function injectFaults(
  setting: FaultSetting,
  until: () => boolean,
  halfway: () => boolean,
  kinds: FaultKind[] = FAULT_KINDS,
): Promise<void> {
  while (!until()) {
    await sleep(setting.random.int(2_000, 8_000));
    if (until()) break;
    const now = kinds.filter((kind) => kind !== 'smtp-refuses' || !halfway());
    if (now.length === 0) continue;
    const kind = setting.random.pick(now);
    const start = Date.now();
    const at = `${((start - setting.startedAt) / 1000).toFixed(1)} s`;
    try {
      const injected = await injectFault(kind, setting);
      setting.history.faults.push({ kind, start, end: Date.now(), ...injected });
      console.error(`soak: ${at}: ${kind} (${injected.detail})`);
    } catch (error) {
      // Not a fault of the fleet, and no excuse for anything: the run did less than it claims.
      setting.history.violation(`the soak could not inject ${kind} at ${at}: ${(error as Error).message}`);
    }
  }
}
