// The organization's upload space used: a counter on the organization row, changed in the same
// transaction as every attachment insert and delete, so that reading it never sums the files.
import type { Transaction } from '../transaction.js';

/** Adds `deltaBytes` (negative for deletions) to the organization's counter; returns the new total. */
export async function adjustUploadSpaceUsed(tx: Transaction, organizationId: number, deltaBytes: bigint): Promise<bigint> {
  const { uploadSpaceUsed } = await tx.organization.update({
    where: { id: organizationId },
    data: { uploadSpaceUsed: { increment: deltaBytes } },
    select: { uploadSpaceUsed: true },
  });
  return uploadSpaceUsed;
}

export interface NewAttachment {
  organizationId: number;
  ownerId: number;
  name: string;
  pathId: string;
  size: bigint;
  contentType?: string | null;
  createTime?: Date;
}

/** Inserts attachment rows of one organization and counts their bytes, in the caller's transaction. */
export async function insertAttachments(tx: Transaction, organizationId: number, rows: (NewAttachment & { id?: number })[]) {
  const created = await tx.attachment.createManyAndReturn({ data: rows, select: { id: true, size: true } });
  await adjustUploadSpaceUsed(
    tx,
    organizationId,
    created.reduce((sum, row) => sum + row.size, 0n),
  );
  return created;
}

/**
 * Deletes one attachment row (its message links cascade) and uncounts its bytes; returns the new
 * total. Conditional on the row still existing: of two concurrent deletions only one uncounts.
 */
export async function removeAttachmentRow(
  tx: Transaction,
  organizationId: number,
  row: { id: number; size: bigint },
): Promise<bigint | null> {
  const { count } = await tx.attachment.deleteMany({ where: { id: row.id, organizationId } });
  if (count === 0) return null;
  return adjustUploadSpaceUsed(tx, organizationId, -row.size);
}
