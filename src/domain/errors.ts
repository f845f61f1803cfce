// The error class of the domain layer: a message for people, a code for programs, the HTTP status
// the REST door answers with, and extra fields that travel with the error. Both doors render it, and
// its one subclass, INVITATION_FAILED, whose typed fields each door renders in its own case.

export type ErrorCode =
  | 'BAD_REQUEST'
  | 'REQUEST_VARIABLE_MISSING'
  | 'REQUEST_CONFUSING_VAR'
  | 'INVITATION_FAILED'
  | 'UNAUTHORIZED'
  | 'UNAUTHORIZED_PRINCIPAL'
  | 'RATE_LIMIT_HIT'
  | 'REALM_UPLOAD_QUOTA'
  | 'BAD_IMAGE';

/** Codes of the REST API only (GraphQL has no queues, and its own CSRF rule). */
export type RestOnlyErrorCode = 'BAD_EVENT_QUEUE_ID' | 'CSRF_FAILED';

/** Codes of signing in (signin.md section 1), which only the REST door and the sign-in pages offer. */
export type SignInErrorCode = 'AUTHENTICATION_FAILED' | 'USER_DEACTIVATED' | 'REALM_DEACTIVATED';

/** Codes that end a GraphQL subscription (src/domain/events/streams.ts). */
export type SubscriptionErrorCode = 'EVENTS_PRUNED' | 'TOO_FAR_BEHIND' | 'SERVICE_UNAVAILABLE';

export interface DomainErrorOptions {
  code?: ErrorCode | RestOnlyErrorCode | SubscriptionErrorCode | SignInErrorCode;
  status?: number;
  /** Extra response fields, rendered before `code` in REST bodies. */
  data?: Record<string, unknown>;
  headers?: Record<string, string>;
  /** The named object does not exist (GraphQL: NotFoundError). */
  notFound?: boolean;
}

export class DomainError extends Error {
  readonly code: ErrorCode | RestOnlyErrorCode | SubscriptionErrorCode | SignInErrorCode;
  readonly status: number;
  readonly data: Record<string, unknown>;
  readonly headers: Record<string, string>;
  readonly notFound: boolean;

  constructor(message: string, options: DomainErrorOptions = {}) {
    super(message);
    this.name = 'DomainError';
    this.code = options.code ?? 'BAD_REQUEST';
    this.status = options.status ?? 400;
    this.data = options.data ?? {};
    this.headers = options.headers ?? {};
    this.notFound = options.notFound ?? false;
  }
}

export const badRequest = (message: string, data?: Record<string, unknown>) => new DomainError(message, { data });

export const unauthorized = (message: string) =>
  new DomainError(message, {
    code: 'UNAUTHORIZED',
    status: 401,
    headers: { 'WWW-Authenticate': 'Basic realm="zulip"' },
  });

/** An address that was not invited: the address, why, and whether it belongs to a deactivated account. */
export type InviteeError = [email: string, reason: string, deactivated: boolean];

export interface InvitationFailure {
  errors?: InviteeError[];
  sentInvitations?: boolean;
  licenseLimitReached?: boolean;
  dailyLimitReached?: boolean;
}

/**
 * The reference's INVITATION_FAILED: nobody, or not everybody, was invited. Each door renders the
 * fields in its own case (REST: the reference's snake_case keys, in its order).
 */
export class InvitationFailedError extends DomainError {
  readonly errors: InviteeError[];
  readonly sentInvitations: boolean;
  readonly licenseLimitReached: boolean;
  readonly dailyLimitReached: boolean;

  constructor(message: string, failure: InvitationFailure = {}) {
    super(message, { code: 'INVITATION_FAILED' });
    this.name = 'InvitationFailedError';
    this.errors = failure.errors ?? [];
    this.sentInvitations = failure.sentInvitations ?? false;
    this.licenseLimitReached = failure.licenseLimitReached ?? false;
    this.dailyLimitReached = failure.dailyLimitReached ?? false;
  }
}
