// The invitation e-mail (behaviour.md 3.9): subject, plain text and HTML versions.
import { escapeHtml, html as htmlTemplate } from './html.js';

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

/**
 * An invitation e-mail without its link: what the invitations of one send share (the sender, the
 * organization and the expiry). The text holds the link once, between `text`'s two parts; the HTML
 * twice (escaped), between `html`'s three.
 */
export interface InvitationEmailTemplate {
  subject: string;
  text: [string, string];
  html: [string, string, string];
}

export function invitationEmailTemplate(facts: Omit<InvitationEmailFacts, 'link'>): InvitationEmailTemplate {
  const { referrerName, referrerEmail, organizationName } = facts;
  const subject = `${referrerName} has invited you to join ${organizationName}`;
  const invitation = `${referrerName} (${referrerEmail}) wants you to join them on Zulip`;
  const expiry = expiryNote(facts.expiresAt);
  const text: [string, string] = [
    `Hello,\n\n${invitation}, in the organization ${organizationName}.\n\nTo accept the invitation and create your account, open this link:\n`,
    `\n\n${expiry}\n`,
  ];
  const html: [string, string, string] = [
    htmlTemplate`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>${subject}</title></head>
<body>
<p>Hello,</p>
<p>${invitation}, in the organization <strong>${organizationName}</strong>.</p>
<p><a href="`.value,
    htmlTemplate`">Accept the invitation and create your account</a></p>
<p>Or copy this link into your browser: `.value,
    htmlTemplate`</p>
<p>${expiry}</p>
</body></html>
`.value,
  ];
  return { subject, text, html };
}

/** The e-mail of one invitation: the template with its link. */
function withLink(template: InvitationEmailTemplate, link: string): RenderedEmail {
  const markup = escapeHtml(link);
  return {
    subject: template.subject,
    text: template.text[0] + link + template.text[1],
    html: template.html[0] + markup + template.html[1] + markup + template.html[2],
  };
}

export function renderInvitationEmail(facts: InvitationEmailFacts): RenderedEmail {
  return withLink(invitationEmailTemplate(facts), facts.link);
}
