// What an invitation round wrote, for the comparison of floor and server: how many invitations,
// e-mails and events, and the distinct shapes of all of them (invitations with their channels and
// groups), normalized so that equivalent requests give equal shapes (addresses, keys, referrer and
// expiry date taken out; of an event's recipients, the inviter).
import type pg from 'pg';
import type { Scenario, WrittenRows } from './load.js';

/** An e-mail's text without what differs between equivalent requests. */
const normalized = (column: string, name: string) => `
  regexp_replace(replace(replace(replace(${column}, i."confirmationKey", '<key>'), u.email, '<referrer e-mail>'), u."fullName", '<referrer>'),
                 '\\d{1,2} [A-Z][a-z]+ \\d{4}, \\d\\d:\\d\\d UTC', '<expiry>', 'g') AS "${name}"`;

// A request still in flight when the previous round ended (waiting for the organization's lock)
// writes after this round began: its invitation's time is the request's, before the round.
const ROUND_EMAILS = `o."organizationId" = $1 AND o.kind = 'invitation' AND o."createdAt" >= $2::timestamp(3) AND i."invitedAt" >= $2::timestamp(3)`;

// The round's e-mails through the outbox's (organizationId, kind, createdAt) index (outbox_email has
// no index on invitationId, and a full run leaves it large), each with its invitation. The invited
// addresses are the bench's `invitee-<run>-<batch>-<k>@...`.
const WRITTEN_SHAPES = `
  SELECT DISTINCT to_jsonb(shape)::text AS shape FROM (
    SELECT o.kind, o."toAddress" = i.email AS "toInvitee", ${normalized('o.subject', 'subject')},
           ${normalized('o."textBody"', 'textBody')}, ${normalized('o."htmlBody"', 'htmlBody')},
           regexp_replace(i.email, '^invitee-[^@]*@', 'invitee@') AS email, i."invitedAs", i.status,
           i."includeRealmDefaultSubscriptions", i."notifyReferrerOnJoin", i."welcomeMessageCustomText", i."createdUserId",
           i."confirmationKey" ~ '^[a-z2-7]{24}$' AS "wellFormedKey",
           (extract(epoch FROM i."expiresAt" - i."invitedAt") / 60)::int AS "validityMinutes",
           ARRAY(SELECT "channelId" FROM invitation_channel WHERE "invitationId" = i.id ORDER BY 1) AS channels,
           ARRAY(SELECT "groupId" FROM invitation_group WHERE "invitationId" = i.id ORDER BY 1) AS groups
      FROM outbox_email o JOIN invitation i ON i.id = o."invitationId" JOIN user_account u ON u.id = i."referrerId"
     WHERE ${ROUND_EMAILS}) AS shape
  UNION
  -- Each request's invites_changed event: for the owners and administrators, and the inviter (one of
  -- them, or a member whom the shape leaves out, as the invitations' referrer).
  SELECT DISTINCT jsonb_build_object('event', e.type, 'payload', e.payload,
           'administrators', array(SELECT r FROM unnest(e."recipientIds") r JOIN user_account u ON u.id = r AND u.role <= 200 AND u."isActive" ORDER BY r))::text
    FROM event e WHERE e."organizationId" = $1 AND e.id > $3`;

const COUNTS = `
  SELECT (SELECT count(*)::int FROM invitation WHERE "organizationId" = $1 AND id > $3 AND "invitedAt" >= $2::timestamp(3)) AS invitations,
         (SELECT count(*)::int FROM outbox_email o JOIN invitation i ON i.id = o."invitationId" WHERE ${ROUND_EMAILS}) AS emails,
         (SELECT count(*)::int FROM event WHERE "organizationId" = $1 AND id > $4 AND type = 'invites_changed') AS events`;

/** Records the organization's invitations and e-mails written from now on; `addresses` per request. */
export function invitationWrites(db: pg.Pool, organizationId: number, addresses: number): NonNullable<Scenario['recordWrites']> {
  return async () => {
    const since = new Date().toISOString();
    const { rows } = await db.query(
      'SELECT (SELECT coalesce(max(id), 0) FROM invitation) AS last, (SELECT coalesce(max(id), 0) FROM event) AS "lastEvent"',
    );
    const { last: lastId, lastEvent } = rows[0];
    return async (): Promise<WrittenRows> => {
      // Statistics from before the round (the tables empty at the import's ANALYZE) made PostgreSQL
      // walk the round's e-mails once per invitation: six minutes for a round of 15,000.
      await db.query('ANALYZE invitation, outbox_email');
      const [counts, written] = await Promise.all([
        db.query(COUNTS, [organizationId, since, lastId, lastEvent]),
        db.query(WRITTEN_SHAPES, [organizationId, since, lastEvent]),
      ]);
      const { invitations, emails, events } = counts.rows[0];
      const requests = Math.floor(invitations / addresses);
      // A request of the previous round still in flight may add an event: fewer than one a request is wrong.
      const problems = [
        ...(invitations === emails ? [] : [`${invitations} invitations written with ${emails} e-mails`]),
        ...(events >= requests ? [] : [`${requests} requests' invitations written with ${events} invites_changed events`]),
      ];
      return { requests, shapes: written.rows.map((row) => row.shape), problems };
    };
  };
}
