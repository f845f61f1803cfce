// Where delivered e-mail goes: an SMTP server (SMTP_URL) or, without one, .eml files under
// DATA_DIR/outbox that any mail client opens.
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Transporter } from 'nodemailer';
import type { Config } from '../../config.js';
import { logger } from '../../logging.js';

export interface OutgoingEmail {
  id: number;
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface MailTransport {
  /** Resolves once the message is accepted (or written); rejects with the reason otherwise. */
  deliver(email: OutgoingEmail): Promise<void>;
  close(): void;
  /** Where mail goes, for the start-up log (no credentials). */
  readonly description: string;
}

/**
 * The Message-ID of an outbox row, the same for every attempt by every process: when a process dies
 * after the mail server took a message but before its row was marked SENT, the copy another worker
 * sends later is the same message, which mail systems recognise as a duplicate.
 */
export function outboxMessageId(emailId: number, from: string): string {
  const domain = /@([^>\s]+)>?\s*$/.exec(from)?.[1] ?? 'localhost';
  return `<outbox-${emailId}@${domain}>`;
}

// Well inside half the outbox's claim lease (worker.ts), so an attempt never outlives its claim.
const SMTP_TIMEOUTS = { connectionTimeout: 8_000, greetingTimeout: 5_000, socketTimeout: 10_000 };

/**
 * nodemailer costs about 14 MiB of memory once loaded: it is loaded with the first e-mail, so a
 * server that sends none never pays for it.
 */
function lazyTransporter(options: Parameters<typeof import('nodemailer').createTransport>[0], from: string) {
  let transporter: Promise<Transporter> | undefined;
  return {
    get: () => (transporter ??= import('nodemailer').then(({ default: nodemailer }) => nodemailer.createTransport(options, { from }))),
    close: () => void transporter?.then((t) => t.close()),
  };
}

function smtpTransport(smtpUrl: string, from: string): MailTransport {
  // Pooled: one connection carries many messages (up to 100). A connection per message costs its
  // handshake and the server's greeting delay (100 ms and more: servers wait to catch early talkers).
  const transporter = lazyTransporter({ url: smtpUrl, pool: true, maxConnections: 1, ...SMTP_TIMEOUTS }, from);
  const url = new URL(smtpUrl);
  return {
    description: `SMTP server ${url.protocol}//${url.host}`,
    async deliver(email) {
      await (await transporter.get()).sendMail({
        messageId: outboxMessageId(email.id, from),
        to: email.to,
        subject: email.subject,
        text: email.text,
        html: email.html,
      });
    },
    close: transporter.close,
  };
}

function fileTransport(directory: string, from: string): MailTransport {
  const composer = lazyTransporter({ streamTransport: true, buffer: true, newline: 'unix' }, from);
  return {
    description: `files in ${directory}`,
    async deliver(email) {
      const info = await (await composer.get()).sendMail({
        messageId: outboxMessageId(email.id, from),
        to: email.to,
        subject: email.subject,
        text: email.text,
        html: email.html,
      });
      await mkdir(directory, { recursive: true });
      const path = join(directory, `${String(email.id).padStart(8, '0')}-${randomBytes(4).toString('hex')}.eml`);
      await writeFile(path, info.message as Buffer);
      // Someone trying the server without a mail server follows the (acceptance) link from the log.
      const links = email.text.match(/https?:\/\/\S+/g) ?? [];
      // (docs/guide/operations.md, Logs, names this development mode as the one place acceptance links are logged.)
      logger.info({ emailId: email.id, file: path, links }, 'e-mail written to a file');
    },
    close: composer.close,
  };
}

export function createMailTransport(config: Config): MailTransport {
  return config.smtpUrl ? smtpTransport(config.smtpUrl, config.emailFrom) : fileTransport(join(config.dataDir, 'outbox'), config.emailFrom);
}
