// `npm start` as a newcomer runs it: on an empty database the process creates the demo organization
// and prints working credentials; started again on the same database it creates nothing.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, test } from 'vitest';
import { openDatabase, type DatabaseOptions } from '../../src/db/database.js';
import { startServerProcess as startMain, stopServerProcess as stop, waitForOutput } from '../support/process.js';
import { withEmptyDatabase } from '../support/postgres-databases.js';
import { signIn } from '../support/sessions.js';

const me = (baseUrl: string, authorization: string) =>
  fetch(`${baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization },
    body: JSON.stringify({ query: '{ me { email role } }' }),
  }).then(async (r) => ({ status: r.status, body: await r.json() }));

const basic = (email: string, apiKey: string) => `Basic ${Buffer.from(`${email}:${apiKey}`).toString('base64')}`;

/** Reads what a newcomer would copy from the banner, and uses each piece the way the banner says. */
async function checkPrintedCredentials(output: string) {
  const baseUrl = /Server listening on (http:\/\/\S+)/.exec(output)![1]!;
  expect(output).toContain(
    `  Sign in:   ${baseUrl}/accounts/login/?next=%2Fgraphql   (then GraphiQL runs as you)\n  GraphiQL:  ${baseUrl}/graphql\n  REST base: ${baseUrl}/api/v1\n`,
  );
  const [, ownerEmail, ownerKey] = /Owner: +(\S+) +API key: (\S+)/.exec(output)!;
  const [, memberEmail, memberKey] = /Member: +(\S+) +API key: (\S+)/.exec(output)!;
  expect(ownerEmail).toBe('iris@harborlights.example');
  expect(memberEmail).toBe('sam@harborlights.example');
  // The printed passwords sign in: fetch_api_key gives back the printed keys.
  for (const [who, email, key] of [
    ['Owner', ownerEmail, ownerKey],
    ['Member', memberEmail, memberKey],
  ]) {
    const password = new RegExp(`${who}: +\\S+ +API key: \\S+ +password: (\\S+)`).exec(output)![1]!;
    const fetched = await fetch(`${baseUrl}/api/v1/fetch_api_key`, {
      method: 'POST',
      body: new URLSearchParams({ username: email!, password }),
    });
    expect(await fetched.json()).toMatchObject({ result: 'success', api_key: key, email });
  }

  // The browser's way: the printed sign-in URL, the owner's printed password, then GraphQL on the session.
  const [, signInUrl, signInEmail] = /Try it in a browser: sign in at (\S+) as (\S+)/.exec(output)!;
  expect(signInEmail).toBe(ownerEmail);
  const ownerPassword = /Owner: +\S+ +API key: \S+ +password: (\S+)/.exec(output)![1]!;
  const signedIn = await signIn(new URL(signInUrl!).origin, { username: ownerEmail!, password: ownerPassword });
  const viaSession = await fetch(`${baseUrl}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie: signedIn.cookie },
    body: JSON.stringify({ query: '{ me { email role } }' }),
  });
  expect(await viaSession.json()).toEqual({ data: { me: { email: ownerEmail, role: 'OWNER' } } });
  expect(await me(baseUrl, basic(ownerEmail!, ownerKey!))).toEqual({
    status: 200,
    body: { data: { me: { email: ownerEmail, role: 'OWNER' } } },
  });

  const [, curlUser, curlUrl] = /curl -u (\S+) (\S+)/.exec(output)!;
  expect(curlUser).toBe(`${memberEmail}:${memberKey}`);
  expect(curlUrl).toBe(`${baseUrl}/api/v1/attachments`);
  expect(await me(baseUrl, basic(memberEmail!, memberKey!))).toEqual({
    status: 200,
    body: { data: { me: { email: memberEmail, role: 'MEMBER' } } },
  });
  const rest = await fetch(curlUrl!, { headers: { authorization: `Basic ${Buffer.from(curlUser!).toString('base64')}` } });
  const refused = await fetch(curlUrl!, { headers: { authorization: basic(memberEmail!, ownerKey!) } });
  expect(refused.status).toBe(401);
  expect(rest.status).toBe(200);
  const body = await rest.json();
  expect(body.upload_space_used).toBe(82_874_063);
  const sams = body.attachments.map((a: { name: string; message_ids: number[] }) => [a.name, a.message_ids.length]);
  expect(sams.sort()).toEqual([
    ['homepage-mockup.png', 2],
    ['lighthouse-logo.svg', 2],
    ['release-notes.txt', 1],
  ]);
}

/** What the two runs left in the database: one demo organization with every role and realistic content. */
async function checkDatabase(options: DatabaseOptions) {
  const database = await openDatabase(options);
  try {
    const prisma = database.prisma;
    const orgs = await prisma.organization.findMany({ select: { id: true, stringId: true, name: true } });
    expect(orgs).toEqual([{ id: orgs[0]!.id, stringId: 'demo', name: 'Harbor Lights Studio' }]);
    const where = { organizationId: orgs[0]!.id };
    const roles = await prisma.user.findMany({
      where: { ...where, systemBot: null, isBot: false, isActive: true },
      select: { role: true },
    });
    expect([...new Set(roles.map((u) => u.role))].sort()).toEqual([100, 200, 300, 400, 600]);
    expect(await prisma.channel.count({ where })).toBeGreaterThanOrEqual(5);
    expect(await prisma.userGroup.count({ where: { ...where, isSystemGroup: false, name: { not: null } } })).toBeGreaterThanOrEqual(3);
    expect(await prisma.customEmoji.count({ where: { ...where, deactivated: false } })).toBeGreaterThanOrEqual(3);
    expect(await prisma.attachment.count({ where })).toBeGreaterThanOrEqual(5);
    expect(await prisma.messageAttachment.count({ where: { message: where } })).toBeGreaterThanOrEqual(5);
    expect(await prisma.message.count({ where })).toBeGreaterThanOrEqual(10);
  } finally {
    await database.close();
  }
}

async function firstAndSecondStart(database: { DATA_DIR: string } | { DATABASE_URL: string }) {
  const first = startMain(database);
  await waitForOutput(first, /curl -u \S+ \S+\n/);
  expect(first.output()).toContain('The database was empty: created the demo organization "Harbor Lights Studio" (string_id demo).');
  await checkPrintedCredentials(first.output());
  await stop(first);

  const second = startMain(database);
  await waitForOutput(second, /npm run cli -- reset-api-key .*\n/);
  expect(second.output()).toContain('The database already holds 1 organization(s): the demo organization was not created.');
  expect(second.output()).toContain('  npm run cli -- reset-api-key --org demo --email iris@harborlights.example\n');
  expect(second.output()).not.toContain('API key:');
  await stop(second);
  return first.output();
}

test('embedded database: the first start creates the demo and prints working credentials; the second creates nothing', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'teamchat-demo-'));
  // As root the embedded PostgreSQL runs as the postgres user: keep its cluster in the folder removed below.
  await chmod(dataDir, 0o711);
  try {
    const output = await firstAndSecondStart({ DATA_DIR: dataDir });
    const socket = `${dataDir}/postgres`;
    expect(output).toContain(
      `  REST base: ${/Server listening on (\S+)/.exec(output)![1]}/api/v1\n` +
        `  Database:  embedded PostgreSQL, socket in ${socket} (psql -h ${socket} -U teamchat teamchat)\n` +
        `  E-mail:    files in ${dataDir}/outbox\n`,
    );
    await checkDatabase({ dataDir, owner: 'tool' });
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}, 180_000);

// A database of its own on the tests' PostgreSQL server: the demo needs an empty one, and the shared one is not.
describe('PostgreSQL named by DATABASE_URL', () => {
  test('the first start creates the demo and prints working credentials; the second creates nothing', async () => {
    await withEmptyDatabase(inject('databaseUrl'), 'teamchat_demo', async ({ url: databaseUrl }) => {
      await firstAndSecondStart({ DATABASE_URL: databaseUrl });
      await checkDatabase({ databaseUrl });
    });
  }, 180_000);
});
