// The benchmark's organization, as an import file: many users, channels, attachments and messages,
// one administrator (the benchmark user) who owns a share of the attachments.
import { randomBytes } from 'node:crypto';
import type { OrganizationFileInput } from '../../src/import/organization-file.js';

export interface Volume {
  users: number;
  channels: number;
  attachments: number;
  /** How many of the attachments the benchmark user owns. */
  ownedByBenchUser: number;
  messages: number;
  /** Active custom emoji, at least as many as the deactivation requests. */
  emoji: number;
}

export const FULL: Volume = { users: 200, channels: 50, attachments: 2000, ownedByBenchUser: 500, messages: 5000, emoji: 1200 };
export const QUICK: Volume = { users: 30, channels: 8, attachments: 200, ownedByBenchUser: 50, messages: 500, emoji: 120 };

export const BENCH_DOMAIN = 'bench.example';
export const BENCH_USER_EMAIL = `user0@${BENCH_DOMAIN}`;
export const emojiName = (i: number) => `bench_emoji_${i}`;

export function benchOrganization(volume: Volume, now = Date.now()): OrganizationFileInput {
  const stringId = `bench-${randomBytes(4).toString('hex')}`;
  const monthAgo = Math.floor(now / 1000) - 30 * 86_400;
  const email = (i: number) => `user${i}@${BENCH_DOMAIN}`;
  const users = Array.from({ length: volume.users }, (_, i) => ({
    email: email(i),
    full_name: `Bench User ${i}`,
    role: i === 0 ? 200 : i % 50 === 1 ? 300 : i % 40 === 2 ? 600 : 400,
    date_joined: monthAgo,
  }));
  const channels = Array.from({ length: volume.channels }, (_, c) => ({
    name: `channel-${c}`,
    is_default: c < 2,
    subscribers: users.filter((_, u) => u % volume.channels === c || u === 0).map((u) => u.email),
  }));
  // Messages name attachments by id, and the importer keeps those ids: a random range stays clear of
  // other organizations in a shared PostgreSQL database.
  const firstAttachmentId = 1_000_000 + Math.floor(Math.random() * 1_000_000_000);
  const attachments = Array.from({ length: volume.attachments }, (_, a) => ({
    id: firstAttachmentId + a,
    owner: a < volume.ownedByBenchUser ? email(0) : email(1 + (a % (volume.users - 1))),
    name: `file-${a}.pdf`,
    size: 1_000 + a * 7_919,
    create_time: monthAgo + a * 60,
  }));
  const messages = Array.from({ length: volume.messages }, (_, m) => ({
    sender: email(m % volume.users),
    channel: `channel-${m % volume.channels}`,
    topic: `topic ${m % 20}`,
    content: `Message ${m} with an attachment`,
    date_sent: monthAgo + 3_600 + m * 30,
    // Each attachment is referenced by two or three messages.
    attachment_ids: [firstAttachmentId + (m % volume.attachments)],
  }));
  return {
    organization: { string_id: stringId, name: 'Benchmark organization', max_invites: null, license_limit: null },
    users,
    channels,
    user_groups: [{ name: 'everyone-in-bench', members: users.slice(0, 20).map((u) => u.email) }],
    custom_emoji: Array.from({ length: volume.emoji }, (_, e) => ({ name: emojiName(e), author: email(e % volume.users) })),
    attachments,
    messages,
  };
}
