// Migrations that fill a new column from existing rows, run on a database as an older server left
// it: the migrations before them applied, rows written in that schema, then the rest applied.
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { expect, inject, test } from 'vitest';
import { applyMigrationsAndDisconnect } from '../../src/db/migrations.js';
import { withEmptyDatabase } from '../support/postgres-databases.js';

/** The last migration before links carried their message's send time. */
const BEFORE_SEND_TIMES = '20261128220000_failed_login_release_notifications';

/** Two messages sent at different times, a file linked from both and a file linked from one, written in the older schema. */
async function insertLinksWithoutSendTimes(db: pg.Client) {
  const {
    rows: [organization],
  } = await db.query(`INSERT INTO organization ("stringId", name) VALUES ('backfill', 'Backfill') RETURNING id`);
  const {
    rows: [user],
  } = await db.query(
    `INSERT INTO user_account ("organizationId", email, "emailKey", "fullName", "apiKeyHash")
     VALUES ($1, 'owner@backfill.example', 'owner@backfill.example', 'Owner', 'hash') RETURNING id`,
    [organization.id],
  );
  const { rows: messages } = await db.query(
    `INSERT INTO message ("organizationId", "senderId", content, "dateSent")
     SELECT $1, $2, 'message ' || k, timestamp '2026-01-01 10:00:00.123' + make_interval(days => k) FROM generate_series(1, 2) k
     RETURNING id, "dateSent"`,
    [organization.id, user.id],
  );
  const { rows: files } = await db.query(
    `INSERT INTO attachment ("organizationId", "ownerId", name, "pathId", size)
     SELECT $1, $2, 'file-' || k || '.txt', 'path-' || k, 10 FROM generate_series(1, 2) k RETURNING id`,
    [organization.id, user.id],
  );
  const links = [
    [messages[0].id, files[0].id],
    [messages[1].id, files[0].id],
    [messages[1].id, files[1].id],
  ];
  await db.query(`INSERT INTO message_attachment ("messageId", "attachmentId") SELECT * FROM unnest($1::int[], $2::int[])`, [
    links.map(([message]) => message),
    links.map(([, file]) => file),
  ]);
  return messages as { id: number; dateSent: Date }[];
}

test('links written before send times were copied get their message send time, and the column then requires one', async () => {
  await withEmptyDatabase(inject('databaseUrl'), 'teamchat_backfill', async ({ url }) => {
    const db = new pg.Client({ connectionString: url });
    try {
      await applyMigrationsAndDisconnect(new PrismaPg({ connectionString: url }), BEFORE_SEND_TIMES);
      await db.connect();
      const messages = await insertLinksWithoutSendTimes(db);

      const applied = await applyMigrationsAndDisconnect(new PrismaPg({ connectionString: url }));
      expect(applied).toContain('20261129081310_message_attachment_send_times');

      const { rows: links } = await db.query(`SELECT "messageId", "dateSent" FROM message_attachment ORDER BY "attachmentId", "messageId"`);
      const [first, second] = messages.map((message) => [message.id, message.dateSent.getTime()]);
      expect(first![1]).not.toBe(second![1]);
      expect(links.map((link) => [link.messageId, link.dateSent.getTime()])).toEqual([first, second, second]);
      await expect(
        db.query(`INSERT INTO message_attachment ("messageId", "attachmentId") VALUES ($1, (SELECT max(id) FROM attachment))`, [
          messages[0]!.id,
        ]),
      ).rejects.toMatchObject({ code: '23502' });
    } finally {
      await db.end().catch(() => {});
    }
  });
}, 120_000);
