// Whether a database error, however wrapped, matches: Prisma keeps the driver's error under
// `meta.driverAdapterError` (PostgreSQL's code as `originalCode`), other errors under `cause`.
export interface ErrorFields {
  code?: unknown;
  kind?: unknown;
  originalCode?: unknown;
  message?: unknown;
}

const MAX_DEPTH = 6;

export function someErrorInChain(error: unknown, matches: (fields: ErrorFields) => boolean, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > MAX_DEPTH) return false;
  if (matches(error as ErrorFields)) return true;
  const { meta, cause } = error as { meta?: { driverAdapterError?: unknown }; cause?: unknown };
  return someErrorInChain(meta?.driverAdapterError, matches, depth + 1) || someErrorInChain(cause, matches, depth + 1);
}

/** Whether the error (or one it wraps) carries one of the codes, as Prisma's, the driver's or PostgreSQL's. */
export const hasErrorCode = (error: unknown, codes: ReadonlySet<string>) =>
  someErrorInChain(error, ({ code, originalCode }) => codes.has(String(code)) || codes.has(String(originalCode)));
