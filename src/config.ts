// Server configuration, read once from the environment.
import { resolve } from 'node:path';
import { parseRateRules, type RateRule } from './domain/auth/rate-limit.js';
import { readGraphQLLimits, type GraphQLLimits } from './graphql/limits.js';

export interface Config {
  host: string;
  port: number;
  /** Base URL used in links the server prints and e-mails (no trailing slash). */
  serverUrl: string;
  /** postgresql://... for a real PostgreSQL server; undefined for the embedded PGlite database. */
  databaseUrl?: string;
  /** Where the embedded database, the e-mail outbox and uploads live. */
  dataDir: string;
  /** Validity of an invitation when the request does not say (minutes). */
  invitationLinkValidityMinutes: number;
  /** Daily invitation limit for organizations without their own max_invites; undefined: none. */
  invitesDefaultRealmDailyMax?: number;
  /** smtp:// or smtps:// URL; undefined: e-mails are written to DATA_DIR/outbox. */
  smtpUrl?: string;
  /** Sender address of outgoing e-mail. */
  emailFrom: string;
  /** Per-user API rate limit rules; empty: no limit. */
  rateLimits: RateRule[];
  /** Limits on GraphQL documents and operations. */
  graphqlLimits: GraphQLLimits;
  /** Origins (scheme://host[:port]) other than the server's own that browsers may call from; empty: none. */
  allowedOrigins: string[];
}

function integer(name: string, value: string | undefined, fallback?: number): number | undefined {
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed)) throw new Error(`${name} must be an integer, got ${JSON.stringify(value)}`);
  return parsed;
}

/** Comma-separated origins, e.g. `https://admin.example.com,http://localhost:5173`. */
function parseOrigins(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((origin) => origin.trim())
    .filter(Boolean)
    .map((origin) => {
      const url = new URL(origin);
      if (url.origin !== origin.replace(/\/$/, '')) throw new Error(`CORS_ALLOWED_ORIGINS: ${JSON.stringify(origin)} is not an origin (scheme://host[:port])`);
      return url.origin;
    });
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const host = env.HOST || '127.0.0.1';
  const port = integer('PORT', env.PORT, 9991)!;
  const serverUrl = (env.SERVER_URL || `http://${host === '0.0.0.0' ? 'localhost' : host}:${port}`).replace(/\/+$/, '');
  return {
    host,
    port,
    serverUrl,
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: resolve(env.DATA_DIR || './data'),
    invitationLinkValidityMinutes: integer('INVITATION_LINK_VALIDITY_MINUTES', env.INVITATION_LINK_VALIDITY_MINUTES, 14400)!,
    invitesDefaultRealmDailyMax: integer('INVITES_DEFAULT_REALM_DAILY_MAX', env.INVITES_DEFAULT_REALM_DAILY_MAX),
    smtpUrl: env.SMTP_URL || undefined,
    emailFrom: env.EMAIL_FROM || `Zulip <noreply@${new URL(serverUrl).hostname}>`,
    rateLimits: parseRateRules(env.API_RATE_LIMIT),
    graphqlLimits: readGraphQLLimits(env),
    allowedOrigins: parseOrigins(env.CORS_ALLOWED_ORIGINS),
  };
}
