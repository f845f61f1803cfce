// A user changing their own credentials: the password (signin.md section 3) and the API key
// (section 6). Both are recorded in the audit log.
import type { AppContext } from '../../app-context.js';
import { DomainError } from '../errors.js';
import { inTransaction } from '../transaction.js';
import { apiKeyColumns, issueApiKey } from '../users/api-keys.js';
import type { Actor } from './authenticate.js';
import { hashPassword, verifyPassword } from './passwords.js';
import { keepSessionAfterPasswordChange } from './sessions.js';
import { assertStrongPassword, storePasswordHash } from './sign-in.js';

export const USER_PASSWORD_CHANGED = 'USER_PASSWORD_CHANGED';
export const USER_API_KEY_CHANGED = 'USER_API_KEY_CHANGED';

/**
 * The reference checks the old password by signing in with it, so wrong ones count against the
 * address's sign-in attempts (and the right one clears them); past the limit it answers 400.
 */
async function checkOldPassword(app: AppContext, actor: Actor, oldPassword: string): Promise<void> {
  const emailKey = actor.email.toLowerCase();
  try {
    await app.rateLimiter.passwordAttempt(emailKey);
  } catch (error) {
    if (!(error instanceof DomainError && error.code === 'RATE_LIMIT_HIT')) throw error;
    const seconds = Math.trunc(Number(error.data['retry-after']));
    throw new DomainError(`You're making too many attempts! Try again in ${seconds} seconds.`);
  }
  const { passwordHash } = await app.prisma.user.findUniqueOrThrow({ where: { id: actor.id }, select: { passwordHash: true } });
  const verification = await verifyPassword(actor.isBot ? null : passwordHash, oldPassword);
  if (!verification.valid) throw new DomainError('Wrong password!');
  await app.rateLimiter.clearSignInAttempts(emailKey);
}

/**
 * Replaces the password: the old one first, then the new one's strength. The new hash is what ends
 * the user's sessions, but for the one that made the change (`keepSessionId`), which takes the new
 * hash's fingerprint in the same transaction; the API key stays. Returns the new hash.
 */
export async function changePassword(
  app: AppContext,
  actor: Actor,
  input: { oldPassword: string; newPassword: string; keepSessionId?: number },
): Promise<string> {
  await checkOldPassword(app, actor, input.oldPassword);
  assertStrongPassword(input.newPassword, 'New password is too weak!');
  const passwordHash = await hashPassword(input.newPassword);
  await inTransaction(app.prisma, async (tx) => {
    await storePasswordHash(tx, actor.id, passwordHash);
    if (input.keepSessionId !== undefined) await keepSessionAfterPasswordChange(tx, input.keepSessionId);
    await tx.auditLogEntry.create({
      data: { organizationId: actor.organizationId, actorId: actor.id, eventType: USER_PASSWORD_CHANGED, extraData: { modified_user_id: actor.id } },
    });
  });
  return passwordHash;
}

/**
 * A new API key for the caller. The old one stops working in every server process: the row's change
 * notifies them all at commit (migration auth_change_notifications), which drops their cached entry
 * for the old key's hash; this process drops its own before answering.
 */
export async function regenerateApiKey(app: AppContext, actor: Actor): Promise<string> {
  const issued = await issueApiKey(app.prisma);
  const previous = await inTransaction(app.prisma, async (tx) => {
    const { apiKeyHash } = await tx.user.findUniqueOrThrow({ where: { id: actor.id }, select: { apiKeyHash: true } });
    await tx.user.update({ where: { id: actor.id }, data: apiKeyColumns(issued) });
    await tx.auditLogEntry.create({
      data: { organizationId: actor.organizationId, actorId: actor.id, eventType: USER_API_KEY_CHANGED, extraData: { modified_user_id: actor.id } },
    });
    return apiKeyHash;
  });
  app.authCache?.invalidate(previous);
  return issued.apiKey;
}
