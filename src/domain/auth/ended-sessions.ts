// Sign-outs the database could not record because it was unavailable (signin.md section 4). The
// session's token hash becomes a file of its own under DATA_DIR/ended-sessions, written to disk before
// the sign-out answers, so that a process killed meanwhile loses nothing. This process refuses those
// sessions at once; their rows are deleted when the database answers again (the outage's end, the
// server's start, the minute's housekeeping), and each file is removed once its row is gone. Any
// process sharing the folder finishes the sign-outs of another. While the database is down nothing
// tells a real session from a made-up token, so at most MAX_PENDING are kept: past that, a sign-out
// only clears the cookies (the row ends when it expires).
import { mkdir, open, readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Sql } from '../../db/sql.js';

const HASH_NAME = /^[0-9a-f]{64}$/;
export const MAX_PENDING = 10_000;
/** Rows deleted per statement. */
const BATCH = 1000;

export class EndedSessions {
  private readonly pending = new Set<string>();

  private constructor(private readonly folder: string) {}

  /** The folder's sign-outs, left by this or an earlier process. */
  static async open(folder: string): Promise<EndedSessions> {
    await mkdir(folder, { recursive: true });
    const ended = new EndedSessions(folder);
    for (const name of await readdir(folder)) if (HASH_NAME.test(name)) ended.pending.add(name);
    return ended;
  }

  /** Whether the session of this token hash was signed out and its row may not be deleted yet. */
  has(tokenHash: string): boolean {
    return this.pending.has(tokenHash);
  }

  get size(): number {
    return this.pending.size;
  }

  /** Records the sign-out on disk (synced) before it is answered; not past MAX_PENDING. */
  async record(tokenHash: string): Promise<void> {
    if (!HASH_NAME.test(tokenHash) || this.pending.size >= MAX_PENDING) return;
    const file = await open(join(this.folder, tokenHash), 'w');
    try {
      await file.sync();
    } finally {
      await file.close();
    }
    const folder = await open(this.folder, 'r');
    try {
      await folder.sync();
    } finally {
      await folder.close();
    }
    this.pending.add(tokenHash);
  }

  /** Deletes the recorded sessions' rows, then forgets them; throws (keeping them) while the database is unavailable. */
  async flush(sql: Sql): Promise<void> {
    const hashes = [...new Set([...this.pending, ...(await readdir(this.folder)).filter((name) => HASH_NAME.test(name))])];
    for (let start = 0; start < hashes.length; start += BATCH) {
      const batch = hashes.slice(start, start + BATCH);
      await sql.rows('DELETE FROM user_session WHERE "tokenHash" = ANY($1::text[])', [batch]);
      for (const hash of batch) {
        await unlink(join(this.folder, hash)).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'ENOENT') throw error;
        });
        this.pending.delete(hash);
      }
    }
  }
}
