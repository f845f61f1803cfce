// Creates the demo organization when, and only when, the database holds no organization yet.
import { randomBytes } from 'node:crypto';
import type { DatabaseClient } from '../db/database.js';
import { setPassword } from '../domain/auth/sign-in.js';
import type { FileStorage } from '../storage/storage.js';
import { importOrganization } from '../import/import-organization.js';
import { parseOrganizationFile } from '../import/organization-file.js';
import { ROLE } from '../domain/users/roles.js';
import { DEMO_MEMBER_EMAIL, DEMO_OWNER_EMAIL, demoOrganizationFile } from './demo-organization.js';

export interface Credentials {
  email: string;
  apiKey: string;
  /** Random, shown once in the banner: for signing in (fetch_api_key, the sign-in page). */
  password: string;
}

/** 16 random characters (96 bits): far past the strength rule. */
const randomPassword = () => randomBytes(12).toString('base64url');

export type DemoOutcome =
  | { created: true; stringId: string; name: string; owner: Credentials; member: Credentials }
  | { created: false; organizations: number; example?: { stringId: string; ownerEmail?: string } };

/** With a storage, the demo's files get placeholder bytes of their sizes, so they can be served. */
export async function ensureDemoOrganization(prisma: DatabaseClient, storage?: FileStorage): Promise<DemoOutcome> {
  if ((await prisma.organization.count()) > 0) return notCreated(prisma);
  const parsed = parseOrganizationFile(demoOrganizationFile());
  if (!parsed.ok) throw new Error(`The demo organization file is invalid: ${JSON.stringify(parsed.problems)}`);
  try {
    const imported = await importOrganization(prisma, parsed.value, { storage });
    const credentials = async (email: string): Promise<Credentials> => {
      const password = randomPassword();
      const { id } = await prisma.user.findUniqueOrThrow({
        where: { organizationId_emailKey: { organizationId: imported.id, emailKey: email } },
        select: { id: true },
      });
      await setPassword(prisma, id, password);
      return { email, apiKey: imported.apiKeys.get(email)!, password };
    };
    return {
      created: true,
      stringId: imported.stringId,
      name: parsed.value.organization.name,
      owner: await credentials(DEMO_OWNER_EMAIL),
      member: await credentials(DEMO_MEMBER_EMAIL),
    };
  } catch (error) {
    // Another process sharing this PostgreSQL database created an organization first.
    if ((await prisma.organization.count()) > 0) return notCreated(prisma);
    throw error;
  }
}

/** What the database holds instead, with an owner to name in the reset-api-key hint. */
async function notCreated(prisma: DatabaseClient): Promise<DemoOutcome> {
  const organizations = await prisma.organization.count();
  const first = await prisma.organization.findFirst({
    where: { deactivated: false },
    orderBy: { id: 'asc' },
    select: {
      stringId: true,
      users: { where: { role: ROLE.OWNER, isActive: true, isBot: false }, orderBy: { id: 'asc' }, take: 1, select: { email: true } },
    },
  });
  return { created: false, organizations, example: first ? { stringId: first.stringId, ownerEmail: first.users[0]?.email } : undefined };
}
