// The helpers the layers call to trace their work. Nothing here loads OpenTelemetry (its types only):
// setup.ts, imported only when an OTLP endpoint is configured, installs `tracing`; while it is
// undefined each helper is a plain call and the hot paths test that one variable.
import type { Attributes, Context, Span } from '@opentelemetry/api';

export type { Span };

export interface SpanOptions {
  /** The span's parent instead of the active span (work resumed later for a request). */
  parent?: Context;
  /** A trace of its own, whatever is active. */
  root?: boolean;
  /** No span (`work` gets undefined) unless a span is active: a part of a trace, never one alone. */
  withinTrace?: boolean;
}

/** What a request's server span is made from; `traceparent` and `tracestate` only from a trusted peer. */
export interface ServerRequest {
  method: string;
  traceparent?: string;
  tracestate?: string;
}

export interface Tracing {
  /**
   * `work` inside a span, the child of the active span (or as `options` say), ended when `work`
   * returns or its promise settles. A failure marks the span as an error by its name or code only:
   * error messages may quote values.
   */
  inSpan<T>(name: string, attributes: Attributes, work: (span: Span | undefined) => T, options?: SpanOptions): T;
  /** `work` inside the server span of one HTTP request. */
  inServerSpan<T>(request: ServerRequest, work: (span: Span) => Promise<T>): Promise<T>;
  /** Marks `span` as failed, by a kind of error (never a message). */
  fail(span: Span, errorType: string): void;
  activeSpan(): Span | undefined;
  /** The active context, to parent work that resumes later. */
  activeContext(): Context;
  /** `work` in no trace: background work that a request woke is not part of that request. */
  detached<T>(work: () => T): T;
}

/** Set by setup.ts when tracing is configured; undefined otherwise. */
export let tracing: Tracing | undefined;

export function installTracing(value: Tracing | undefined): void {
  tracing = value;
}

/** See Tracing.inSpan; without tracing, `work` itself. */
export function inSpan<T>(name: string, attributes: Attributes, work: (span: Span | undefined) => T, options?: SpanOptions): T {
  return tracing ? tracing.inSpan(name, attributes, work, options) : work(undefined);
}

export function detached<T>(work: () => T): T {
  return tracing ? tracing.detached(work) : work();
}

/** The active context when tracing, to pass later as `parent`. */
export const activeTraceContext = (): Context | undefined => tracing?.activeContext();

/** What a log line names a span by. */
export interface TraceFields {
  traceId: string;
  spanId: string;
}

export function traceFieldsOf(span: Span): TraceFields {
  const { traceId, spanId } = span.spanContext();
  return { traceId, spanId };
}
