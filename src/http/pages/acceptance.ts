// The invitation link's pages: GET shows the sign-up form (or why the link cannot be used), POST
// creates the account and shows its API key once.
import type { Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { AppContext } from '../../app-context.js';
import { html } from '../../domain/email/html.js';
import { DomainError } from '../../domain/errors.js';
import { addressLimitRefusal } from './address-limit.js';
import { acceptInvitation, inspectInvitation, type AcceptedAccount, type InvitationSummary } from '../../domain/invitations/accept.js';
import { WEAK_PASSWORD } from '../../domain/auth/passwords.js';
import { ROLE } from '../../domain/users/roles.js';
import { errorPage, page } from './layout.js';

export const ACCEPTANCE_PATH = '/accounts/do_confirm/:key';

const ROLE_NAMES: Record<number, string> = {
  [ROLE.OWNER]: 'organization owner',
  [ROLE.ADMINISTRATOR]: 'organization administrator',
  [ROLE.MODERATOR]: 'moderator',
  [ROLE.MEMBER]: 'member',
  [ROLE.GUEST]: 'guest',
};

/** A weak password shows the form again with 200, as the reference's registration form does; name problems answer 400. */
function formPage(invitation: InvitationSummary, entered = '', problem?: string): Response {
  const body = html`<h1>Join ${invitation.organizationName}</h1>
<p>${invitation.referrerName} invited <strong id="invitee">${invitation.email}</strong> to join ${invitation.organizationName} as ${ROLE_NAMES[invitation.invitedAs] ?? 'member'}.</p>
${problem ? html`<p class="error" id="error">${problem}</p>` : ''}
<form method="post">
<label for="full_name">Full name</label>
<input id="full_name" name="full_name" value="${entered}" required minlength="2" maxlength="100" autocomplete="name">
<label for="password">Password</label>
<input id="password" name="password" type="password" required minlength="6" maxlength="100" autocomplete="new-password">
<button type="submit" id="submit">Create account</button>
</form>`;
  return page(`Join ${invitation.organizationName}`, body, problem && problem !== WEAK_PASSWORD ? 400 : 200);
}

function accountPage(account: AcceptedAccount, serverUrl: string): Response {
  const body = html`<h1>Welcome to ${account.organizationName}, ${account.fullName}!</h1>
<p>Your account <code id="email">${account.email}</code> is ready.</p>
<p>Your API key (keep it safe; <code>POST /api/v1/fetch_api_key</code> gives it again for your password):</p>
<p><code id="api-key">${account.apiKey}</code></p>
<p>Use your e-mail address and this key for HTTP Basic authentication with the GraphQL API at
<code>${serverUrl}/graphql</code> and the REST API at <code>${serverUrl}/api/v1</code>.</p>`;
  return page(`Welcome to ${account.organizationName}`, body);
}

function refusalPage(error: unknown): Response {
  if (error instanceof DomainError) return errorPage('This invitation cannot be used', error.message, error.status);
  throw error;
}

async function showForm(app: AppContext, c: Context): Promise<Response> {
  try {
    return formPage(await inspectInvitation(app.prisma, c.req.param('key')!));
  } catch (error) {
    return refusalPage(error);
  }
}

async function submitForm(app: AppContext, c: Context): Promise<Response> {
  const limited = await addressLimitRefusal(app, c);
  if (limited) return limited;
  const key = c.req.param('key')!;
  const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
  const fullName = typeof form.full_name === 'string' ? form.full_name : '';
  const password = typeof form.password === 'string' ? form.password : '';
  try {
    return accountPage(await acceptInvitation(app, key, { fullName, password }), app.config.serverUrl);
  } catch (error) {
    // Name and password problems (400) come back on the form, unless the link itself is unusable: that gets its own page.
    if (!(error instanceof DomainError && error.status === 400)) return refusalPage(error);
    try {
      return formPage(await inspectInvitation(app.prisma, key), fullName, error.message);
    } catch (refusal) {
      return refusalPage(refusal);
    }
  }
}

export function mountAcceptancePages(http: Hono, app: AppContext): void {
  http.get(ACCEPTANCE_PATH, (c) => showForm(app, c));
  http.post(
    ACCEPTANCE_PATH,
    bodyLimit({ maxSize: 16 * 1024, onError: () => errorPage('Request too large', 'The form data is too large.', 413) }),
    (c) => submitForm(app, c),
  );
}
