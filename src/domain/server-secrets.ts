// Secrets every server process shares (signing keys, the emoji file-name salt): created once in
// the database by whichever process needs one first, then cached in memory.
import { randomBytes } from 'node:crypto';
import type { DatabaseClient } from '../db/database.js';

const cache = new WeakMap<DatabaseClient, Map<string, Promise<Buffer>>>();

export function serverSecret(prisma: DatabaseClient, name: string): Promise<Buffer> {
  let secrets = cache.get(prisma);
  if (!secrets) cache.set(prisma, (secrets = new Map()));
  let secret = secrets.get(name);
  if (!secret) {
    secret = loadOrCreate(prisma, name);
    secret.catch(() => secrets.delete(name));
    secrets.set(name, secret);
  }
  return secret;
}

async function loadOrCreate(prisma: DatabaseClient, name: string): Promise<Buffer> {
  // Of two processes creating it at once, the first insert wins and both read that value.
  await prisma.serverSecret.createMany({ data: [{ name, value: randomBytes(32).toString('base64') }], skipDuplicates: true });
  const { value } = await prisma.serverSecret.findUniqueOrThrow({ where: { name } });
  return Buffer.from(value, 'base64');
}
