// A real SMTP receiver on port 0 (smtp-server), parsing what it receives with mailparser; and a
// server started with e-mail delivery tuned for tests.
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import type { Config } from '../../src/config.js';
import type { RunningServer, ServerOptions } from '../../src/server.js';
import { startTestServer } from './server.js';

export interface MailReceiver {
  url: string;
  received: ParsedMail[];
  /** When each of `received` arrived (Date.now()). */
  receivedAt: number[];
  /** The next `count` messages are refused with a temporary failure (451). */
  refuseNext(count: number): void;
  /** While on, every message is refused with a temporary failure (451): a mail server that is down for a while. */
  setRefusing(on: boolean): void;
  /**
   * Holds the next message once its data has arrived, before answering: resolves when one is held,
   * with the function that lets it (and the messages after it) through.
   */
  holdNext(): Promise<() => void>;
  close(): Promise<void>;
}

export interface ReceiverOptions {
  /** How long the receiver takes to accept each message (a slow mail server). */
  acceptMs?: number;
}

export async function startMailReceiver(options: ReceiverOptions = {}): Promise<MailReceiver> {
  const received: ParsedMail[] = [];
  const receivedAt: number[] = [];
  let refusals = 0;
  let refusing = false;
  let hold: ((release: () => void) => void) | undefined;
  let gate: Promise<void> = Promise.resolve();
  const holdNext = () =>
    new Promise<() => void>((resolve) => {
      hold = resolve;
    });
  /** Where a message waits before its answer: at the gate while one is held, then acceptMs. */
  const beforeAnswer = async () => {
    if (hold) {
      const held = hold;
      hold = undefined;
      let release!: () => void;
      gate = new Promise((resolve) => (release = resolve));
      held(release);
    }
    await gate;
    if (options.acceptMs) await new Promise((resolve) => setTimeout(resolve, options.acceptMs));
  };
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    logger: false,
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', async () => {
        await beforeAnswer();
        if (refusing || refusals > 0) {
          if (!refusing) refusals--;
          callback(Object.assign(new Error('Mailbox busy, try again later'), { responseCode: 451 }));
          return;
        }
        simpleParser(Buffer.concat(chunks)).then((mail) => {
          received.push(mail);
          receivedAt.push(Date.now());
          callback();
        }, callback);
      });
    },
  });
  // A client that goes away mid-session (a server process killed) is no failure of the receiver.
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    receivedAt,
    refuseNext: (count) => (refusals = count),
    setRefusing: (on) => (refusing = on),
    holdNext,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The address a received message went to. */
export const recipient = (mail: ParsedMail) => (mail.to && !Array.isArray(mail.to) ? mail.to.value[0]?.address : undefined);

/** Like startTestServer, with worker options (or no worker) and the acceptance links pointing at it. */
/** A test server whose e-mail worker delivers (to SMTP_URL, or to .eml files in its data directory). */
export function startServerWithOutbox(overrides: Partial<Config>, options: ServerOptions = {}): Promise<RunningServer> {
  return startTestServer({ emailFrom: 'Zulip <noreply@teamchat.test>', ...overrides }, { outbox: {}, ...options });
}

/** Polls until `check` returns a value other than undefined/false, or fails after the deadline. */
export async function eventually<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  deadlineMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
