// Browser sessions (signin.md section 4, Decision 2): rows of user_session in PostgreSQL, so every
// server process serves every browser. The browser holds a random token; only its SHA-256 is stored,
// and the session's CSRF token is derived from it. A session holds while it is unexpired, its user
// active, their organization not deactivated, and its fingerprint equal to the fingerprint of the
// user's current password hash (Django's session auth hash): a password change or reset ends the
// sessions in every process at once, with no bookkeeping beyond the password itself. A sign-out the
// database cannot record is kept on disk until it can (ended-sessions.ts).
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AppContext } from '../../app-context.js';
import { classifyDatabaseError } from '../../db/outage-errors.js';
import { namedStatement, type Sql } from '../../db/sql.js';
import { Prisma as PrismaNamespace } from '../../generated/prisma/client.js';
import type { Transaction } from '../transaction.js';
import type { Actor } from './actor.js';

export const SESSION_LIFETIME_SECONDS = 14 * 24 * 3600;

/** 256 random bits, URL-safe (a cookie value needs no quoting). */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

/** The fingerprint SQL computes from a passwordHash column (null: no password). */
const FINGERPRINT_SQL = (column: string) => `encode(sha256(convert_to(coalesce(${column}, ''), 'UTF8')), 'hex')`;

export interface NewSession {
  token: string;
  csrfToken: string;
  expiresAt: Date;
}

export interface SessionOf {
  /** The user_session row's id (its end is announced as `session:<id>`). */
  sessionId: number;
  actor: Actor;
  /** The user's API key hash now: the user's row changes are announced under it. */
  apiKeyHash: string;
}

/** The CSRF token of a session: an HMAC of its token, so nothing but the token need be kept. */
export function csrfTokenOf(sessionToken: string): string {
  return createHmac('sha256', sessionToken).update('csrf').digest('base64url');
}

/** Whether two tokens are equal, in a time that does not depend on where they differ. */
export function sameToken(a: string, b: string): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right);
}

const BEGIN_SESSION = namedStatement(
  'sessions.begin',
  `INSERT INTO user_session ("tokenHash", "userId", "passwordFingerprint", "createdAt", "expiresAt")
     SELECT $1, u.id, ${FINGERPRINT_SQL('u."passwordHash"')}, $3::timestamp(3), $4::timestamp(3)
       FROM user_account u WHERE u.id = $2`,
);

const READ_SESSION = namedStatement(
  'sessions.read',
  `SELECT s.id AS "sessionId", u.id, u."organizationId", u.email, u."fullName", u.role, u."isBot", u."botType",
          (extract(epoch FROM u."dateJoined") * 1000)::float8 AS "dateJoinedMs", u."apiKeyHash"
     FROM user_session s
     JOIN user_account u ON u.id = s."userId"
     JOIN organization o ON o.id = u."organizationId"
    WHERE s."tokenHash" = $1 AND s."expiresAt" > $2::timestamp(3)
      AND u."isActive" AND NOT o.deactivated
      AND s."passwordFingerprint" = ${FINGERPRINT_SQL('u."passwordHash"')}`,
);

const END_SESSION = namedStatement('sessions.end', 'DELETE FROM user_session WHERE "tokenHash" = $1');

/** Begins a session for the user (who just signed in), fingerprinting their password hash as it is now. */
export async function beginSession(app: SessionStore, userId: number, replacedToken?: string, now = new Date()): Promise<NewSession> {
  if (replacedToken) await endSession(app.sql, replacedToken);
  const token = randomBytes(32).toString('base64url');
  const expiresAt = new Date(now.getTime() + SESSION_LIFETIME_SECONDS * 1000);
  await app.sql.rows(BEGIN_SESSION, [sha256Hex(token), userId, now.toISOString(), expiresAt.toISOString()]);
  return { token, csrfToken: csrfTokenOf(token), expiresAt };
}

interface SessionRow extends Actor {
  sessionId: number;
  apiKeyHash: string;
  dateJoinedMs: number;
}

/**
 * The session of `token` and its user, when it holds: one statement, joining the user and their
 * organization. Undefined for an unknown, ended, expired or no longer valid session.
 */
export type SessionStore = Pick<AppContext, 'sql' | 'endedSessions'>;

export async function readSession(app: SessionStore, token: string, now = new Date()): Promise<SessionOf | undefined> {
  if (!TOKEN_PATTERN.test(token) || app.endedSessions?.has(sha256Hex(token))) return undefined;
  const rows = await app.sql.rows<SessionRow>(READ_SESSION, [sha256Hex(token), now.toISOString()]);
  const row = rows[0];
  if (!row) return undefined;
  const { sessionId, apiKeyHash, dateJoinedMs, ...user } = row;
  return { sessionId, apiKeyHash, actor: { ...user, dateJoined: new Date(dateJoinedMs) } };
}

/** Ends the session of `token` (sign-out); nothing happens for an unknown one. */
async function endSession(sql: Sql, token: string): Promise<void> {
  if (!TOKEN_PATTERN.test(token)) return;
  await sql.rows(END_SESSION, [sha256Hex(token)]);
}

/**
 * Sign-out: ends the session of `token` whatever the database says. When it is unavailable (known
 * down, or failing the DELETE), the end is recorded on disk and carried out when it answers again.
 */
export async function signOut(app: SessionStore, token: string, databaseDown: boolean): Promise<void> {
  if (!TOKEN_PATTERN.test(token)) return;
  const { endedSessions } = app;
  if (databaseDown && endedSessions) return endedSessions.record(sha256Hex(token));
  try {
    await endSession(app.sql, token);
  } catch (error) {
    if (!endedSessions || classifyDatabaseError(error) === null) throw error;
    await endedSessions.record(sha256Hex(token));
  }
}

/**
 * After the user changed their password through this session: the session takes the new password's
 * fingerprint and stays, while every other session of the user ends (theirs no longer matches).
 * Call it in the transaction that changes the password, so that the session never stops holding.
 */
export async function keepSessionAfterPasswordChange(tx: Transaction, sessionId: number): Promise<void> {
  await tx.$executeRaw`
    UPDATE user_session s SET "passwordFingerprint" = ${PrismaNamespace.raw(FINGERPRINT_SQL('u."passwordHash"'))}
      FROM user_account u WHERE s.id = ${sessionId} AND u.id = s."userId"`;
}

/** Removes expired sessions: the minute's housekeeping (an ended session's row is harmless until then). */
export async function removeExpiredSessions(sql: Sql, now = new Date()): Promise<void> {
  await sql.rows('DELETE FROM user_session WHERE "expiresAt" <= $1::timestamp(3)', [now.toISOString()]);
}
