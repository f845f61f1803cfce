// The fleet under test: server processes started as `npm start` starts them, each on a port of its
// own that it keeps across restarts (clients find it again); a TCP proxy between them and
// PostgreSQL that the soak can cut; a real SMTP receiver per server (so each e-mail names the process
// that sent it), which the soak can make refuse.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { startDatabaseProxy, type DatabaseProxy } from '../../test/support/tcp-proxy.js';
import { startMailReceiver, type MailReceiver } from '../../test/support/smtp.js';
import { freePort, realServerCommand, waitUntilServing } from '../bench/processes.js';
import type { DeliveredEmail } from './checks.js';

export interface ServerSlot {
  name: string;
  url: string;
  /** Whether the process runs and was not signalled by the soak. */
  up(): boolean;
  start(): Promise<void>;
  /** Sends the signal and waits for the exit; its exit status. */
  signal(signal: 'SIGKILL' | 'SIGTERM'): Promise<number | string | null>;
  /** Exits the soak did not cause (a violation), with the end of the output. */
  unexpectedExits: string[];
  /** The last lines the process printed other than its JSON log (start-up text, a crash's stack). */
  output: string[];
}

/** Where a server that does not drain writes its diagnostic report (SIGUSR2; kept after the run). */
export const reportDirectory = join(tmpdir(), 'teamchat-soak-reports');

/** How long a SIGTERM'd process may take to drain before it counts as hung (and is killed). */
const DRAIN_LIMIT_MS = 30_000;

/** Every server process started, killed if the soak itself ends abruptly (none is left behind). */
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

export async function serverSlot(name: string, env: Record<string, string>): Promise<ServerSlot> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const output: string[] = [];
  const unexpectedExits: string[] = [];
  let child: ChildProcess | undefined;
  let signalled = false;
  const keep = (line: string) => {
    // Of the JSON log, errors only (a 500's stack).
    if (line.startsWith('{') && !/"level":(50|60)/.test(line)) return;
    output.push(`${name}: ${line}`);
    if (output.length > 200) output.shift();
  };
  return {
    name,
    url,
    output,
    unexpectedExits,
    up: () => !!child && child.exitCode === null && child.signalCode === null && !signalled,
    async start() {
      signalled = false;
      await mkdir(reportDirectory, { recursive: true });
      const started = spawn(process.execPath, realServerCommand(), {
        env: {
          ...process.env,
          ...env,
          PORT: String(port),
          HOST: '127.0.0.1',
          NODE_OPTIONS: `--report-on-signal --report-directory=${reportDirectory}`,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = started;
      children.add(started);
      createInterface({ input: started.stdout! }).on('line', keep);
      createInterface({ input: started.stderr! }).on('line', keep);
      started.once('exit', (code, signal) => {
        if (child === started && !signalled)
          unexpectedExits.push(`${name} exited by itself (${code ?? signal}):\n${output.slice(-40).join('\n')}`);
      });
      await waitUntilServing(url, started, () => output);
    },
    async signal(signal) {
      const running = child;
      if (!running || running.exitCode !== null || running.signalCode !== null) return null;
      signalled = true;
      const exited = new Promise<number | string | null>((resolve) => running.once('exit', (code, signal) => resolve(code ?? signal)));
      running.kill(signal);
      // A drain that does not end is reported (as the exit status) and cut short, so the run goes on;
      // first the process writes a diagnostic report (what it still waits on) where the soak says.
      const late = setTimeout(() => {
        running.kill('SIGUSR2');
        setTimeout(() => running.kill('SIGKILL'), 2_000);
      }, DRAIN_LIMIT_MS);
      const code = await exited;
      clearTimeout(late);
      return signal === 'SIGTERM' && code === 'SIGKILL' ? `no exit within ${DRAIN_LIMIT_MS / 1000} s (killed)` : code;
    },
  };
}

/** The servers' SMTP receivers, one per server, seen as one mail server. */
export interface FleetMail {
  /** Every message accepted so far, in order of arrival, with the server that sent it. */
  delivered(): DeliveredEmail[];
  setRefusing(on: boolean): void;
}

export interface Fleet {
  servers: ServerSlot[];
  /** The proxies between the servers and PostgreSQL (one per URL the servers use). */
  proxies: DatabaseProxy[];
  mail: FleetMail;
  stop(): Promise<void>;
}

function fleetMail(receivers: { sender: string; receiver: MailReceiver }[]): FleetMail {
  return {
    delivered: () =>
      receivers
        .flatMap(({ sender, receiver }) =>
          receiver.received.map(
            (message, i): DeliveredEmail => ({
              to: message.to && !Array.isArray(message.to) ? (message.to.value[0]?.address ?? '') : '',
              messageId: message.messageId,
              text: message.text ?? '',
              at: receiver.receivedAt[i]!,
              sentBy: sender,
            }),
          ),
        )
        .sort((a, b) => a.at - b.at),
    setRefusing: (on) => receivers.forEach(({ receiver }) => receiver.setRefusing(on)),
  };
}

/**
 * Two servers on `databaseUrl` (and `directUrl`, PostgreSQL itself when the first goes through
 * PgBouncer), each through a proxy of the soak, each delivering e-mail to a receiver of its own.
 */
export async function startFleet(options: {
  databaseUrl: string;
  directUrl?: string;
  env: Record<string, string>;
  count: number;
}): Promise<Fleet> {
  const proxies = [await startDatabaseProxy(options.databaseUrl)];
  if (options.directUrl) proxies.push(await startDatabaseProxy(options.directUrl));
  const env = {
    ...options.env,
    DATABASE_URL: proxies[0]!.url,
    DATABASE_DIRECT_URL: proxies[1]?.url ?? '',
  };
  const servers: ServerSlot[] = [];
  const receivers: { sender: string; receiver: MailReceiver }[] = [];
  for (let i = 0; i < options.count; i++) {
    const name = `server ${String.fromCharCode(65 + i)}`;
    const receiver = await startMailReceiver();
    receivers.push({ sender: name, receiver });
    const slot = await serverSlot(name, { ...env, SMTP_URL: receiver.url, DATA_DIR: `${options.env.DATA_DIR}/${i}` });
    await slot.start();
    servers.push(slot);
  }
  return {
    servers,
    proxies,
    mail: fleetMail(receivers),
    async stop() {
      for (const server of servers) await server.signal('SIGTERM');
      for (const proxy of proxies) await proxy.close();
      for (const { receiver } of receivers) await receiver.close();
    },
  };
}
