// The browser session's cookies and CSRF token (signin.md section 4 and Decision 6). The session
// cookie is HttpOnly; the CSRF cookie is readable by the page, which sends it back as X-CSRFToken
// (double submit). With a session, the CSRF token is the session's own (derived from its token), so
// a token planted by another site without the session is worth nothing; before signing in (the
// sign-in and reset forms), the form's token must equal the CSRF cookie's.
import { randomBytes } from 'node:crypto';
import { csrfTokenOf, sameToken, SESSION_LIFETIME_SECONDS, type NewSession } from '../domain/auth/sessions.js';

/** Django's CSRF_COOKIE_AGE: a year. */
const CSRF_COOKIE_SECONDS = 365 * 24 * 3600;
const TOKEN_VALUE = /^[A-Za-z0-9_-]{43}$/;

/** Django's reasons (django.middleware.csrf). */
export const CSRF_REASONS = {
  noCookie: 'CSRF cookie not set.',
  missing: 'CSRF token missing.',
  incorrect: 'CSRF token incorrect.',
} as const;

interface CookieNames {
  session: string;
  csrf: string;
  /** The attributes every cookie of this server carries. */
  attributes: string;
}

/** `__Host-` names and Secure when SERVER_URL is https; plain names on http (a browser would refuse the prefix). */
export function cookieNames(serverUrl: string): CookieNames {
  const https = serverUrl.startsWith('https:');
  return https
    ? { session: '__Host-sessionid', csrf: '__Host-csrftoken', attributes: 'Path=/; Secure; SameSite=Lax' }
    : { session: 'sessionid', csrf: 'csrftoken', attributes: 'Path=/; SameSite=Lax' };
}

/** The first cookie of that name with a well-formed token, if any. */
function tokenCookie(request: Request, name: string): string | undefined {
  return tokenInCookies(request.headers.get('cookie'), name);
}

function tokenInCookies(cookieHeader: string | null | undefined, name: string): string | undefined {
  for (const part of (cookieHeader ?? '').split(';')) {
    const equals = part.indexOf('=');
    if (equals < 0 || part.slice(0, equals).trim() !== name) continue;
    const value = part.slice(equals + 1).trim();
    if (TOKEN_VALUE.test(value)) return value;
  }
  return undefined;
}

export const sessionTokenOf = (request: Request, serverUrl: string) => tokenCookie(request, cookieNames(serverUrl).session);

/** The session token in a Cookie header (a WebSocket handshake's). */
export const sessionTokenInCookies = (cookieHeader: string | undefined, serverUrl: string) => tokenInCookies(cookieHeader, cookieNames(serverUrl).session);

/**
 * The CSRF token a page's form carries and a POST must send back: the session's when the browser has
 * a session cookie, else the CSRF cookie's; `fresh` when there is neither (a new cookie must be set).
 */
export function expectedCsrfToken(request: Request, serverUrl: string): { token: string; fresh: boolean } {
  const session = sessionTokenOf(request, serverUrl);
  if (session) return { token: csrfTokenOf(session), fresh: false };
  const cookie = tokenCookie(request, cookieNames(serverUrl).csrf);
  return cookie ? { token: cookie, fresh: false } : { token: randomBytes(32).toString('base64url'), fresh: true };
}

/** Why a session's request with `submitted` as its CSRF token is refused; null when it matches. */
export function csrfFailure(submitted: string | null | undefined, sessionToken: string): string | null {
  if (!submitted) return CSRF_REASONS.missing;
  return sameToken(submitted, csrfTokenOf(sessionToken)) ? null : CSRF_REASONS.incorrect;
}

/** Why a form POST carrying `submitted` is refused; null when it matches the session's or the cookie's token. */
export function formCsrfFailure(request: Request, serverUrl: string, submitted: string | undefined): string | null {
  const session = sessionTokenOf(request, serverUrl);
  if (session) return csrfFailure(submitted, session);
  const cookie = tokenCookie(request, cookieNames(serverUrl).csrf);
  if (!cookie) return CSRF_REASONS.noCookie;
  if (!submitted) return CSRF_REASONS.missing;
  return sameToken(submitted, cookie) ? null : CSRF_REASONS.incorrect;
}

export function csrfCookie(serverUrl: string, token: string): string {
  const names = cookieNames(serverUrl);
  return `${names.csrf}=${token}; Max-Age=${CSRF_COOKIE_SECONDS}; ${names.attributes}`;
}

/** The cookies of a new session: its token (HttpOnly), and its CSRF token (for the page's scripts). */
export function sessionCookies(serverUrl: string, session: NewSession): string[] {
  const names = cookieNames(serverUrl);
  return [`${names.session}=${session.token}; Max-Age=${SESSION_LIFETIME_SECONDS}; ${names.attributes}; HttpOnly`, csrfCookie(serverUrl, session.csrfToken)];
}

/** Sign-out: the session cookie goes; a new CSRF token replaces the session's. */
export function endedSessionCookies(serverUrl: string): string[] {
  const names = cookieNames(serverUrl);
  return [`${names.session}=; Max-Age=0; ${names.attributes}; HttpOnly`, csrfCookie(serverUrl, randomBytes(32).toString('base64url'))];
}
