// Server configuration, read once from the environment.
import { resolve } from 'node:path';
import { parseFailedLoginRule, parseRateRules, type RateRule } from './domain/auth/rate-limit.js';
import { readGraphQLLimits, type GraphQLLimits } from './graphql/limits.js';
import { StartupError } from './startup-error.js';

export interface Config {
  host: string;
  port: number;
  /** Base URL used in links the server prints and e-mails (no trailing slash). */
  serverUrl: string;
  /** postgresql://... for a PostgreSQL server; undefined for the embedded PostgreSQL under dataDir. */
  databaseUrl?: string;
  /** How long start-up waits for an unreachable DATABASE_URL before giving up. */
  databaseWaitSeconds: number;
  /** TCP port (127.0.0.1) of the embedded PostgreSQL; undefined: its Unix socket only. */
  embeddedPostgresPort?: number;
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
  /** Failed logins allowed per client address and window; null: no limit. */
  failedLoginLimit: RateRule | null;
  /** Limits on GraphQL documents and operations. */
  graphqlLimits: GraphQLLimits;
  /** Origins (scheme://host[:port]) other than the server's own that browsers may call from; empty: none. */
  allowedOrigins: string[];
}

function integer(name: string, value: string | undefined, fallback?: number): number | undefined {
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed < 0) throw new StartupError(`${name} must be a whole number, got ${JSON.stringify(value)}`);
  return parsed;
}

function postgresUrl(value: string | undefined): string | undefined {
  if (!value) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new StartupError('DATABASE_URL is not a URL: expected postgresql://user:password@host:5432/database');
  }
  if (url.protocol !== 'postgresql:' && url.protocol !== 'postgres:') {
    throw new StartupError(`DATABASE_URL must start with postgresql:// (got ${url.protocol}//...)`);
  }
  if (url.pathname.length <= 1) throw new StartupError('DATABASE_URL names no database: expected postgresql://user:password@host:5432/database');
  return value;
}

function port(name: string, value: string | undefined, fallback?: number): number | undefined {
  const parsed = integer(name, value, fallback);
  if (parsed !== undefined && parsed > 65535) throw new StartupError(`${name} must be a port number (0-65535), got ${parsed}`);
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
      if (url.origin !== origin.replace(/\/$/, '')) throw new StartupError(`CORS_ALLOWED_ORIGINS: ${JSON.stringify(origin)} is not an origin (scheme://host[:port])`);
      return url.origin;
    });
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const host = env.HOST || '127.0.0.1';
  const listenPort = port('PORT', env.PORT, 9991)!;
  const serverUrl = (env.SERVER_URL || `http://${host === '0.0.0.0' ? 'localhost' : host}:${listenPort}`).replace(/\/+$/, '');
  return {
    host,
    port: listenPort,
    serverUrl,
    databaseUrl: postgresUrl(env.DATABASE_URL),
    databaseWaitSeconds: integer('DATABASE_WAIT_SECONDS', env.DATABASE_WAIT_SECONDS, 30)!,
    embeddedPostgresPort: port('EMBEDDED_POSTGRES_PORT', env.EMBEDDED_POSTGRES_PORT),
    dataDir: resolve(env.DATA_DIR || './data'),
    invitationLinkValidityMinutes: integer('INVITATION_LINK_VALIDITY_MINUTES', env.INVITATION_LINK_VALIDITY_MINUTES, 14400)!,
    invitesDefaultRealmDailyMax: integer('INVITES_DEFAULT_REALM_DAILY_MAX', env.INVITES_DEFAULT_REALM_DAILY_MAX),
    smtpUrl: env.SMTP_URL || undefined,
    emailFrom: env.EMAIL_FROM || `Zulip <noreply@${new URL(serverUrl).hostname}>`,
    rateLimits: parseRateRules(env.API_RATE_LIMIT),
    failedLoginLimit: parseFailedLoginRule(env.AUTH_FAILURE_LIMIT),
    graphqlLimits: readGraphQLLimits(env),
    allowedOrigins: parseOrigins(env.CORS_ALLOWED_ORIGINS),
  };
}
