// The invitation link's pages: GET shows the sign-up form (or why the link cannot be used), POST
// (CSRF-checked as the sign-in form) creates the account, signs the person in as the sign-in form
// does, and shows its API key once, with links to GraphiQL and a sign-out button.
import type { Context, Hono } from 'hono';
import type { AppContext } from '../../app-context.js';
import { html } from '../../domain/email/html.js';
import { DomainError } from '../../domain/errors.js';
import { addressLimitRefusal } from './address-limit.js';
import { acceptInvitation, inspectInvitation, type AcceptedAccount, type InvitationSummary } from '../../domain/invitations/accept.js';
import { WEAK_PASSWORD } from '../../domain/auth/passwords.js';
import { ROLE } from '../../domain/users/roles.js';
import { formCsrfToken } from '../cookies.js';
import { errorPage, page } from './layout.js';
import { beginBrowserSession, checkedForm, CSRF_FIELD, FORM_LIMIT, formCsrf, LOGOUT_PATH } from './sign-in.js';

export const ACCEPTANCE_PATH = '/accounts/do_confirm/:key';

const ROLE_NAMES: Record<number, string> = {
  [ROLE.OWNER]: 'organization owner',
  [ROLE.ADMINISTRATOR]: 'organization administrator',
  [ROLE.MODERATOR]: 'moderator',
  [ROLE.MEMBER]: 'member',
  [ROLE.GUEST]: 'guest',
};

/** A weak password shows the form again with 200, as the reference's registration form does; name problems answer 400. */
function formPage(csrf: { token: string; cookies: string[] }, invitation: InvitationSummary, entered = '', problem?: string): Response {
  const body = html`<h1>Join ${invitation.organizationName}</h1>
<p>${invitation.referrerName} invited <strong id="invitee">${invitation.email}</strong> to join ${invitation.organizationName} as ${ROLE_NAMES[invitation.invitedAs] ?? 'member'}.</p>
${problem ? html`<p class="error" id="error">${problem}</p>` : ''}
<form method="post">
<input type="hidden" name="${CSRF_FIELD}" value="${csrf.token}">
<label for="full_name">Full name</label>
<input id="full_name" name="full_name" value="${entered}" required minlength="2" maxlength="100" autocomplete="name">
<label for="password">Password</label>
<input id="password" name="password" type="password" required minlength="6" maxlength="100" autocomplete="new-password">
<button type="submit" id="submit">Create account</button>
</form>`;
  return page(`Join ${invitation.organizationName}`, body, problem && problem !== WEAK_PASSWORD ? 400 : 200, csrf.cookies);
}

/** The new account's page: its API key (shown this once), GraphiQL, and sign-out as GraphiQL's bar offers it. */
function accountPage(account: AcceptedAccount, serverUrl: string, session: { cookies: string[]; csrfToken: string }): Response {
  const body = html`<h1>Welcome to ${account.organizationName}, ${account.fullName}!</h1>
<p>Your account <code id="email">${account.email}</code> is ready, and you are signed in.</p>
<p><a href="/graphql" id="graphiql">Explore the GraphQL API in GraphiQL</a></p>
<p>Your API key (keep it safe; <code>POST /api/v1/fetch_api_key</code> gives it again for your password):</p>
<p><code id="api-key">${account.apiKey}</code></p>
<p>Use your e-mail address and this key for HTTP Basic authentication with the GraphQL API at
<code>${serverUrl}/graphql</code> and the REST API at <code>${serverUrl}/api/v1</code>.</p>
<form method="post" action="${LOGOUT_PATH}">
<input type="hidden" name="${CSRF_FIELD}" value="${session.csrfToken}">
<button type="submit" id="sign-out">Sign out</button>
</form>`;
  return page(`Welcome to ${account.organizationName}`, body, 200, session.cookies);
}

function refusalPage(error: unknown): Response {
  if (error instanceof DomainError) return errorPage('This invitation cannot be used', error.message, error.status);
  throw error;
}

async function showForm(app: AppContext, c: Context): Promise<Response> {
  try {
    return formPage(await formCsrf(c, app), await inspectInvitation(app, c.req.param('key')!));
  } catch (error) {
    return refusalPage(error);
  }
}

async function submitForm(app: AppContext, c: Context): Promise<Response> {
  const limited = await addressLimitRefusal(app, c);
  if (limited) return limited;
  const key = c.req.param('key')!;
  const checked = await checkedForm(c, app);
  if (checked instanceof Response) return checked;
  const { fields, browser } = checked;
  const fullName = fields.full_name ?? '';
  const password = fields.password ?? '';
  let account: AcceptedAccount;
  try {
    account = await acceptInvitation(app, key, { fullName, password });
  } catch (error) {
    // Name and password problems (400) come back on the form, unless the link itself is unusable: that gets its own page.
    if (!(error instanceof DomainError && error.status === 400)) return refusalPage(error);
    try {
      return formPage(formCsrfToken(browser), await inspectInvitation(app, key), fullName, error.message);
    } catch (refusal) {
      return refusalPage(refusal);
    }
  }
  return accountPage(account, app.config.serverUrl, await beginBrowserSession(app, browser, account.userId));
}

export function mountAcceptancePages(http: Hono, app: AppContext): void {
  http.get(ACCEPTANCE_PATH, (c) => showForm(app, c));
  http.post(ACCEPTANCE_PATH, FORM_LIMIT, (c) => submitForm(app, c));
}
