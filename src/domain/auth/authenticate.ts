// HTTP Basic authentication (email:api_key), shared by both doors. Order of checks and messages
// follow the reference server (behaviour.md section 2): every credential failure is a 401 UNAUTHORIZED.
import type { AppContext } from '../../app-context.js';
import type { Prisma } from '../../db/database.js';
import { DomainError, unauthorized } from '../errors.js';
import { API_KEY_PATTERN, apiKeyMatches, hashApiKey } from '../users/api-keys.js';

export interface Actor {
  id: number;
  organizationId: number;
  email: string;
  fullName: string;
  role: number;
  isBot: boolean;
  botType: number | null;
  dateJoined: Date;
}

export const NOT_LOGGED_IN = 'Not logged in: API authentication or user session required';

export function notLoggedIn(): DomainError {
  return unauthorized(NOT_LOGGED_IN);
}

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
    decoded = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(parts[1]!, 'base64'));
  } catch {
    throw invalid();
  }
  const pieces = decoded.split(':');
  if (pieces.length !== 2) throw invalid();
  return { username: pieces[0]!.trim(), apiKey: pieces[1]!.trim() };
}

export async function authenticate(prisma: Prisma, authorizationHeader: string): Promise<Actor> {
  const { username, apiKey } = parseBasicAuthorization(authorizationHeader);
  return authenticateApiKey(prisma, apiKey, username);
}

/**
 * The user holding `apiKey` (and, when given, the e-mail `username`), with the reference's checks.
 * File URLs accept the key alone (`?api_key=`), as the reference's mobile apps send it.
 */
export async function authenticateApiKey(prisma: Prisma, apiKey: string, username?: string): Promise<Actor> {
  if (!API_KEY_PATTERN.test(apiKey)) throw unauthorized('Malformed API key');
  const user = await prisma.user.findUnique({
    where: { apiKeyHash: hashApiKey(apiKey) },
    include: { organization: { select: { deactivated: true } } },
  });
  if (!user || !apiKeyMatches(apiKey, user.apiKeyHash) || (username !== undefined && user.emailKey !== username.toLowerCase())) {
    throw unauthorized('Invalid API key');
  }
  if (user.organization.deactivated) throw unauthorized('This organization has been deactivated');
  if (!user.isActive) throw unauthorized('Account is deactivated');
  if (user.botType === 2) throw unauthorized('This API is not available to incoming webhook bots.');
  return {
    id: user.id,
    organizationId: user.organizationId,
    email: user.email,
    fullName: user.fullName,
    role: user.role,
    isBot: user.isBot,
    botType: user.botType,
    dateJoined: user.dateJoined,
  };
}

/** What both doors call: credentials, then the per-user rate limit. */
export async function authenticateRequest(app: AppContext, authorizationHeader: string, _clientAddress = ''): Promise<Actor> {
  const actor = await authenticate(app.prisma, authorizationHeader);
  app.rateLimiter.hit(actor.id);
  return actor;
}
