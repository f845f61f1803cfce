// A span per SQL statement, at the one place both Prisma's adapter (@prisma/adapter-pg) and the
// hand-written statements (src/db/sql.ts) pass: the query() of the pool's connections. The span holds
// the statement's text as written, with its $1, $2 placeholders: values travel apart and are never
// recorded. Only inside a trace: the statements of no request or traced background work (the event
// reader's polls, housekeeping, metrics) start none.
import { context, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import {
  ATTR_DB_OPERATION_NAME,
  ATTR_DB_QUERY_TEXT,
  ATTR_DB_SYSTEM_NAME,
  ATTR_ERROR_TYPE,
  DB_SYSTEM_NAME_VALUE_POSTGRESQL,
} from '@opentelemetry/semantic-conventions';
import type pg from 'pg';

type Query = (...args: unknown[]) => unknown;

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof (value as PromiseLike<unknown> | undefined)?.then === 'function';

/** query(text, ...) or query({ text, values, ... }) */
function statementText(first: unknown): string {
  if (typeof first === 'string') return first;
  const text = (first as { text?: unknown } | undefined)?.text;
  return typeof text === 'string' ? text : '';
}

/** The statement's first keyword (SELECT, INSERT, WITH, BEGIN...): the span's name. */
const operationOf = (text: string) => /^\s*([A-Za-z]+)/.exec(text)?.[1]?.toUpperCase() ?? 'SQL';

export function traceStatements(pool: pg.Pool, tracer: Tracer): void {
  pool.on('connect', (client) => traceQueries(client, tracer));
  continueCallersContext(pool);
}

/**
 * The pool's own query() waits for a connection with a callback, which the pool calls from whoever
 * releases a connection: bound here to the caller's context, so that its statement stays in its
 * caller's trace, not in the releaser's. (Promises keep their caller's context by themselves.)
 */
function continueCallersContext(pool: pg.Pool): void {
  const connect = pool.connect.bind(pool) as (callback?: unknown) => unknown;
  (pool as unknown as { connect: (callback?: unknown) => unknown }).connect = (callback?: unknown) =>
    typeof callback === 'function' ? connect(context.bind(context.active(), callback)) : connect();
}

/** Submittables (cursors, streams) are left untraced. */
function traceQueries(client: pg.PoolClient, tracer: Tracer): void {
  const query = client.query.bind(client) as Query;
  (client as unknown as { query: Query }).query = (...args: unknown[]) => {
    if (!trace.getSpan(context.active())) return query(...args);
    const text = statementText(args[0]);
    const operation = operationOf(text);
    const span = tracer.startSpan(operation, {
      kind: SpanKind.CLIENT,
      attributes: {
        [ATTR_DB_SYSTEM_NAME]: DB_SYSTEM_NAME_VALUE_POSTGRESQL,
        [ATTR_DB_OPERATION_NAME]: operation,
        [ATTR_DB_QUERY_TEXT]: text,
      },
    });
    const end = (error: unknown) => {
      if (error) {
        const code = (error as { code?: unknown }).code;
        span.setAttribute(ATTR_ERROR_TYPE, typeof code === 'string' ? code : 'Error');
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    };
    const last = args.length - 1;
    const callback = args[last];
    if (typeof callback === 'function') {
      args[last] = (...results: unknown[]) => {
        end(results[0]);
        return (callback as Query)(...results);
      };
      return query(...args);
    }
    const result = query(...args);
    if (isThenable(result)) result.then(() => end(undefined), end);
    return result;
  };
}
