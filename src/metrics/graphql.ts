// GraphQL operations by name and result, and errors by code, through Yoga's Prometheus plugin (which
// wraps @envelop/prometheus) on the server's own registry. Its per-phase timings, per-field
// resolver timings, deprecation walk (a visit of every document), summary and HTTP histogram (whose
// `url` label holds the raw URL, GET queries included) are off: requests are timed by
// src/metrics/http.ts, and each request costs a few observations here, not work per field or row.
import { createCounter, createHistogram, usePrometheus } from '@graphql-yoga/plugin-prometheus';
import { GraphQLError } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import { LATENCY_BUCKETS, type ServerMetrics } from './metrics.js';

/** Operation names are the client's to choose: past this many different ones, the rest count as OTHER_NAME. */
export const MAX_OPERATION_NAMES = 100;
export const OTHER_NAME = '(other)';

type OperationResult = 'ok' | 'error';

interface FillParams {
  operationName?: string;
  operationType?: string;
  errorPhase?: string;
  error?: unknown;
}

/** The first `max` values seen pass; later new ones become OTHER_NAME. */
function boundedValues(max: number): (value: string) => string {
  const seen = new Set<string>();
  return (value) => {
    if (seen.has(value)) return value;
    if (seen.size >= max) return OTHER_NAME;
    seen.add(value);
    return value;
  };
}

const PHASE_CODES: Record<string, string> = { parse: 'GRAPHQL_PARSE_FAILED', validate: 'GRAPHQL_VALIDATION_FAILED' };

/**
 * An error the execution reported about the request itself (a variable missing, or not of its type):
 * no code of ours threw it (no originalError) and it belongs to no field (no path).
 */
const isRequestError = (error: unknown) => error instanceof GraphQLError && !error.originalError && !error.path;

/**
 * The error's extensions.code; else its phase's, or BAD_USER_INPUT for the request's own errors found
 * while executing. Only unexpected errors (masked in the answer) are INTERNAL_SERVER_ERROR.
 */
function codeOf(params: FillParams): string {
  const code = (params.error as GraphQLError | undefined)?.extensions?.code;
  if (typeof code === 'string') return code;
  const phaseCode = PHASE_CODES[params.errorPhase ?? ''];
  if (phaseCode) return phaseCode;
  return params.errorPhase === 'execute' && isRequestError(params.error) ? 'BAD_USER_INPUT' : 'INTERNAL_SERVER_ERROR';
}

/**
 * The result of each execution, for the plugin's labels: it must come before the plugin (and before
 * any plugin that stops execution early: the authentication's refusal is a result with errors).
 */
function executionResults(): { plugin: Plugin; resultOf: (context: unknown) => OperationResult } {
  const results = new WeakMap<object, OperationResult>();
  const plugin: Plugin = {
    onExecute: ({ args }) => ({
      onExecuteDone: ({ result }) => {
        if (!isAsyncIterable(result)) results.set(args.contextValue as object, result.errors?.length ? 'error' : 'ok');
      },
    }),
  };
  return { plugin, resultOf: (context) => results.get(context as object) ?? 'ok' };
}

export function graphqlMetrics(metrics: ServerMetrics): Plugin[] {
  const { registry } = metrics;
  const operationName = boundedValues(MAX_OPERATION_NAMES);
  const operation = (params: FillParams) => ({
    operationName: operationName(params.operationName ?? 'Anonymous'),
    operationType: params.operationType ?? 'unknown',
  });
  const { plugin: results, resultOf } = executionResults();
  const operationLabels = ['operationName', 'operationType', 'result'] as const;
  const withResult = (params: FillParams, context: unknown) => ({ ...operation(params), result: resultOf(context) });
  const prometheus = usePrometheus({
    registry,
    endpoint: false,
    metrics: {
      graphql_envelop_request: createCounter({
        registry,
        counter: {
          name: 'graphql_envelop_request',
          help: 'GraphQL operations executed, by name, type and result (error: the answer has errors)',
          labelNames: operationLabels,
        },
        fillLabelsFn: withResult,
        phases: ['execute'],
      }),
      graphql_envelop_request_duration: createHistogram({
        registry,
        histogram: {
          name: 'graphql_envelop_request_duration',
          help: 'Time of GraphQL executions, by name, type and result',
          labelNames: operationLabels,
          buckets: LATENCY_BUCKETS,
        },
        fillLabelsFn: withResult,
        phases: ['execute'],
      }),
      graphql_envelop_error_result: createCounter({
        registry,
        counter: {
          name: 'graphql_envelop_error_result',
          help: 'GraphQL errors by operation, phase (parse, validate, execute) and extensions.code',
          labelNames: ['operationName', 'operationType', 'phase', 'code'],
        },
        fillLabelsFn: (params: FillParams) => ({ ...operation(params), phase: params.errorPhase ?? 'execute', code: codeOf(params) }),
        phases: ['parse', 'validate', 'context', 'execute'],
      }),
      graphql_envelop_request_time_summary: false,
      graphql_envelop_phase_parse: false,
      graphql_envelop_phase_validate: false,
      graphql_envelop_phase_context: false,
      graphql_envelop_phase_execute: false,
      graphql_envelop_phase_subscribe: false,
      graphql_envelop_execute_resolver: false,
      graphql_envelop_deprecated_field: false,
      graphql_envelop_schema_change: false,
      graphql_yoga_http_duration: false,
    },
  }) as Plugin;
  return [results, prometheus];
}
