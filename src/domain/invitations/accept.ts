// Accepting an invitation through its link (behaviour.md 3.9, "On acceptance"): the checks the
// acceptance page shows, and the one transaction that creates the account.
import type { AppContext } from '../../app-context.js';
import type { DatabaseClient } from '../../db/database.js';
import { Prisma } from '../../generated/prisma/client.js';
import { DomainError } from '../errors.js';
import { sendDirectMessages, systemBotId } from '../messages/direct-messages.js';
import { apiKeyColumns, issueApiKey, type IssuedApiKey } from '../users/api-keys.js';
import { hashPassword, WEAK_PASSWORD } from '../auth/passwords.js';
import { assertStrongPassword } from '../auth/sign-in.js';
import { exceedsLicenseLimit, lockOrganization } from './limits.js';
import { inTransaction, type Transaction } from '../transaction.js';
import { insertInvitesChangedSql, recordEvent } from '../events/log.js';
import { invitationStatus } from './status.js';

export const WELCOME_BOT_INTRO =
  'Hello, and welcome to Zulip! :wave: This is a direct message from me, Welcome Bot.\n\n' +
  'Your account is ready: you are subscribed to the channels your organization picked for you, ' +
  'and you can reply to me here at any time to practise sending messages.';

export const referrerNotification = (user: { id: number; fullName: string }) =>
  `@_**${user.fullName}|${user.id}** accepted your invitation to join Zulip!`;

const MAX_NAME_LENGTH = 100;
const MIN_NAME_LENGTH = 2;

const pageError = (message: string, status: number) => new DomainError(message, { status });

const refusals = {
  malformed: () => pageError('This invitation link is malformed. Check that you copied the whole link from the e-mail.', 404),
  unknown: () => pageError('This invitation link does not exist. Check that you copied the whole link from the e-mail.', 404),
  expired: () => pageError('This invitation link has expired. Ask the person who invited you for a new invitation.', 410),
  revoked: () => pageError('This invitation has been revoked. Ask the person who invited you for a new invitation.', 410),
  used: () => pageError('This invitation link has already been used to create an account.', 410),
  organizationDeactivated: () => pageError('This organization has been deactivated.', 410),
  noLicense: (organization: string) =>
    pageError(`${organization} has no license left for a new account. Ask the person who invited you to contact an administrator.`, 403),
  accountExists: (email: string, organization: string) =>
    pageError(`An account for ${email} already exists in ${organization}. Log in with it instead.`, 409),
  accountCreatedMeanwhile: () =>
    pageError('An account for this e-mail address was just created in this organization. Log in with it instead.', 409),
};

/** Reference confirmation keys are 24 characters (40 for older ones); anything else is malformed. */
function assertKeyShape(key: string): void {
  if ((key.length !== 24 && key.length !== 40) || !/^[a-z0-9]+$/.test(key)) throw refusals.malformed();
}

function loadInvitation(db: DatabaseClient | Transaction, key: string) {
  return db.invitation.findUnique({
    where: { confirmationKey: key },
    include: { organization: true, referrer: { select: { id: true, fullName: true, email: true, isActive: true } } },
  });
}

type LoadedInvitation = NonNullable<Awaited<ReturnType<typeof loadInvitation>>>;

function assertUsable(invitation: LoadedInvitation | null, now: Date): asserts invitation is LoadedInvitation {
  if (!invitation) throw refusals.unknown();
  const status = invitationStatus(invitation, now);
  if (status === 'ACCEPTED') throw refusals.used();
  if (status === 'REVOKED') throw refusals.revoked();
  if (status === 'EXPIRED') throw refusals.expired();
  if (invitation.organization.deactivated) throw refusals.organizationDeactivated();
}

async function assertNoAccount(db: DatabaseClient | Transaction, invitation: LoadedInvitation): Promise<void> {
  const existing = await db.user.findUnique({
    where: { organizationId_emailKey: { organizationId: invitation.organizationId, emailKey: invitation.email.toLowerCase() } },
    select: { id: true },
  });
  if (existing) throw refusals.accountExists(invitation.email, invitation.organization.name);
}

export interface InvitationSummary {
  email: string;
  organizationName: string;
  referrerName: string;
  invitedAs: number;
}

/** What the acceptance form shows, or the reason the link cannot be used. */
export async function inspectInvitation(app: AppContext, key: string, now = new Date()): Promise<InvitationSummary> {
  const { prisma } = app;
  assertKeyShape(key);
  const invitation = await loadInvitation(prisma, key);
  assertUsable(invitation, now);
  await assertNoAccount(prisma, invitation);
  return {
    email: invitation.email,
    organizationName: invitation.organization.name,
    referrerName: invitation.referrer.fullName,
    invitedAs: invitation.invitedAs,
  };
}

/** The reference's full-name rules; returns the trimmed name. */
export function checkFullName(raw: string): string {
  const name = raw.trim();
  if ([...name].length > MAX_NAME_LENGTH) throw new DomainError('Name too long!');
  if ([...name].length < MIN_NAME_LENGTH) throw new DomainError('Name too short!');
  // Control characters and the characters of mention syntax (@_**name|id**) would garble messages.
  if (/[\p{Cc}\p{Cf}*`\\>"@]/u.test(name)) throw new DomainError('Invalid characters in name!');
  if (/\|\d+$/.test(name)) throw new DomainError('Invalid format!');
  return name;
}

export interface AcceptedAccount {
  userId: number;
  email: string;
  fullName: string;
  role: number;
  organizationName: string;
  /** Shown on the welcome page; fetch_api_key gives it again for the password. */
  apiKey: string;
}

/** The new account's name, password (signin.md Decision 1: weak ones are refused) and credentials. */
interface NewAccount {
  fullName: string;
  passwordHash: string;
  apiKey: IssuedApiKey;
}

export async function acceptInvitation(
  app: AppContext,
  key: string,
  input: { fullName: string; password: string },
  now = new Date(),
): Promise<AcceptedAccount> {
  assertKeyShape(key);
  const fullName = checkFullName(input.fullName);
  assertStrongPassword(input.password, WEAK_PASSWORD);
  try {
    const target = await app.prisma.invitation.findUnique({ where: { confirmationKey: key }, select: { organizationId: true } });
    if (!target) throw refusals.unknown();
    // Hashing takes a moment: before the transaction, which holds the organization's lock.
    const account = { fullName, passwordHash: await hashPassword(input.password), apiKey: await issueApiKey(app.prisma) };
    return await inTransaction(app.prisma, (tx) => createAccount(tx, target.organizationId, key, account, now));
  } catch (error) {
    // A concurrent acceptance for the same address won the race for the unique (organization, e-mail).
    if (error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002') throw refusals.accountCreatedMeanwhile();
    throw error;
  }
}

async function createAccount(
  tx: Transaction,
  organizationId: number,
  key: string,
  account: NewAccount,
  now: Date,
): Promise<AcceptedAccount> {
  // The organization's row first, as everywhere: concurrent acceptances of the same link or of the
  // same address's other invitations wait here, then see the invitation as used or revoked.
  await lockOrganization(tx, organizationId);
  const invitation = await loadInvitation(tx, key);
  assertUsable(invitation, now);
  await assertNoAccount(tx, invitation);
  if (await exceedsLicenseLimit(tx, invitation.organization, 1, invitation.invitedAs))
    throw refusals.noLicense(invitation.organization.name);
  const { fullName } = account;
  const user = await tx.user.create({
    data: {
      organizationId: invitation.organizationId,
      email: invitation.email,
      emailKey: invitation.email.toLowerCase(),
      fullName,
      role: invitation.invitedAs,
      dateJoined: now,
      passwordHash: account.passwordHash,
      ...apiKeyColumns(account.apiKey),
    },
  });
  await grantSubscriptionsAndGroups(tx, invitation, user.id);
  await closeInvitations(tx, invitation, user.id);
  await recordEvent(tx, insertInvitesChangedSql(invitation.organizationId, invitation.referrerId));
  await sendJoinMessages(tx, invitation, user, now);
  return {
    userId: user.id,
    email: user.email,
    fullName,
    role: user.role,
    organizationName: invitation.organization.name,
    apiKey: account.apiKey.apiKey,
  };
}

/** The invitation's channels (+ today's default channels when asked), skipping channels archived since; its active groups. */
async function grantSubscriptionsAndGroups(tx: Transaction, invitation: LoadedInvitation, userId: number): Promise<void> {
  const channels = await tx.channel.findMany({
    where: {
      organizationId: invitation.organizationId,
      isArchived: false,
      OR: [
        { invitations: { some: { invitationId: invitation.id } } },
        ...(invitation.includeRealmDefaultSubscriptions ? [{ isDefault: true }] : []),
      ],
    },
    select: { id: true },
  });
  await tx.subscription.createMany({ data: channels.map((c) => ({ userId, channelId: c.id })), skipDuplicates: true });
  const groups = await tx.userGroup.findMany({
    where: { organizationId: invitation.organizationId, deactivated: false, invitations: { some: { invitationId: invitation.id } } },
    select: { id: true },
  });
  await tx.userGroupMember.createMany({ data: groups.map((g) => ({ groupId: g.id, userId })), skipDuplicates: true });
}

/** This invitation becomes used; every other pending invitation of the address in the organization is revoked. */
async function closeInvitations(tx: Transaction, invitation: LoadedInvitation, userId: number): Promise<void> {
  await tx.invitation.update({ where: { id: invitation.id }, data: { status: 'ACCEPTED', createdUserId: userId } });
  await tx.invitation.updateMany({
    where: {
      organizationId: invitation.organizationId,
      status: 'PENDING',
      id: { not: invitation.id },
      email: { equals: invitation.email, mode: 'insensitive' },
    },
    data: { status: 'REVOKED' },
  });
}

async function sendJoinMessages(tx: Transaction, invitation: LoadedInvitation, user: { id: number; fullName: string }, now: Date) {
  const organizationId = invitation.organizationId;
  const notificationBot = await systemBotId(tx, organizationId, 'notification');
  if (invitation.notifyReferrerOnJoin && invitation.referrer.isActive && notificationBot !== null) {
    await sendDirectMessages(tx, {
      organizationId,
      senderId: notificationBot,
      recipientId: invitation.referrerId,
      contents: [referrerNotification(user)],
      dateSent: now,
    });
  }
  const welcomeBot = await systemBotId(tx, organizationId, 'welcome');
  if (welcomeBot === null) return;
  const customText = invitation.welcomeMessageCustomText ?? invitation.organization.welcomeMessageCustomText;
  await sendDirectMessages(tx, {
    organizationId,
    senderId: welcomeBot,
    recipientId: user.id,
    contents: customText === '' ? [WELCOME_BOT_INTRO] : [WELCOME_BOT_INTRO, customText],
    dateSent: now,
  });
}
