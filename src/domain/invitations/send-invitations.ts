// Send invitations: the whole check order of behaviour.md 3.2 (plan-invitations.ts), then one short
// transaction under the organization's lock that stores the invitations and queues their e-mails.
import type { AppContext } from '../../app-context.js';
import type { Actor } from '../auth/authenticate.js';
import type { Config } from '../../config.js';
import { insertInvitationEmails, invitationEmailParts, type InvitationEmailParts } from '../email/outbox.js';
import { generateConfirmationKey } from './confirmation-key.js';
import { InvitationFailedError } from '../errors.js';
import { lockOrganizationStatement, lockedCountsSql, type LockedCounts } from './limits.js';
import { queuedForOrganization } from './lock-queue.js';
import {
  isSystemBot,
  lockedReads,
  planInvitations,
  type CheckedRequest,
  type PlanRun,
  type ScreenedAddresses,
  sendInvitationsRequest,
  type SendInvitationsInput,
  type SendInvitationsRequest,
  type ValidAddress,
} from './plan-invitations.js';
import { distinctRowIds } from '../ids.js';
import { inSqlTransaction } from '../transaction.js';
import { insertInvitesChangedSql } from '../events/log.js';
import { namedStatementFamily, statementRows, type Sql } from '../../db/sql.js';
import { Prisma } from '../../generated/prisma/client.js';
import { toInvitationView, type InvitationView } from './status.js';

export { MAX_WELCOME_MESSAGE_LENGTH, type SendInvitationsInput } from './plan-invitations.js';

/**
 * Invites every address of the request, or throws the first refusal. When some addresses already
 * have accounts, the others are invited and committed, and INVITATION_FAILED is thrown afterwards
 * with `sent_invitations: true`, as the reference does.
 */
export async function sendInvitations(app: AppContext, actor: Actor, input: SendInvitationsInput): Promise<InvitationView[]> {
  const request = sendInvitationsRequest(input);
  const { skipped, stored } = await planInvitations(app, actor, request, sendingRun(app, actor, request));
  app.notifyOutbox();
  if (skipped.length > 0) {
    throw new InvitationFailedError(
      "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!",
      { errors: skipped, sentInvitations: true },
    );
  }
  return stored;
}

/** A valid address with its confirmation key. */
interface Invitee extends ValidAddress {
  confirmationKey: string;
}

/**
 * The plan run for real: queued per organization, then steps 14-20 in one transaction (a hot path,
 * straight through the driver, db/sql.ts) that takes the organization's lock in BEGIN's round trip,
 * then one statement that reads what the checks need and stores the invitations of addresses without
 * accounts; a refusal of the checks rolls the rows back.
 */
function sendingRun(app: AppContext, actor: Actor, request: SendInvitationsRequest): PlanRun<Invitee, InvitationView[]> {
  return {
    inOrganizationTurn: queuedForOrganization,
    prepare: ({ email, emailKey }) => ({ email, emailKey, confirmationKey: generateConfirmationKey() }),
    transaction: (checked, work) => inSqlTransaction(app.sql, work, lockOrganizationStatement(checked.org.id)),
    async read(tx, checked, addresses) {
      const mail = invitationEmailParts(app.config, { expiresAt: checked.expiresAt, referrer: actor, organization: checked.org });
      return readAndInsert(tx, app.config, actor, { ...request, ...checked, addresses, mail });
    },
  };
}

/** The transaction's statement: its text varies only with which limits the request's checks read (lockedCountsSql). */
const INVITE_STATEMENTS = namedStatementFamily('invitations.send');

type StoreRequest = SendInvitationsRequest & CheckedRequest & { addresses: ScreenedAddresses<Invitee>; mail: InvitationEmailParts };

/**
 * One statement whatever the number of addresses (every list travels as one array parameter): the
 * limits' counts and the accounts among the addresses (`lockedCountsSql`), and the invitations of the
 * others, with their channels, groups and e-mails. With an invalid address nothing is stored.
 */
type CreatedInvitation = Pick<InvitationView, 'id' | 'email' | 'invitedAs' | 'referrerId'> & { status: 'PENDING' };

async function readAndInsert(tx: Sql, config: Config, actor: Actor, request: StoreRequest) {
  const { org, addresses, now } = request;
  const reads = lockedReads(config, request, addresses);
  const candidates = addresses.invalid.length > 0 ? [] : addresses.valid.filter((a) => !isSystemBot(a.emailKey));
  const recipients = candidates.map((a) => ({ toAddress: a.email, confirmationKey: a.confirmationKey }));
  const rows = await statementRows<LockedCounts & (CreatedInvitation | { [key in keyof CreatedInvitation]: null })>(
    tx,
    Prisma.sql`
    WITH locked AS (
      SELECT ${lockedCountsSql(org.id, now, reads)}
    ), created AS (
      INSERT INTO invitation ("organizationId", email, "referrerId", "invitedAs", "invitedAt", "expiresAt",
        "includeRealmDefaultSubscriptions", "notifyReferrerOnJoin", "welcomeMessageCustomText", "confirmationKey")
      SELECT ${org.id}, address.email, ${actor.id}, ${request.inviteAs}, ${now}::timestamp(3), ${request.expiresAt}::timestamp(3),
        ${request.includeRealmDefaultSubscriptions}, ${request.notifyReferrerOnJoin}, ${request.welcomeMessageCustomText ?? null}::text, address.key
      FROM unnest(${candidates.map((a) => a.email)}::text[], ${candidates.map((a) => a.emailKey)}::text[], ${candidates.map((a) => a.confirmationKey)}::text[])
        WITH ORDINALITY AS address(email, "emailKey", key, position), locked
      WHERE address."emailKey" <> ALL(locked."activeKeys" || locked."deactivatedKeys")
      ORDER BY address.position
      RETURNING *
    ), channels AS (
      INSERT INTO invitation_channel ("invitationId", "channelId")
      SELECT created.id, channel FROM created CROSS JOIN unnest(${distinctRowIds(request.streamIds)}::int[]) AS channel
    ), groups AS (
      INSERT INTO invitation_group ("invitationId", "groupId")
      SELECT created.id, "group" FROM created CROSS JOIN unnest(${distinctRowIds(request.groupIds)}::int[]) AS "group"
    ), emails AS (
      ${insertInvitationEmails(Prisma.sql`created`, request.mail, recipients)}
    ), event AS (
      ${insertInvitesChangedSql(org.id, actor.id, Prisma.sql`EXISTS (SELECT FROM created)`)}
    )
    SELECT locked.*, created.id, created.email, created."invitedAs", created."referrerId", created.status
    FROM locked LEFT JOIN created ON true ORDER BY created.id`,
    INVITE_STATEMENTS,
  );
  // The times are the request's own (the rows hold them as sent).
  const created = rows
    .filter((row): row is LockedCounts & CreatedInvitation => row.id !== null)
    .map(({ id, email, invitedAs, referrerId, status }) =>
      toInvitationView({ id, email, invitedAs, referrerId, status, invitedAt: now, expiresAt: request.expiresAt }, now),
    );
  return { locked: rows[0]!, stored: created };
}
