// The demo organization `npm start` creates on an empty database: an organization import file
// (docs/contract/organization-import.md), so it is created the one way every organization is.
import { newPathId } from '../domain/uploads/paths.js';
import type { OrganizationFileInput } from '../import/organization-file.js';
import { ROLE } from '../domain/users/roles.js';

/** The demo is only created on an empty database, so it can take the first organization id. */
const DEMO_ORGANIZATION_ID = 1;
const DOMAIN = 'harborlights.example';
const email = (local: string) => `${local}@${DOMAIN}`;

export const DEMO_STRING_ID = 'demo';
export const DEMO_OWNER_EMAIL = email('iris');
export const DEMO_MEMBER_EMAIL = email('sam');

const people = [
  { local: 'iris', name: 'Iris Okafor', role: ROLE.OWNER },
  { local: 'mateo', name: 'Mateo Rossi', role: ROLE.ADMINISTRATOR },
  { local: 'priya', name: 'Priya Natarajan', role: ROLE.MODERATOR },
  { local: 'sam', name: 'Sam Lindqvist', role: ROLE.MEMBER },
  { local: 'chen', name: 'Chen Wei', role: ROLE.MEMBER },
  { local: 'amara', name: 'Amara Diallo', role: ROLE.MEMBER },
  { local: 'jonas', name: 'Jonas Becker', role: ROLE.MEMBER },
  { local: 'lucia', name: 'Lucía Fernández', role: ROLE.MEMBER },
  { local: 'noor', name: 'Noor Haddad', role: ROLE.GUEST },
];
/** One account of each remaining role, for the start-up banner. */
export const DEMO_OTHER_ACCOUNTS = [
  { email: email('mateo'), role: 'administrator' },
  { email: email('priya'), role: 'moderator' },
  { email: email('noor'), role: 'guest' },
];
const everyone = people.map((p) => email(p.local));
const staff = everyone.filter((e) => e !== email('noor'));

const files = [
  { owner: 'iris', name: 'roadmap-2027.pdf', size: 1_482_113 },
  { owner: 'iris', name: 'board-minutes.docx', size: 88_402 },
  { owner: 'mateo', name: 'onboarding-checklist.md', size: 4_210 },
  { owner: 'priya', name: 'code-of-conduct.pdf', size: 213_877 },
  { owner: 'sam', name: 'lighthouse-logo.svg', size: 18_344 },
  { owner: 'sam', name: 'homepage-mockup.png', size: 2_904_551 },
  { owner: 'sam', name: 'release-notes.txt', size: 3_120 },
  { owner: 'chen', name: 'load-test-results.csv', size: 640_220 },
  { owner: 'amara', name: 'customer-interviews.zip', size: 73_400_320 },
  { owner: 'lucia', name: 'team-offsite.jpg', size: 4_118_906 },
];

export function demoOrganizationFile(now = new Date()): OrganizationFileInput {
  const unix = Math.floor(now.getTime() / 1000);
  const daysAgo = (days: number, minutes = 0) => unix - days * 86_400 + minutes * 60;
  const attachments = files.map((f, i) => ({
    id: i + 1,
    owner: email(f.owner),
    name: f.name,
    size: f.size,
    create_time: daysAgo(6 - (i % 5), i * 7),
    path_id: newPathId(DEMO_ORGANIZATION_ID, f.name),
  }));
  const link = (attachmentId: number) => {
    const a = attachments[attachmentId - 1]!;
    return `[${a.name}](/user_uploads/${a.path_id})`;
  };

  return {
    organization: {
      id: DEMO_ORGANIZATION_ID,
      string_id: DEMO_STRING_ID,
      name: 'Harbor Lights Studio',
      date_created: daysAgo(30),
      domains: [{ domain: DOMAIN, allow_subdomains: false }],
      max_invites: 100,
      welcome_message_custom_text: 'Welcome to Harbor Lights! Say hello in #general and pick up a first task in #design or #engineering.',
      can_invite_users_group: 'role:members',
      can_add_subscribers_group: 'role:members',
      can_manage_all_groups: 'role:administrators',
      can_add_custom_emoji_group: 'role:members',
    },
    users: [
      ...people.map((p) => ({ email: email(p.local), full_name: p.name, role: p.role, date_joined: daysAgo(30) })),
      { email: email('rowan'), full_name: 'Rowan Price', role: ROLE.MEMBER, is_active: false, date_joined: daysAgo(29) },
      { email: email('deploy-bot'), full_name: 'Deploy Bot', role: ROLE.MEMBER, is_bot: true, bot_type: 1, date_joined: daysAgo(20) },
    ],
    channels: [
      { name: 'general', description: 'Everyone, everything', is_default: true, subscribers: everyone },
      { name: 'announcements', description: 'News from the leadership team', is_default: true, subscribers: everyone },
      {
        name: 'engineering',
        description: 'Builds, releases and incidents',
        subscribers: [email('mateo'), email('chen'), email('jonas'), email('sam')],
        can_administer_channel_group: 'engineers',
      },
      {
        name: 'design',
        description: 'Design reviews and mockups',
        subscribers: [email('sam'), email('lucia'), email('amara'), email('noor')],
        can_add_subscribers_group: 'designers',
      },
      { name: 'random', description: 'Water-cooler chat', subscribers: staff },
      {
        name: 'leadership',
        description: 'Private: owners and administrators',
        invite_only: true,
        subscribers: [email('iris'), email('mateo')],
        can_add_subscribers_group: 'role:administrators',
      },
      { name: 'summer-2025', description: 'Last year’s offsite planning', is_archived: true, subscribers: staff },
    ],
    user_groups: [
      {
        name: 'engineers',
        description: 'Everyone who ships code',
        members: [email('chen'), email('jonas')],
        can_add_members_group: 'role:members',
        can_manage_group: 'role:administrators',
      },
      {
        name: 'designers',
        description: 'Product and visual design',
        members: [email('sam'), email('lucia')],
        can_add_members_group: 'designers',
        can_manage_group: 'role:administrators',
      },
      {
        name: 'product',
        description: 'Engineers, designers and their leads',
        members: [email('amara')],
        subgroups: ['engineers', 'designers'],
        can_add_members_group: { direct_members: [email('amara')], direct_subgroups: ['role:administrators'] },
      },
      {
        name: 'support-rota',
        description: 'Who answers customers this week',
        members: [email('priya'), email('sam')],
        can_add_members_group: 'role:moderators',
        can_manage_group: 'role:moderators',
      },
      { name: 'interns-2024', description: 'Alumni of the 2024 internship', deactivated: true },
    ],
    custom_emoji: [
      { name: 'shipit', author: email('chen') },
      { name: 'lighthouse', author: email('iris') },
      { name: 'party_parrot', author: email('sam') },
      { name: 'coffee_time', author: email('lucia') },
      { name: 'old_logo', author: email('iris'), deactivated: true },
      { name: 'legacy_wave', author: null },
    ],
    attachments,
    messages: [
      {
        sender: email('iris'),
        channel: 'announcements',
        topic: 'roadmap',
        content: `The 2027 roadmap is here: ${link(1)}`,
        date_sent: daysAgo(5),
        attachment_ids: [1],
      },
      {
        sender: email('mateo'),
        channel: 'announcements',
        topic: 'roadmap',
        content: 'Questions welcome in #general > roadmap.',
        date_sent: daysAgo(5, 12),
      },
      {
        sender: email('sam'),
        channel: 'general',
        topic: 'roadmap',
        content: `Love it. Re-sharing for the weekend crowd: ${link(1)}`,
        date_sent: daysAgo(4),
        attachment_ids: [1],
      },
      {
        sender: email('mateo'),
        channel: 'general',
        topic: 'welcome',
        content: `New here? Start with ${link(3)} and ${link(4)}.`,
        date_sent: daysAgo(4, 30),
        attachment_ids: [3, 4],
      },
      {
        sender: email('noor'),
        channel: 'general',
        topic: 'welcome',
        content: 'Hi all, Noor here, helping with the homepage for a few weeks.',
        date_sent: daysAgo(4, 45),
      },
      {
        sender: email('sam'),
        channel: 'design',
        topic: 'homepage',
        content: `First mockup: ${link(6)} and the logo ${link(5)} :party_parrot:`,
        date_sent: daysAgo(3),
        attachment_ids: [6, 5],
      },
      {
        sender: email('lucia'),
        channel: 'design',
        topic: 'homepage',
        content: 'The hero image feels heavy; can we try a lighter blue?',
        date_sent: daysAgo(3, 20),
      },
      {
        sender: email('noor'),
        channel: 'design',
        topic: 'homepage',
        content: `Agreed. Logo works well at small sizes: ${link(5)}`,
        date_sent: daysAgo(3, 41),
        attachment_ids: [5],
      },
      {
        sender: email('chen'),
        channel: 'engineering',
        topic: 'load test',
        content: `Results from last night: ${link(8)} p99 stays under 80 ms :shipit:`,
        date_sent: daysAgo(2),
        attachment_ids: [8],
      },
      {
        sender: email('jonas'),
        channel: 'engineering',
        topic: 'load test',
        content: 'Nice. Shall we double the users next time?',
        date_sent: daysAgo(2, 9),
      },
      {
        sender: email('sam'),
        channel: 'engineering',
        topic: 'release 4.2',
        content: `Release notes draft: ${link(7)}`,
        date_sent: daysAgo(1),
        attachment_ids: [7],
      },
      {
        sender: email('amara'),
        channel: 'general',
        topic: 'research',
        content: `Interview recordings and notes: ${link(9)}`,
        date_sent: daysAgo(1, 60),
        attachment_ids: [9],
      },
      {
        sender: email('lucia'),
        channel: 'random',
        topic: 'offsite photos',
        content: `From the offsite :coffee_time: ${link(10)}`,
        date_sent: daysAgo(1, 120),
        attachment_ids: [10],
      },
      {
        sender: email('iris'),
        channel: 'leadership',
        topic: 'board',
        content: `Minutes from Tuesday: ${link(2)}`,
        date_sent: daysAgo(1, 180),
        attachment_ids: [2],
      },
      {
        sender: email('priya'),
        channel: 'general',
        topic: 'support rota',
        content: '@**support-rota** this week: Priya and Sam.',
        date_sent: daysAgo(0, -300),
      },
      {
        sender: email('deploy-bot'),
        channel: 'engineering',
        topic: 'deploys',
        content: 'Deployed release 4.2.0 to production.',
        date_sent: daysAgo(0, -120),
      },
      {
        sender: email('sam'),
        to: [email('iris')],
        content: `Could you review the mockup before Friday? ${link(6)}`,
        date_sent: daysAgo(2, 200),
        attachment_ids: [6],
      },
      { sender: email('iris'), to: [email('sam')], content: 'Looks great, ship it.', date_sent: daysAgo(2, 230) },
      {
        sender: email('mateo'),
        to: [email('priya'), email('chen')],
        content: 'Can you two cover support on Monday?',
        date_sent: daysAgo(0, -60),
      },
    ],
  };
}
