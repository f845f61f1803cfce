// The password reset e-mails (signin.md section 5): the link for an active account, and the notice
// for an address that has none (nothing on the web page tells the two apart; the mailbox does).
import { html } from './html.js';
import type { RenderedEmail } from './invitation-email.js';

export const RESET_LINK_VALID_DAYS = 3;

export function renderPasswordResetEmail(facts: { email: string; organizationName: string; link: string }): RenderedEmail {
  const subject = `Password reset request for ${facts.organizationName}`;
  const request = `Somebody (possibly you) requested a new password for the account ${facts.email} in ${facts.organizationName}.`;
  const validity = `The link works once, within ${RESET_LINK_VALID_DAYS} days. If you did not ask for it, ignore this e-mail: your password stays as it is.`;
  const text = [request, '', 'To choose a new password, open this link:', facts.link, '', validity, ''].join('\n');
  const body = html`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>${subject}</title></head>
<body>
<p>${request}</p>
<p><a href="${facts.link}">Choose a new password</a></p>
<p>Or copy this link into your browser: ${facts.link}</p>
<p>${validity}</p>
</body></html>
`;
  return { subject, text, html: body.value };
}

export function renderNoAccountNotice(facts: { email: string; serverUrl: string }): RenderedEmail {
  const subject = 'Password reset request';
  const notice = `Somebody (possibly you) requested a password reset for ${facts.email} at ${facts.serverUrl}, but no active account uses this address there.`;
  const advice = 'If you use another address to sign in, request the reset with that one. If you did not ask for it, ignore this e-mail.';
  const text = [notice, '', advice, ''].join('\n');
  const body = html`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>${subject}</title></head>
<body>
<p>${notice}</p>
<p>${advice}</p>
</body></html>
`;
  return { subject, text, html: body.value };
}
