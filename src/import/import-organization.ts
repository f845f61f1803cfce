// Writes a validated organization file in one transaction (docs/contract/organization-import.md).
import type { DatabaseClient } from '../db/database.js';
import type { Prisma as PrismaNamespace } from '../generated/prisma/client.js';
import { apiKeyColumns, apiKeySealer, type ApiKeySealer } from '../domain/users/api-keys.js';
import { DomainError } from '../domain/errors.js';
import { insertAttachments } from '../domain/attachments/upload-space.js';
import { fileKey, newPathId } from '../domain/uploads/paths.js';
import { IMPORT_TRANSACTION_MS } from '../domain/uploads/upload-file.js';
import type { FileStorage } from '../storage/storage.js';
import { Readable } from 'node:stream';
import { fitName, sanitizeName } from '../domain/uploads/file-names.js';
import { SYSTEM_GROUP_NAMES, type GroupSettingValue, type OrganizationFile } from './organization-file.js';

type Tx = PrismaNamespace.TransactionClient;

export interface ImportedOrganization {
  id: number;
  stringId: string;
  /** API keys by lower-case e-mail, including the generated ones (shown once). */
  apiKeys: Map<string, string>;
  /** What the import created (the users of the file; groups: the file's named groups). */
  created: ImportCounts;
}

export interface ImportCounts {
  users: number;
  groups: number;
  channels: number;
  emoji: number;
  /** Attachment rows; `storedFiles` of them had their bytes written. */
  files: number;
  storedFiles: number;
  messages: number;
  /** Always 0: the format carries no invitations. */
  invitations: 0;
}

/** The import's stages, in order; `files` writes the attachments' bytes. */
export type ImportStage = 'users' | 'groups' | 'channels' | 'emoji' | 'attachments' | 'messages' | 'files';

/** How far a stage has come: `done` of `total` rows (files for `files`). */
export type ImportProgress = (stage: ImportStage, done: number, total: number) => void;

export const SYSTEM_BOTS = [
  { systemBot: 'notification', email: 'notification-bot@zulip.com', fullName: 'Notification Bot' },
  { systemBot: 'welcome', email: 'welcome-bot@zulip.com', fullName: 'Welcome Bot' },
] as const;

const ANALYZED_TABLES = ['user_account', 'custom_emoji', 'attachment', 'message', 'message_attachment'];
const TABLES_WITH_IDS = ['organization', 'user_account', 'user_group', 'channel', 'custom_emoji', 'attachment', 'message'];
const fromUnix = (seconds: number | undefined) => (seconds === undefined ? undefined : new Date(seconds * 1000));

export interface ImportOptions {
  /** Drop an organization with the same string_id first (its stored files too). */
  replace?: boolean;
  /**
   * Where the attachments' bytes go: `content_base64` when the file carries it, else a placeholder
   * of `size` zero bytes. Without a storage only the rows are written (test worlds).
   */
  storage?: FileStorage;
  /** Told as each stage starts and advances (a progress display). */
  onProgress?: ImportProgress;
}

export async function importOrganization(
  prisma: DatabaseClient,
  file: OrganizationFile,
  options: ImportOptions = {},
): Promise<ImportedOrganization> {
  const written: string[] = [];
  const replaced: string[] = [];
  try {
    const seal = await apiKeySealer(prisma);
    const imported = await prisma.$transaction((tx) => writeOrganization(tx, file, options, seal, written, replaced), {
      timeout: IMPORT_TRANSACTION_MS,
      maxWait: 30_000,
    });
    // Fresh statistics at once, rather than when autovacuum comes by: a large import changes the best plans.
    await prisma.$executeRawUnsafe(`ANALYZE ${ANALYZED_TABLES.join(', ')}`);
    await Promise.all(replaced.map((key) => options.storage!.delete(key).catch(() => false)));
    return imported;
  } catch (error) {
    await Promise.all(written.map((key) => options.storage!.delete(key).catch(() => false)));
    throw error;
  }
}

async function writeOrganization(
  tx: Tx,
  file: OrganizationFile,
  options: ImportOptions,
  seal: ApiKeySealer,
  written: string[],
  replaced: string[],
): Promise<ImportedOrganization> {
  const progress = options.onProgress ?? (() => {});
  /** Runs a stage of `total` rows, told as they are written (`advance`), and reported whole at its end. */
  const stage = async <T>(name: ImportStage, total: number, work: (advance: (done: number) => void) => Promise<T>): Promise<T> => {
    progress(name, 0, total);
    const result = await work((done) => progress(name, done, total));
    progress(name, total, total);
    return result;
  };
  if (options.storage) replaced.push(...(await storedFilesOf(tx, file.organization.string_id)));
  await removeExisting(tx, file.organization.string_id, options.replace ?? false);
  const org = await createOrganizationRow(tx, file);
  const groupIds = await createSystemGroups(tx, org.id);
  const { userIds, apiKeys } = await stage('users', file.users.length, () => createUsers(tx, org.id, file, seal));
  const userId = (email: string) => userIds.get(email.toLowerCase())!;
  const setting = (value: GroupSettingValue) => resolveGroupSetting(tx, org.id, value, groupIds, userId);
  await stage('groups', file.user_groups.length, async () => {
    await createNamedGroups(tx, org.id, file, groupIds, userId);
    await applyGroupSettings(tx, org.id, file, groupIds, setting);
  });
  const channelIds = await stage('channels', file.channels.length, () => createChannels(tx, org.id, file, setting, userId));
  await stage('emoji', file.custom_emoji.length, (advance) => createEmoji(tx, org.id, file, userId, advance));
  const { attachmentIds, pathIds } = await stage('attachments', file.attachments.length, (advance) =>
    createAttachments(tx, org.id, file, userId, advance),
  );
  await stage('messages', file.messages.length, (advance) => createMessages(tx, org.id, file, userId, channelIds, attachmentIds, advance));
  const storage = options.storage;
  if (storage) await stage('files', file.attachments.length, (advance) => storeAttachmentBytes(storage, file, pathIds, written, advance));
  await bumpSequences(tx);
  const created = {
    users: file.users.length,
    groups: file.user_groups.length,
    channels: file.channels.length,
    emoji: file.custom_emoji.length,
    files: file.attachments.length,
    storedFiles: options.storage ? file.attachments.length : 0,
    messages: file.messages.length,
    invitations: 0 as const,
  };
  return { id: org.id, stringId: org.stringId, apiKeys, created };
}

async function storedFilesOf(tx: Tx, stringId: string): Promise<string[]> {
  const rows = await tx.attachment.findMany({ where: { organization: { stringId } }, select: { pathId: true } });
  return rows.map((r) => fileKey(r.pathId));
}

/** Files written at once: hundreds of thousands of placeholders must not keep the transaction open for minutes. */
const PARALLEL_WRITES = 16;

/** Each imported attachment's bytes: the content the file carried, or zeros of the stated size. */
async function storeAttachmentBytes(
  storage: FileStorage,
  file: OrganizationFile,
  pathIds: string[],
  written: string[],
  advance: (done: number) => void,
) {
  let next = 0;
  let stored = 0;
  let failed = false;
  const writeNext = async (): Promise<void> => {
    for (let i = next++; i < file.attachments.length && !failed; i = next++) {
      const a = file.attachments[i]!;
      const key = fileKey(pathIds[i]!);
      const type = a.content_type ?? 'application/octet-stream';
      written.push(key);
      if (a.content_base64 !== undefined) await storage.write(key, Readable.from([Buffer.from(a.content_base64, 'base64')]), type);
      else await storage.writePlaceholder(key, a.size, type);
      advance(++stored);
    }
  };
  // Every writer stops before the error is thrown, so the caller's clean-up sees every file written.
  const outcomes = await Promise.allSettled(
    Array.from({ length: PARALLEL_WRITES }, () => writeNext().catch((error) => ((failed = true), Promise.reject(error)))),
  );
  const failure = outcomes.find((outcome) => outcome.status === 'rejected');
  if (failure) throw failure.reason;
}

async function removeExisting(tx: Tx, stringId: string, replace: boolean) {
  const existing = await tx.organization.findUnique({ where: { stringId }, select: { id: true } });
  if (!existing) return;
  if (!replace) throw new DomainError(`An organization with string_id ${stringId} exists already (use --replace to drop it first).`);
  // Channels point at groups with RESTRICT; remove them before the cascade takes the groups.
  await tx.channel.deleteMany({ where: { organizationId: existing.id } });
  await tx.organization.delete({ where: { id: existing.id } });
}

function createOrganizationRow(tx: Tx, file: OrganizationFile) {
  const o = file.organization;
  return tx.organization.create({
    data: {
      id: o.id,
      stringId: o.string_id,
      name: o.name,
      dateCreated: fromUnix(o.date_created),
      deactivated: o.deactivated,
      inviteRequired: o.invite_required,
      emailsRestrictedToDomains: o.emails_restricted_to_domains,
      disallowDisposableEmailAddresses: o.disallow_disposable_email_addresses,
      waitingPeriodThreshold: o.waiting_period_threshold,
      maxInvites: o.max_invites,
      licenseLimit: o.license_limit,
      uploadQuotaGb: o.upload_quota_gb,
      welcomeMessageCustomText: o.welcome_message_custom_text,
      domains: { create: o.domains.map((d) => ({ domain: d.domain, allowSubdomains: d.allow_subdomains })) },
    },
  });
}

async function createSystemGroups(tx: Tx, organizationId: number): Promise<Map<string, number>> {
  const rows = await tx.userGroup.createManyAndReturn({
    data: SYSTEM_GROUP_NAMES.map((name) => ({ organizationId, name, isSystemGroup: true })),
    select: { id: true, name: true },
  });
  return new Map(rows.map((r) => [r.name!, r.id]));
}

async function createUsers(tx: Tx, organizationId: number, file: OrganizationFile, seal: ApiKeySealer) {
  const apiKeys = new Map<string, string>();
  const keyFor = (email: string, given?: string) => {
    const issued = seal(given);
    apiKeys.set(email.toLowerCase(), issued.apiKey);
    return apiKeyColumns(issued);
  };
  const people = file.users.map((u) => ({
    id: u.id,
    organizationId,
    email: u.email,
    emailKey: u.email.toLowerCase(),
    fullName: u.full_name,
    role: u.role,
    isBot: u.is_bot,
    botType: u.bot_type,
    isActive: u.is_active,
    dateJoined: fromUnix(u.date_joined),
    ...keyFor(u.email, u.api_key),
    passwordHash: u.password_hash ?? null,
  }));
  const bots = SYSTEM_BOTS.map((b) => ({
    organizationId,
    email: b.email,
    emailKey: b.email,
    fullName: b.fullName,
    isBot: true,
    botType: 1,
    systemBot: b.systemBot,
    ...apiKeyColumns(seal()),
  }));
  const rows = await tx.user.createManyAndReturn({ data: [...people, ...bots], select: { id: true, emailKey: true, systemBot: true } });
  const userIds = new Map(rows.filter((r) => !r.systemBot).map((r) => [r.emailKey, r.id]));
  return { userIds, apiKeys };
}

async function createNamedGroups(
  tx: Tx,
  organizationId: number,
  file: OrganizationFile,
  groupIds: Map<string, number>,
  userId: (email: string) => number,
) {
  const rows = await tx.userGroup.createManyAndReturn({
    data: file.user_groups.map((g) => ({ id: g.id, organizationId, name: g.name, description: g.description, deactivated: g.deactivated })),
    select: { id: true, name: true },
  });
  for (const row of rows) groupIds.set(row.name!, row.id);
  await tx.userGroupMember.createMany({
    data: file.user_groups.flatMap((g) => g.members.map((m) => ({ groupId: groupIds.get(g.name)!, userId: userId(m) }))),
    skipDuplicates: true,
  });
  await tx.userGroupSubgroup.createMany({
    data: file.user_groups.flatMap((g) => g.subgroups.map((s) => ({ supergroupId: groupIds.get(g.name)!, subgroupId: groupIds.get(s)! }))),
    skipDuplicates: true,
  });
}

/** A named group's id, or a new anonymous group holding the given members and subgroups. */
async function resolveGroupSetting(
  tx: Tx,
  organizationId: number,
  value: GroupSettingValue,
  groupIds: Map<string, number>,
  userId: (email: string) => number,
): Promise<number> {
  if (typeof value === 'string') return groupIds.get(value)!;
  const group = await tx.userGroup.create({
    data: {
      organizationId,
      members: { create: [...new Set(value.direct_members.map(userId))].map((id) => ({ userId: id })) },
      subgroups: { create: [...new Set(value.direct_subgroups)].map((name) => ({ subgroupId: groupIds.get(name)! })) },
    },
  });
  return group.id;
}

async function applyGroupSettings(
  tx: Tx,
  organizationId: number,
  file: OrganizationFile,
  groupIds: Map<string, number>,
  setting: (value: GroupSettingValue) => Promise<number>,
) {
  const o = file.organization;
  await tx.organization.update({
    where: { id: organizationId },
    data: {
      canInviteUsersGroupId: await setting(o.can_invite_users_group),
      canAddSubscribersGroupId: await setting(o.can_add_subscribers_group),
      canManageAllGroupsId: await setting(o.can_manage_all_groups),
      canAddCustomEmojiGroupId: await setting(o.can_add_custom_emoji_group),
    },
  });
  for (const g of file.user_groups) {
    await tx.userGroup.update({
      where: { id: groupIds.get(g.name)! },
      data: { canAddMembersGroupId: await setting(g.can_add_members_group), canManageGroupId: await setting(g.can_manage_group) },
    });
  }
}

async function createChannels(
  tx: Tx,
  organizationId: number,
  file: OrganizationFile,
  setting: (value: GroupSettingValue) => Promise<number>,
  userId: (email: string) => number,
): Promise<Map<string, number>> {
  const data = [];
  for (const c of file.channels) {
    data.push({
      id: c.id,
      organizationId,
      name: c.name,
      description: c.description,
      inviteOnly: c.invite_only,
      isWebPublic: c.is_web_public,
      isArchived: c.is_archived,
      isDefault: c.is_default,
      canAddSubscribersGroupId: await setting(c.can_add_subscribers_group),
      canSubscribeGroupId: await setting(c.can_subscribe_group),
      canAdministerChannelGroupId: await setting(c.can_administer_channel_group),
    });
  }
  const rows = await tx.channel.createManyAndReturn({ data, select: { id: true, name: true } });
  const channelIds = new Map(rows.map((r) => [r.name, r.id]));
  await tx.subscription.createMany({
    data: file.channels.flatMap((c) => c.subscribers.map((s) => ({ channelId: channelIds.get(c.name)!, userId: userId(s) }))),
    skipDuplicates: true,
  });
  return channelIds;
}

/** Rows per bulk insert: large files (hundreds of thousands of rows) stay within bounded memory. */
const SLICE_ROWS = 5_000;

/**
 * Inserts `rows` in slices, one statement each, and returns what each slice returned, in order;
 * `advance` hears how many rows are in after each slice.
 */
async function inSlices<T, R>(
  rows: T[],
  insert: (slice: T[]) => Promise<R[] | { count: number }>,
  advance: (done: number) => void = () => {},
): Promise<R[]> {
  const returned: R[] = [];
  for (let i = 0; i < rows.length; i += SLICE_ROWS) {
    const result = await insert(rows.slice(i, i + SLICE_ROWS));
    if (Array.isArray(result)) returned.push(...result);
    advance(Math.min(i + SLICE_ROWS, rows.length));
  }
  return returned;
}

type Advance = (done: number) => void;

async function createEmoji(tx: Tx, organizationId: number, file: OrganizationFile, userId: (email: string) => number, advance: Advance) {
  await inSlices(
    file.custom_emoji,
    (slice) =>
      tx.customEmoji.createMany({
        data: slice.map((e) => ({
          id: e.id,
          organizationId,
          name: e.name,
          authorId: e.author === null ? null : userId(e.author),
          deactivated: e.deactivated,
          fileName: e.file_name ?? `${e.name}.png`,
        })),
      }),
    advance,
  );
}

async function createAttachments(
  tx: Tx,
  organizationId: number,
  file: OrganizationFile,
  userId: (email: string) => number,
  advance: Advance,
) {
  const data = file.attachments.map((a) => ({
    id: a.id,
    organizationId,
    ownerId: userId(a.owner),
    name: a.name,
    size: BigInt(a.size),
    contentType: a.content_type ?? null,
    createTime: fromUnix(a.create_time),
    pathId: a.path_id ?? newPathId(organizationId, fitName(sanitizeName(a.name))),
  }));
  const rows = await inSlices(data, (slice) => insertAttachments(tx, organizationId, slice), advance);
  // File ids map to database ids (the same when the file gave them).
  return { attachmentIds: new Map(file.attachments.map((a, i) => [a.id ?? -1, rows[i]!.id])), pathIds: data.map((d) => d.pathId) };
}

async function createMessages(
  tx: Tx,
  organizationId: number,
  file: OrganizationFile,
  userId: (email: string) => number,
  channelIds: Map<string, number>,
  attachmentIds: Map<number, number>,
  advance: (done: number) => void,
) {
  const rows = await inSlices(
    file.messages,
    (slice) =>
      tx.message.createManyAndReturn({
        data: slice.map((m) => ({
          id: m.id,
          organizationId,
          senderId: userId(m.sender),
          channelId: m.channel === undefined ? null : channelIds.get(m.channel)!,
          topic: m.topic,
          content: m.content,
          dateSent: fromUnix(m.date_sent),
        })),
        select: { id: true, dateSent: true },
      }),
    advance,
  );
  const messageId = (i: number) => rows[i]!.id;
  await tx.directMessageRecipient.createMany({
    data: file.messages.flatMap((m, i) => [...new Set((m.to ?? []).map(userId))].map((u) => ({ messageId: messageId(i), userId: u }))),
  });
  // Each link carries its message's send time as the message has it (the default when the file gives none).
  const links = file.messages.flatMap((m, i) =>
    [...new Set(m.attachment_ids)].map((a) => ({
      messageId: messageId(i),
      attachmentId: attachmentIds.get(a)!,
      dateSent: rows[i]!.dateSent,
    })),
  );
  await inSlices(links, (slice) => tx.messageAttachment.createMany({ data: slice }));
}

/** Explicit ids leave sequences behind; move each forward past the highest id (never backwards). */
async function bumpSequences(tx: Tx) {
  for (const table of TABLES_WITH_IDS) {
    await tx.$executeRawUnsafe(
      `SELECT setval(pg_get_serial_sequence('"${table}"', 'id'),
         GREATEST((SELECT COALESCE(MAX(id), 1) FROM "${table}"),
                  (SELECT last_value FROM ${table}_id_seq)))`,
    );
  }
}
