// Confirmation keys are drawn from the random source in batches: no key's bytes may be handed out twice.
import { expect, test } from 'vitest';
import { generateConfirmationKey } from '../../src/domain/invitations/confirmation-key.js';

test('keys across many draws are all distinct, each 24 lower-case base32 characters', () => {
  const keys = Array.from({ length: 2_000 }, generateConfirmationKey);
  for (const key of keys) expect(key).toMatch(/^[a-z2-7]{24}$/);
  expect(new Set(keys).size).toBe(keys.length);
  // Bytes handed out again at a shifted offset would repeat a key's tail as another's head.
  const heads = new Set(keys.map((key) => key.slice(0, 8)));
  expect(keys.filter((key) => heads.has(key.slice(-8)))).toEqual([]);
});
