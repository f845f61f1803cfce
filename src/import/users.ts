// Administrator actions on single accounts, for the CLI.
import type { Database, DatabaseClient } from '../db/database.js';
import { changeHeardBy } from '../db/notifications.js';
import { AUTH_CHANGED_CHANNEL } from '../domain/auth/auth-cache.js';
import { DomainError } from '../domain/errors.js';
import { apiKeyColumns, issueApiKey } from '../domain/users/api-keys.js';
import { WEAK_PASSWORD } from '../domain/auth/passwords.js';
import { assertStrongPassword, setPassword } from '../domain/auth/sign-in.js';
import { ROLE_CODES } from '../domain/users/roles.js';

export interface NewUser {
  organizationStringId: string;
  email: string;
  fullName: string;
  role: number;
}

async function organizationId(prisma: DatabaseClient, stringId: string): Promise<number> {
  const org = await prisma.organization.findUnique({ where: { stringId }, select: { id: true } });
  if (!org) throw new DomainError(`No organization with string_id ${stringId}.`);
  return org.id;
}

export async function createUser(prisma: DatabaseClient, input: NewUser): Promise<{ id: number; apiKey: string }> {
  const email = input.email.trim();
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) throw new DomainError(`${email} is not a valid e-mail address.`);
  if (!(ROLE_CODES as readonly number[]).includes(input.role)) throw new DomainError('role must be 100, 200, 300, 400 or 600.');
  if (!input.fullName.trim()) throw new DomainError('The full name must not be empty.');
  const orgId = await organizationId(prisma, input.organizationStringId);
  const emailKey = email.toLowerCase();
  if (await prisma.user.findUnique({ where: { organizationId_emailKey: { organizationId: orgId, emailKey } } })) {
    throw new DomainError(`${email} already has an account in ${input.organizationStringId}.`);
  }
  const issued = await issueApiKey(prisma);
  const user = await prisma.user.create({
    data: { organizationId: orgId, email, emailKey, fullName: input.fullName.trim(), role: input.role, ...apiKeyColumns(issued) },
  });
  return { id: user.id, apiKey: issued.apiKey };
}

/**
 * A new API key for the account; answers once the change's notification has arrived (as the server's
 * regeneration does, signin.md section 6), so the old key is refused by every server process by then.
 */
export async function resetApiKey(database: Database, organizationStringId: string, email: string): Promise<string> {
  const orgId = await organizationId(database.prisma, organizationStringId);
  const issued = await issueApiKey(database.prisma);
  const emailKey = email.trim().toLowerCase();
  const change = () =>
    database.prisma.$transaction(async (tx) => {
      const [row] = await tx.$queryRaw<{ apiKeyHash: string }[]>`
        SELECT "apiKeyHash" FROM user_account
         WHERE "organizationId" = ${orgId} AND "emailKey" = ${emailKey} AND "systemBot" IS NULL
           FOR UPDATE`;
      if (!row) throw new DomainError(`No user ${email} in ${organizationStringId}.`);
      await tx.user.updateMany({ where: { organizationId: orgId, emailKey }, data: apiKeyColumns(issued) });
      return { value: issued.apiKey, awaited: row.apiKeyHash };
    });
  return changeHeardBy(database.directUrl, AUTH_CHANGED_CHANNEL, change);
}

/** Sets a human account's password (signin.md Decision 1); a weak one is refused with the registration form's words. */
export async function setPasswordByAddress(
  prisma: DatabaseClient,
  organizationStringId: string,
  email: string,
  password: string,
): Promise<void> {
  const orgId = await organizationId(prisma, organizationStringId);
  const user = await prisma.user.findUnique({
    where: { organizationId_emailKey: { organizationId: orgId, emailKey: email.trim().toLowerCase() } },
    select: { id: true, isBot: true },
  });
  if (!user) throw new DomainError(`No user ${email} in ${organizationStringId}.`);
  if (user.isBot) throw new DomainError('Bots have no password.');
  assertStrongPassword(password, WEAK_PASSWORD);
  await setPassword(prisma, user.id, password);
}
