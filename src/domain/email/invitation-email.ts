// The invitation e-mail (behaviour.md 3.9): subject, plain text and HTML versions.
import { html } from './html.js';

export interface InvitationEmailFacts {
  referrerName: string;
  referrerEmail: string;
  organizationName: string;
  link: string;
  expiresAt: Date | null;
}

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

// Built once: a formatter per call costs most of the rendering time of a 10,000-address invitation.
const DAY = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' });
const TIME = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', timeZone: 'UTC' });

/** "3 December 2026, 09:00 UTC": unambiguous for every reader, whatever their locale. */
function formatExpiry(date: Date): string {
  return `${DAY.format(date)}, ${TIME.format(date)} UTC`;
}

function expiryNote(expiresAt: Date | null): string {
  return expiresAt ? `This invitation expires on ${formatExpiry(expiresAt)}.` : 'This invitation does not expire.';
}

export function renderInvitationEmail(facts: InvitationEmailFacts): RenderedEmail {
  const { referrerName, referrerEmail, organizationName, link } = facts;
  const subject = `${referrerName} has invited you to join ${organizationName}`;
  const invitation = `${referrerName} (${referrerEmail}) wants you to join them on Zulip`;
  const text = [
    'Hello,',
    '',
    `${invitation}, in the organization ${organizationName}.`,
    '',
    'To accept the invitation and create your account, open this link:',
    link,
    '',
    expiryNote(facts.expiresAt),
    '',
  ].join('\n');
  const body = html`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>${subject}</title></head>
<body>
<p>Hello,</p>
<p>${invitation}, in the organization <strong>${organizationName}</strong>.</p>
<p><a href="${link}">Accept the invitation and create your account</a></p>
<p>Or copy this link into your browser: ${link}</p>
<p>${expiryNote(facts.expiresAt)}</p>
</body></html>
`;
  return { subject, text, html: body.value };
}
