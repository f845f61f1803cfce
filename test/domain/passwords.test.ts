// Password hashing, the accepted formats of a Zulip export, the strength rule and the gate that
// bounds how many hashes run at once (signin.md Decision 1 and section 3).
import { parseOptions } from '@node-rs/argon2';
import { describe, expect, test } from 'vitest';
import { DomainError } from '../../src/domain/errors.js';
import { Gate, hashPassword, isImportablePasswordHash, isStrongPassword, verifyPassword } from '../../src/domain/auth/passwords.js';

// Python's hashlib.pbkdf2_hmac('sha256', password, salt, iterations), as Django encodes it.
const DJANGO_PBKDF2 = 'pbkdf2_sha256$10000$Hw6D8sZyb2pS$E8RaacGAtAUE5BW4Y1D+tIc56awidvf1lwQ93sWYvtQ=';
const DJANGO_PBKDF2_UNICODE = 'pbkdf2_sha256$260000$aaaaaaaaaaaa$pnqj+BUJIFdJGYJ9fE8A0GpLqxZlD5LAsNjwZ88MzQo=';
// Django's Argon2PasswordHasher with its defaults (m=102400, t=2, p=8): `argon2` + the PHC string.
const DJANGO_ARGON2 = 'argon2$argon2id$v=19$m=102400,t=2,p=8$dzJ0SGRYSjBjSGRtY25kMQ$MZ5i56jUTz+Z8fBzUOlgkE3C/B1ZchedDqlZ+82mkFU';

describe('hashes', () => {
  test("this server's hash is Argon2id with OWASP's parameters, salted, and verifies only the password", async () => {
    const stored = await hashPassword('lighthouse keeper');
    expect(parseOptions(stored)).toMatchObject({ algorithm: 2, memoryCost: 19456, timeCost: 2, parallelism: 1 });
    expect(await hashPassword('lighthouse keeper')).not.toBe(stored);
    expect(await verifyPassword(stored, 'lighthouse keeper')).toEqual({ valid: true });
    expect(await verifyPassword(stored, 'lighthouse keeper ')).toEqual({ valid: false });
  });

  test.each([
    ['pbkdf2_sha256', DJANGO_PBKDF2, 'correct horse battery'],
    ['pbkdf2_sha256, non-ASCII password', DJANGO_PBKDF2_UNICODE, 'pässwörd-ümlaut'],
    ['argon2id', DJANGO_ARGON2, 'correct horse battery'],
  ])("Django's %s verifies and comes back upgraded to this server's Argon2id", async (_name, stored, password) => {
    expect(isImportablePasswordHash(stored)).toBe(true);
    const verified = await verifyPassword(stored, password);
    expect(verified.valid).toBe(true);
    expect(parseOptions(verified.upgradedHash!)).toMatchObject({ algorithm: 2, memoryCost: 19456, timeCost: 2, parallelism: 1 });
    expect(await verifyPassword(verified.upgradedHash!, password)).toEqual({ valid: true });
    expect(await verifyPassword(stored, `${password}x`)).toEqual({ valid: false });
  });

  test('no hash, or one in no accepted format, never verifies', async () => {
    expect(await verifyPassword(null, '')).toEqual({ valid: false });
    for (const stored of ['', 'plain', 'md5$abc$def', 'bcrypt$$2b$12$abc', '$argon2i$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaA']) {
      expect(await verifyPassword(stored, 'plain')).toEqual({ valid: false });
      expect(isImportablePasswordHash(stored)).toBe(false);
    }
  });

  test("an import's hash beyond the limits on its cost is refused (4 GiB of memory, 50 million iterations)", () => {
    expect(isImportablePasswordHash(DJANGO_ARGON2.replace('m=102400', 'm=4194304'))).toBe(false);
    expect(isImportablePasswordHash(DJANGO_PBKDF2.replace('$10000$', '$50000000$'))).toBe(false);
    // This server's own format is not an import format: only Django's are.
    expect(isImportablePasswordHash(DJANGO_ARGON2.slice('argon2'.length))).toBe(false);
  });
});

describe('strength', () => {
  test.each([
    ['abc', false],
    ['password123', false],
    ['aaaaaaaaaa', false],
    ['x7#Qp', false],
    ['correct horse', true],
    ['Tr0ub4dor&3', true],
    [`${'ab'.repeat(49)}Z!q`, false],
    ['lighthouse-keeper-42', true],
  ])('%j strong: %s', (password, strong) => {
    expect(isStrongPassword(password)).toBe(strong);
  });

  test('100 characters is the most, counted as characters', () => {
    const strong100 = 'Ωmega-lighthouse-keeper-'.repeat(5).slice(0, 100);
    expect([...strong100].length).toBe(100);
    expect(isStrongPassword(strong100)).toBe(true);
    expect(isStrongPassword(`${strong100}x`)).toBe(false);
  });
});

describe('the gate', () => {
  test('runs at most its slots at once, first come first served, and refuses past its queue', async () => {
    const gate = new Gate(2, 2);
    const releases: (() => void)[] = [];
    const started: number[] = [];
    const job = (n: number, weight = 1) =>
      gate.run(() => {
        started.push(n);
        return new Promise<number>((resolve) => releases.push(() => resolve(n)));
      }, weight);
    const first = job(1);
    const second = job(2);
    const heavy = job(3, 6); // Django's 100 MiB: more than both slots, so both
    const fourth = job(4);
    await expect(job(5)).rejects.toSatisfy(
      (error) => error instanceof DomainError && error.status === 429 && error.code === 'RATE_LIMIT_HIT',
    );
    expect(started).toEqual([1, 2]);
    expect(gate.queued).toBe(2);
    releases[0]!();
    await first;
    expect(started).toEqual([1, 2]); // the heavy one waits for both slots; the light one behind it waits its turn
    releases[1]!();
    await second;
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([1, 2, 3]);
    releases[2]!();
    expect(await heavy).toBe(3);
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([1, 2, 3, 4]);
    releases[3]!();
    expect(await fourth).toBe(4);
  });
});
