// The reference's JSON envelope: compact JSON with a trailing newline, `result` and `msg` first,
// data fields next, and `code` last on errors; never-cache headers on every response.
import { InvitationFailedError, type DomainError } from '../domain/errors.js';
import { sentBody } from '../http/response-body.js';

const NEVER_CACHE: Record<string, string> = {
  'Cache-Control': 'max-age=0, no-cache, no-store, must-revalidate, private',
};

export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  const sent = sentBody(`${JSON.stringify(body)}\n`);
  return new Response(sent, {
    status,
    // The length lets compression skip small bodies (src/http/app.ts).
    headers: {
      'Content-Type': 'application/json',
      'Content-Length': String(typeof sent === 'string' ? Buffer.byteLength(sent) : sent.byteLength),
      Expires: new Date().toUTCString(),
      ...NEVER_CACHE,
      ...headers,
    },
  });
}

export function successResponse(data: Record<string, unknown> = {}, ignoredParameters: string[] = []): Response {
  const body: Record<string, unknown> = { result: 'success', msg: '', ...data };
  if (ignoredParameters.length > 0) body.ignored_parameters_unsupported = ignoredParameters;
  return jsonResponse(body);
}

export function errorResponse(error: DomainError): Response {
  return jsonResponse({ result: 'error', msg: error.message, ...errorFields(error), code: error.code }, error.status, error.headers);
}

/** The error's fields beside `msg` and `code`; INVITATION_FAILED's with the reference's keys, in its order. */
function errorFields(error: DomainError): Record<string, unknown> {
  if (!(error instanceof InvitationFailedError)) return error.data;
  return {
    errors: error.errors,
    sent_invitations: error.sentInvitations,
    license_limit_reached: error.licenseLimitReached,
    daily_limit_reached: error.dailyLimitReached,
  };
}
