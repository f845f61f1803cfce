// The password reset pages (signin.md section 5): the request form, whose POST always goes to the same
// "check your e-mail" page whatever the address; and the link's page, which asks for the new password
// twice and then links to the sign-in page.
import type { Context, Hono } from 'hono';
import type { AppContext } from '../../app-context.js';
import {
  completePasswordReset,
  INVALID_LINK,
  requestPasswordReset,
  resetLinkAccount,
  type ResetLink,
} from '../../domain/auth/password-reset.js';
import { html } from '../../domain/email/html.js';
import { DomainError } from '../../domain/errors.js';
import { addressLimitRefusal } from './address-limit.js';
import { page, redirect } from './layout.js';
import { checkedForm, CSRF_FIELD, FORM_LIMIT, formCsrf, LOGIN_PATH } from './sign-in.js';

export const RESET_PATH = '/accounts/password/reset/';
export const RESET_DONE_PATH = '/accounts/password/reset/done/';
/**
 * The done page's route: a fixed `done/` beside the link's `:uid/:token/` is refused by hono's
 * fastest router (RegExpRouter), and the app then matched every request with its slower TrieRouter.
 */
const RESET_PAGE_PATH = '/accounts/password/reset/:page/';
/** The link's path; its segments are secrets (logged as this route). */
export const RESET_LINK_PATH = '/accounts/password/reset/:uid/:token/';

function requestPage(csrf: { token: string; cookies: string[] }): Response {
  const body = html`<h1>Reset your password</h1>
<p>Enter your e-mail address: we will send you a link to choose a new password.</p>
<form method="post" action="${RESET_PATH}">
<input type="hidden" name="${CSRF_FIELD}" value="${csrf.token}">
<label for="email">Email</label>
<input id="email" name="email" type="email" required maxlength="254" autocomplete="email" autofocus>
<button type="submit" id="submit">Send the link</button>
</form>
<p><a href="${LOGIN_PATH}">Back to sign in</a></p>`;
  return page('Reset your password', body, 200, csrf.cookies);
}

const donePage = () =>
  page(
    'Check your e-mail',
    html`<h1>Check your e-mail</h1>
<p id="done">If the address you entered can receive e-mail, a message is on its way: follow its instructions to finish resetting your password.</p>
<p><a href="${LOGIN_PATH}">Back to sign in</a></p>`,
  );

function newPasswordPage(csrf: { token: string; cookies: string[] }, email: string, problem?: string): Response {
  const body = html`<h1>Choose a new password</h1>
<p>For <strong id="account">${email}</strong>.</p>
${problem ? html`<p class="error" id="error">${problem}</p>` : ''}
<form method="post">
<input type="hidden" name="${CSRF_FIELD}" value="${csrf.token}">
<label for="new_password1">New password</label>
<input id="new_password1" name="new_password1" type="password" required maxlength="100" autocomplete="new-password" autofocus>
<label for="new_password2" style="margin-top: 1rem">New password again</label>
<input id="new_password2" name="new_password2" type="password" required maxlength="100" autocomplete="new-password">
<button type="submit" id="submit">Set the password</button>
</form>`;
  return page('Choose a new password', body, 200, csrf.cookies);
}

const invalidLinkPage = () =>
  page(
    'Password reset unsuccessful',
    html`<h1>Password reset unsuccessful</h1>\n<p class="error" id="error">${INVALID_LINK}</p>\n<p><a href="${RESET_PATH}">Request a new link</a></p>`,
    404,
  );

const completePage = () =>
  page(
    'Password reset complete',
    html`<h1>Password reset complete</h1>\n<p id="complete">Your password has been set. You may go ahead and <a href="${LOGIN_PATH}" id="login">sign in</a> now.</p>`,
  );

const linkOf = (c: Context): ResetLink => ({ uid: c.req.param('uid') ?? '', token: c.req.param('token') ?? '' });

async function submitRequest(app: AppContext, c: Context): Promise<Response> {
  const limited = await addressLimitRefusal(app, c);
  if (limited) return limited;
  const checked = await checkedForm(c, app);
  if (checked instanceof Response) return checked;
  const { fields } = checked;
  await requestPasswordReset(app, { email: fields.email ?? '', clientAddress: c.get('clientAddress') ?? '' });
  return redirect(RESET_DONE_PATH);
}

async function showLink(app: AppContext, c: Context): Promise<Response> {
  const account = await resetLinkAccount(app, linkOf(c));
  return account ? newPasswordPage(await formCsrf(c, app), account.email) : invalidLinkPage();
}

async function submitNewPassword(app: AppContext, c: Context): Promise<Response> {
  const limited = await addressLimitRefusal(app, c);
  if (limited) return limited;
  const checked = await checkedForm(c, app);
  if (checked instanceof Response) return checked;
  const { fields } = checked;
  const link = linkOf(c);
  try {
    await completePasswordReset(app, link, { password1: fields.new_password1 ?? '', password2: fields.new_password2 ?? '' });
    return completePage();
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    if (error.notFound) return invalidLinkPage();
    const account = await resetLinkAccount(app, link);
    return account ? newPasswordPage(await formCsrf(c, app), account.email, error.message) : invalidLinkPage();
  }
}

export function mountPasswordResetPages(http: Hono, app: AppContext): void {
  http.get(RESET_PATH, async (c) => requestPage(await formCsrf(c, app)));
  http.post(RESET_PATH, FORM_LIMIT, (c) => submitRequest(app, c));
  http.get(RESET_PAGE_PATH, (c) => (c.req.path === RESET_DONE_PATH ? donePage() : c.notFound()));
  http.get(RESET_LINK_PATH, (c) => showLink(app, c));
  http.post(RESET_LINK_PATH, FORM_LIMIT, (c) => submitNewPassword(app, c));
}
