// The caller's file lists' statements: one statement reads a page of files with their messages'
// ids (and send times) and the organization's upload space. The bench sends a list's statement alone
// (ownAttachmentsListStatement).
import { Parameters } from '../../db/sql.js';
import type { Actor } from '../auth/authenticate.js';
import { chunkSeek, idColumn, seekSql, type KeysetOrder, type Seek } from '../connections.js';

/** Files per statement: a few MiB of rows at most, and one statement for the lists people have. */
export const ATTACHMENT_PAGE_SIZE = 2000;

/** The caller's files by ascending id. */
export const OWN_FILES_ORDER: KeysetOrder = { name: 'attachment', columns: [idColumn()], descending: false };

export function ownFilesStatement(actor: Pick<Actor, 'id' | 'organizationId'>, withMessages: boolean, seek: Seek) {
  const parameters = new Parameters([actor.id, actor.organizationId]);
  return { text: ownAttachmentsStatement(withMessages, seekSql(OWN_FILES_ORDER, seek, parameters)), values: parameters.values };
}

/**
 * The one statement of the first files: a whole list's first chunk, or with `pageLimit` a connection's
 * first page and its extra row. The bench runs it alone (scripts/bench/database-limit.ts), and its floor sends it.
 */
export const ownAttachmentsListStatement = (actor: Pick<Actor, 'id' | 'organizationId'>, withMessages: boolean, pageLimit?: number) =>
  ownFilesStatement(actor, withMessages, pageLimit === undefined ? chunkSeek(ATTACHMENT_PAGE_SIZE) : { backward: false, limit: pageLimit });

// Rows with arrays, not JSON: building JSON made PostgreSQL's share of the request three times the
// rows' (about 9 ms against 2-4 ms for 500 files), and the database shares the machine's cores with
// the server. date_part (a float) rather than extract (a numeric) for the same reason; times are
// whole milliseconds, so rounding makes them exact. A page ($1: the owner, $2: the organization, then
// the seek's values) is chosen by id before the messages are read.
// The page is read from the (owner, organization, id) index whatever the statistics say. Ordered by id
// alone, the primary key's order is the same, and PostgreSQL (assuming the owner's files spread evenly
// over the ids) took it for an owner whose files all came after most of the table's: 222,000 other
// rows filtered for the first page of 50 (25 ms against 0.1). Restating the owner and organization in
// the ORDER BY leaves that index the only ordered path; the owner is matched with = ANY so that the
// planner keeps that key (an = constant would make it redundant and drop it).
// Each file's messages are read by a subquery of its own, from the (attachment, message, send time)
// index alone, so that their cost follows the files listed: written as one join, small tables were
// hashed whole (every organization's links and messages) even for a page of 50, and a lookup of each
// message for its send time cost 40 % of the list with messages. The ids alone come in the index's
// order, with no sort.
export const ownAttachmentsStatement = (withMessages: boolean, seek: ReturnType<typeof seekSql>) => `
  SELECT o."uploadSpaceUsed"::text AS "uploadSpaceUsed", o."uploadQuotaGb", own.*
    FROM organization o
    LEFT JOIN LATERAL (
      SELECT a.id, a.name, a."pathId", a.size::text AS size, floor(date_part('epoch', a."createTime")) AS "createTime",
             ${
               withMessages
                 ? `coalesce(linked.ids, '{}') AS "messageIds", coalesce(linked.times, '{}') AS "messageTimes"`
                 : `ARRAY(SELECT ma."messageId" FROM message_attachment ma WHERE ma."attachmentId" = a.id ORDER BY ma."messageId") AS "messageIds"`
             }
        FROM (SELECT * FROM attachment
               WHERE "ownerId" = ANY(ARRAY[$1::int]) AND "organizationId" = o.id ${seek.where}
               ORDER BY ${seek.orderBy('', ['"ownerId"', '"organizationId"'])} LIMIT ${seek.limit}) a
        ${
          withMessages
            ? `LEFT JOIN LATERAL (
                 SELECT array_agg(ma."messageId" ORDER BY ma."messageId") AS ids,
                        array_agg(floor(date_part('epoch', ma."dateSent")) ORDER BY ma."messageId") AS times
                   FROM message_attachment ma WHERE ma."attachmentId" = a.id
               ) linked ON true`
            : ''
        }
    ) own ON true
   WHERE o.id = $2
   ORDER BY ${seek.orderBy('own.')}`;
