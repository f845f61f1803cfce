// A user changing their own credentials: the password (signin.md section 3) and the API key
// (section 6). Both are recorded in the audit log.
import type { AppContext } from '../../app-context.js';
import { DomainError } from '../errors.js';
import { inTransaction } from '../transaction.js';
import { apiKeyColumns, issueApiKey } from '../users/api-keys.js';
import type { Actor } from './authenticate.js';
import { hashPassword, refuseNulInPasswords, verifyPassword } from './passwords.js';
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
 * Replaces the password: neither password may hold NUL, then the old one is checked, then the new
 * one's strength. The new hash is what ends the user's sessions, but for the one that made the change
 * (`keepSessionId`), which takes the new hash's fingerprint in the same transaction; the API key
 * stays. Returns the new hash.
 */
export async function changePassword(
  app: AppContext,
  actor: Actor,
  input: { oldPassword: string; newPassword: string; keepSessionId?: number },
): Promise<string> {
  refuseNulInPasswords(input.oldPassword, input.newPassword);
  await checkOldPassword(app, actor, input.oldPassword);
  assertStrongPassword(input.newPassword, 'New password is too weak!');
  const passwordHash = await hashPassword(input.newPassword);
  await inTransaction(app.prisma, async (tx) => {
    await storePasswordHash(tx, actor.id, passwordHash);
    if (input.keepSessionId !== undefined) await keepSessionAfterPasswordChange(tx, input.keepSessionId);
    await tx.auditLogEntry.create({
      data: {
        organizationId: actor.organizationId,
        actorId: actor.id,
        eventType: USER_PASSWORD_CHANGED,
        extraData: { modified_user_id: actor.id },
      },
    });
  });
  return passwordHash;
}

/**
 * A new API key for the caller. The old one stops working in every server process: the row's change
 * notifies them all at commit (migration auth_change_notifications), which drops their cached entry
 * for the old key's hash. The answer waits until this process has heard that notification, which the
 * others hear about as soon (signin.md section 6); this process's own entry is dropped at once.
 */
export async function regenerateApiKey(app: AppContext, actor: Actor): Promise<string> {
  const issued = await issueApiKey(app.prisma);
  let heard: Promise<void> = Promise.resolve();
  const previous = await inTransaction(app.prisma, async (tx) => {
    // Locked, so that the notification the update sends names this hash.
    const [row] = await tx.$queryRaw<{ apiKeyHash: string }[]>`SELECT "apiKeyHash" FROM user_account WHERE id = ${actor.id} FOR UPDATE`;
    if (!row) throw new Error(`user ${actor.id} vanished while regenerating its key`);
    heard = app.authCache?.changeHeard(row.apiKeyHash) ?? heard;
    await tx.user.update({ where: { id: actor.id }, data: apiKeyColumns(issued) });
    await tx.auditLogEntry.create({
      data: {
        organizationId: actor.organizationId,
        actorId: actor.id,
        eventType: USER_API_KEY_CHANGED,
        extraData: { modified_user_id: actor.id },
      },
    });
    return row.apiKeyHash;
  });
  app.authCache?.invalidate(previous);
  await heard;
  return issued.apiKey;
}
