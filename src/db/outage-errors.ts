// The one list of database errors that are not bugs: those that mean the database cannot be used now
// (an outage: 503 with Retry-After, /readyz 503, until a probe finds it back) and a lock not granted in
// time (busy: 503 for that request only). Read from PostgreSQL's SQLSTATE, node-postgres's and Node's
// socket and TLS codes, and Prisma's codes and driver-adapter kinds, however deeply they are wrapped
// (error-chain.ts). Everything else is the application's own fault: a 500 and a logged stack.
import { someErrorInChain, type ErrorFields } from './error-chain.js';

/**
 * `lost`: a connection broke under a statement (its backend terminated, the path reset); the pool
 * opens a new one, so whether the database is down is for a probe to say. `unavailable`: it refused
 * or could not be reached. `busy`: a lock was not granted in time.
 */
export type DatabaseTrouble = 'lost' | 'unavailable' | 'busy';

/** SQLSTATEs of a database that refuses or loses the connection (PostgreSQL's appendix A). */
const UNAVAILABLE_SQLSTATE = new RegExp(
  [
    '^08', // connection exception (the connection failed, was refused or broke)
    '^28000$', // invalid authorization: pg_hba.conf refuses the role, the role may not log in
    '^28P01$', // invalid password: the role's password was changed (rotated)
    '^3D000$', // the database does not exist (dropped or renamed)
    '^53300$', // too many connections (max_connections, or the role's or the database's CONNECTION LIMIT)
    '^57P0[1-5]$', // terminated by an administrator (pg_terminate_backend), crash, starting up, database dropped, idle timeout
  ].join('|'),
);

/** Prisma's own codes for the same (P1000-P1017: connection and authentication; P2024: no pool connection in time). */
const UNAVAILABLE_PRISMA_CODES = new Set(['P1000', 'P1001', 'P1002', 'P1003', 'P1008', 'P1010', 'P1011', 'P1017', 'P2024']);

/**
 * Prisma's P2028 is any misuse of the transaction API (most are bugs), but this one is the pool giving
 * no connection to begin an interactive transaction within its wait (as P2024 for a statement): the
 * backends were terminated or the path cut while the pool replaced them.
 */
const TRANSACTION_NOT_STARTED = (fields: ErrorFields) =>
  codesOf(fields).includes('P2028') &&
  typeof fields.message === 'string' &&
  fields.message.includes('Unable to start a transaction in the given time');

/** Prisma's driver-adapter kinds for the same (@prisma/adapter-pg's convertDriverError). */
const UNAVAILABLE_KINDS = new Set([
  'DatabaseNotReachable',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
  'DatabaseDoesNotExist',
  'DatabaseAccessDenied',
  'AuthenticationFailed',
  'TlsConnectionError',
]);

/** Node's socket errors: nothing listens, the path was cut, the name does not resolve. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** Node's TLS errors and OpenSSL's certificate verdicts (an untrusted, expired or misnamed certificate). */
const TLS_CODE =
  /^(?:ERR_SSL_|ERR_TLS_)|^(?:DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_|CERT_|HOSTNAME_MISMATCH$|INVALID_CA$)/;

/**
 * node-postgres's messages that carry no code. Not anchored: Prisma rethrows a driver error it does
 * not know (this one has no code) as an unknown request error whose message starts with the
 * invocation site (`Invalid \`prisma.x.y()\` invocation:`) and ends with the driver's words.
 */
const UNAVAILABLE_MESSAGE = new RegExp(
  [
    'Connection terminated',
    'Client has encountered a connection error and is not queryable',
    '^timeout exceeded when trying to connect',
    '^The server does not support SSL connections',
    '^There was an error establishing an SSL connection',
    "Can't reach database server",
  ].join('|'),
);

/** The ways a connection that was open breaks. */
const LOST_CODES = new Set(['57P01', '57P02', '57P05', '08003', '08006', 'P1017', 'ECONNRESET', 'EPIPE']);
const LOST_KIND = 'ConnectionClosed';
const LOST_MESSAGE = /Connection terminated|Client has encountered a connection error and is not queryable/;

const saysLost = (fields: ErrorFields) =>
  fields.kind === LOST_KIND ||
  codesOf(fields).some((code) => LOST_CODES.has(code)) ||
  (typeof fields.message === 'string' && LOST_MESSAGE.test(fields.message));

/** A lock not granted within the lock timeout (DATABASE_LOCK_WAIT_SECONDS): the database is busy, not down. */
const BUSY_SQLSTATE = '55P03';

const codesOf = ({ code, originalCode }: ErrorFields) => [code, originalCode].filter((value): value is string => typeof value === 'string');

function saysUnavailable(fields: ErrorFields & { syscall?: unknown }): boolean {
  if (typeof fields.kind === 'string' && UNAVAILABLE_KINDS.has(fields.kind)) return true;
  if (TRANSACTION_NOT_STARTED(fields)) return true;
  for (const code of codesOf(fields)) {
    if (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_PRISMA_CODES.has(code) || SOCKET_CODES.has(code) || TLS_CODE.test(code)) return true;
    // A Unix socket that is not there (the embedded PostgreSQL stopped); not a missing file of storage.
    if (code === 'ENOENT' && fields.syscall === 'connect') return true;
  }
  return typeof fields.message === 'string' && UNAVAILABLE_MESSAGE.test(fields.message);
}

/** What kind of trouble with the database the error shows, or null (any other error: a bug). */
export function classifyDatabaseError(error: unknown): DatabaseTrouble | null {
  if (someErrorInChain(error, (fields) => codesOf(fields).includes(BUSY_SQLSTATE))) return 'busy';
  if (!someErrorInChain(error, saysUnavailable)) return null;
  return someErrorInChain(error, saysLost) ? 'lost' : 'unavailable';
}

/** For the log only (never for a client): every code and driver-adapter kind in the error's chain, outermost first, and the last line of its message. */
export function describeDatabaseError(error: unknown): { codes: string[]; reason: string } {
  const codes: string[] = [];
  someErrorInChain(error, (fields) => {
    const kind = typeof fields.kind === 'string' ? [fields.kind] : [];
    codes.push(...[...codesOf(fields), ...kind].filter((code) => !codes.includes(code)));
    return false;
  });
  const text = error instanceof Error ? error.message : String(error);
  // Prisma's messages start with the invocation site; the reason is the last line.
  const reason = text.trim().split('\n').filter(Boolean).pop()?.slice(0, 300) ?? '';
  return { codes, reason };
}
