// Expected failures of mutations come back as data: the domain error rendered as the contract's
// error types, with the same message and code as the REST body.
import {
  DomainError,
  InvitationFailedError as DomainInvitationFailedError,
  type ErrorCode as DomainErrorCode,
  type RestOnlyErrorCode,
  type SubscriptionErrorCode,
} from '../../domain/errors.js';
import { createGraphQLError } from 'graphql-yoga';
import { builder } from '../builder.js';

export const ErrorCode = builder.enumType('ErrorCode', {
  description: "The error codes shared with the REST API's `code` field.",
  values: [
    'BAD_REQUEST',
    'INVITATION_FAILED',
    'UNAUTHORIZED',
    'UNAUTHORIZED_PRINCIPAL',
    'RATE_LIMIT_HIT',
    'REQUEST_VARIABLE_MISSING',
    'REQUEST_CONFUSING_VAR',
    'REALM_UPLOAD_QUOTA',
    'BAD_IMAGE',
  ] as const,
});

export interface InviteeErrorShape {
  email: string;
  reason: string;
  deactivated: boolean;
}

export interface ErrorShape {
  kind: 'BadRequestError' | 'NotFoundError' | 'InvitationFailedError';
  message: string;
  code: DomainErrorCode;
  errors?: InviteeErrorShape[];
  sentInvitations?: boolean;
  dailyLimitReached?: boolean;
  licenseLimitReached?: boolean;
}

export const ErrorInterface = builder.interfaceRef<ErrorShape>('Error').implement({
  description:
    'Every expected failure of a mutation is returned as data, as a type implementing Error. The\nmessage is the same human-readable text the REST API returns in `msg`.',
  fields: (t) => ({
    message: t.exposeString('message'),
    code: t.field({ type: ErrorCode, resolve: (error) => error.code }),
  }),
});

const errorObject = (name: ErrorShape['kind'], description: string) =>
  builder.objectRef<ErrorShape>(name).implement({
    description,
    interfaces: [ErrorInterface],
    isTypeOf: (value) => (value as ErrorShape).kind === name,
  });

export const BadRequestError = errorObject('BadRequestError', 'The request was refused as a whole; nothing was changed.');
export const NotFoundError = errorObject('NotFoundError', 'The named object does not exist (REST answers these with HTTP 404).');

export const InviteeError = builder.objectRef<InviteeErrorShape>('InviteeError').implement({
  description:
    'One address that was not invited, and why. `deactivated` is the third element of the REST\n`errors` entry: true when the address belongs to a deactivated account.',
  fields: (t) => ({
    email: t.exposeString('email'),
    reason: t.exposeString('reason'),
    deactivated: t.exposeBoolean('deactivated'),
  }),
});

export const InvitationFailedError = builder.objectRef<ErrorShape>('InvitationFailedError').implement({
  description: 'Some addresses could not be invited (for example they already have accounts); the others were.',
  interfaces: [ErrorInterface],
  isTypeOf: (value) => (value as ErrorShape).kind === 'InvitationFailedError',
  fields: (t) => ({
    errors: t.field({ type: [InviteeError], resolve: (e) => e.errors ?? [] }),
    sentInvitations: t.boolean({ resolve: (e) => e.sentInvitations ?? false }),
    dailyLimitReached: t.boolean({ resolve: (e) => e.dailyLimitReached ?? false }),
    licenseLimitReached: t.boolean({ resolve: (e) => e.licenseLimitReached ?? false }),
  }),
});

const NOT_RESULT_CODES: readonly string[] = [
  'BAD_EVENT_QUEUE_ID',
  'CSRF_FAILED',
  'EVENTS_PRUNED',
  'TOO_FAR_BEHIND',
  'SERVICE_UNAVAILABLE',
] satisfies (RestOnlyErrorCode | SubscriptionErrorCode)[];
const isResultCode = (code: DomainError['code']): code is DomainErrorCode => !NOT_RESULT_CODES.includes(code);

/** The contract's error object for a domain error. */
export function toErrorShape(error: DomainError): ErrorShape {
  // The REST-only codes (the events API's) and the subscriptions' (request errors) are no result's.
  const base = { message: error.message, code: isResultCode(error.code) ? error.code : 'BAD_REQUEST' };
  if (error instanceof DomainInvitationFailedError) {
    return {
      kind: 'InvitationFailedError',
      ...base,
      errors: error.errors.map(([email, reason, deactivated]) => ({ email, reason, deactivated })),
      sentInvitations: error.sentInvitations,
      dailyLimitReached: error.dailyLimitReached,
      licenseLimitReached: error.licenseLimitReached,
    };
  }
  return { kind: error.notFound ? 'NotFoundError' : 'BadRequestError', ...base };
}

/** Runs a mutation's service call; a domain error becomes its error object, anything else throws. */
export async function asResult<T>(work: () => Promise<T>): Promise<T | ErrorShape> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof DomainError) return toErrorShape(error);
    throw error;
  }
}

/**
 * Runs a query's service call: queries have no error union, so a refusal becomes a GraphQL error
 * carrying the REST message and code. Built with Yoga's own GraphQLError class, so Yoga recognises it
 * as expected (and does not mask it) even when the test runner loads a second copy of graphql.
 */
export async function domainQuery<T>(work: () => Promise<T>, refusesRequest: (error: DomainError) => boolean = () => false): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof DomainError) throw requestError(error, { refusesRequest: refusesRequest(error) });
    throw error;
  }
}

/**
 * A domain error as a GraphQL error (not a result): its message, and its code and data in extensions.
 * One that refuses the whole request (before execution, or a subscription that cannot start) also
 * carries its HTTP status and headers, which Yoga answers with and strips from the body.
 */
export const requestError = (error: DomainError, { refusesRequest = false } = {}) =>
  createGraphQLError(error.message, {
    extensions: { code: error.code, ...error.data, ...(refusesRequest && { http: { status: error.status, headers: error.headers } }) },
  });
