// Errors that maskError replaced (an unexpected error by "Unexpected error.", a database failure by
// a 503) call for log lines, which go out on the request's logger (its id on each line) once the
// answer that carries the replacement is built: Yoga's maskError sees no request, so it only leaves
// the lines beside the replacement.
import { isAsyncIterable, mapAsyncIterator, type Plugin } from 'graphql-yoga';
import type { LineWriter, Logger } from '../logging.js';

type Level = 'info' | 'warn' | 'error';

/** Lines to write later, on a logger not known yet. */
export class DeferredLogLines implements LineWriter {
  readonly #lines: [Level, object, string][] = [];

  readonly info = (fields: object, message: string) => void this.#lines.push(['info', fields, message]);
  readonly warn = (fields: object, message: string) => void this.#lines.push(['warn', fields, message]);
  readonly error = (fields: object, message: string) => void this.#lines.push(['error', fields, message]);

  writeTo(log: LineWriter): void {
    for (const [level, fields, message] of this.#lines) log[level](fields, message);
  }
}

const held = new WeakMap<object, DeferredLogLines>();

/** Called by maskError with the error it answers instead, and the lines that call for. */
export function deferLines(replacement: object, lines: DeferredLogLines): void {
  held.set(replacement, lines);
}

/** Writes the lines held for any of `errors`, each once. */
export function writeDeferredLines(errors: readonly object[] | undefined, log: Logger): void {
  for (const error of errors ?? []) {
    held.get(error)?.writeTo(log);
    held.delete(error);
  }
}

/** Every answer over HTTP: one result, or the events of a subscription as they are sent. */
export const deferredLinesWritten: Plugin<object, { log: Logger }> = {
  onResultProcess({ result, setResult, serverContext: { log } }) {
    if (isAsyncIterable(result)) {
      setResult(
        mapAsyncIterator(result, (event) => {
          writeDeferredLines(event.errors, log);
          return event;
        }),
      );
    } else {
      for (const single of Array.isArray(result) ? result : [result]) writeDeferredLines(single.errors, log);
    }
  },
};
