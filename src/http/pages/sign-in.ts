// The sign-in and sign-out pages (signin.md section 4): GET /accounts/login/ shows the form, POST
// signs in (signInWithPassword, the same rules as fetch_api_key) and begins a browser session;
// POST /accounts/logout/ ends it, clearing the cookies even while the database is unavailable (the
// session's end then waits on disk: src/domain/auth/ended-sessions.ts). Every POST carries the CSRF
// token its form was given (and passed the origin check every form POST goes through first:
// src/http/cross-origin.ts).
import type { Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { AppContext } from '../../app-context.js';
import { classifyDatabaseError } from '../../db/outage-errors.js';
import { beginSession, signOut } from '../../domain/auth/sessions.js';
import { signInWithPassword } from '../../domain/auth/sign-in.js';
import { html, type HtmlFragment } from '../../domain/email/html.js';
import { DomainError } from '../../domain/errors.js';
import {
  csrfFailure,
  endedSessionCookies,
  formBrowser,
  formCsrfFailure,
  formCsrfToken,
  sessionCookies,
  sessionTokenOf,
  type FormBrowser,
} from '../cookies.js';
import { errorPage, page, redirect } from './layout.js';

export const LOGIN_PATH = '/accounts/login/';
export const LOGOUT_PATH = '/accounts/logout/';
/** The forms' CSRF field, as Django names it. */
export const CSRF_FIELD = 'csrfmiddlewaretoken';

export const WRONG_PASSWORD_WORDS = 'Please enter a correct email and password. Note that both fields may be case-sensitive.';
const deactivatedWords = (address: string) =>
  `Your account ${address} has been deactivated. Please contact your organization administrator to reactivate it.`;
const tooManyAttemptsWords = (seconds: number) =>
  `You're making too many attempts to sign in. Try again in ${seconds} seconds or contact your organization administrator for help.`;

/** Forms are small: more is refused before it is parsed. */
export const FORM_LIMIT = bodyLimit({
  maxSize: 16 * 1024,
  onError: () => errorPage('Request too large', 'The form data is too large.', 413),
});

/** `next` when it is a path of this server (never another site's, whatever its spelling), else `/`. */
export function localPath(next: string | undefined, serverUrl: string): string {
  if (!next?.startsWith('/') || /[\\\u0000-\u001f\u007f]/.test(next)) return '/';
  const origin = new URL(serverUrl).origin;
  const url = new URL(next, origin);
  return url.origin === origin ? `${url.pathname}${url.search}${url.hash}` : '/';
}

/** The form's fields, as text (a repeated or file field is no text: it reads as empty). */
export async function formFields(c: Context): Promise<Record<string, string>> {
  const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
  return Object.fromEntries(Object.entries(form).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}

/** The page of a CSRF refusal (Django's words), 403. */
export function csrfRefusal(reason: string): Response {
  return errorPage('Forbidden', `CSRF verification failed. Request aborted. (${reason})`, 403);
}

/** Whether the request arrived over https (set by the app's first middleware). */
export const secureRequest = (c: Context): boolean => c.get('secure') ?? false;

/** The CSRF token a new form carries, and the cookies to set (a CSRF cookie when the browser has none yet). */
export async function formCsrf(c: Context, app: AppContext): Promise<{ token: string; cookies: string[] }> {
  return formCsrfToken(await formBrowser(c.req.raw, secureRequest(c), app));
}

type CheckedForm = { fields: Record<string, string>; browser: FormBrowser };

/** A form POST's fields and browser, or the 403 page when it lacks the CSRF token its form was given. */
export async function checkedForm(c: Context, app: AppContext): Promise<CheckedForm | Response> {
  const fields = await formFields(c);
  const browser = await formBrowser(c.req.raw, secureRequest(c), app);
  const refused = formCsrfFailure(browser, fields[CSRF_FIELD]);
  return refused ? csrfRefusal(refused) : { fields, browser };
}

/**
 * Begins a browser session for a user who just proved who they are (the sign-in form, an accepted
 * invitation). A session the browser held before (perhaps someone else's) ends: one session per
 * sign-in. Returns the cookies to set and the session's CSRF token (for the next page's forms).
 */
export async function beginBrowserSession(
  app: AppContext,
  browser: FormBrowser,
  userId: number,
): Promise<{ cookies: string[]; csrfToken: string }> {
  const session = await beginSession(app, userId, browser.sessionToken);
  return { cookies: sessionCookies(browser.secure, session), csrfToken: session.csrfToken };
}

interface LoginForm {
  username: string;
  realm: string;
  next: string;
  problem?: string;
}

function loginPage(csrf: { token: string; cookies: string[] }, form: LoginForm, status = 200): Response {
  const problem: HtmlFragment | string = form.problem ? html`<p class="error" id="error">${form.problem}</p>` : '';
  const body = html`<h1>Sign in</h1>
${problem}
<form method="post" action="${LOGIN_PATH}">
<input type="hidden" name="${CSRF_FIELD}" value="${csrf.token}">
<input type="hidden" name="next" value="${form.next}">
<label for="username">Email</label>
<input id="username" name="username" type="email" value="${form.username}" required maxlength="254" autocomplete="username" autofocus>
<label for="password" style="margin-top: 1rem">Password</label>
<input id="password" name="password" type="password" required maxlength="1000" autocomplete="current-password">
<details${form.realm ? html` open` : ''} style="margin-top: 1rem"><summary>Several organizations with this address?</summary>
<label for="realm" style="margin-top: .5rem">Organization ID</label>
<input id="realm" name="realm" value="${form.realm}" maxlength="40" autocomplete="organization">
</details>
<button type="submit" id="submit">Sign in</button>
</form>
<p><a href="/accounts/password/reset/" id="forgot">Forgot your password?</a></p>`;
  return page('Sign in', body, status, csrf.cookies);
}

/** The reference's words for a failed sign-in. */
function failureWords(error: DomainError, username: string): string {
  if (error.code === 'AUTHENTICATION_FAILED') return WRONG_PASSWORD_WORDS;
  if (error.code === 'USER_DEACTIVATED') return deactivatedWords(username);
  if (error.code === 'RATE_LIMIT_HIT') return tooManyAttemptsWords(Math.max(1, Math.ceil(Number(error.data['retry-after'] ?? 1))));
  return error.message;
}

async function submitLogin(app: AppContext, c: Context): Promise<Response> {
  const serverUrl = app.config.serverUrl;
  const checked = await checkedForm(c, app);
  if (checked instanceof Response) return checked;
  const { fields, browser } = checked;
  const form: LoginForm = { username: fields.username ?? '', realm: fields.realm ?? '', next: fields.next ?? '' };
  try {
    const actor = await signInWithPassword(app, {
      username: form.username.trim(),
      password: fields.password ?? '',
      ...(form.realm && { realm: form.realm }),
      clientAddress: c.get('clientAddress') ?? '',
      rateLimits: c.get('rateLimits'),
    });
    const session = await beginBrowserSession(app, browser, actor.id);
    return redirect(localPath(form.next, serverUrl), session.cookies);
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    // A busy server's refusal keeps its status (503, Retry-After); every other failure is the form again.
    const status = error.status >= 500 ? error.status : 200;
    const response = loginPage(formCsrfToken(browser), { ...form, problem: failureWords(error, form.username.trim()) }, status);
    for (const [name, value] of Object.entries(status >= 500 ? error.headers : {})) response.headers.set(name, value);
    return response;
  }
}

async function submitLogout(app: AppContext, database: DatabaseState, c: Context): Promise<Response> {
  const secure = secureRequest(c);
  const checked = await checkedSignOut(app, database, c);
  if (checked instanceof Response) return checked;
  // Only a session that exists (its CSRF token checked) ends: a made-up cookie's form ends nothing.
  // Without the database, the session the cookie names is ended on disk (signOut) until it answers.
  if (checked.sessionToken) await signOut(app, checked.sessionToken, database.down);
  return redirect(LOGIN_PATH, endedSessionCookies(secure));
}

/**
 * A sign-out's form checked against the sessions that exist, or, while the database cannot say
 * whether its session exists (known down, or failing now), against the cookie alone.
 */
async function checkedSignOut(app: AppContext, database: DatabaseState, c: Context): Promise<{ sessionToken?: string } | Response> {
  if (!database.down) {
    try {
      const checked = await checkedForm(c, app);
      return checked instanceof Response || !('browser' in checked) ? checked : { sessionToken: checked.browser.sessionToken };
    } catch (error) {
      if (classifyDatabaseError(error) === null) throw error;
    }
  }
  return checkedAgainstCookie(c);
}

/**
 * The token must be the one the cookie's session would have (a made-up session's end on disk costs
 * nothing).
 */
async function checkedAgainstCookie(c: Context): Promise<{ sessionToken?: string } | Response> {
  const fields = await formFields(c);
  const sessionToken = sessionTokenOf(c.req.raw, secureRequest(c));
  const refused = sessionToken ? csrfFailure(fields[CSRF_FIELD], sessionToken) : null;
  return refused ? csrfRefusal(refused) : { sessionToken };
}

const postOnly = () => {
  const response = errorPage('Method not allowed', 'Sign out with the form’s button (POST).', 405);
  response.headers.set('Allow', 'POST');
  return response;
};

/** Whether the database is known to be unavailable (src/http/database-status.ts). */
export interface DatabaseState {
  readonly down: boolean;
}

export function mountSignInPages(http: Hono, app: AppContext, database: DatabaseState): void {
  http.get(LOGIN_PATH, async (c) => loginPage(await formCsrf(c, app), { username: '', realm: '', next: c.req.query('next') ?? '' }));
  http.post(LOGIN_PATH, FORM_LIMIT, (c) => submitLogin(app, c));
  http.post(LOGOUT_PATH, FORM_LIMIT, (c) => submitLogout(app, database, c));
  http.get(LOGOUT_PATH, postOnly);
  // Where the API door sends a browser that is not signed in (the reference's /login/).
  http.get('/login/', (c) => redirect(`${LOGIN_PATH}${new URL(c.req.url).search}`));
}
