// Each test builds its own organization from the contract's example file (ids stripped, so that
// many worlds live side by side in one shared database).
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { DatabaseClient } from '../../src/db/database.js';
import { importOrganization } from '../../src/import/import-organization.js';
import { parseOrganizationFile, type OrganizationFile } from '../../src/import/organization-file.js';
import { basicAuth } from './server.js';

const EXAMPLE = new URL('../../docs/contract/example-organization.json', import.meta.url);
export const exampleOrganization = (): Record<string, unknown> => JSON.parse(readFileSync(EXAMPLE, 'utf8'));

const ROLES = {
  owner: 'olga',
  admin: 'adam',
  moderator: 'mona',
  member: 'mark',
  guest: 'gina',
  deactivated: 'dora',
  bot: 'bolt-bot',
} as const;
export type WorldUserName = keyof typeof ROLES;

export interface WorldUser {
  id: number;
  email: string;
  apiKey: string;
  auth: string;
}

/** The example organization as a parsed file without ids (attachment ids stay: messages refer to them). */
export function exampleWithoutIds(): OrganizationFile {
  const raw = exampleOrganization() as Record<string, Record<string, unknown> | Record<string, unknown>[]>;
  for (const [section, rows] of Object.entries(raw)) {
    for (const row of Array.isArray(rows) ? rows : [rows]) {
      if (section !== 'attachments') delete row.id;
      // API keys and file paths are unique server-wide: let the importer generate fresh ones.
      delete row.api_key;
      delete row.path_id;
    }
  }
  const parsed = parseOrganizationFile(raw);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  // Attachment ids are how messages name attachments: keep them unique per world.
  const offset = 1_000_000 + Math.floor(Math.random() * 1_000_000_000);
  parsed.value.attachments.forEach((a) => (a.id! += offset));
  parsed.value.messages.forEach((m) => (m.attachment_ids = m.attachment_ids.map((id) => id + offset)));
  return parsed.value;
}

export async function createWorld(prisma: DatabaseClient, customize?: (file: OrganizationFile) => void) {
  const file = exampleWithoutIds();
  file.organization.string_id = `w-${randomBytes(6).toString('hex')}`;
  customize?.(file);
  const imported = await importOrganization(prisma, file);
  const orgId = imported.id;
  const users = {} as Record<WorldUserName, WorldUser>;
  for (const [name, local] of Object.entries(ROLES) as [WorldUserName, string][]) {
    const email = `${local}@lighthouse.example`;
    const row = await prisma.user.findUniqueOrThrow({ where: { organizationId_emailKey: { organizationId: orgId, emailKey: email } } });
    const apiKey = imported.apiKeys.get(email)!;
    users[name] = { id: row.id, email, apiKey, auth: basicAuth(email, apiKey) };
  }
  const idByName = async (model: 'channel' | 'userGroup' | 'customEmoji' | 'attachment', name: string) => {
    const row = await (prisma[model] as unknown as { findFirstOrThrow(a: object): Promise<{ id: number }> }).findFirstOrThrow({
      where: { organizationId: orgId, name },
      orderBy: { id: 'asc' },
    });
    return row.id;
  };
  const messages = await prisma.message.findMany({ where: { organizationId: orgId }, orderBy: { id: 'asc' }, select: { id: true } });
  return {
    file,
    org: { id: orgId, stringId: imported.stringId },
    users,
    channelId: (name: string) => idByName('channel', name),
    groupId: (name: string) => idByName('userGroup', name),
    emojiId: (name: string) => idByName('customEmoji', name),
    attachmentId: (name: string) => idByName('attachment', name),
    messageIds: messages.map((m) => m.id),
  };
}

export type World = Awaited<ReturnType<typeof createWorld>>;
