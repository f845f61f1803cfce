// The soak's invariants, checked against the database, the storage and what the clients received
// once the fleet has drained. A change acknowledged (ok) must be there; a refused one must not; one
// of unknown outcome may be either, but whole (an invitation of several addresses is all or none).
import { readdir, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type pg from 'pg';
import type { ParsedMail } from 'mailparser';
import type { FaultLog } from './faults.js';
import type { History, Operation } from './history.js';
import type { LiveClient } from './live.js';
import { addressOf } from './workload.js';

type Check = (reason: string) => void;

const subject = <T>(op: Operation) => op.subject as T;
const ofKind = (history: History, kind: string) => history.operations.filter((op) => op.kind === kind);

export async function checkInvitations(db: pg.Pool, history: History, fail: Check) {
  for (const op of ofKind(history, 'invite')) {
    const { organizationId, emails } = subject<{ organizationId: number; emails: string[] }>(op);
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM invitation WHERE "organizationId" = $1 AND email = ANY($2::text[])', [organizationId, emails]);
    const found = rows[0]!.n;
    if (op.outcome === 'ok' && found !== emails.length) fail(`invitation #${op.id} of ${emails.join(', ')} was acknowledged; ${found} of its ${emails.length} rows are in the database`);
    if (op.outcome === 'refused' && found !== 0) fail(`invitation #${op.id} of ${emails.join(', ')} was refused (${op.status}); ${found} of its rows are in the database`);
    if (op.outcome === 'unknown' && found !== 0 && found !== emails.length) fail(`invitation #${op.id} (unknown outcome) left ${found} of its ${emails.length} rows: not all or nothing`);
  }
  for (const op of ofKind(history, 'revoke invitation').filter((o) => o.outcome === 'ok')) {
    const { invitationId } = subject<{ invitationId: number }>(op);
    const { rows } = await db.query<{ status: string }>('SELECT status::text FROM invitation WHERE id = $1', [invitationId]);
    if (rows[0]?.status !== 'REVOKED') fail(`the revocation of invitation ${invitationId} (#${op.id}) was acknowledged; its status is ${rows[0]?.status ?? 'gone'}`);
  }
  for (const op of ofKind(history, 'accept invitation')) {
    const { organizationId, email } = subject<{ organizationId: number; email: string }>(op);
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM user_account WHERE "organizationId" = $1 AND lower(email) = lower($2)', [organizationId, email]);
    if (op.outcome === 'ok' && rows[0]!.n !== 1) fail(`the acceptance of ${email} (#${op.id}) was acknowledged; ${rows[0]!.n} accounts exist`);
    if (op.outcome === 'refused' && rows[0]!.n !== 0) fail(`the acceptance of ${email} (#${op.id}) was refused (${op.status}); the account exists`);
  }
}

export async function checkEmoji(db: pg.Pool, history: History, fail: Check) {
  for (const op of ofKind(history, 'add emoji')) {
    const { organizationId, name } = subject<{ organizationId: number; name: string }>(op);
    const { rows } = await db.query('SELECT deactivated FROM custom_emoji WHERE "organizationId" = $1 AND name = $2', [organizationId, name]);
    if (op.outcome === 'ok' && rows.length !== 1) fail(`emoji ${name} (#${op.id}) was acknowledged; ${rows.length} rows are in the database`);
    if (op.outcome === 'refused' && rows.length !== 0) fail(`emoji ${name} (#${op.id}) was refused (${op.status}); it is in the database`);
  }
  for (const op of ofKind(history, 'deactivate emoji').filter((o) => o.outcome === 'ok')) {
    const { organizationId, name } = subject<{ organizationId: number; name: string }>(op);
    const { rows } = await db.query('SELECT deactivated FROM custom_emoji WHERE "organizationId" = $1 AND name = $2', [organizationId, name]);
    if (rows[0]?.deactivated !== true) fail(`the deactivation of emoji ${name} (#${op.id}) was acknowledged; it is ${rows.length ? 'active' : 'not in the database'}`);
  }
}

export async function checkFiles(db: pg.Pool, history: History, uploadsDir: string, organizationIds: number[], fail: Check) {
  const deletions = ofKind(history, 'delete attachment');
  const mayBeDeleted = new Set(deletions.filter((o) => o.outcome !== 'refused').map((o) => subject<{ name: string }>(o).name));
  for (const op of ofKind(history, 'upload')) {
    const { organizationId, name } = subject<{ organizationId: number; name: string }>(op);
    const { rows } = await db.query('SELECT id FROM attachment WHERE "organizationId" = $1 AND name = $2', [organizationId, name]);
    if (op.outcome === 'ok' && rows.length !== 1 && !mayBeDeleted.has(name)) fail(`upload ${name} (#${op.id}) was acknowledged; ${rows.length} rows are in the database`);
    if (op.outcome === 'refused' && rows.length !== 0) fail(`upload ${name} (#${op.id}) was refused (${op.status}); its row is in the database`);
  }
  for (const op of deletions) {
    const { attachmentId } = subject<{ attachmentId: number }>(op);
    const { rows } = await db.query('SELECT id FROM attachment WHERE id = $1', [attachmentId]);
    if (op.outcome === 'ok' && rows.length !== 0) fail(`the deletion of attachment ${attachmentId} (#${op.id}) was acknowledged; its row is in the database`);
    if (op.outcome === 'refused' && rows.length !== 1) fail(`the deletion of attachment ${attachmentId} (#${op.id}) was refused (${op.status}); its row is gone`);
  }
  const { rows: totals } = await db.query<{ id: number; used: string; sum: string }>(
    `SELECT o.id, o."uploadSpaceUsed"::text AS used, coalesce((SELECT sum(size) FROM attachment a WHERE a."organizationId" = o.id), 0)::text AS sum
       FROM organization o WHERE o.id = ANY($1::int[])`,
    [organizationIds],
  );
  for (const t of totals) if (t.used !== t.sum) fail(`organization ${t.id}: upload_space_used is ${t.used}, its files' sizes add up to ${t.sum}`);
  const { rows: files } = await db.query<{ id: number; pathId: string; size: string }>('SELECT id, "pathId", size::text FROM attachment WHERE "organizationId" = ANY($1::int[])', [organizationIds]);
  const stored = await storedFiles(join(uploadsDir, 'files'));
  const rowPaths = new Set(files.map((f) => f.pathId));
  for (const file of files) {
    const size = stored.get(file.pathId);
    const deleting = deletions.filter((o) => subject<{ attachmentId: number }>(o).attachmentId === file.id).map((o) => `#${o.id} ${o.outcome} ${o.status ?? o.detail}`);
    if (size === undefined) fail(`attachment ${file.pathId}: its row has no stored bytes (deletions of it: ${deleting.join('; ') || 'none'})`);
    else if (String(size) !== file.size) fail(`attachment ${file.pathId}: ${size} bytes stored, ${file.size} in its row`);
  }
  const ofSoak = (path: string) => organizationIds.some((id) => path.startsWith(`${id}/`));
  for (const path of stored.keys()) if (ofSoak(path) && !rowPaths.has(path)) fail(`stored bytes without a row: ${path}`);
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

/** How close (in s) to a copy's arrival a fault must be to explain a second copy: the SENT mark follows the acceptance within the batch, and is retried for 7.5 s (worker.ts). */
const REDELIVERY_WINDOW_S = 10;

/**
 * Delivery is at least once (docs/guide/operations.md, "E-mail"): every invitation's e-mail arrived, all its copies carry
 * the same Message-ID, and a second copy only for a message whose delivery overlapped a fault (a
 * process killed, the database cut or its backends terminated between the mail server's acceptance
 * and the row's SENT). None arrived for an address without an invitation. Returns the re-deliveries.
 */
export async function checkEmails(db: pg.Pool, received: ParsedMail[], receivedAt: number[], faults: FaultLog[], organizationIds: number[], fail: Check): Promise<number> {
  const copies = new Map<string, { at: number; messageId: string | undefined }[]>();
  received.forEach((message, i) => {
    copies.set(addressOf(message), [...(copies.get(addressOf(message)) ?? []), { at: receivedAt[i]! / 1000, messageId: message.messageId }]);
  });
  const { rows } = await db.query<{ email: string }>('SELECT email FROM invitation WHERE "organizationId" = ANY($1::int[])', [organizationIds]);
  const invited = new Set(rows.map((row) => row.email));
  const faultNear = (at: number) => faults.some((fault) => fault.kind !== 'smtp-refuses' && Math.abs(fault.at - at) <= REDELIVERY_WINDOW_S);
  let redeliveries = 0;
  for (const email of invited) {
    const arrived = copies.get(email) ?? [];
    const when = arrived.map((copy) => `${copy.at.toFixed(1)} s`).join(', ');
    if (arrived.length === 0) fail(`the invitation e-mail to ${email} never arrived`);
    if (arrived.length < 2) continue;
    redeliveries += arrived.length - 1;
    const ids = new Set(arrived.map((copy) => copy.messageId));
    if (ids.size !== 1 || ids.has(undefined)) fail(`the ${arrived.length} copies of the invitation e-mail to ${email} (at ${when}) carry different Message-IDs: ${[...ids].join(', ')}`);
    if (!faultNear(arrived[0]!.at)) fail(`the invitation e-mail to ${email} arrived ${arrived.length} times (at ${when}) with no fault within ${REDELIVERY_WINDOW_S} s of its first delivery`);
  }
  for (const [email, arrived] of copies) if (!invited.has(email)) fail(`${arrived.length} e-mails arrived for ${email}, which has no invitation`);
  const { rows: left } = await db.query<{ status: string; n: number; error: string | null }>(
    `SELECT status::text, count(*)::int AS n, max("lastError") AS error FROM outbox_email WHERE status <> 'SENT' GROUP BY status`,
  );
  for (const row of left) fail(`${row.n} e-mails ${row.status} after the drain (last error: ${row.error})`);
  return redeliveries;
}

/** The positions a live client should have received: its organization's events of its types, for its user, after its start. */
export async function expectedPositions(db: pg.Pool, client: LiveClient, startAfter: number): Promise<number[]> {
  const { rows } = await db.query<{ position: string }>(
    `SELECT e.position::text AS position FROM event e
      WHERE e."organizationId" = $1 AND e.position > $2 AND (e."recipientIds" = '{}' OR $3 = ANY(e."recipientIds")) AND e.type = ANY($4::text[])
      ORDER BY e.position`,
    [client.organizationId, startAfter, client.user.id, client.types],
  );
  return rows.map((row) => Number(row.position));
}

/** Every live client received each of its events exactly once, in order, across its reconnections. */
export async function checkLiveClients(db: pg.Pool, clients: LiveClient[], fail: Check) {
  for (const client of clients) {
    const startAfter = await client.startAfter();
    if (startAfter === undefined) {
      fail(`${client.name}: its queue never registered, or is gone`);
      continue;
    }
    const expected = await expectedPositions(db, client, startAfter);
    const got = client.received;
    if (expected.length === got.length && expected.every((p, i) => got[i] === p)) continue;
    const duplicates = got.filter((p, i) => got.indexOf(p) !== i);
    const missing = expected.filter((p) => !got.includes(p));
    const foreign = got.filter((p) => !expected.includes(p));
    const disorder = got.findIndex((p, i) => i > 0 && p <= got[i - 1]!);
    const receipts = got.map((p, i) => `${p}@${client.receivedOn[i]}`);
    fail(
      `${client.name} (user ${client.user.id}, ${client.types.join(',')}, after ${startAfter}, ${client.reconnections} reconnections): ` +
        `${got.length} events received, ${expected.length} expected; missing ${missing.slice(0, 10).join(',')}${missing.length > 10 ? ` (${missing.length})` : ''}; ` +
        `twice ${duplicates.slice(0, 10).join(',')}; not its own ${foreign.slice(0, 10).join(',')}; ${disorder >= 0 ? `out of order at ${disorder}` : 'in order'}; ` +
        `received (position@connection) ${receipts.slice(0, 30).join(' ')}; expected ${expected.slice(0, 30).join(' ')} (${typeof got[0]} / ${typeof expected[0]})`,
    );
  }
}
