// A dry run of sendInvitations: the same plan (plan-invitations.ts), with its checks in the same order
// and its messages, run in a read-only transaction without the organization's queue or lock; nothing
// is written, locked or sent.
import type { AppContext } from '../../app-context.js';
import type { Actor } from '../auth/authenticate.js';
import { statementRows } from '../../db/sql.js';
import { Prisma } from '../../generated/prisma/client.js';
import { lockedCountsSql, type LockedCounts } from './limits.js';
import {
  lockedReads,
  planInvitations,
  sendInvitationsRequest,
  type PlanRun,
  type SendInvitationsInput,
  type ValidAddress,
} from './plan-invitations.js';

export interface AddressVerdict {
  email: string;
  willInvite: boolean;
  /** The reason sendInvitations would give for not inviting the address; null when it would. */
  reason: string | null;
  deactivated: boolean;
}

export interface InvitationPreview {
  addresses: AddressVerdict[];
  wouldInvite: number;
}

/**
 * What sendInvitations would do with this request now: its refusal thrown as it would throw it, or
 * one verdict per parsed address, in the order given.
 */
export async function previewInvitations(app: AppContext, actor: Actor, input: SendInvitationsInput): Promise<InvitationPreview> {
  const { emails, skipped } = await planInvitations(app, actor, sendInvitationsRequest(input), previewRun(app));
  // Parsed addresses are distinct (parseInviteeEmails), so each has at most one refusal.
  const refusals = new Map(skipped.map(([email, reason, deactivated]) => [email, { reason, deactivated }]));
  const addresses = emails.map((email) => ({
    email,
    willInvite: !refusals.has(email),
    reason: null,
    deactivated: false,
    ...refusals.get(email),
  }));
  return { addresses, wouldInvite: addresses.filter((a) => a.willInvite).length };
}

/** Runs the plan with nothing around it but a read-only transaction, and reads what the send reads under its lock. */
function previewRun(app: AppContext): PlanRun<ValidAddress, null> {
  return {
    inOrganizationTurn: (_organizationId, work) => work(),
    prepare: (address) => address,
    transaction: (_checked, work) => app.sql.transaction(work, 'SET TRANSACTION READ ONLY'),
    async read(tx, checked, addresses) {
      const reads = lockedReads(app.config, checked, addresses);
      const [locked] = await statementRows<LockedCounts>(tx, Prisma.sql`SELECT ${lockedCountsSql(checked.org.id, checked.now, reads)}`);
      return { locked: locked!, stored: null };
    },
  };
}
