// Structured JSON logs (pino) on stdout. What serves a request writes through the request's logger
// (`requestLogger`, as Fastify's request.log), so each of its lines carries the request's id (also
// sent back as X-Request-Id). Credentials never reach a log line: the Authorization header is not
// logged and known secret fields are redacted. Level: LOG_LEVEL (default info).
import { randomUUID } from 'node:crypto';
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/** What a line is written with: a logger, or lines held until the request's logger is known. */
export interface LineWriter {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export const REDACTED_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  'apiKey',
  '*.apiKey',
  'api_key',
  '*.api_key',
  'password',
  '*.password',
];

export function createLogger(options: { level?: string; destination?: DestinationStream } = {}): Logger {
  const level = options.level ?? process.env.LOG_LEVEL ?? 'info';
  return pino(
    {
      level,
      base: undefined,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    },
    options.destination,
  );
}

/** How long a log line may wait in the buffer before it is written. */
export const LOG_FLUSH_MS = 100;

/**
 * Standard output through a buffer, written when 8 KiB have gathered and at least every
 * LOG_FLUSH_MS, and at exit (a crash's last lines included): a write per line was about a tenth of
 * a small request's CPU. A killed process (SIGKILL) loses at most its last LOG_FLUSH_MS of lines.
 */
function bufferedStdout(): DestinationStream {
  const destination = pino.destination({ dest: 1, sync: false, minLength: 8 * 1024 });
  setInterval(() => destination.flush(), LOG_FLUSH_MS).unref();
  process.on('exit', () => destination.flushSync());
  return destination;
}

/** The process's logger; the CLI's output and the start-up banner stay plain text on stdout. */
export const logger = createLogger({ destination: bufferedStdout() });

/** A client-chosen id is kept when it is short and plain; otherwise a fresh one. */
export function requestIdFor(header: string | undefined): string {
  return header && /^[\w.-]{1,64}$/.test(header) ? header : randomUUID();
}

/**
 * The logger of one request: `requestId` on every line (and, when tracing, `traceId` and `spanId` of
 * its server span). Handed down explicitly rather than found
 * through an AsyncLocalStorage, whose hooks Node 20 runs for every promise of the process (10-20 % of
 * a small request's CPU, measured). The child logger is made when the request first uses it: most
 * requests write no line of their own (the request line is written apart), and making one for each
 * was about 1.5 % of a small request's CPU.
 */
export function requestLogger(log: Logger, requestId: string, trace?: { traceId: string; spanId: string }): Logger {
  let child: Logger | undefined;
  const made = () => (child ??= log.child(trace ? { requestId, ...trace } : { requestId }));
  return new Proxy(log, {
    get(_parent, property) {
      const value: unknown = Reflect.get(made(), property);
      return typeof value === 'function' ? value.bind(made()) : value;
    },
    set: (_parent, property, value) => Reflect.set(made(), property, value),
  });
}
