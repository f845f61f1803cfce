// Signing in with an e-mail address and a password (signin.md sections 1 and 2, Decisions 4 and 5),
// for POST /api/v1/fetch_api_key and the sign-in form alike; setting a password.
import type { AppContext } from '../../app-context.js';
import type { DatabaseClient } from '../../db/database.js';
import type { Transaction } from '../transaction.js';
import { DomainError } from '../errors.js';
import { isValidEmailSyntax } from '../invitations/addresses.js';
import type { Actor } from './authenticate.js';
import { Gate, HASH_SLOTS, hashPassword, isStrongPassword, refuseNulInPasswords, verifyPassword, type Verification } from './passwords.js';
import { signInCounterKey, type RateLimitReport } from './rate-limit.js';

export const WRONG_CREDENTIALS = 'Your username or password is incorrect';

const signInError = (message: string, code: 'AUTHENTICATION_FAILED' | 'USER_DEACTIVATED' | 'REALM_DEACTIVATED') =>
  new DomainError(message, { code, status: 401 });

export const authenticationFailed = () => signInError(WRONG_CREDENTIALS, 'AUTHENTICATION_FAILED');
export const userDeactivated = () => signInError('Account is deactivated', 'USER_DEACTIVATED');
export const realmDeactivated = () => signInError('This organization has been deactivated', 'REALM_DEACTIVATED');

/** Organizations' string_ids (src/import/organization-file.ts); anything else names none. */
const STRING_ID = /^[a-z0-9][a-z0-9-]{0,39}$/;

export interface PasswordSignIn {
  /** The e-mail address as typed. */
  username: string;
  password: string;
  /** An organization's string_id: chooses among one address's accounts in several organizations. */
  realm?: string;
  /** For the limits per client address. */
  clientAddress: string;
  /** Where the limiters that ran are noted (the answer's X-RateLimit-* headers). */
  rateLimits?: RateLimitReport;
}

interface AccountRow extends Actor {
  isActive: boolean;
  passwordHash: string | null;
  organizationDeactivated: boolean;
}

/**
 * The one account the address names (in the organization `realm` names, when given), deactivated
 * organizations included; null when there is none, or several and no realm to choose. One statement
 * whatever it finds (a relation read through Prisma would add a second one only when a row exists,
 * and that time would tell).
 */
async function findAccount(prisma: DatabaseClient, emailKey: string, realm: string | undefined): Promise<AccountRow | null> {
  if (realm !== undefined && !STRING_ID.test(realm)) return null;
  const accounts = await prisma.$queryRaw<AccountRow[]>`
    SELECT u.id, u."organizationId", u.email, u."fullName", u.role, u."isBot", u."botType", u."dateJoined",
           u."isActive", u."passwordHash", o.deactivated AS "organizationDeactivated"
      FROM user_account u JOIN organization o ON o.id = u."organizationId"
     WHERE u."emailKey" = ${emailKey} AND (${realm ?? null}::text IS NULL OR o."stringId" = ${realm ?? null}::text)
     LIMIT 2`;
  return accounts.length === 1 ? accounts[0]! : null;
}

/**
 * Sign-ins checked at once: twice the hashing slots, so that the hashes never wait for another
 * sign-in's statements. The rest wait their turn holding no database connection, so a flood of
 * sign-ins takes at most this many of the pool's connections. Up to 256 per hashing slot wait (a few
 * seconds of work): a waiting request costs the event loop nothing, whereas one answered at once is
 * sent again at once by a flooding client; past them the answer is 429 at once.
 */
const signInAdmission = new Gate(2 * HASH_SLOTS, 256 * HASH_SLOTS);

/** The account the address names, and its password verified (a dummy hash without one). */
async function checkPassword(
  app: AppContext,
  emailKey: string,
  input: PasswordSignIn,
): Promise<{ account: AccountRow; verification: Verification }> {
  const account = await findAccount(app.prisma, emailKey, input.realm);
  const storedHash = account && !account.isBot ? account.passwordHash : null;
  const verification = await verifyPassword(storedHash, input.password);
  if (!account || !verification.valid) {
    await app.rateLimiter.failure(input.clientAddress, input.rateLimits);
    throw authenticationFailed();
  }
  return { account, verification };
}

/**
 * Checks in signin.md's order: the address's form (then a password holding NUL, refused uncounted),
 * the rate limits (the client address's lockout, then one more request of the client address and one
 * more attempt for the e-mail address, in one statement), then the password, verified in every case
 * (a dummy hash for an unknown address, a bot or an account without a password) so that nothing tells
 * them apart; only then whether the account or its organization is deactivated. A malformed address
 * still counts as a request of the client's.
 */
export async function signInWithPassword(app: AppContext, input: PasswordSignIn): Promise<Actor> {
  if (!isValidEmailSyntax(input.username)) {
    await app.rateLimiter.hitUnauthenticated(input.clientAddress, input.rateLimits);
    throw new DomainError('Enter a valid email address.');
  }
  refuseNulInPasswords(input.password);
  const emailKey = input.username.toLowerCase();
  await app.rateLimiter.signInAttempt(input.clientAddress, emailKey, input.rateLimits);
  const { account, verification } = await signInAdmission.run(() => checkPassword(app, emailKey, input));
  if (account.organizationDeactivated) throw realmDeactivated();
  if (!account.isActive) throw userDeactivated();
  if (verification.upgradedHash) await replaceHash(app.prisma, account.id, account.passwordHash!, verification.upgradedHash);
  await app.rateLimiter.clearSignInAttempts(emailKey);
  const { isActive: _active, passwordHash: _hash, organizationDeactivated: _deactivated, ...actor } = account;
  return actor;
}

/** Unless the password changed meanwhile (then the newer hash stays). */
async function replaceHash(prisma: DatabaseClient, userId: number, previous: string, upgraded: string): Promise<void> {
  await prisma.user.updateMany({ where: { id: userId, passwordHash: previous }, data: { passwordHash: upgraded } });
}

/** Refuses a password holding NUL, then one under the reference's strength rule with the caller's words for it. */
export function assertStrongPassword(password: string, message: string): void {
  refuseNulInPasswords(password);
  if (!isStrongPassword(password)) throw new DomainError(message);
}

/**
 * Stores the password's hash for a human account and clears its address's sign-in attempts. Every
 * password change replaces the hash, which is what ends the account's other sessions. The caller
 * checks the password's strength with its own message (assertStrongPassword).
 */
export async function setPassword(db: DatabaseClient | Transaction, userId: number, password: string): Promise<void> {
  await storePasswordHash(db, userId, await hashPassword(password));
}

/** setPassword's second half, for callers that hash before their transaction begins. */
export async function storePasswordHash(db: DatabaseClient | Transaction, userId: number, passwordHash: string): Promise<void> {
  const users = await db.user.updateManyAndReturn({
    where: { id: userId, isBot: false },
    data: { passwordHash },
    select: { emailKey: true },
  });
  if (users.length === 0) throw new DomainError('Bots have no password.');
  await db.rateCounter.deleteMany({ where: { key: signInCounterKey(users[0]!.emailKey) } });
}
