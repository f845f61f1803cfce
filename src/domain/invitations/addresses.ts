// Invitee address lists: parsing (behaviour.md 3.4 with Decision 7) and per-address validation.
import { domainToASCII } from 'node:url';
import { disposableDomains } from './disposable-domains.js';

/**
 * Splits on commas and newlines, takes the address out of `Name <address>`, trims, drops empty
 * pieces and removes duplicates ignoring case (keeping the first spelling).
 */
export function parseInviteeEmails(raw: string): string[] {
  const seen = new Set<string>();
  const emails: string[] = [];
  for (const piece of raw.split(/[,\n]/)) {
    const start = piece.indexOf('<');
    const end = piece.lastIndexOf('>');
    const email = (start !== -1 && end > start ? piece.slice(start + 1, end) : piece).trim();
    if (!email || seen.has(email.toLowerCase())) continue;
    seen.add(email.toLowerCase());
    emails.push(email);
  }
  return emails;
}

// Django's EmailValidator: a dot-atom local part (or a quoted string) and a host name domain
// (or an address literal).
const LOCAL_PART =
  /^(?:[-!#$%&'*+/=?^_`{}|~0-9a-z]+(?:\.[-!#$%&'*+/=?^_`{}|~0-9a-z]+)*|"(?:[\x01-\x08\x0b\x0c\x0e-\x1f!#-[\]-\x7f]|\\[\x01-\x09\x0b\x0c\x0e-\x7f])*")$/i;
const DOMAIN = /^(?:(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:[a-z0-9-]{2,63}(?<!-)))$/i;
const LITERAL = /^\[(?:\d{1,3}(?:\.\d{1,3}){3}|IPv6:[0-9a-f:.]+)\]$/i;

export function isValidEmailSyntax(email: string): boolean {
  if (email.length > 320 || /[\s]/.test(email)) return false;
  const at = email.lastIndexOf('@');
  if (at <= 0 || at === email.length - 1) return false;
  const local = email.slice(0, at);
  const domain = email.slice(at + 1);
  if (!LOCAL_PART.test(local)) return false;
  if (domain === 'localhost' || LITERAL.test(domain)) return true;
  const ascii = domainToASCII(domain);
  return ascii !== '' && DOMAIN.test(ascii);
}

export interface AddressPolicy {
  emailsRestrictedToDomains: boolean;
  disallowDisposableEmailAddresses: boolean;
  domains: { domain: string; allowSubdomains: boolean }[];
}

function domainAllowed(domain: string, policy: AddressPolicy): boolean {
  return policy.domains.some((d) => domain === d.domain || (d.allowSubdomains && domain.endsWith(`.${d.domain}`)));
}

/** The reason an address cannot be invited to the organization, or null when it can. */
export function addressProblem(email: string, policy: AddressPolicy): string | null {
  if (!isValidEmailSyntax(email)) return 'Invalid address.';
  const at = email.lastIndexOf('@');
  const domain = email.slice(at + 1).toLowerCase();
  if (policy.emailsRestrictedToDomains) {
    if (email.slice(0, at).includes('+')) return 'Email addresses containing + are not allowed.';
    if (!domainAllowed(domain, policy)) return 'Outside your domain.';
  } else if (policy.disallowDisposableEmailAddresses && disposableDomains.has(domain)) {
    return 'Please use your real email address.';
  }
  return null;
}
