// Server configuration, read once from the environment.
import { resolve } from 'node:path';
import { parseRateRules, type RateRule } from './domain/auth/rate-limit.js';

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
  uploads: UploadsConfig;
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
  if (!Number.isSafeInteger(parsed)) throw new Error(`${name} must be an integer, got ${JSON.stringify(value)}`);
  return parsed;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const host = env.HOST || '127.0.0.1';
  const port = integer('PORT', env.PORT, 9991)!;
  const serverUrl = (env.SERVER_URL || `http://${host === '0.0.0.0' ? 'localhost' : host}:${port}`).replace(/\/+$/, '');
  const dataDir = resolve(env.DATA_DIR || './data');
  return {
    host,
    port,
    serverUrl,
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir,
    invitationLinkValidityMinutes: integer('INVITATION_LINK_VALIDITY_MINUTES', env.INVITATION_LINK_VALIDITY_MINUTES, 14400)!,
    invitesDefaultRealmDailyMax: integer('INVITES_DEFAULT_REALM_DAILY_MAX', env.INVITES_DEFAULT_REALM_DAILY_MAX),
    smtpUrl: env.SMTP_URL || undefined,
    emailFrom: env.EMAIL_FROM || `Zulip <noreply@${new URL(serverUrl).hostname}>`,
    rateLimits: parseRateRules(env.API_RATE_LIMIT),
    uploads: loadUploadsConfig(env),
  };
}
