// The browser session's cookies and CSRF token (signin.md section 4, Decisions 6 and 7). The session
// cookie is HttpOnly; the CSRF cookie is readable by the page, which sends it back as X-CSRFToken
// (double submit). With a session, the CSRF token is the session's own (derived from its token), so
// a token planted by another site without the session is worth nothing; before signing in (the
// sign-in and reset forms), the form's token must equal the CSRF cookie's. A form's session is one
// that exists: a session cookie naming none (made up, ended, planted by a page of the same site)
// counts as signed out, and its cookie is cleared. Cookies are Secure with `__Host-` names when the
// request arrived over https: as a trusted proxy says (X-Forwarded-Proto), else as SERVER_URL says.
import { randomBytes } from 'node:crypto';
import {
  csrfTokenOf,
  readSession,
  sameToken,
  SESSION_LIFETIME_SECONDS,
  type NewSession,
  type SessionStore,
} from '../domain/auth/sessions.js';
import type { Logger } from '../logging.js';

/** Django's CSRF_COOKIE_AGE: a year. */
const CSRF_COOKIE_SECONDS = 365 * 24 * 3600;
const TOKEN_VALUE = /^[A-Za-z0-9_-]{43}$/;
/** Session cookies of one name a browser may hold at several paths: the first few are looked up. */
const MOST_SESSION_COOKIES = 3;

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

/** `__Host-` names and Secure for a request that arrived over https; plain names on http (a browser would refuse the prefix). */
export function cookieNames(secure: boolean): CookieNames {
  return secure
    ? { session: '__Host-sessionid', csrf: '__Host-csrftoken', attributes: 'Path=/; Secure; SameSite=Lax' }
    : { session: 'sessionid', csrf: 'csrftoken', attributes: 'Path=/; SameSite=Lax' };
}

/**
 * Whether requests arrived over https: what a trusted proxy says (`forwardedScheme`), else SERVER_URL's
 * scheme. The log says once, at the first request where they disagree, that SERVER_URL looks wrong.
 */
export function secureRequestOf(serverUrl: () => string, log: Logger): (forwardedScheme: 'https' | 'http' | undefined) => boolean {
  let warned = false;
  return (forwardedScheme) => {
    const configured = serverUrl().startsWith('https:') ? 'https' : 'http';
    if (forwardedScheme && forwardedScheme !== configured && !warned) {
      warned = true;
      log.warn(
        { serverUrl: serverUrl(), forwardedScheme },
        `SERVER_URL is ${configured} but a trusted proxy forwards ${forwardedScheme} requests: cookies follow the proxy; ` +
          'set SERVER_URL to the address browsers use',
      );
    }
    return (forwardedScheme ?? configured) === 'https';
  };
}

/** The well-formed tokens of the cookies of that name, in the browser's order (the most specific path first). */
function tokensInCookies(cookieHeader: string | null | undefined, name: string): string[] {
  const tokens: string[] = [];
  for (const part of (cookieHeader ?? '').split(';')) {
    const equals = part.indexOf('=');
    if (equals < 0 || part.slice(0, equals).trim() !== name) continue;
    const value = part.slice(equals + 1).trim();
    if (TOKEN_VALUE.test(value)) tokens.push(value);
  }
  return tokens;
}

const tokenCookie = (request: Request, name: string): string | undefined => tokensInCookies(request.headers.get('cookie'), name)[0];

export const sessionTokenOf = (request: Request, secure: boolean) => tokenCookie(request, cookieNames(secure).session);

/** The session token in a Cookie header (a WebSocket handshake's). */
export const sessionTokenInCookies = (cookieHeader: string | undefined, secure: boolean) =>
  tokensInCookies(cookieHeader, cookieNames(secure).session)[0];

/** What a form's CSRF check knows of the browser. */
export interface FormBrowser {
  secure: boolean;
  /** The token of the browser's session, when one of its session cookies names a session that holds. */
  sessionToken: string | undefined;
  /** A session cookie that names no session (it is cleared). */
  staleSession: boolean;
  csrfCookie: string | undefined;
}

/** The browser of a form's request: its session only when the session exists and holds (one lookup per cookie, a few at most). */
export async function formBrowser(request: Request, secure: boolean, store: SessionStore): Promise<FormBrowser> {
  const names = cookieNames(secure);
  const cookieHeader = request.headers.get('cookie');
  const offered = tokensInCookies(cookieHeader, names.session).slice(0, MOST_SESSION_COOKIES);
  let sessionToken: string | undefined;
  for (const token of offered) {
    if (await readSession(store, token)) {
      sessionToken = token;
      break;
    }
  }
  const staleSession = !sessionToken && cookieHeader !== null && new RegExp(`(?:^|;)\\s*${names.session}=`).test(cookieHeader);
  return { secure, sessionToken, staleSession, csrfCookie: tokensInCookies(cookieHeader, names.csrf)[0] };
}

/**
 * The CSRF token a page's form carries and a POST must send back: the session's when the browser has
 * one, else the CSRF cookie's; and the cookies to set: a new CSRF cookie when there is none, the
 * clearing of a stale session cookie.
 */
export function formCsrfToken(browser: FormBrowser): { token: string; cookies: string[] } {
  const cookies = browser.staleSession ? [clearedSessionCookie(browser.secure)] : [];
  if (browser.sessionToken) return { token: csrfTokenOf(browser.sessionToken), cookies };
  if (browser.csrfCookie) return { token: browser.csrfCookie, cookies };
  const token = randomBytes(32).toString('base64url');
  return { token, cookies: [...cookies, csrfCookie(browser.secure, token)] };
}

/** Why a session's request with `submitted` as its CSRF token is refused; null when it matches. */
export function csrfFailure(submitted: string | null | undefined, sessionToken: string): string | null {
  if (!submitted) return CSRF_REASONS.missing;
  return sameToken(submitted, csrfTokenOf(sessionToken)) ? null : CSRF_REASONS.incorrect;
}

/** Why a form POST carrying `submitted` is refused; null when it matches the session's or, signed out, the cookie's token. */
export function formCsrfFailure(browser: FormBrowser, submitted: string | undefined): string | null {
  if (browser.sessionToken) return csrfFailure(submitted, browser.sessionToken);
  if (!browser.csrfCookie) return CSRF_REASONS.noCookie;
  if (!submitted) return CSRF_REASONS.missing;
  return sameToken(submitted, browser.csrfCookie) ? null : CSRF_REASONS.incorrect;
}

export function csrfCookie(secure: boolean, token: string): string {
  const names = cookieNames(secure);
  return `${names.csrf}=${token}; Max-Age=${CSRF_COOKIE_SECONDS}; ${names.attributes}`;
}

const clearedSessionCookie = (secure: boolean) => {
  const names = cookieNames(secure);
  return `${names.session}=; Max-Age=0; ${names.attributes}; HttpOnly`;
};

/** The cookies of a new session: its token (HttpOnly), and its CSRF token (for the page's scripts). */
export function sessionCookies(secure: boolean, session: NewSession): string[] {
  const names = cookieNames(secure);
  const sessionCookie = `${names.session}=${session.token}; Max-Age=${SESSION_LIFETIME_SECONDS}; ${names.attributes}; HttpOnly`;
  return [sessionCookie, csrfCookie(secure, session.csrfToken)];
}

/** Sign-out: the session cookie goes; a new CSRF token replaces the session's. */
export function endedSessionCookies(secure: boolean): string[] {
  return [clearedSessionCookie(secure), csrfCookie(secure, randomBytes(32).toString('base64url'))];
}
