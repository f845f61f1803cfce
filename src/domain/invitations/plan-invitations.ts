// The whole check order of sending invitations (behaviour.md 3.2 with its Decisions), written once and
// run by two doors: sendInvitations runs it under the organization's queue and lock and stores what it
// decides; previewInvitations runs it in a read-only transaction and reports what it decides.
import { setImmediate } from 'node:timers/promises';
import type { AppContext } from '../../app-context.js';
import type { Actor } from '../auth/authenticate.js';
import type { Config } from '../../config.js';
import { badRequest, InvitationFailedError, type InviteeError } from '../errors.js';
import { ROLE, ROLE_CODES, isAdministrator } from '../users/roles.js';
import { addressProblem, parseInviteeEmails, type AddressPolicy } from './addresses.js';
import {
  assertChannelsInvitable,
  assertGroupsInvitable,
  assertMayInvite,
  assertMayInviteAs,
  assertMayUseInvitations,
  loadInvitePermissions,
} from './invite-permissions.js';
import {
  assertAccountOldEnough,
  assertDailyLimitKept,
  assertLicensesSuffice,
  countsForLimits,
  type LimitedOrganization,
  type LockedCounts,
} from './limits.js';
import type { Sql } from '../../db/sql.js';

export const MAX_WELCOME_MESSAGE_LENGTH = 8000;
const SYSTEM_BOT_ADDRESSES = new Set(['notification-bot@zulip.com', 'welcome-bot@zulip.com', 'emailgateway@zulip.com']);
/** Latest expiry PostgreSQL and JavaScript dates both hold comfortably (year 9999). */
const LATEST_EXPIRY_MS = Date.UTC(9999, 11, 31);

export interface SendInvitationsRequest {
  /** The raw address list: commas and newlines separate addresses. */
  inviteeEmails: string;
  streamIds: number[];
  groupIds: number[];
  inviteAs: number;
  /** undefined: the server default; null: never expires. */
  inviteExpiresInMinutes: number | null | undefined;
  includeRealmDefaultSubscriptions: boolean;
  notifyReferrerOnJoin: boolean;
  /** undefined when not supplied (the organization's default applies at acceptance). */
  welcomeMessageCustomText: string | undefined;
}

/** What a door asks for: the reference's parameters, each optional one absent (or null) when not given. */
export interface SendInvitationsInput {
  inviteeEmails: string;
  streamIds: number[];
  groupIds?: number[] | null;
  inviteAs?: number | null;
  /** Absent: the server default; null: never expires. */
  inviteExpiresInMinutes?: number | null;
  includeRealmDefaultSubscriptions?: boolean | null;
  notifyReferrerOnJoin?: boolean | null;
  /** Absent or null: the organization's default applies at acceptance. */
  welcomeMessageCustomText?: string | null;
}

/** The request with the reference's defaults for what the input leaves out. */
export function sendInvitationsRequest(input: SendInvitationsInput): SendInvitationsRequest {
  return {
    inviteeEmails: input.inviteeEmails,
    streamIds: input.streamIds,
    groupIds: input.groupIds ?? [],
    // An explicit null names no role: refused as an unknown one is (assertWellFormed).
    inviteAs: input.inviteAs === undefined ? ROLE.MEMBER : (input.inviteAs ?? Number.NaN),
    inviteExpiresInMinutes: input.inviteExpiresInMinutes,
    includeRealmDefaultSubscriptions: input.includeRealmDefaultSubscriptions ?? false,
    notifyReferrerOnJoin: input.notifyReferrerOnJoin ?? true,
    welcomeMessageCustomText: input.welcomeMessageCustomText ?? undefined,
  };
}

export type InvitingOrganization = AddressPolicy & LimitedOrganization & { name: string };

/** What the checks before the lock established (steps 2-13, and the expiry). */
export interface CheckedRequest {
  org: InvitingOrganization;
  /** The parsed addresses, in the order given. */
  emails: string[];
  expiresAt: Date | null;
  now: Date;
}

/** A valid address; each door adds what it needs (the send: a confirmation key and a rendered e-mail). */
export interface ValidAddress {
  email: string;
  emailKey: string;
}

/** Step 18's validation: the invalid addresses with their reasons, and the valid ones. */
export interface ScreenedAddresses<Valid extends ValidAddress> {
  all: string[];
  invalid: InviteeError[];
  valid: Valid[];
}

/** How a door runs the plan: what it adds to valid addresses, where it runs, and what it reads (and stores). */
export interface PlanRun<Valid extends ValidAddress, Stored> {
  /** Runs the address preparation and the transaction when the organization's turn comes (the send: its queue; the preview: at once). */
  inOrganizationTurn<T>(organizationId: number, work: () => Promise<T>): Promise<T>;
  prepare(address: ValidAddress, checked: CheckedRequest): Valid;
  /** The send's opens under the organization's lock; the preview's, read-only. */
  transaction<T>(checked: CheckedRequest, work: (tx: Sql) => Promise<T>): Promise<T>;
  /** The counts of the limits and the accounts among the valid addresses (the send: under the lock, storing too). */
  read(tx: Sql, checked: CheckedRequest, addresses: ScreenedAddresses<Valid>): Promise<{ locked: LockedCounts; stored: Stored }>;
}

/** What the plan decided: the refusal was thrown; these addresses are skipped and the others invited. */
export interface InvitationPlan<Valid extends ValidAddress, Stored> extends CheckedRequest {
  addresses: ScreenedAddresses<Valid>;
  skipped: InviteeError[];
  stored: Stored;
}

/**
 * Runs every check in the reference's order and throws the first refusal; otherwise the addresses
 * skipped as existing accounts. A refusal of steps 15-19 is thrown inside `run.transaction`, which
 * rolls back what `run.read` stored.
 */
export async function planInvitations<Valid extends ValidAddress, Stored>(
  app: AppContext,
  actor: Actor,
  request: SendInvitationsRequest,
  run: PlanRun<Valid, Stored>,
): Promise<InvitationPlan<Valid, Stored>> {
  const checked = await checkRequest(app, actor, request);
  return run.inOrganizationTurn(checked.org.id, async () => {
    // What needs no lock happens before the transaction, which stays a few statements long.
    const addresses = await screenAddresses(checked, (address) => run.prepare(address, checked));
    return run.transaction(checked, async (tx) => {
      const { locked, stored } = await run.read(tx, checked, addresses);
      const skipped = decide(app.config, actor, request, { ...checked, addresses }, locked);
      return { ...checked, addresses, skipped, stored };
    });
  });
}

/** The checks a typed REST parser makes before the view runs; repeated here for GraphQL callers. */
function assertWellFormed(request: SendInvitationsRequest): void {
  if (!ROLE_CODES.includes(request.inviteAs as never)) {
    throw badRequest('Invalid invite_as: Value error, Not in the list of possible values');
  }
  const text = request.welcomeMessageCustomText;
  if (text?.includes('\0')) throw badRequest('welcome_message_custom_text contains NULL (0x00) characters.');
  if (text !== undefined && [...text].length > MAX_WELCOME_MESSAGE_LENGTH) {
    throw badRequest(`welcome_message_custom_text is too long (limit: ${MAX_WELCOME_MESSAGE_LENGTH} characters)`);
  }
}

function expiryFor(request: SendInvitationsRequest, defaultMinutes: number, now: Date): Date | null {
  const minutes = request.inviteExpiresInMinutes === undefined ? defaultMinutes : request.inviteExpiresInMinutes;
  if (minutes === null) return null;
  const expiresAt = now.getTime() + minutes * 60_000;
  if (!Number.isSafeInteger(expiresAt) || expiresAt < 0 || expiresAt > LATEST_EXPIRY_MS) {
    throw badRequest('Invalid invite_expires_in_minutes: Value error, Out of range');
  }
  return new Date(expiresAt);
}

/** Steps 2-13: permissions, parsing, channels and groups, the welcome text; then the expiry. */
async function checkRequest(app: AppContext, actor: Actor, request: SendInvitationsRequest): Promise<CheckedRequest> {
  assertMayUseInvitations(actor);
  assertWellFormed(request);
  const permissions = await loadInvitePermissions(app, actor, { channelIds: request.streamIds, groupIds: request.groupIds });
  assertMayInvite(permissions);
  assertMayInviteAs(actor, request.inviteAs);
  const emails = parseInviteeEmails(request.inviteeEmails);
  if (emails.length === 0) throw badRequest('You must specify at least one email address.');
  assertChannelsInvitable(permissions, request.streamIds);
  assertGroupsInvitable(permissions, request.groupIds);
  if (request.welcomeMessageCustomText !== undefined && !isAdministrator(actor.role)) {
    throw badRequest('Must be an organization administrator');
  }
  const now = new Date();
  const expiresAt = expiryFor(request, app.config.invitationLinkValidityMinutes, now);
  return { org: permissions.organization, emails, expiresAt, now };
}

/** Addresses screened between two turns of the event loop: 10,000 at once held it for half a second. */
const ADDRESSES_PER_TURN = 500;

async function screenAddresses<Valid extends ValidAddress>(
  { emails, org }: CheckedRequest,
  prepare: (address: ValidAddress) => Valid,
): Promise<ScreenedAddresses<Valid>> {
  const invalid: InviteeError[] = [];
  const valid: Valid[] = [];
  for (let i = 0; i < emails.length; i++) {
    if (i > 0 && i % ADDRESSES_PER_TURN === 0) await setImmediate();
    const email = emails[i]!;
    const problem = addressProblem(email, org);
    if (problem) invalid.push([email, problem, false]);
    else valid.push(prepare({ email, emailKey: email.toLowerCase() }));
  }
  return { all: emails, invalid, valid };
}

/** What the limits count, and the valid addresses whose accounts the checks need to know about. */
export const lockedReads = (config: Config, { org }: CheckedRequest, addresses: ScreenedAddresses<ValidAddress>) => ({
  ...countsForLimits(config, org),
  emailKeys: addresses.valid.map((a) => a.emailKey),
});

export const isSystemBot = (emailKey: string) => SYSTEM_BOT_ADDRESSES.has(emailKey);

/** Steps 15-19 on what was read under the lock: the addresses skipped as existing accounts, or the refusal. */
function decide(
  config: Config,
  actor: Actor,
  request: SendInvitationsRequest,
  { org, now, addresses }: CheckedRequest & { addresses: ScreenedAddresses<ValidAddress> },
  locked: LockedCounts,
): InviteeError[] {
  const count = addresses.all.length;
  assertDailyLimitKept(config, org, locked, count);
  assertLicensesSuffice(org, locked, count, request.inviteAs);
  assertAccountOldEnough(actor, org, now);
  const skipped = skippedAddresses(addresses, locked);
  if (skipped.length === count) {
    throw new InvitationFailedError("We weren't able to invite anyone.", { errors: skipped });
  }
  return skipped;
}

/** Steps 18-19: invalid addresses refuse the whole request; existing accounts are skipped. */
function skippedAddresses(addresses: ScreenedAddresses<ValidAddress>, locked: LockedCounts): InviteeError[] {
  const active = new Set(locked.activeKeys);
  const deactivated = new Set(locked.deactivatedKeys);
  const skipped: InviteeError[] = [];
  for (const { email, emailKey } of addresses.valid) {
    if (isSystemBot(emailKey)) skipped.push([email, 'Reserved for system bots.', false]);
    else if (active.has(emailKey)) skipped.push([email, 'Already has an account.', false]);
    else if (deactivated.has(emailKey)) skipped.push([email, 'Account has been deactivated.', true]);
  }
  if (addresses.invalid.length > 0) {
    throw new InvitationFailedError("Some emails did not validate, so we didn't send any invitations.", {
      errors: [...addresses.invalid, ...skipped],
    });
  }
  return skipped;
}
