// What an emoji deactivation round wrote, for the comparison of floor and server: per request the
// emoji's update, its audit entry and its realm_emoji event, normalized (the emoji's id, name and
// file and author taken out) into shapes that must be the same on both sides. Heartbeats are left
// out: the live scenario's long polls write them beside its rounds, whatever the requests do.
import type pg from 'pg';
import type { Scenario, WrittenRows } from './load.js';

const BEFORE = `SELECT (SELECT coalesce(max(id), 0) FROM audit_log_entry) AS audit, (SELECT coalesce(max(id), 0) FROM event) AS event,
                        (SELECT count(*)::int FROM custom_emoji WHERE "organizationId" = $1 AND deactivated) AS deactivated`;

const withoutEmoji = (dict: string) => `((${dict}) - 'id' - 'name' - 'source_url' - 'author_id')`;

const WRITTEN_SHAPES = `
  SELECT DISTINCT shape FROM (
    SELECT jsonb_build_object('audit', "eventType", 'actor', "actorId",
             'before', ${withoutEmoji(`"extraData"->'before'`)}, 'after', ${withoutEmoji(`"extraData"->'after'`)},
             'utcTime', abs(extract(epoch FROM "eventTime" - (now() AT TIME ZONE 'UTC'))) < 3600)::text AS shape
      FROM audit_log_entry WHERE "organizationId" = $1 AND id > $2
    UNION ALL
    SELECT jsonb_build_object('event', type, 'recipients', "recipientIds", 'payload', payload #- '{emoji,id}' #- '{emoji,name}' #- '{emoji,fileName}' #- '{emoji,authorId}')::text
      FROM event WHERE "organizationId" = $1 AND id > $3 AND type <> 'heartbeat') AS written`;

const COUNTS = `
  SELECT (SELECT count(*)::int FROM audit_log_entry WHERE "organizationId" = $1 AND id > $2 AND "eventType" = 'REALM_EMOJI_REMOVED') AS audits,
         (SELECT count(*)::int FROM event WHERE "organizationId" = $1 AND id > $3 AND type = 'realm_emoji') AS events,
         (SELECT count(*)::int FROM custom_emoji WHERE "organizationId" = $1 AND deactivated) AS deactivated`;

/** Records the organization's deactivations, audit entries and events from now on. */
export function emojiWrites(db: pg.Pool, organizationId: number): NonNullable<Scenario['recordWrites']> {
  return async () => {
    const before = (await db.query(BEFORE, [organizationId])).rows[0];
    const { audit, event } = before;
    return async (): Promise<WrittenRows> => {
      const values = [organizationId, audit, event];
      const [counts, written] = await Promise.all([db.query(COUNTS, values), db.query(WRITTEN_SHAPES, values)]);
      const { audits, events } = counts.rows[0];
      const deactivated = counts.rows[0].deactivated - before.deactivated;
      const problems =
        audits === events && events === deactivated
          ? []
          : [`${deactivated} emoji deactivated with ${audits} audit entries and ${events} events`];
      return { requests: deactivated, shapes: written.rows.map((row) => row.shape), problems };
    };
  };
}
