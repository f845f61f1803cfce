// The organization import file through the importer (the CLI's import: test/cli/cli.test.ts).
import { afterAll, beforeAll, describe, expect, test, inject } from 'vitest';
import { openDatabase, type Database } from '../../src/db/database.js';
import { importOrganization } from '../../src/import/import-organization.js';
import { verifyPassword } from '../../src/domain/auth/passwords.js';
import { unsealApiKey } from '../../src/domain/users/api-keys.js';
import { parseOrganizationFile } from '../../src/import/organization-file.js';
import { copyTemplate } from '../support/postgres-databases.js';
import { exampleOrganization } from '../support/world.js';

let database: Database;
beforeAll(async () => {
  // The example's explicit ids would collide in a shared database: it gets a private one.
  database = await openDatabase({ databaseUrl: await copyTemplate(inject('databaseUrl')) });
});
afterAll(() => database.close());

const parse = (json: unknown) => {
  const parsed = parseOrganizationFile(json);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed.value;
};

async function rowCounts() {
  const p = database.prisma;
  return Promise.all([
    p.organization.count(),
    p.user.count(),
    p.userGroup.count(),
    p.channel.count(),
    p.subscription.count(),
    p.customEmoji.count(),
    p.attachment.count(),
    p.message.count(),
    p.messageAttachment.count(),
  ]);
}

describe('importer', () => {
  test('the example organization imports with its ids, settings and a 3 GiB attachment', async () => {
    const imported = await importOrganization(database.prisma, parse(exampleOrganization()));
    expect(imported).toMatchObject({ id: 7, stringId: 'lighthouse' });
    const p = database.prisma;
    const olga = await p.user.findUniqueOrThrow({ where: { id: 701 } });
    expect(olga).toMatchObject({ email: 'olga@lighthouse.example', role: 100, organizationId: 7 });
    expect(imported.apiKeys.get('olga@lighthouse.example')).toBe('OLGAolgaOLGAolgaOLGAolgaOLGAolga');
    expect(await p.user.count({ where: { organizationId: 7, systemBot: { not: null } } })).toBe(2);
    expect((await p.attachment.findUniqueOrThrow({ where: { id: 503 } })).size).toBe(3221225472n);
    // The organization's counter of bytes stored is the exact total of the imported files.
    const { _sum } = await p.attachment.aggregate({ where: { organizationId: 7 }, _sum: { size: true } });
    expect(_sum.size).toBe(571_946n + 12n + 3_221_225_472n);
    expect((await p.organization.findUniqueOrThrow({ where: { id: 7 } })).uploadSpaceUsed).toBe(_sum.size);
    // Each link carries its message's send time (the file lists read it from the link).
    const links = await p.messageAttachment.findMany({
      where: { attachmentId: 501 },
      orderBy: { messageId: 'asc' },
      include: { message: { select: { dateSent: true } } },
    });
    expect(links.map((link) => [link.messageId, link.dateSent])).toEqual([
      [1001, new Date(1767312100_000)],
      [1002, new Date(1767312200_000)],
    ]);
    expect(links.every((link) => link.dateSent.getTime() === link.message.dateSent.getTime())).toBe(true);
    const leads = await p.userGroup.findFirstOrThrow({
      where: { organizationId: 7, name: 'leads' },
      include: { canAddMembersGroup: { include: { members: true } }, subgroups: true },
    });
    expect(leads.canAddMembersGroup).toMatchObject({ name: null, members: [{ userId: 702 }] });
    expect(leads.subgroups).toEqual([{ supergroupId: 82, subgroupId: 81 }]);
    const org = await p.organization.findUniqueOrThrow({ where: { id: 7 }, include: { canInviteUsersGroup: true } });
    expect(org.canInviteUsersGroup).toMatchObject({ name: 'role:members', isSystemGroup: true });
    expect(await p.subscription.count({ where: { channelId: 71 } })).toBe(4);
    // A later insert without an id does not collide with the explicit ones.
    const next = await p.message.create({ data: { organizationId: 7, senderId: 701, content: 'after import' } });
    expect(next.id).toBeGreaterThan(1003);
  });

  test('a message without date_sent is sent at the import, and its links carry that same time', async () => {
    const started = Date.now();
    const owner = 'una@undated.example';
    await importOrganization(
      database.prisma,
      parse({
        organization: { string_id: 'undated', name: 'Undated' },
        users: [{ email: owner, full_name: 'Una', role: 100 }],
        attachments: [{ id: 9001, owner, name: 'a.txt', size: 3 }],
        messages: [{ sender: owner, to: [owner], content: 'see a.txt', attachment_ids: [9001] }],
      }),
    );
    const links = await database.prisma.messageAttachment.findMany({ where: { attachmentId: 9001 }, include: { message: true } });
    expect(links).toHaveLength(1);
    expect(links[0]!.dateSent.getTime()).toBeGreaterThanOrEqual(started - 1000);
    expect(links[0]!.dateSent).toEqual(links[0]!.message.dateSent);
  });

  test('an existing string_id is refused, and replaced with replace', async () => {
    const file = parse({
      ...exampleOrganization(),
      users: [],
      channels: [],
      user_groups: [],
      custom_emoji: [],
      attachments: [],
      messages: [],
      organization: { string_id: 'twice', name: 'Twice' },
    });
    const first = await importOrganization(database.prisma, file);
    await expect(importOrganization(database.prisma, file)).rejects.toThrow(
      'An organization with string_id twice exists already (use --replace to drop it first).',
    );
    const second = await importOrganization(database.prisma, file, { replace: true });
    expect(second.id).not.toBe(first.id);
    expect(await database.prisma.organization.count({ where: { stringId: 'twice' } })).toBe(1);
  });

  test('upload_quota_gb: null by default, an integer of GiB, anything else refused', async () => {
    const base = { ...exampleOrganization(), users: [], channels: [], user_groups: [], custom_emoji: [], attachments: [], messages: [] };
    const quota = parse({ ...base, organization: { string_id: 'quota', name: 'Quota', upload_quota_gb: 3 } });
    const none = parse({ ...base, organization: { string_id: 'no-quota', name: 'No quota' } });
    const withQuota = await importOrganization(database.prisma, quota);
    const without = await importOrganization(database.prisma, none);
    const row = (id: number) =>
      database.prisma.organization.findUniqueOrThrow({ where: { id }, select: { uploadQuotaGb: true, uploadSpaceUsed: true } });
    expect(await row(withQuota.id)).toEqual({ uploadQuotaGb: 3, uploadSpaceUsed: 0n });
    expect(await row(without.id)).toEqual({ uploadQuotaGb: null, uploadSpaceUsed: 0n });
    for (const bad of [-1, 1.5, '3', 1e12]) {
      const parsed = parseOrganizationFile({ ...base, organization: { string_id: 'bad-quota', name: 'Bad', upload_quota_gb: bad } });
      expect(parsed.ok ? [] : parsed.problems.map((p) => p.path)).toEqual(['organization.upload_quota_gb']);
    }
  });

  test("password_hash: Django's argon2id and pbkdf2_sha256 are kept as they are; any other value, or a bot's, names the user", async () => {
    // Python's hashlib.pbkdf2_hmac('sha256', b'correct horse battery', b'Hw6D8sZyb2pS', 10000), and Django's Argon2 of the same password.
    const pbkdf2 = 'pbkdf2_sha256$10000$Hw6D8sZyb2pS$E8RaacGAtAUE5BW4Y1D+tIc56awidvf1lwQ93sWYvtQ=';
    const argon2 = 'argon2$argon2id$v=19$m=102400,t=2,p=8$dzJ0SGRYSjBjSGRtY25kMQ$MZ5i56jUTz+Z8fBzUOlgkE3C/B1ZchedDqlZ+82mkFU';
    const base = { ...exampleOrganization(), channels: [], user_groups: [], custom_emoji: [], attachments: [], messages: [] };
    const users = [
      { email: 'p@hashes.example', full_name: 'P', role: 100, password_hash: pbkdf2 },
      { email: 'a@hashes.example', full_name: 'A', password_hash: argon2 },
      { email: 'n@hashes.example', full_name: 'N' },
    ];
    const imported = await importOrganization(
      database.prisma,
      parse({ ...base, organization: { string_id: 'hashes', name: 'Hashes' }, users }),
    );
    const rows = await database.prisma.user.findMany({
      where: { organizationId: imported.id, systemBot: null },
      orderBy: { email: 'asc' },
    });
    expect(rows.map((r) => [r.email, r.passwordHash])).toEqual([
      ['a@hashes.example', argon2],
      ['n@hashes.example', null],
      ['p@hashes.example', pbkdf2],
    ]);
    expect((await verifyPassword(rows[2]!.passwordHash, 'correct horse battery')).valid).toBe(true);
    // Every imported key is kept sealed too, so fetch_api_key can return it.
    for (const row of rows) expect(await unsealApiKey(database.prisma, row)).toBe(imported.apiKeys.get(row.email));

    const bad = [
      { email: 'x@hashes.example', full_name: 'X', password_hash: 'md5$salt$0123456789abcdef' },
      { email: 'y@hashes.example', full_name: 'Y', password_hash: argon2.slice('argon2'.length) },
      { email: 'z@hashes.example', full_name: 'Z', password_hash: pbkdf2.replace('$10000$', '$99999999$') },
      { email: 'bot@hashes.example', full_name: 'Bot', is_bot: true, bot_type: 1, password_hash: pbkdf2 },
      { email: 'ok@hashes.example', full_name: 'OK', password_hash: pbkdf2 },
    ];
    const parsed = parseOrganizationFile({ ...base, organization: { string_id: 'bad-hashes', name: 'Bad' }, users: bad });
    const wrongFormat = (email: string) =>
      `${email}'s password hash is not Django's argon2$argon2id$... or pbkdf2_sha256$<iterations>$<salt>$<hash> (or its cost is beyond the limits)`;
    expect(parsed.ok ? [] : parsed.problems).toEqual([
      { path: 'users[0].password_hash', message: wrongFormat('x@hashes.example') },
      { path: 'users[1].password_hash', message: wrongFormat('y@hashes.example') },
      { path: 'users[2].password_hash', message: wrongFormat('z@hashes.example') },
      { path: 'users[3].password_hash', message: 'bot@hashes.example is a bot: bots have no password' },
    ]);
  });

  test('a file with problems lists every one of them and writes nothing', async () => {
    const before = await rowCounts();
    const bad = exampleOrganization() as Record<string, any>;
    bad.organization.string_id = 'Bad Id';
    bad.users.push({ email: 'OLGA@lighthouse.example', full_name: 'Olga Again' });
    bad.users[2].role = 350;
    bad.users[3].api_key = 'short';
    bad.channels[0].subscribers.push('nobody@lighthouse.example');
    bad.user_groups[0].subgroups = ['leads'];
    bad.messages[0].attachment_ids = [999];
    bad.messages[2].channel = 'general';
    const parsed = parseOrganizationFile(bad);
    expect(parsed.ok).toBe(false);
    const problems = parsed.ok ? [] : parsed.problems;
    expect(problems.map((p) => p.path)).toEqual(expect.arrayContaining(['organization.string_id', 'users[2].role', 'users[3].api_key']));
    // References are checked in the same pass, among the rows that are otherwise valid.
    expect(problems).toContainEqual({
      path: 'channels[0].subscribers[4]',
      message: 'no user with e-mail nobody@lighthouse.example in the file',
    });
    expect(problems).toContainEqual({ path: 'messages[0].attachment_ids[0]', message: 'no attachment with id 999 in the file' });
    const second = parseOrganizationFile({
      ...bad,
      organization: { ...bad.organization, string_id: 'ok' },
      users: bad.users.map((u: any) => ({ ...u, role: 400, api_key: undefined })),
    });
    expect(second.ok ? [] : second.problems).toEqual([
      { path: 'users[7].email', message: 'duplicate e-mail address (ignoring case)' },
      { path: 'channels[0].subscribers[4]', message: 'no user with e-mail nobody@lighthouse.example in the file' },
      { path: 'user_groups', message: 'subgroups form a cycle through support' },
      { path: 'user_groups', message: 'subgroups form a cycle through leads' },
      { path: 'messages[0].attachment_ids[0]', message: 'no attachment with id 999 in the file' },
      { path: 'messages[2]', message: 'needs exactly one of channel and to' },
    ]);
    expect(await rowCounts()).toEqual(before);
    // The importer itself refuses the file before writing anything.
    await expect(importOrganization(database.prisma, bad as never)).rejects.toThrow();
    expect(await rowCounts()).toEqual(before);
  });

  test('a valid file that fails in the database half-way (its last rows collide) writes nothing', async () => {
    if ((await database.prisma.organization.count({ where: { stringId: 'lighthouse' } })) === 0) {
      await importOrganization(database.prisma, parse(exampleOrganization()));
    }
    const before = await rowCounts();
    const file = exampleOrganization() as Record<string, any>;
    file.organization = { ...file.organization, string_id: 'late-collision' };
    delete file.organization.id;
    for (const section of ['users', 'channels', 'user_groups', 'custom_emoji'])
      for (const row of file[section]) delete row.id, delete row.api_key;
    for (const attachment of file.attachments) (attachment.id += 10_000), delete attachment.path_id;
    for (const message of file.messages) message.attachment_ids = (message.attachment_ids ?? []).map((id: number) => id + 10_000);
    // Messages keep the ids the first import stored: the last inserts of the transaction fail.
    await expect(importOrganization(database.prisma, parse(file))).rejects.toThrow();
    expect(await rowCounts()).toEqual(before);
    expect(await database.prisma.organization.count({ where: { stringId: 'late-collision' } })).toBe(0);
  });
});
