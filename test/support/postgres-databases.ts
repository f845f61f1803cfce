// Each test file gets a database of its own, copied from a
// migrated template with CREATE DATABASE ... TEMPLATE. Files then run in parallel without one file's
// background workers (the e-mail outbox) picking up another file's rows. Tests inside a file still
// share their database and isolate by creating their own organizations.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

const COPY_LOCK_KEY = 5_550_123_001;

export const databaseName = (url: string) => new URL(url).pathname.slice(1);

export function withDatabase(url: string, name: string): string {
  const copy = new URL(url);
  copy.pathname = `/${name}`;
  return copy.href;
}

async function asAdmin<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * Drops a database and ends its sessions. An autovacuum worker busy in it (a freshly migrated database
 * gets one) cannot be ended by a role that is not a superuser: PostgreSQL then refuses the drop
 * (insufficient privilege) until the worker is done, a moment later.
 */
export async function dropDatabase(client: pg.Client, name: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== '42501' || attempt === 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/**
 * An empty database of its own on the server `url` names, for a test that must see migrations run
 * (or a first start): `work` gets its name, its URL and an administrator's connection; dropped afterwards.
 */
export async function withEmptyDatabase<T>(
  url: string,
  prefix: string,
  work: (database: { name: string; url: string; admin: pg.Client }) => Promise<T>,
): Promise<T> {
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  return asAdmin(url, async (admin) => {
    await admin.query(`CREATE DATABASE "${name}"`);
    try {
      return await work({ name, url: withDatabase(url, name), admin });
    } finally {
      await dropDatabase(admin, name);
    }
  });
}

/** The template's name for the database DATABASE_URL names; also the prefix of every copy. */
export const templateName = (url: string) => `${databaseName(url)}_tpl`;

/** Creates (or recreates) the empty template database and returns its URL. */
export async function createTemplate(url: string): Promise<string> {
  const name = templateName(url);
  await asAdmin(url, async (client) => {
    await dropDatabase(client, name);
    await client.query(`CREATE DATABASE "${name}"`);
  });
  return withDatabase(url, name);
}

/** A fresh copy of the migrated template. */
export async function copyTemplate(url: string): Promise<string> {
  const name = `${templateName(url)}_${process.pid}_${randomBytes(4).toString('hex')}`;
  // PostgreSQL copies a template only while nobody else is connected to it, copies included.
  await asAdmin(url, async (client) => {
    await client.query('SELECT pg_advisory_lock($1)', [COPY_LOCK_KEY]);
    await client.query(`CREATE DATABASE "${name}" TEMPLATE "${templateName(url)}"`);
    await client.query('SELECT pg_advisory_unlock($1)', [COPY_LOCK_KEY]);
  });
  return withDatabase(url, name);
}

/** Drops the template and every copy of it. */
export async function dropCopies(url: string): Promise<void> {
  await asAdmin(url, async (client) => {
    const { rows } = await client.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [
      `${templateName(url)}%`,
    ]);
    for (const { datname } of rows) await dropDatabase(client, datname);
  });
}
