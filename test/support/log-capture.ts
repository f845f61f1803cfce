// A logger whose JSON lines a test can read back: as written (`raw`) and parsed (`lines`).
import { Writable } from 'node:stream';
import { createLogger } from '../../src/logging.js';

export interface LogLine {
  level: number;
  msg: string;
  /** An error logged under `err`, as pino serializes it. */
  err?: { message: string };
  [field: string]: unknown;
}

export function capturedLogger(level: string) {
  const raw: string[] = [];
  const lines: LogLine[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        raw.push(line);
        lines.push(JSON.parse(line));
      }
      done();
    },
  });
  /** Forgets what was written so far. */
  const clear = () => {
    raw.length = 0;
    lines.length = 0;
  };
  return { logger: createLogger({ level, destination }), raw, lines, clear };
}
