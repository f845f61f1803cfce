// API keys: 32 ASCII letters and digits, shown once; only their SHA-256 is stored.
import { createHash, randomInt, timingSafeEqual } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const API_KEY_PATTERN = /^[A-Za-z0-9]{32}$/;

export function generateApiKey(): string {
  let key = '';
  for (let i = 0; i < 32; i++) key += ALPHABET[randomInt(ALPHABET.length)];
  return key;
}

export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey, 'utf8').digest('hex');
}

/** Constant-time comparison of a presented key with a stored hash. */
export function apiKeyMatches(apiKey: string, storedHash: string): boolean {
  const presented = Buffer.from(hashApiKey(apiKey), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}
