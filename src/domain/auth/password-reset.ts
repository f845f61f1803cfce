// Password reset by e-mail (signin.md sections 2 and 5). A request always gets the same answer; the
// mailbox tells: a link for each active account with the address, or a notice that there is none.
// Past the limits (2 an hour and 5 a day per address, 5 a day per client address) nothing is sent.
// The link's token is Django's PasswordResetTokenGenerator's idea: an HMAC over the user and their
// current password hash with its time, so it stops working after 3 days and once the password
// changes (its first use changes it); nothing about it is stored.
import { createHmac } from 'node:crypto';
import type { AppContext } from '../../app-context.js';
import { renderNoAccountNotice, renderPasswordResetEmail, RESET_LINK_VALID_DAYS } from '../email/password-reset-email.js';
import { PASSWORD_RESET_EMAIL, queueEmail } from '../email/outbox.js';
import { DomainError } from '../errors.js';
import { isValidEmailSyntax } from '../invitations/addresses.js';
import { serverSecret } from '../server-secrets.js';
import { hashPassword } from './passwords.js';
import { countInWindow } from './rate-limit.js';
import { sameToken } from './sessions.js';
import { assertStrongPassword, storePasswordHash } from './sign-in.js';

const HOUR = 3600;
const DAY = 24 * HOUR;
const LINK_LIFETIME_SECONDS = RESET_LINK_VALID_DAYS * DAY;

export const RESET_LIMITS = {
  perAddress: [
    { windowSeconds: HOUR, maxRequests: 2 },
    { windowSeconds: DAY, maxRequests: 5 },
  ],
  perClientAddress: { windowSeconds: DAY, maxRequests: 5 },
};

export const PASSWORDS_DIFFER = 'The two password fields didn’t match.';
export const WEAK_PASSWORD = 'The password is too weak.';
export const INVALID_LINK =
  'The password reset link was invalid, possibly because it has already been used. Please request a new password reset.';

const SECRET_NAME = 'password-reset';

interface ResetSubject {
  id: number;
  emailKey: string;
  passwordHash: string | null;
}

/** The link's two path segments: the user's id (base64url, as Django's uidb64) and the token. */
export interface ResetLink {
  uid: string;
  token: string;
}

async function tokenAt(app: AppContext, user: ResetSubject, issuedAt: number): Promise<string> {
  const secret = await serverSecret(app.prisma, SECRET_NAME);
  const mac = createHmac('sha256', secret)
    .update(`${user.id}\n${user.emailKey}\n${user.passwordHash ?? ''}\n${issuedAt}`)
    .digest('base64url');
  return `${issuedAt.toString(36)}-${mac.slice(0, 32)}`;
}

async function resetLinkFor(app: AppContext, user: ResetSubject, now: number): Promise<ResetLink> {
  return { uid: Buffer.from(String(user.id)).toString('base64url'), token: await tokenAt(app, user, Math.floor(now / 1000)) };
}

/** Whether every limit still allows an e-mail; each request counts, sent or not. */
async function withinLimits(app: AppContext, emailKey: string, clientAddress: string): Promise<boolean> {
  const counts = [
    ...RESET_LIMITS.perAddress.map((rule) => ({ key: `password-reset:${emailKey}:${rule.windowSeconds}`, rule })),
    { key: `password-reset-from:${clientAddress}`, rule: RESET_LIMITS.perClientAddress },
  ];
  let allowed = true;
  for (const { key, rule } of counts) {
    if ((await countInWindow(app.sql, key, rule.windowSeconds)) > rule.maxRequests) allowed = false;
  }
  return allowed;
}

interface AccountRow extends ResetSubject {
  email: string;
  isActive: boolean;
  organizationId: number;
  organizationName: string;
  organizationDeactivated: boolean;
}

/**
 * The human accounts with the address, with their organizations: one statement whatever it finds
 * (an ORM's relation load would add a second one only when there are accounts, which a stopwatch
 * tells apart).
 */
function accountsOf(app: AppContext, emailKey: string): Promise<AccountRow[]> {
  return app.sql.rows<AccountRow>(
    `SELECT u.id, u.email, u."emailKey", u."passwordHash", u."isActive", u."organizationId",
            o.name AS "organizationName", o.deactivated AS "organizationDeactivated"
       FROM user_account u JOIN organization o ON o.id = u."organizationId"
      WHERE u."emailKey" = $1 AND NOT u."isBot"
      ORDER BY u.id`,
    [emailKey],
  );
}

/**
 * POST /accounts/password/reset/: queues the e-mails the address gets, if the limits allow. Returns
 * nothing and throws nothing for any address (the page is the same whatever happened).
 */
export async function requestPasswordReset(app: AppContext, input: { email: string; clientAddress: string }): Promise<void> {
  const email = input.email.trim();
  if (!isValidEmailSyntax(email)) return;
  const emailKey = email.toLowerCase();
  if (!(await withinLimits(app, emailKey, input.clientAddress))) return;
  const accounts = await accountsOf(app, emailKey);
  const active = accounts.filter((account) => account.isActive && !account.organizationDeactivated);
  const now = Date.now();
  for (const account of active) {
    const { uid, token } = await resetLinkFor(app, account, now);
    const link = `${app.config.serverUrl}/accounts/password/reset/${uid}/${token}/`;
    const rendered = renderPasswordResetEmail({ email: account.email, organizationName: account.organizationName, link });
    await queueEmail(app.prisma, {
      kind: PASSWORD_RESET_EMAIL,
      toAddress: account.email,
      organizationId: account.organizationId,
      ...rendered,
    });
  }
  if (active.length === 0) {
    const rendered = renderNoAccountNotice({ email, serverUrl: app.config.serverUrl });
    await queueEmail(app.prisma, {
      kind: PASSWORD_RESET_EMAIL,
      toAddress: email,
      organizationId: accounts[0]?.organizationId ?? null,
      ...rendered,
    });
  }
  app.notifyOutbox();
}

function userIdOf(uid: string): number | null {
  if (!/^[A-Za-z0-9_-]{1,16}$/.test(uid)) return null;
  const decoded = Buffer.from(uid, 'base64url').toString('latin1');
  return /^[1-9][0-9]{0,9}$/.test(decoded) && Number(decoded) <= 2 ** 31 - 1 ? Number(decoded) : null;
}

/** The account a reset link is for, while the link works (3 days, until the password changes); null otherwise. */
export async function resetLinkAccount(
  app: AppContext,
  link: ResetLink,
  now = Date.now(),
): Promise<(ResetSubject & { email: string }) | null> {
  const userId = userIdOf(link.uid);
  const match = /^([0-9a-z]{1,8})-[A-Za-z0-9_-]{32}$/.exec(link.token);
  if (userId === null || !match) return null;
  const issuedAt = parseInt(match[1]!, 36);
  const age = Math.floor(now / 1000) - issuedAt;
  if (age < 0 || age > LINK_LIFETIME_SECONDS) return null;
  const user = await app.prisma.user.findFirst({
    where: { id: userId, isActive: true, isBot: false, organization: { deactivated: false } },
    select: { id: true, email: true, emailKey: true, passwordHash: true },
  });
  if (!user || !sameToken(await tokenAt(app, user, issuedAt), link.token)) return null;
  return user;
}

/**
 * Sets the new password the reset form sent (twice), which ends every session of the account (their
 * fingerprints no longer match; their rows go too) and clears its sign-in attempts. The link is
 * checked again against the row being changed, so of two uses at once only one succeeds.
 */
export async function completePasswordReset(
  app: AppContext,
  link: ResetLink,
  passwords: { password1: string; password2: string },
): Promise<void> {
  const account = await resetLinkAccount(app, link);
  if (!account) throw new DomainError(INVALID_LINK, { status: 404, notFound: true });
  if (passwords.password1 !== passwords.password2) throw new DomainError(PASSWORDS_DIFFER);
  assertStrongPassword(passwords.password1, WEAK_PASSWORD);
  const passwordHash = await hashPassword(passwords.password1);
  await app.prisma.$transaction(async (tx) => {
    const [row] = await tx.$queryRaw<
      { passwordHash: string | null }[]
    >`SELECT "passwordHash" FROM user_account WHERE id = ${account.id} FOR UPDATE`;
    if (!row || row.passwordHash !== account.passwordHash) throw new DomainError(INVALID_LINK, { status: 404, notFound: true });
    await storePasswordHash(tx, account.id, passwordHash);
    await tx.userSession.deleteMany({ where: { userId: account.id } });
  });
}
