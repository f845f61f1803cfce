// DATABASE_LOCK_WAIT_SECONDS as PostgreSQL's lock_timeout (a wait beyond it fails with 55P03, which
// requests answer with 503). Connected to PostgreSQL itself, each pooled connection carries it from its
// start-up, so every statement has it. Through a pooler in transaction mode that cannot work: PgBouncer
// refuses start-up parameters it does not know, and a session-level SET would stay on a server
// connection that other clients get next. There each transaction sets it for itself with SET LOCAL,
// the driver's (db/sql.ts) and Prisma's alike; statements outside a transaction wait without a limit.
import type { IsolationLevel, SqlDriverAdapterFactory, Transaction } from '@prisma/driver-adapter-utils';

export interface LockWait {
  /** Start-up parameters of each pooled connection. */
  connection: { lock_timeout?: number };
  /** What opens a driver transaction (one round trip). */
  begin: string;
  /** Prisma's adapter, its transactions opened with the same limit. */
  prismaAdapter(adapter: SqlDriverAdapterFactory): SqlDriverAdapterFactory;
}

const unchanged = (adapter: SqlDriverAdapterFactory) => adapter;

/** `milliseconds` 0: no limit. */
export function lockWait(milliseconds: number, throughPooler: boolean): LockWait {
  if (!throughPooler) return { connection: { lock_timeout: milliseconds }, begin: 'BEGIN', prismaAdapter: unchanged };
  if (milliseconds === 0) return { connection: {}, begin: 'BEGIN', prismaAdapter: unchanged };
  const setLocal = `SET LOCAL lock_timeout = ${Math.trunc(milliseconds)}`;
  return { connection: {}, begin: `BEGIN; ${setLocal}`, prismaAdapter: (adapter) => runningFirstInEachTransaction(adapter, setLocal) };
}

function runningFirstInEachTransaction(factory: SqlDriverAdapterFactory, statement: string): SqlDriverAdapterFactory {
  return {
    provider: factory.provider,
    adapterName: factory.adapterName,
    async connect() {
      const adapter = await factory.connect();
      const startTransaction = adapter.startTransaction.bind(adapter);
      adapter.startTransaction = async (isolationLevel?: IsolationLevel) => {
        const transaction = await startTransaction(isolationLevel);
        await transaction.executeRaw({ sql: statement, args: [], argTypes: [] }).catch((error: unknown) => abandon(transaction, error));
        return transaction;
      };
      return adapter;
    },
  };
}

async function abandon(transaction: Transaction, error: unknown): Promise<never> {
  await transaction.executeRaw({ sql: 'ROLLBACK', args: [], argTypes: [] }).catch(() => {});
  await transaction.rollback();
  throw error;
}
