// The organization import file (docs/contract/organization-import.md): its shape with defaults,
// and the cross-references between its parts. Every problem is reported, with its path.
import { z } from 'zod';
import { ROLE_CODES } from '../domain/users/roles.js';
import { API_KEY_PATTERN } from '../domain/users/api-keys.js';
import { isImportablePasswordHash } from '../domain/auth/passwords.js';
import { isValidPathId } from '../domain/uploads/paths.js';

export const SYSTEM_GROUP_NAMES = [
  'role:nobody',
  'role:owners',
  'role:administrators',
  'role:moderators',
  'role:fullmembers',
  'role:members',
  'role:everyone',
] as const;

const unixTime = z.number().int().nonnegative();
const id = z.number().int().min(1).max(2_147_483_647).optional();
const email = z
  .string()
  .trim()
  .min(3)
  .max(254)
  .regex(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, 'is not a valid e-mail address');
const anonymousGroup = z.strictObject({
  direct_members: z.array(email).default([]),
  direct_subgroups: z.array(z.string()).default([]),
});
const groupSetting = z.union([z.string().min(1), anonymousGroup]);
export type GroupSettingValue = z.infer<typeof groupSetting>;

const organization = z.strictObject({
  id,
  string_id: z.string().regex(/^[a-z0-9][a-z0-9-]{0,39}$/, 'must be 1-40 lower-case letters, digits or dashes'),
  name: z.string().trim().min(1).max(200),
  date_created: unixTime.optional(),
  deactivated: z.boolean().default(false),
  invite_required: z.boolean().default(true),
  emails_restricted_to_domains: z.boolean().default(false),
  domains: z.array(z.strictObject({ domain: z.string().min(1).toLowerCase(), allow_subdomains: z.boolean().default(false) })).default([]),
  disallow_disposable_email_addresses: z.boolean().default(true),
  waiting_period_threshold: z.number().int().min(0).max(100_000).default(0),
  max_invites: z.number().int().min(0).nullable().default(null),
  license_limit: z.number().int().min(0).nullable().default(null),
  upload_quota_gb: z.number().int().min(0).max(1_000_000).nullable().default(null),
  welcome_message_custom_text: z.string().max(8000).default(''),
  can_invite_users_group: groupSetting.default('role:members'),
  can_add_subscribers_group: groupSetting.default('role:members'),
  can_manage_all_groups: groupSetting.default('role:owners'),
  can_add_custom_emoji_group: groupSetting.default('role:members'),
});

const user = z
  .strictObject({
    id,
    email,
    full_name: z.string().trim().min(1).max(100),
    role: z
      .number()
      .int()
      .refine((r) => (ROLE_CODES as readonly number[]).includes(r), 'must be 100, 200, 300, 400 or 600')
      .default(400),
    api_key: z.string().regex(API_KEY_PATTERN, 'must be exactly 32 ASCII letters and digits').optional(),
    is_bot: z.boolean().default(false),
    bot_type: z
      .union([z.literal(1), z.literal(2), z.literal(3), z.literal(4)])
      .nullable()
      .default(null),
    is_active: z.boolean().default(true),
    date_joined: unixTime.optional(),
    /** As a Zulip export carries it: Django's `argon2$argon2id$...` or `pbkdf2_sha256$...` (signin.md Decision 1). */
    password_hash: z.string().max(1000).optional(),
  })
  .superRefine((u, context) => {
    if (u.password_hash === undefined) return;
    const problem = u.is_bot
      ? `${u.email} is a bot: bots have no password`
      : isImportablePasswordHash(u.password_hash)
        ? null
        : `${u.email}'s password hash is not Django's argon2$argon2id$... or pbkdf2_sha256$<iterations>$<salt>$<hash> (or its cost is beyond the limits)`;
    if (problem) context.addIssue({ code: 'custom', path: ['password_hash'], message: problem });
  });

const channel = z.strictObject({
  id,
  name: z.string().trim().min(1).max(60),
  description: z.string().max(1024).default(''),
  invite_only: z.boolean().default(false),
  is_web_public: z.boolean().default(false),
  is_archived: z.boolean().default(false),
  is_default: z.boolean().default(false),
  subscribers: z.array(email).default([]),
  can_add_subscribers_group: groupSetting.default('role:nobody'),
  can_subscribe_group: groupSetting.default('role:nobody'),
  can_administer_channel_group: groupSetting.default('role:nobody'),
});

const userGroup = z.strictObject({
  id,
  name: z
    .string()
    .trim()
    .min(1)
    .max(100)
    .refine((n) => !n.startsWith('role:'), 'must not start with role:'),
  description: z.string().max(1024).default(''),
  members: z.array(email).default([]),
  subgroups: z.array(z.string()).default([]),
  deactivated: z.boolean().default(false),
  can_add_members_group: groupSetting.default('role:nobody'),
  can_manage_group: groupSetting.default('role:nobody'),
});

const customEmoji = z.strictObject({
  id,
  name: z.string().regex(/^[0-9a-z\-_]+$/, 'must be lower-case letters, digits, - and _'),
  author: email.nullable().default(null),
  deactivated: z.boolean().default(false),
  file_name: z.string().min(1).optional(),
});

const attachment = z.strictObject({
  id,
  owner: email,
  name: z.string().min(1).max(255),
  size: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  create_time: unixTime.optional(),
  path_id: z.string().min(1).max(1000).refine(isValidPathId, 'must be <organization id>/... with no empty, . or .. segment').optional(),
  content_type: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[\x21-\x7e][\x20-\x7e]*$/, 'must be a printable ASCII content type')
    .optional(),
  content_base64: z.base64().optional(),
});

const message = z.strictObject({
  id,
  sender: email,
  channel: z.string().optional(),
  topic: z.string().max(60).default(''),
  to: z.array(email).min(1).optional(),
  content: z.string().min(1).max(10_000),
  date_sent: unixTime.optional(),
  attachment_ids: z.array(z.number().int()).default([]),
});

export const organizationFileSchema = z.strictObject({
  organization,
  users: z.array(user).default([]),
  channels: z.array(channel).default([]),
  user_groups: z.array(userGroup).default([]),
  custom_emoji: z.array(customEmoji).default([]),
  attachments: z.array(attachment).default([]),
  messages: z.array(message).default([]),
});

export type OrganizationFile = z.output<typeof organizationFileSchema>;
/** What a file may say before defaults are applied. */
export type OrganizationFileInput = z.input<typeof organizationFileSchema>;

export interface Problem {
  path: string;
  message: string;
}

export type ParseResult = { ok: true; value: OrganizationFile } | { ok: false; problems: Problem[] };

export function parseOrganizationFile(input: unknown): ParseResult {
  const parsed = organizationFileSchema.safeParse(input);
  if (parsed.success) {
    const problems = crossReferenceProblems(parsed.data, knownNames(parsed.data));
    return problems.length ? { ok: false, problems } : { ok: true, value: parsed.data };
  }
  const fieldProblems = parsed.error.issues.map((i) => ({ path: formatPath(i.path), message: i.message }));
  return { ok: false, problems: [...fieldProblems, ...referenceProblemsOfValidRows(input, parsed.error.issues)] };
}

type Section = Exclude<keyof OrganizationFile, 'organization'>;
const SECTIONS: Section[] = ['users', 'channels', 'user_groups', 'custom_emoji', 'attachments', 'messages'];
const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Every problem at once: when some rows are invalid, the references of the valid ones are still
 * checked, against every name the file declares (an invalid user row still declares its e-mail).
 */
function referenceProblemsOfValidRows(input: unknown, issues: { path: PropertyKey[] }[]): Problem[] {
  if (!isRecord(input)) return [];
  const bad = new Set(issues.map((i) => `${String(i.path[0])}[${String(i.path[1])}]`));
  const cleaned: Record<string, unknown> = { ...input };
  const originalIndex = new Map<Section, number[]>();
  for (const section of SECTIONS) {
    const rows = Array.isArray(input[section]) ? (input[section] as unknown[]) : [];
    const kept = rows.map((_, i) => i).filter((i) => !bad.has(`${section}[${i}]`));
    originalIndex.set(section, kept);
    cleaned[section] = kept.map((i) => rows[i]);
  }
  if (issues.some((i) => i.path[0] === 'organization')) cleaned.organization = { string_id: 'placeholder', name: 'placeholder' };
  const valid = organizationFileSchema.safeParse(cleaned);
  if (!valid.success) return [];
  const at = (section: Section, i: number) => `${section}[${originalIndex.get(section)![i]}]`;
  return crossReferenceProblems(valid.data, knownNames(input as OrganizationFileInput), at);
}

interface KnownNames {
  emails: Set<string>;
  groups: Set<string>;
  channels: Set<string>;
  attachmentIds: Set<number>;
}

/** What the file declares, read leniently (rows may be invalid otherwise). */
function knownNames(file: OrganizationFileInput): KnownNames {
  const values = <T>(rows: unknown, key: string, type: 'string' | 'number') =>
    (Array.isArray(rows) ? rows : [])
      .filter(isRecord)
      .map((row) => row[key])
      .filter((v): v is T => typeof v === type);
  return {
    emails: new Set(values<string>(file.users, 'email', 'string').map((e) => e.trim().toLowerCase())),
    groups: new Set(values<string>(file.user_groups, 'name', 'string').map((n) => n.trim())),
    channels: new Set(values<string>(file.channels, 'name', 'string').map((n) => n.trim())),
    attachmentIds: new Set(values<number>(file.attachments, 'id', 'number')),
  };
}

function formatPath(path: PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i ? '.' : ''}${String(p)}`)).join('') || '(file)';
}

/** Calls `report` with the index of every row whose key repeats an earlier row's (rows without a key are skipped). */
function reportDuplicates<T>(rows: T[], keyOf: (row: T) => string | undefined, report: (index: number) => void) {
  const seen = new Set<string>();
  rows.forEach((row, i) => {
    const key = keyOf(row);
    if (key === undefined) return;
    if (seen.has(key)) report(i);
    seen.add(key);
  });
}

function crossReferenceProblems(
  file: OrganizationFile,
  { emails, groups, channels, attachmentIds }: KnownNames,
  at: (section: Section, index: number) => string = (section, i) => `${section}[${i}]`,
): Problem[] {
  const problems: Problem[] = [];
  const add = (path: string, message: string) => problems.push({ path, message });

  const checkUser = (path: string, value: string) =>
    emails.has(value.toLowerCase()) || add(path, `no user with e-mail ${value} in the file`);
  const checkGroupName = (path: string, value: string) =>
    (SYSTEM_GROUP_NAMES as readonly string[]).includes(value) || groups.has(value) || add(path, `no user group named ${value}`);
  const checkSetting = (path: string, value: GroupSettingValue) => {
    if (typeof value === 'string') return checkGroupName(path, value);
    value.direct_members.forEach((m, i) => checkUser(`${path}.direct_members[${i}]`, m));
    value.direct_subgroups.forEach((g, i) => checkGroupName(`${path}.direct_subgroups[${i}]`, g));
  };

  reportDuplicates(
    file.users,
    (u) => u.email.toLowerCase(),
    (i) => add(`${at('users', i)}.email`, 'duplicate e-mail address (ignoring case)'),
  );
  reportDuplicates(
    file.channels,
    (c) => c.name,
    (i) => add(`${at('channels', i)}.name`, 'duplicate channel name'),
  );
  reportDuplicates(
    file.user_groups,
    (g) => g.name,
    (i) => add(`${at('user_groups', i)}.name`, 'duplicate user group name'),
  );
  reportDuplicates(
    file.custom_emoji,
    (e) => (e.deactivated ? undefined : e.name),
    (i) => add(`${at('custom_emoji', i)}.name`, 'duplicate name among active emoji'),
  );
  for (const section of SECTIONS) {
    const rows: { id?: number }[] = file[section];
    reportDuplicates(
      rows,
      (r) => (r.id === undefined ? undefined : String(r.id)),
      (i) => add(`${at(section, i)}.id`, 'duplicate id'),
    );
  }

  const org = file.organization;
  for (const key of [
    'can_invite_users_group',
    'can_add_subscribers_group',
    'can_manage_all_groups',
    'can_add_custom_emoji_group',
  ] as const) {
    checkSetting(`organization.${key}`, org[key]);
  }
  file.users.forEach((u, i) => {
    if (!u.is_bot && u.bot_type !== null) add(`${at('users', i)}.bot_type`, 'only bots have a bot_type');
  });
  file.channels.forEach((c, i) => {
    c.subscribers.forEach((s, j) => checkUser(`${at('channels', i)}.subscribers[${j}]`, s));
    for (const key of ['can_add_subscribers_group', 'can_subscribe_group', 'can_administer_channel_group'] as const) {
      checkSetting(`${at('channels', i)}.${key}`, c[key]);
    }
  });
  file.user_groups.forEach((g, i) => {
    g.members.forEach((m, j) => checkUser(`${at('user_groups', i)}.members[${j}]`, m));
    g.subgroups.forEach((s, j) => groups.has(s) || add(`${at('user_groups', i)}.subgroups[${j}]`, `no user group named ${s}`));
    checkSetting(`${at('user_groups', i)}.can_add_members_group`, g.can_add_members_group);
    checkSetting(`${at('user_groups', i)}.can_manage_group`, g.can_manage_group);
  });
  for (const name of subgroupCycle(file)) add(`user_groups`, `subgroups form a cycle through ${name}`);
  file.custom_emoji.forEach((e, i) => e.author !== null && checkUser(`${at('custom_emoji', i)}.author`, e.author));
  file.attachments.forEach((a, i) => {
    checkUser(`${at('attachments', i)}.owner`, a.owner);
    const carried = a.content_base64 === undefined ? undefined : Buffer.from(a.content_base64, 'base64').length;
    if (carried !== undefined && carried !== a.size)
      add(`${at('attachments', i)}.size`, `is ${a.size} but content_base64 holds ${carried} bytes`);
  });
  file.messages.forEach((m, i) => {
    checkUser(`${at('messages', i)}.sender`, m.sender);
    if ((m.channel === undefined) === (m.to === undefined)) add(`${at('messages', i)}`, 'needs exactly one of channel and to');
    if (m.channel !== undefined && !channels.has(m.channel)) add(`${at('messages', i)}.channel`, `no channel named ${m.channel}`);
    m.to?.forEach((t, j) => checkUser(`${at('messages', i)}.to[${j}]`, t));
    m.attachment_ids.forEach(
      (a, j) => attachmentIds.has(a) || add(`${at('messages', i)}.attachment_ids[${j}]`, `no attachment with id ${a} in the file`),
    );
  });
  return problems;
}

/** Names of groups that reach themselves through subgroups (at most one report per cycle start). */
function subgroupCycle(file: OrganizationFile): string[] {
  const edges = new Map(file.user_groups.map((g) => [g.name, g.subgroups]));
  const cyclic: string[] = [];
  for (const start of edges.keys()) {
    const stack = [...(edges.get(start) ?? [])];
    const seen = new Set<string>();
    while (stack.length) {
      const next = stack.pop()!;
      if (next === start) {
        cyclic.push(start);
        break;
      }
      if (seen.has(next)) continue;
      seen.add(next);
      stack.push(...(edges.get(next) ?? []));
    }
  }
  return cyclic;
}
