import { randomBytes } from 'node:crypto';

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** 24 lower-case base32 characters from 15 random bytes, as the reference's confirmation keys. */
export function generateConfirmationKey(): string {
  const bytes = randomBytes(15);
  let bits = 0;
  let value = 0;
  let key = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      key += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return key;
}
