// The importer with a storage (what the CLI's import does): attachments get their bytes, the
// content the file carries (content_base64) or a placeholder of the stated size.
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { text } from 'node:stream/consumers';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { openDatabase, type Database } from '../../src/db/database.js';
import { importOrganization } from '../../src/import/import-organization.js';
import { parseOrganizationFile } from '../../src/import/organization-file.js';
import { DirectoryStorage } from '../../src/storage/directory-storage.js';
import { copyTemplate } from '../support/postgres-databases.js';
import { exampleWithoutIds } from '../support/world.js';

let database: Database;
let root: string;
beforeAll(async () => {
  database = await openDatabase({ databaseUrl: await copyTemplate(inject('databaseUrl')) });
  root = await mkdtemp(join(tmpdir(), 'teamchat-import-files-'));
});
afterAll(async () => {
  await database.close();
  await rm(root, { recursive: true, force: true });
});

const minimal = (stringId: string, attachments: Record<string, unknown>[]) => ({
  organization: { string_id: stringId, name: 'Files' },
  users: [{ email: 'owner@files.example', full_name: 'Owner', role: 100 }],
  attachments: attachments.map((a) => ({ owner: 'owner@files.example', ...a })),
});

const parse = (json: unknown) => {
  const parsed = parseOrganizationFile(json);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed.value;
};

const pathOf = (stringId: string, name: string) =>
  database.prisma.attachment.findFirstOrThrow({ where: { organization: { stringId }, name }, select: { pathId: true, contentType: true } });

test('carried content is stored as given; files without it get a (sparse) placeholder of their size', async () => {
  const storage = new DirectoryStorage(join(root, 'one'));
  const file = parse(
    minimal('files-one', [
      { name: 'hello.txt', size: 5, content_type: 'text/plain', content_base64: Buffer.from('hello').toString('base64') },
      { name: 'big.iso', size: 3_221_225_472 },
    ]),
  );
  await importOrganization(database.prisma, file, { storage });
  const hello = await pathOf('files-one', 'hello.txt');
  expect(hello.contentType).toBe('text/plain');
  expect(await text((await storage.read(`files/${hello.pathId}`))!)).toBe('hello');
  const big = await pathOf('files-one', 'big.iso');
  expect(await storage.stat(`files/${big.pathId}`)).toEqual({ size: 3_221_225_472 });
  // Sparse: the placeholder occupies (almost) no disk blocks.
  expect((await stat(join(storage.root, 'files', big.pathId))).blocks).toBeLessThan(64);
});

test('content that disagrees with size is refused; a failing storage imports nothing', async () => {
  const mismatch = parseOrganizationFile(
    minimal('files-bad', [{ name: 'a.txt', size: 4, content_base64: Buffer.from('hello').toString('base64') }]),
  );
  expect(mismatch.ok ? [] : mismatch.problems).toEqual([{ path: 'attachments[0].size', message: 'is 4 but content_base64 holds 5 bytes' }]);
  const notBase64 = parseOrganizationFile(minimal('files-bad', [{ name: 'a.txt', size: 1, content_base64: '***' }]));
  expect(notBase64.ok ? [] : notBase64.problems.map((p) => p.path)).toEqual(['attachments[0].content_base64']);

  const brokenRoot = join(root, 'broken');
  await writeFile(brokenRoot, 'not a directory');
  await expect(
    importOrganization(database.prisma, parse(minimal('files-broken', [{ name: 'a.txt', size: 3 }])), {
      storage: new DirectoryStorage(brokenRoot),
    }),
  ).rejects.toThrow();
  expect(await database.prisma.organization.count({ where: { stringId: 'files-broken' } })).toBe(0);
});

test("--replace removes the replaced organization's stored files", async () => {
  const storage = new DirectoryStorage(join(root, 'replace'));
  const file = exampleWithoutIds();
  file.organization.string_id = 'files-replace';
  await importOrganization(database.prisma, file, { storage });
  const first = (await database.prisma.attachment.findMany({ where: { organization: { stringId: 'files-replace' } } })).map(
    (a) => `files/${a.pathId}`,
  );
  expect(first).toHaveLength(3);
  for (const key of first) expect(await storage.stat(key)).not.toBeNull();
  const again = exampleWithoutIds();
  again.organization.string_id = 'files-replace';
  await importOrganization(database.prisma, again, { storage, replace: true });
  for (const key of first) expect(await storage.stat(key)).toBeNull();
  const files = (await readdir(storage.root, { recursive: true, withFileTypes: true })).filter((e) => e.isFile());
  expect(files).toHaveLength(3);
});
