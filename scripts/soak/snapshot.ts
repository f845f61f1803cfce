// The database and the storage after a soak run, read once into plain data for the checks
// (checks.ts): the soak organizations' invitations, accounts, emoji, files and events, the outbox's
// rows with the Message-ID each must carry, and every stored file with its size.
import { readdir, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type pg from 'pg';
import { outboxMessageId } from '../../src/domain/email/transport.js';
import type { Snapshot } from './checks.js';

export async function readSnapshot(db: pg.Pool, organizationIds: number[], uploadsDir: string, emailFrom: string): Promise<Snapshot> {
  const query = async <T extends pg.QueryResultRow>(sql: string) => (await db.query<T>(sql, [organizationIds])).rows;
  const outbox = await query<{ id: number; toAddress: string; status: string; attempts: number; lastError: string | null }>(
    'SELECT id, "toAddress", status::text, attempts, "lastError" FROM outbox_email WHERE "organizationId" = ANY($1::int[])',
  );
  const attachments = await query<{ id: number; organizationId: number; name: string; pathId: string; size: string }>(
    'SELECT id, "organizationId", name, "pathId", size::text FROM attachment WHERE "organizationId" = ANY($1::int[])',
  );
  const organizations = await query<{ id: number; used: string }>(
    'SELECT id, "uploadSpaceUsed"::text AS used FROM organization WHERE id = ANY($1::int[])',
  );
  const events = await query<{ position: string; organizationId: number; recipientIds: number[]; type: string }>(
    `SELECT position::text, "organizationId", "recipientIds", type FROM event
      WHERE "organizationId" = ANY($1::int[]) AND position IS NOT NULL`,
  );
  return {
    invitations: await query('SELECT id, "organizationId", email, status::text FROM invitation WHERE "organizationId" = ANY($1::int[])'),
    accounts: await query('SELECT "organizationId", email FROM user_account WHERE "organizationId" = ANY($1::int[])'),
    emoji: await query('SELECT "organizationId", name, deactivated FROM custom_emoji WHERE "organizationId" = ANY($1::int[])'),
    attachments: attachments.map((a) => ({ ...a, size: Number(a.size) })),
    uploadSpaceUsed: organizations.map((o) => ({ organizationId: o.id, used: Number(o.used) })),
    storedFiles: await storedFiles(join(uploadsDir, 'files')),
    outbox: outbox.map((row) => ({ ...row, messageId: outboxMessageId(row.id, emailFrom) })),
    events: events.map((e) => ({ ...e, position: Number(e.position) })),
  };
}

/** Every file under `root` with its size, by its path relative to it. */
async function storedFiles(root: string): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  const walk = async (dir: string) => {
    for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else found.set(relative(root, path), (await stat(path)).size);
    }
  };
  await walk(root);
  return found;
}
