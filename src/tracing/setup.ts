// Traces with OpenTelemetry, exported over OTLP/HTTP (JSON). src/server.ts imports this module only
// when an OTLP endpoint is configured (config.ts: `tracing`); the SDK reads the standard OTEL_*
// variables itself (endpoints, headers, service name and resource attributes, sampler, batch delays).
// Here: the provider and exporter, registered globally (an AsyncLocalStorage carries the active span),
// and the Tracing that spans.ts hands to the layers.
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Attributes, Context, Span, Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_ERROR_TYPE, ATTR_HTTP_REQUEST_METHOD, ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type pg from 'pg';
import { installTracing, type ServerRequest, type SpanOptions, type Tracing } from './spans.js';
import { traceStatements } from './statements.js';

/** OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) overrides it. */
const SERVICE_NAME = 'teamchat-org-admin';

export interface RunningTracing {
  /** A span per statement sent over this pool's connections (Prisma's and sql.ts's alike). */
  tracePool(pool: pg.Pool): void;
  /** Exports what is pending and stops tracing. */
  shutdown(): Promise<void>;
}

export function startTracing(): RunningTracing {
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: SERVICE_NAME }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
  provider.register();
  const tracer = provider.getTracer(SERVICE_NAME);
  installTracing(tracingWith(tracer));
  return {
    tracePool: (pool) => traceStatements(pool, tracer),
    async shutdown() {
      installTracing(undefined);
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof (value as PromiseLike<unknown> | undefined)?.then === 'function';

/** An error's kind, never its message (which may quote values): a SQLSTATE or other code, else its class. */
function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && code) return code;
  return error instanceof Error ? error.name : typeof error;
}

function fail(span: Span, type: string): void {
  span.setAttribute(ATTR_ERROR_TYPE, type);
  span.setStatus({ code: SpanStatusCode.ERROR });
}

const failed = (span: Span, error: unknown) => fail(span, errorType(error));

/** Ends `span` when `work` returns, or when the promise it returns settles. */
function endedAfter<T>(span: Span, work: () => T): T {
  let result: T;
  try {
    result = work();
  } catch (error) {
    failed(span, error);
    span.end();
    throw error;
  }
  if (!isThenable(result)) {
    span.end();
    return result;
  }
  return result.then(
    (value) => {
      span.end();
      return value;
    },
    (error: unknown) => {
      failed(span, error);
      span.end();
      throw error;
    },
  ) as T;
}

function tracingWith(tracer: Tracer): Tracing {
  const inSpanOf = <T>(name: string, attributes: Attributes, kind: SpanKind, parent: Context, work: (span: Span) => T): T => {
    const span = tracer.startSpan(name, { attributes, kind }, parent);
    return context.with(trace.setSpan(parent, span), () => endedAfter(span, () => work(span)));
  };
  return {
    inSpan(name, attributes, work, options: SpanOptions = {}) {
      if (options.withinTrace && !trace.getActiveSpan()) return work(undefined);
      return inSpanOf(name, attributes, SpanKind.INTERNAL, options.root ? ROOT_CONTEXT : (options.parent ?? context.active()), work);
    },
    inServerSpan(request: ServerRequest, work) {
      const carrier: Record<string, string> = {};
      if (request.traceparent) carrier.traceparent = request.traceparent;
      if (request.tracestate) carrier.tracestate = request.tracestate;
      const parent = request.traceparent ? propagation.extract(ROOT_CONTEXT, carrier) : ROOT_CONTEXT;
      return inSpanOf(request.method, { [ATTR_HTTP_REQUEST_METHOD]: request.method }, SpanKind.SERVER, parent, work);
    },
    fail,
    activeSpan: () => trace.getActiveSpan(),
    activeContext: () => context.active(),
    detached: (work) => context.with(ROOT_CONTEXT, work),
  };
}
