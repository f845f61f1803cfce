// The database is the source of truth for uploaded files: a file exists when its attachment row does.
// Bytes can outlive their row (a process killed between storing an upload and committing its row, a
// write that never finished, a deletion whose storage step failed after the row was gone); this
// sweep finds stored objects under `files/` older than a grace period that no row names, and removes
// them. The grace keeps it away from uploads still between their write and their commit.
import type { DatabaseClient } from '../../db/database.js';
import type { FileStorage } from '../../storage/storage.js';
import { fileKey } from './paths.js';
import { LONGEST_UNCOMMITTED_BYTES_MS } from './upload-file.js';

/** How far the clock of the storage (an S3 server's, which dates its objects) may lag behind this one. */
const STORAGE_CLOCK_LAG_MS = 5 * 60_000;
/**
 * The sweep's grace: longer than bytes can wait for their row (upload-file.ts), with room for the
 * storage's clock, in whole minutes (35).
 */
export const SWEEP_GRACE_MS = Math.ceil((LONGEST_UNCOMMITTED_BYTES_MS + STORAGE_CLOCK_LAG_MS) / 60_000) * 60_000;

const FILES_PREFIX = fileKey('');
/** Rows looked up per statement. */
const BATCH = 500;

export interface SweepResult {
  /** Objects under files/ older than the grace. */
  examined: number;
  /** Keys of the objects removed (no row names them). */
  removed: string[];
}

export interface SweepOptions {
  graceMs: number;
  now?: Date;
  /** Stops the sweep before its next batch (a stopping server). */
  signal?: AbortSignal;
  /** Told every few hundred objects listed (a progress display). */
  onProgress?(progress: { listed: number; examined: number; removed: number }): void;
}

export async function sweepOrphanFiles(
  app: { prisma: DatabaseClient; storage: FileStorage },
  { graceMs, now = new Date(), signal, onProgress }: SweepOptions,
): Promise<SweepResult> {
  const olderThan = now.getTime() - graceMs;
  const result: SweepResult = { examined: 0, removed: [] };
  let listed = 0;
  let batch: string[] = [];
  const sweep = async () => {
    result.removed.push(...(await removeUnnamed(app, batch)));
    batch = [];
  };
  const report = () => onProgress?.({ listed, examined: result.examined, removed: result.removed.length });
  for await (const object of app.storage.list(FILES_PREFIX)) {
    if (signal?.aborted) return result;
    listed++;
    if (object.modifiedAt.getTime() <= olderThan) {
      result.examined++;
      batch.push(object.key);
      if (batch.length === BATCH) await sweep();
    }
    if (listed % BATCH === 0) report();
  }
  if (batch.length > 0 && !signal?.aborted) await sweep();
  report();
  return result;
}

/** Removes the objects of `keys` that no attachment row names; returns their keys. */
async function removeUnnamed(app: { prisma: DatabaseClient; storage: FileStorage }, keys: string[]): Promise<string[]> {
  const pathIds = keys.map((key) => key.slice(FILES_PREFIX.length));
  const rows = await app.prisma.$queryRaw<{ pathId: string }[]>`SELECT "pathId" FROM attachment WHERE "pathId" = ANY(${pathIds}::text[])`;
  const named = new Set(rows.map((row) => row.pathId));
  const orphans = keys.filter((_key, i) => !named.has(pathIds[i]!));
  for (const key of orphans) await app.storage.delete(key);
  return orphans;
}
