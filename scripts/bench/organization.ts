// The benchmark's organizations, written as import files (docs/contract/organization-import.md) and
// loaded through the importer: 50 users, one administrator (the benchmark user) who owns 500
// attachments each linked from 3 messages, the organization's other attachments owned by others,
// and many custom emoji.
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { generateConfirmationKey } from '../../src/domain/invitations/confirmation-key.js';
import type { OrganizationFileInput } from '../../src/import/organization-file.js';

export interface Volume {
  users: number;
  /** Attachments of the whole organization, the benchmark user's included. */
  attachments: number;
  /** How many of them the benchmark user owns; each is linked from `linksPerOwned` messages. */
  ownedByBenchUser: number;
  linksPerOwned: number;
  emoji: number;
}

/** The data set, and the variants that show whether the organization's size costs per request. */
export const FULL = {
  main: { users: 50, attachments: 20_500, ownedByBenchUser: 500, linksPerOwned: 3, emoji: 40_000 },
  small: { users: 50, attachments: 2_000, ownedByBenchUser: 500, linksPerOwned: 3, emoji: 0 },
  large: { users: 50, attachments: 200_000, ownedByBenchUser: 500, linksPerOwned: 3, emoji: 0 },
  // Members who invite in turn under the default rate limits.
  crowd: { users: 500, attachments: 0, ownedByBenchUser: 0, linksPerOwned: 0, emoji: 0 },
  // A user with 50 files beside one who is given 60,000 (scripts/bench/pages.ts); no messages, so
  // that the files of both cost alike.
  pages: { users: 2, attachments: 50, ownedByBenchUser: 50, linksPerOwned: 0, emoji: 0 },
} satisfies Record<string, Volume>;

// Emoji: at least as many as one round deactivates (a name asked twice in a round answers 404, a
// mismatch): up to 20,000 in a 6 s round and 8,000 in a 2 s quick one on a quiet machine.
export const QUICK = {
  main: { users: 20, attachments: 1_000, ownedByBenchUser: 50, linksPerOwned: 3, emoji: 12_000 },
  small: { users: 20, attachments: 200, ownedByBenchUser: 50, linksPerOwned: 3, emoji: 0 },
  large: { users: 20, attachments: 5_000, ownedByBenchUser: 50, linksPerOwned: 3, emoji: 0 },
  crowd: { users: 100, attachments: 0, ownedByBenchUser: 0, linksPerOwned: 0, emoji: 0 },
  pages: FULL.pages,
} satisfies Record<string, Volume>;

export type DataSet = keyof typeof FULL;

export const BENCH_DOMAIN = 'bench.example';
export const emojiName = (i: number) => `bench_emoji_${i}`;

export function describeVolume(v: Volume): string {
  return `${v.users} users, ${v.attachments} attachments (${v.ownedByBenchUser} the benchmark user's, each linked from ${v.linksPerOwned} messages), ${v.emoji} custom emoji`;
}

/** The organization's import file; its first user is the benchmark user. */
export function benchOrganization(name: string, volume: Volume, now = Date.now()): { file: OrganizationFileInput } {
  const tag = `${name}-${randomBytes(3).toString('hex')}`;
  const monthAgo = Math.floor(now / 1000) - 30 * 86_400;
  const email = (i: number) => `user${i}-${tag}@${BENCH_DOMAIN}`;
  const users = Array.from({ length: volume.users }, (_, i) => ({
    email: email(i),
    full_name: `Bench User ${i}`,
    role: i === 0 ? 200 : i % 10 === 1 ? 300 : 400,
    date_joined: monthAgo,
  }));
  const others = volume.users - 1;
  const attachments = Array.from({ length: volume.attachments }, (_, a) => ({
    owner: a < volume.ownedByBenchUser ? email(0) : email(1 + (a % others)),
    name: `file-${a}.pdf`,
    size: 1_000 + a * 7_919,
    create_time: monthAgo + a,
  }));
  // Attachment ids are assigned by the importer; messages refer to the file's ids, so give them ids
  // from a random range that stays clear of other organizations in the same database.
  const firstId = 1_000_000 + Math.floor(Math.random() * 1_000_000_000);
  const withIds = attachments.map((a, i) => ({ ...a, id: firstId + i }));
  const messages = Array.from({ length: volume.ownedByBenchUser * volume.linksPerOwned }, (_, m) => ({
    sender: email(m % volume.users),
    channel: 'general',
    topic: `topic ${m % 20}`,
    content: `Message ${m} with an attachment`,
    date_sent: monthAgo + 3_600 + m * 30,
    attachment_ids: [firstId + (m % volume.ownedByBenchUser)],
  }));
  return {
    file: {
      organization: { string_id: tag, name: `Benchmark ${name}`, max_invites: null, license_limit: null },
      users,
      channels: [{ name: 'general', is_default: true, subscribers: users.map((u) => u.email) }],
      custom_emoji: Array.from({ length: volume.emoji }, (_, e) => ({ name: emojiName(e), author: email(e % volume.users) })),
      attachments: withIds,
      messages,
    },
  };
}

/** The GraphQL requests of the benchmark (the floor knows only these). */
export const ATTACHMENTS_QUERY =
  '{ attachments { uploadSpaceUsed attachments { id name pathId url size createTime messages { id dateSent } } } }';
export const ATTACHMENT_PAGE_SIZE = 50;
export const ATTACHMENT_PAGE_QUERY = `{ me { attachmentPage(first: ${ATTACHMENT_PAGE_SIZE}) { nodes { id name pathId url size createTime messages { id dateSent } } pageInfo { endCursor hasNextPage } } } }`;
/** Pending invitations of the benchmark's organization while the invitation list is measured. */
export const LISTED_INVITATIONS = 100;
export const INVITATIONS_QUERY = '{ invitations { id email invitedAs invitedAt expiresAt status referrer { id fullName email } } }';

type Database = pg.Pool | pg.Client;

/** The ids of an imported organization and of its first user (the benchmark user). */
export async function importedIds(db: Database, file: OrganizationFileInput): Promise<{ id: number; administratorId: number }> {
  const { rows } = await db.query(
    `SELECT o.id, u.id AS "administratorId" FROM organization o JOIN user_account u ON u."organizationId" = o.id AND u."emailKey" = lower($2) WHERE o."stringId" = $1`,
    [file.organization.string_id, String(file.users![0]!.email)],
  );
  return rows[0];
}

/** LISTED_INVITATIONS pending invitations by the administrator, a second apart, the newest sent now. */
export async function insertListedInvitations(db: Database, organizationId: number, administratorId: number): Promise<void> {
  const listed = Array.from({ length: LISTED_INVITATIONS }, (_, k) => k);
  await db.query(
    `INSERT INTO invitation ("organizationId", email, "referrerId", "invitedAs", "invitedAt", "expiresAt", "confirmationKey")
     SELECT $1, 'listed-' || k || '@invitees.example', $2, 400, $3::timestamp(3) - make_interval(secs => k), $3::timestamp(3) + interval '10 days', key
       FROM unnest($4::int[], $5::text[]) AS t(k, key)`,
    [organizationId, administratorId, new Date().toISOString(), listed, listed.map(() => generateConfirmationKey())],
  );
}
