// DATABASE_DIRECT_URL is read like DATABASE_URL, and only beside it; TLS parameters either URL cannot
// honour stop the start in one line instead of failing (or retrying) at the first connection.
import { expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { StartupError } from '../../src/startup-error.js';

const POOLER = 'postgresql://teamchat:secret@pgbouncer.internal:6432/teamchat';
const DIRECT = 'postgresql://teamchat:secret@db.internal:5432/teamchat';
const READABLE_FILE = new URL(import.meta.url).pathname; // stands for a CA file: only readability is checked here

/** The start-up error's message for this environment, or the URLs it would use. */
function outcome(env: NodeJS.ProcessEnv): string | { databaseUrl?: string; databaseDirectUrl?: string } {
  try {
    const { databaseUrl, databaseDirectUrl } = loadConfig(env);
    return { databaseUrl, databaseDirectUrl };
  } catch (error) {
    if (error instanceof StartupError) return error.message;
    throw error;
  }
}

test('DATABASE_DIRECT_URL beside DATABASE_URL; unset, DATABASE_URL is direct', () => {
  expect(outcome({ DATABASE_URL: POOLER, DATABASE_DIRECT_URL: DIRECT })).toEqual({ databaseUrl: POOLER, databaseDirectUrl: DIRECT });
  expect(outcome({ DATABASE_URL: DIRECT })).toEqual({ databaseUrl: DIRECT, databaseDirectUrl: undefined });
  expect(outcome({ DATABASE_URL: DIRECT, DATABASE_DIRECT_URL: '' })).toEqual({ databaseUrl: DIRECT, databaseDirectUrl: undefined });
});

test('DATABASE_DIRECT_URL without DATABASE_URL, or malformed, stops the start with the variable named', () => {
  expect(outcome({ DATABASE_DIRECT_URL: DIRECT })).toBe(
    'DATABASE_DIRECT_URL is set without DATABASE_URL: set DATABASE_URL to the pooler (PgBouncer) and DATABASE_DIRECT_URL to PostgreSQL itself',
  );
  expect(outcome({ DATABASE_URL: POOLER, DATABASE_DIRECT_URL: 'db.internal:5432' })).toBe(
    'DATABASE_DIRECT_URL must start with postgresql:// (got db.internal://...)',
  );
  expect(outcome({ DATABASE_URL: POOLER, DATABASE_DIRECT_URL: 'not a url' })).toBe(
    'DATABASE_DIRECT_URL is not a URL: expected postgresql://user:password@host:5432/database',
  );
  expect(outcome({ DATABASE_URL: POOLER, DATABASE_DIRECT_URL: 'postgresql://db.internal:5432' })).toBe(
    'DATABASE_DIRECT_URL names no database: expected postgresql://user:password@host:5432/database',
  );
});

test('sslmode: libpq modes node-postgres can honour pass; others, a CA-less verify-ca and unreadable files are refused', () => {
  for (const mode of ['disable', 'require', 'verify-full']) {
    expect(outcome({ DATABASE_URL: `${POOLER}?sslmode=${mode}`, DATABASE_DIRECT_URL: `${DIRECT}?sslmode=${mode}` }), mode).toHaveProperty(
      'databaseUrl',
    );
  }
  expect(outcome({ DATABASE_URL: `${DIRECT}?sslmode=verify-ca&sslrootcert=${READABLE_FILE}` })).toHaveProperty('databaseUrl');
  expect(outcome({ DATABASE_URL: `${DIRECT}?sslmode=verify-full&sslrootcert=system` })).toHaveProperty('databaseUrl');

  expect(outcome({ DATABASE_URL: `${DIRECT}?sslmode=prefer` })).toBe(
    'DATABASE_URL: sslmode=prefer is not supported; use disable, require, verify-ca, verify-full',
  );
  expect(outcome({ DATABASE_URL: POOLER, DATABASE_DIRECT_URL: `${DIRECT}?sslmode=no-verify` })).toBe(
    'DATABASE_DIRECT_URL: sslmode=no-verify is not supported; use disable, require, verify-ca, verify-full',
  );
  expect(outcome({ DATABASE_URL: `${DIRECT}?sslmode=verify-ca` })).toBe(
    'DATABASE_URL: sslmode=verify-ca needs sslrootcert=<file of the CA>',
  );
  expect(outcome({ DATABASE_URL: `${DIRECT}?sslmode=verify-full&sslrootcert=/nonexistent/root.crt` })).toBe(
    'DATABASE_URL: sslrootcert /nonexistent/root.crt cannot be read (ENOENT)',
  );
});
