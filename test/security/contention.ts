// Makes concurrent requests really contend: the test holds the organization's row lock while it fires
// them, waits until several of them are blocked on a lock in PostgreSQL, then lets them all go at once.
import type { Prisma } from '../../src/db/database.js';
import type { Transaction } from '../../src/domain/email/outbox.js';

/** Asked on the lock holder's own connection: the requests may hold every other one of the pool. */
async function lockWaiters(tx: Transaction): Promise<number> {
  // Statistics are a snapshot per transaction unless cleared.
  await tx.$executeRaw`SELECT pg_stat_clear_snapshot()`;
  const [row] = await tx.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
  return row!.n;
}

/**
 * `fire()`'s result, started while the organization's row is locked and released once `waiters`
 * requests wait (and `whileBlocked()`, if given, has finished meanwhile).
 */
export async function whileOrganizationLocked<T>(
  prisma: Prisma,
  organizationId: number,
  fire: () => Promise<T>,
  waiters = 5,
  whileBlocked?: () => Promise<void>,
): Promise<T> {
  let settled = false;
  let result!: Promise<T>;
  await prisma.$transaction(
    async (tx) => {
      await tx.$queryRaw`SELECT id FROM organization WHERE id = ${organizationId} FOR UPDATE`;
      result = fire().finally(() => (settled = true));
      while (!settled && (await lockWaiters(tx)) < waiters) await new Promise((resolve) => setTimeout(resolve, 20));
      await whileBlocked?.();
    },
    { timeout: 120_000, maxWait: 10_000 },
  );
  return result;
}
