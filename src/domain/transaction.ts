// The one way services run a transaction: generous waits (requests queue on the organization's row
// lock, up to DATABASE_LOCK_WAIT_SECONDS, then answer 503), and a bounded retry when PostgreSQL
// gives up on it (serialization failure, deadlock), so that a race never surfaces as a 500. Every
// transaction that locks rows locks the organization's row first, which keeps deadlocks out in the
// first place; the retry is the safety net.
import type { DatabaseClient } from '../db/database.js';
import { hasErrorCode } from '../db/error-chain.js';
import type { Sql } from '../db/sql.js';
import type { Prisma as PrismaNamespace } from '../generated/prisma/client.js';

/** A Prisma client inside one transaction: what services that write take. */
export type Transaction = PrismaNamespace.TransactionClient;

const RETRYABLE_CODES = new Set(['P2034', '40001', '40P01']);
export const MAX_TRANSACTION_ATTEMPTS = 4;

/** Whether the error (or any error it wraps) is a serialization failure or a deadlock. */
export const isRetryable = (error: unknown) => hasErrorCode(error, RETRYABLE_CODES);

async function withRetries<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= MAX_TRANSACTION_ATTEMPTS || !isRetryable(error)) throw error;
    }
  }
}

export function inTransaction<T>(prisma: DatabaseClient, work: (tx: Transaction) => Promise<T>): Promise<T> {
  return withRetries(() => prisma.$transaction(work, { maxWait: 10_000, timeout: 30_000 }));
}

/** A hot path's transaction straight through the driver (db/sql.ts), with the same retries; `opening` as `Sql.transaction`'s. */
export function inSqlTransaction<T>(sql: Sql, work: (tx: Sql) => Promise<T>, opening?: string): Promise<T> {
  return withRetries(() => sql.transaction(work, opening));
}
