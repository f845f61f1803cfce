// HTTP Basic authentication (email:api_key), shared by both doors. Order of checks and messages
// follow the reference server (behaviour.md section 2): every credential failure is a 401 UNAUTHORIZED.
import type { AppContext } from '../../app-context.js';
import type { DatabaseClient } from '../../db/database.js';
import { DomainError, unauthorized } from '../errors.js';
import type { RateLimitReport } from './rate-limit.js';
import { API_KEY_PATTERN, apiKeyMatches, hashApiKey } from '../users/api-keys.js';
import { readSession, type SessionOf } from './sessions.js';
import type { Actor } from './actor.js';

export type { Actor } from './actor.js';

export const NOT_LOGGED_IN = 'Not logged in: API authentication or user session required';

export function notLoggedIn(): DomainError {
  return unauthorized(NOT_LOGGED_IN);
}

/** The refusal of a request whose session is missing, unknown or ended (signin.md section 4). */
export function sessionRequired(): DomainError {
  return new DomainError(NOT_LOGGED_IN, { code: 'UNAUTHORIZED', status: 401, headers: { 'WWW-Authenticate': 'Session realm="zulip"' } });
}

/** Refuses bytes that are not UTF-8; one for the process (building one per request showed in profiles). */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Splits `Basic base64(user:key)`; throws the reference's errors for anything else. */
export function parseBasicAuthorization(header: string): { username: string; apiKey: string } {
  const parts = header.trim().split(/\s+/);
  if (parts.length === 2 && parts[0]!.toLowerCase() !== 'basic') {
    throw new DomainError('This endpoint requires HTTP basic authentication.');
  }
  const invalid = () => unauthorized('Invalid authorization header for basic auth');
  if (parts.length !== 2 || !/^[A-Za-z0-9+/]*={0,2}$/.test(parts[1]!) || parts[1]!.length % 4 !== 0) throw invalid();
  let decoded: string;
  try {
    decoded = UTF8.decode(Buffer.from(parts[1]!, 'base64'));
  } catch {
    throw invalid();
  }
  const pieces = decoded.split(':');
  if (pieces.length !== 2) throw invalid();
  return { username: pieces[0]!.trim(), apiKey: pieces[1]!.trim() };
}

interface CredentialRow {
  id: number;
  organizationId: number;
  email: string;
  emailKey: string;
  fullName: string;
  role: number;
  isBot: boolean;
  botType: number | null;
  dateJoined: Date;
  isActive: boolean;
  apiKeyHash: string;
  organizationDeactivated: boolean;
}

/** The user owning the key and their organization's state, in one statement (every request pays it on a cache miss). */
async function readCredentials(prisma: DatabaseClient, apiKeyHash: string): Promise<CredentialRow | undefined> {
  const rows = await prisma.$queryRaw<CredentialRow[]>`
    SELECT u.id, u."organizationId", u.email, u."emailKey", u."fullName", u.role, u."isBot", u."botType", u."dateJoined",
           u."isActive", u."apiKeyHash", o.deactivated AS "organizationDeactivated"
      FROM user_account u JOIN organization o ON o.id = u."organizationId"
     WHERE u."apiKeyHash" = ${apiKeyHash}`;
  return rows[0];
}

/** Where credentials are read: the database, and the cache unless the caller must see the row itself. */
export type CredentialReads = Pick<AppContext, 'prisma' | 'authCache'>;

/**
 * Only successful authentications are cached, so every refusal below is re-checked against the
 * database; a cached entry is dropped as soon as its row changes (auth-cache.ts).
 */
export async function authenticate(app: CredentialReads, authorizationHeader: string): Promise<Actor> {
  const { username, apiKey } = parseBasicAuthorization(authorizationHeader);
  return authenticateApiKey(app, apiKey, username);
}

/**
 * The user holding `apiKey` (and, when given, the e-mail `username`), with the reference's checks.
 * File URLs accept the key alone (`?api_key=`), as the reference's mobile apps send it.
 */
export async function authenticateApiKey(app: CredentialReads, apiKey: string, username?: string): Promise<Actor> {
  const { prisma, authCache: cache } = app;
  if (!API_KEY_PATTERN.test(apiKey)) throw unauthorized('Malformed API key');
  const apiKeyHash = hashApiKey(apiKey);
  const wrongUser = (emailKey: string) => username !== undefined && emailKey !== username.toLowerCase();
  const cached = cache?.get(apiKeyHash);
  if (cached) {
    if (wrongUser(cached.emailKey)) throw unauthorized('Invalid API key');
    return cached.actor;
  }
  const ticket = cache?.ticket() ?? 0;
  const user = await readCredentials(prisma, apiKeyHash);
  if (!user || !apiKeyMatches(apiKey, user.apiKeyHash) || wrongUser(user.emailKey)) {
    throw unauthorized('Invalid API key');
  }
  if (user.organizationDeactivated) throw unauthorized('This organization has been deactivated');
  if (!user.isActive) throw unauthorized('Account is deactivated');
  if (user.botType === 2) throw unauthorized('This API is not available to incoming webhook bots.');
  const actor: Actor = {
    id: user.id,
    organizationId: user.organizationId,
    email: user.email,
    fullName: user.fullName,
    role: user.role,
    isBot: user.isBot,
    botType: user.botType,
    dateJoined: user.dateJoined,
  };
  cache?.set(apiKeyHash, { emailKey: user.emailKey, actor }, ticket);
  return actor;
}

/**
 * What both doors call: credentials, then the per-user rate limit (noted in `rateLimits`). A failed
 * login counts against the client address, which is refused with RATE_LIMIT_HIT (valid credentials
 * too) once over its limit.
 */
export async function authenticateRequest(
  app: AppContext,
  authorizationHeader: string,
  clientAddress: string,
  rateLimits?: RateLimitReport,
): Promise<Actor> {
  const actor = await authenticateUncounted(app, authorizationHeader, clientAddress, rateLimits);
  await app.rateLimiter.hit(actor.id, 1, clientAddress, rateLimits);
  return actor;
}

/**
 * authenticateRequest without the per-user count, for a door that counts the request once it knows
 * what it asks (GraphQL: a dry run is not counted). A failed login counts as it does there.
 */
export async function authenticateUncounted(
  app: AppContext,
  authorizationHeader: string,
  clientAddress: string,
  rateLimits?: RateLimitReport,
): Promise<Actor> {
  try {
    return await authenticate(app, authorizationHeader);
  } catch (error) {
    if (error instanceof DomainError && error.status === 401) await app.rateLimiter.failure(clientAddress, rateLimits);
    throw error;
  }
}

/**
 * A browser's session token (from its cookie), then the per-user rate limit unless `counted` is
 * false (see authenticateUncounted). An unknown or ended session is no failed login (a 256-bit
 * token is not guessed; an old cookie is common).
 */
export async function authenticateSession(
  app: AppContext,
  sessionToken: string,
  clientAddress: string,
  { rateLimits, counted = true }: { rateLimits?: RateLimitReport; counted?: boolean } = {},
): Promise<SessionOf> {
  const session = await readSession(app, sessionToken);
  if (!session) throw sessionRequired();
  if (counted) await app.rateLimiter.hit(session.actor.id, 1, clientAddress, rateLimits);
  return session;
}
