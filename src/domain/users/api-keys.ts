// API keys: 32 ASCII letters and digits. Requests are looked up by the key's SHA-256; the key itself
// is kept only sealed (AES-256-GCM under the server secret `api-key-seal`), so that
// POST /fetch_api_key can hand an account its current key (signin.md section 1) while a copy of
// the database without the server_secret table reveals no key.
import { createCipheriv, createDecipheriv, hash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import type { AppContext } from '../../app-context.js';
import type { DatabaseClient } from '../../db/database.js';
import type { Actor } from '../auth/actor.js';
import { serverSecret } from '../server-secrets.js';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const API_KEY_PATTERN = /^[A-Za-z0-9]{32}$/;

export function generateApiKey(): string {
  let key = '';
  for (let i = 0; i < 32; i++) key += ALPHABET[randomInt(ALPHABET.length)];
  return key;
}

/** Every authenticated request hashes its key: the one-shot hash is a third of a Hash object's cost. */
export function hashApiKey(apiKey: string): string {
  return hash('sha256', apiKey, 'hex');
}

/** Constant-time comparison of a presented key with a stored hash. */
export function apiKeyMatches(apiKey: string, storedHash: string): boolean {
  const presented = Buffer.from(hashApiKey(apiKey), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}

const SEAL_SECRET = 'api-key-seal';
const SEAL_VERSION = 'v1';
/** Bound into every seal: a sealed value of another kind, under the same secret, never opens as a key. */
const SEAL_CONTEXT = Buffer.from('teamchat api key v1');

/** What a user row stores for a key: its hash for lookup, and the key sealed. */
export interface IssuedApiKey {
  apiKey: string;
  apiKeyHash: string;
  apiKeySealed: string;
}

/** Seals keys without waiting: for writers that issue many, or inside a transaction. */
export type ApiKeySealer = (apiKey?: string) => IssuedApiKey;

export async function apiKeySealer(prisma: DatabaseClient): Promise<ApiKeySealer> {
  const secret = await serverSecret(prisma, SEAL_SECRET);
  return (apiKey = generateApiKey()) => {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', secret, iv);
    cipher.setAAD(SEAL_CONTEXT);
    const sealed = Buffer.concat([iv, cipher.update(apiKey, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return { apiKey, apiKeyHash: hashApiKey(apiKey), apiKeySealed: `${SEAL_VERSION}.${sealed.toString('base64url')}` };
  };
}

/** The columns for `apiKey` (a new random key by default), as every place that gives out a key writes them. */
export async function issueApiKey(prisma: DatabaseClient, apiKey?: string): Promise<IssuedApiKey> {
  return (await apiKeySealer(prisma))(apiKey);
}

/** The key a row holds, or null when it holds none that opens and matches its hash (a key issued before sealing). */
export async function unsealApiKey(
  prisma: DatabaseClient,
  row: { apiKeyHash: string; apiKeySealed: string | null },
): Promise<string | null> {
  const [version, payload] = row.apiKeySealed?.split('.') ?? [];
  if (version !== SEAL_VERSION || !payload) return null;
  const sealed = Buffer.from(payload, 'base64url');
  if (sealed.length < 12 + 16 + 1) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', await serverSecret(prisma, SEAL_SECRET), sealed.subarray(0, 12));
    decipher.setAAD(SEAL_CONTEXT);
    decipher.setAuthTag(sealed.subarray(sealed.length - 16));
    const apiKey = Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()]).toString('utf8');
    return apiKeyMatches(apiKey, row.apiKeyHash) ? apiKey : null;
  } catch {
    return null;
  }
}

/**
 * The account's current key, as fetch_api_key returns it (fetching does not change it). An account
 * whose key predates sealing gets a new key here, once: its old one stops working, and the answer
 * waits until this process has heard that change's notification, as after a regeneration.
 */
export async function currentApiKey(app: Pick<AppContext, 'prisma' | 'authCache'>, actor: Actor): Promise<string> {
  const { prisma, authCache } = app;
  const userId = actor.id;
  for (;;) {
    const row = await prisma.user.findUniqueOrThrow({ where: { id: userId }, select: { apiKeyHash: true, apiKeySealed: true } });
    const apiKey = await unsealApiKey(prisma, row);
    if (apiKey) return apiKey;
    const issued = await issueApiKey(prisma);
    const heard = authCache?.changeHeard(row.apiKeyHash);
    // Of two fetches at once, one replaces the key and the other reads (and returns) it.
    const { count } = await prisma.user.updateMany({ where: { id: userId, apiKeyHash: row.apiKeyHash }, data: apiKeyColumns(issued) });
    if (count === 1) {
      await heard;
      return issued.apiKey;
    }
  }
}

/** Columns of a key for writing into a user row. */
export const apiKeyColumns = ({ apiKeyHash, apiKeySealed }: IssuedApiKey) => ({ apiKeyHash, apiKeySealed });
