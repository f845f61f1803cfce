// Server configuration, read once from the environment.
import { accessSync, constants } from 'node:fs';
import { resolve } from 'node:path';
import { SUPPORTED_SSL_MODES } from './db/tls.js';
import { preparedStatementsSetting, type PreparedStatementsSetting } from './db/prepared-statements.js';
import { parseAddressRateRules, parseFailedLoginRule, parseRateRules, parseSignInRule, type RateRule } from './domain/auth/rate-limit.js';
import { readGraphQLLimits, type GraphQLLimits } from './graphql/limits.js';
import { readTrustedDocuments, type TrustedDocumentsConfig } from './graphql/trusted-documents.js';
import { parseTrustedProxies } from './http/client-address.js';
import { StartupError } from './startup-error.js';

export interface MemoryBudgetConfig {
  /** What the large answers in flight may hold together, in bytes; 0: no limit. */
  bytes: number;
  /** How long a request waits for room before it answers 503. */
  waitMs: number;
}

export interface Config {
  host: string;
  port: number;
  /** Base URL used in links the server prints and e-mails (no trailing slash). */
  serverUrl: string;
  /** postgresql://... for a PostgreSQL server; undefined for the embedded PostgreSQL under dataDir. */
  databaseUrl?: string;
  /** PostgreSQL itself when databaseUrl goes through a pooler in transaction mode (PgBouncer); undefined: databaseUrl is direct. */
  databaseDirectUrl?: string;
  /** How long start-up waits for an unreachable DATABASE_URL before giving up. */
  databaseWaitSeconds: number;
  /** How long a statement waits for a row lock (an organization's, say) before the request answers 503; 0: no limit. */
  databaseLockWaitSeconds: number;
  /** Whether the hot paths' named statements are prepared per connection (db/prepared-statements.ts). */
  databasePreparedStatements: PreparedStatementsSetting;
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
  /** Whether this process delivers queued e-mail (EMAIL_WORKER, default on); off: other processes, or `deliver-emails`, do. */
  emailWorker: boolean;
  /** Per-user API rate limit rules; empty: no limit. */
  rateLimits: RateRule[];
  /** Requests per client address to the routes that need no credentials (`api_by_ip`); empty: no limit. */
  addressRateLimits: RateRule[];
  /** Failed logins allowed per client address and window; null: no limit. */
  failedLoginLimit: RateRule | null;
  /** Sign-in attempts allowed per e-mail address and window (signin.md section 2); null: no limit. */
  signInLimit: RateRule | null;
  /** Limits on GraphQL documents and operations. */
  graphqlLimits: GraphQLLimits;
  /** The manifest of trusted documents runnable by hash, and whether other documents are refused to non-administrators. */
  graphqlTrustedDocuments: TrustedDocumentsConfig;
  /** Origins (scheme://host[:port]) other than the server's own that browsers may call from; empty: none. */
  allowedOrigins: string[];
  /** Peers (addresses, CIDR ranges) whose X-Forwarded-For and Forwarded name the client; empty: none. */
  trustedProxies: string[];
  uploads: UploadsConfig;
  /** What the largest answers in flight may hold together before others wait or get 503 (src/http/memory-budget.ts). */
  memoryBudget: MemoryBudgetConfig;
  /** GET /metrics; off when neither the token nor the port is set. */
  metrics: MetricsConfig;
  /** How long a long poll of GET /events waits before its heartbeat; undefined: 45-55 s, as the reference. */
  eventHeartbeatSeconds?: number;
  /** GraphQL subscriptions one process holds at most; more are refused with 503 (clients go elsewhere). */
  maxSubscriptions: number;
  /** Traces over OTLP (src/tracing/setup.ts, which reads the other OTEL_* variables through the SDK); off without an endpoint. */
  tracing: boolean;
  /** Minutes between two runs of the file sweep (FILE_SWEEP_MINUTES, one process of the fleet at a time); 0: none. */
  fileSweepMinutes: number;
}

export interface MetricsConfig {
  /** METRICS_TOKEN: /metrics on the main port, for `Authorization: Bearer <token>` (and required on METRICS_PORT too). */
  token?: string;
  /** METRICS_PORT: a listener of its own on HOST that serves /metrics only. */
  port?: number;
}

export interface S3Config {
  bucket: string;
  /** Undefined: AWS's own endpoint for the region. */
  endpoint?: string;
  region: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle: boolean;
}

export interface UploadsConfig {
  /** The directory storage root (UPLOADS_DIR); undefined: DATA_DIR/uploads. Unused when `s3` is set. */
  directory?: string;
  /** Set when S3_BUCKET is: files go to that bucket instead of the directory. */
  s3?: S3Config;
  /** Largest file of POST /user_uploads, in MiB (MAX_FILE_UPLOAD_SIZE). */
  maxFileUploadSizeMib: number;
  /** Largest custom emoji file, in MiB (MAX_EMOJI_FILE_SIZE_MIB). */
  maxEmojiFileSizeMib: number;
  /** Lifetime of temporary file URLs (SIGNED_ACCESS_TOKEN_VALIDITY_IN_SECONDS). */
  signedAccessTokenValiditySeconds: number;
}

function loadUploadsConfig(env: NodeJS.ProcessEnv): UploadsConfig {
  const nonNegative = (name: string, fallback: number) => {
    const value = integer(name, env[name], fallback)!;
    if (value < 0) throw new Error(`${name} must not be negative`);
    return value;
  };
  return {
    directory: env.UPLOADS_DIR ? resolve(env.UPLOADS_DIR) : undefined,
    s3: env.S3_BUCKET
      ? {
          bucket: env.S3_BUCKET,
          endpoint: env.S3_ENDPOINT || undefined,
          region: env.S3_REGION || 'us-east-1',
          accessKeyId: env.S3_ACCESS_KEY_ID || undefined,
          secretAccessKey: env.S3_SECRET_ACCESS_KEY || undefined,
          forcePathStyle: /^(1|true|yes)$/i.test(env.S3_FORCE_PATH_STYLE ?? ''),
        }
      : undefined,
    maxFileUploadSizeMib: nonNegative('MAX_FILE_UPLOAD_SIZE', 100),
    maxEmojiFileSizeMib: nonNegative('MAX_EMOJI_FILE_SIZE_MIB', 5),
    signedAccessTokenValiditySeconds: nonNegative('SIGNED_ACCESS_TOKEN_VALIDITY_IN_SECONDS', 60),
  };
}

function integer(name: string, value: string | undefined, fallback?: number): number | undefined {
  if (value === undefined || value === '') return fallback;
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed < 0) throw new StartupError(`${name} must be a whole number, got ${JSON.stringify(value)}`);
  return parsed;
}

function onOrOff(name: string, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  if (value === 'on' || value === 'off') return value === 'on';
  throw new StartupError(`${name} must be on or off, got ${JSON.stringify(value)}`);
}

/** A week at most: beyond about 24 days a Node timer would fire at once. */
const MAX_FILE_SWEEP_MINUTES = 10_080;

function fileSweepMinutes(value: string | undefined): number {
  if (value === undefined || value === '') return 10;
  if (value === 'off') return 0;
  const minutes = /^\d{1,6}$/.test(value) ? Number(value) : NaN;
  if (!(minutes <= MAX_FILE_SWEEP_MINUTES)) {
    const expected = `a whole number of minutes up to ${MAX_FILE_SWEEP_MINUTES}, or 0 or off (no sweep)`;
    throw new StartupError(`FILE_SWEEP_MINUTES must be ${expected}, got ${JSON.stringify(value)}`);
  }
  return minutes;
}

/** PostgreSQL's lock_timeout is at most 2^31 - 1 milliseconds; a day is plenty. */
function lockWaitSeconds(value: string | undefined): number {
  const seconds = integer('DATABASE_LOCK_WAIT_SECONDS', value, 10)!;
  if (seconds > 86_400) throw new StartupError(`DATABASE_LOCK_WAIT_SECONDS must be at most 86400, got ${JSON.stringify(value)}`);
  return seconds;
}

function postgresUrl(name: string, value: string | undefined): string | undefined {
  if (!value) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new StartupError(`${name} is not a URL: expected postgresql://user:password@host:5432/database`);
  }
  if (url.protocol !== 'postgresql:' && url.protocol !== 'postgres:') {
    throw new StartupError(`${name} must start with postgresql:// (got ${url.protocol}//...)`);
  }
  if (url.pathname.length <= 1) throw new StartupError(`${name} names no database: expected postgresql://user:password@host:5432/database`);
  checkTlsParameters(name, url.searchParams);
  return value;
}

function checkTlsParameters(name: string, params: URLSearchParams): void {
  const mode = params.get('sslmode');
  if (mode !== null && !(SUPPORTED_SSL_MODES as readonly string[]).includes(mode)) {
    throw new StartupError(`${name}: sslmode=${mode} is not supported; use ${SUPPORTED_SSL_MODES.join(', ')}`);
  }
  const rootCert = params.get('sslrootcert');
  if (mode === 'verify-ca' && (!rootCert || rootCert === 'system'))
    throw new StartupError(`${name}: sslmode=verify-ca needs sslrootcert=<file of the CA>`);
  for (const key of ['sslrootcert', 'sslcert', 'sslkey']) {
    const file = params.get(key);
    if (file && !(key === 'sslrootcert' && file === 'system')) readableFile(name, key, file);
  }
}

function readableFile(name: string, key: string, file: string): void {
  try {
    accessSync(file, constants.R_OK);
  } catch (error) {
    throw new StartupError(`${name}: ${key} ${file} cannot be read (${(error as NodeJS.ErrnoException).code})`);
  }
}

function directPostgresUrl(env: NodeJS.ProcessEnv): string | undefined {
  const direct = postgresUrl('DATABASE_DIRECT_URL', env.DATABASE_DIRECT_URL);
  if (direct && !env.DATABASE_URL) {
    throw new StartupError(
      'DATABASE_DIRECT_URL is set without DATABASE_URL: set DATABASE_URL to the pooler (PgBouncer) and DATABASE_DIRECT_URL to PostgreSQL itself',
    );
  }
  return direct;
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
      if (url.origin !== origin.replace(/\/$/, ''))
        throw new StartupError(`CORS_ALLOWED_ORIGINS: ${JSON.stringify(origin)} is not an origin (scheme://host[:port])`);
      return url.origin;
    });
}

/** A bearer token (RFC 6750's token68 characters), long enough not to be guessed. */
const METRICS_TOKEN = /^[A-Za-z0-9\-._~+/]{16,}=*$/;

function metricsConfig(env: NodeJS.ProcessEnv, mainPort: number): MetricsConfig {
  const token = env.METRICS_TOKEN || undefined;
  if (token !== undefined && !METRICS_TOKEN.test(token)) {
    throw new StartupError(
      'METRICS_TOKEN must be at least 16 characters of A-Z a-z 0-9 - . _ ~ + / (a random token: openssl rand -hex 32)',
    );
  }
  const metricsPort = port('METRICS_PORT', env.METRICS_PORT);
  if (metricsPort !== undefined && metricsPort !== 0 && metricsPort === mainPort) {
    throw new StartupError(`METRICS_PORT must differ from PORT (both are ${mainPort})`);
  }
  return { token, port: metricsPort };
}
/** docs/guide/operations.md's configuration table; with the server's own 130-150 MiB, under 512 MiB resident (performance.md). */
const DEFAULT_MEMORY_BUDGET_MIB = 160;
/** About 40 KiB each (SSE; half over WebSocket): 200 MiB at most. */
const DEFAULT_MAX_SUBSCRIPTIONS = 5_000;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const host = env.HOST || '127.0.0.1';
  const listenPort = port('PORT', env.PORT, 9991)!;
  const serverUrl = (env.SERVER_URL || `http://${host === '0.0.0.0' ? 'localhost' : host}:${listenPort}`).replace(/\/+$/, '');
  return {
    host,
    port: listenPort,
    serverUrl,
    databaseUrl: postgresUrl('DATABASE_URL', env.DATABASE_URL),
    databaseDirectUrl: directPostgresUrl(env),
    databaseWaitSeconds: integer('DATABASE_WAIT_SECONDS', env.DATABASE_WAIT_SECONDS, 30)!,
    databaseLockWaitSeconds: lockWaitSeconds(env.DATABASE_LOCK_WAIT_SECONDS),
    databasePreparedStatements: preparedStatementsSetting(env.DATABASE_PREPARED_STATEMENTS),
    embeddedPostgresPort: port('EMBEDDED_POSTGRES_PORT', env.EMBEDDED_POSTGRES_PORT),
    dataDir: resolve(env.DATA_DIR || './data'),
    invitationLinkValidityMinutes: integer('INVITATION_LINK_VALIDITY_MINUTES', env.INVITATION_LINK_VALIDITY_MINUTES, 14400)!,
    invitesDefaultRealmDailyMax: integer('INVITES_DEFAULT_REALM_DAILY_MAX', env.INVITES_DEFAULT_REALM_DAILY_MAX),
    smtpUrl: env.SMTP_URL || undefined,
    emailFrom: env.EMAIL_FROM || `Zulip <noreply@${new URL(serverUrl).hostname}>`,
    emailWorker: onOrOff('EMAIL_WORKER', env.EMAIL_WORKER, true),
    rateLimits: parseRateRules(env.API_RATE_LIMIT),
    addressRateLimits: parseAddressRateRules(env.API_IP_RATE_LIMIT),
    failedLoginLimit: parseFailedLoginRule(env.AUTH_FAILURE_LIMIT),
    signInLimit: parseSignInRule(env.SIGNIN_RATE_LIMIT),
    graphqlLimits: readGraphQLLimits(env),
    graphqlTrustedDocuments: readTrustedDocuments(env),
    allowedOrigins: parseOrigins(env.CORS_ALLOWED_ORIGINS),
    trustedProxies: parseTrustedProxies(env.TRUSTED_PROXIES),
    uploads: loadUploadsConfig(env),
    metrics: metricsConfig(env, listenPort),
    memoryBudget: { bytes: integer('MEMORY_BUDGET_MIB', env.MEMORY_BUDGET_MIB, DEFAULT_MEMORY_BUDGET_MIB)! * 1024 * 1024, waitMs: 3000 },
    eventHeartbeatSeconds: integer('EVENT_HEARTBEAT_SECONDS', env.EVENT_HEARTBEAT_SECONDS),
    maxSubscriptions: integer('MAX_SUBSCRIPTIONS', env.MAX_SUBSCRIPTIONS, DEFAULT_MAX_SUBSCRIPTIONS)!,
    tracing:
      Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) &&
      env.OTEL_SDK_DISABLED?.trim().toLowerCase() !== 'true',
    fileSweepMinutes: fileSweepMinutes(env.FILE_SWEEP_MINUTES),
  };
}
