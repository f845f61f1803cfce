// Passwords (signin.md Decision 1 and section 3): Argon2id with OWASP's parameters, verified off the
// event loop (libuv's thread pool) a bounded number at a time, so a flood of sign-ins costs a queue
// of waiting requests, never the event loop or unbounded memory. Hashes imported from a Zulip
// export (Django's `argon2$argon2id$...` and `pbkdf2_sha256$...`) verify too, and come back upgraded.
import { createRequire } from 'node:module';
import { pbkdf2, randomBytes, timingSafeEqual } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { promisify } from 'node:util';
import { hash, parseOptions, verify, type Options } from '@node-rs/argon2';
import { DomainError } from '../errors.js';

/** OWASP's first Argon2id choice (m = 19 MiB, t = 2, p = 1). `algorithm` 2 is Argon2id (a const enum). */
const ARGON2ID: Options = { algorithm: 2 as Options['algorithm'], memoryCost: 19_456, timeCost: 2, parallelism: 1 };

export const PASSWORD_MIN_LENGTH = 6;
export const PASSWORD_MAX_LENGTH = 100;
export const PASSWORD_MIN_GUESSES = 10_000;

/** The registration and reset forms' words for a password under the strength rule (signin.md section 3). */
export const WEAK_PASSWORD = 'The password is too weak.';

/** Django's words for a form field holding U+0000 (signin.md Decision 7), on every door. */
export const NUL_IN_PASSWORD = 'Null characters are not allowed.';

/**
 * Refuses a password containing U+0000, wherever one is set or checked: before anything is counted,
 * hashed or stored, so the refusal (400 BAD_REQUEST) changes nothing.
 */
export function refuseNulInPasswords(...passwords: string[]): void {
  if (passwords.some((password) => password.includes('\0'))) throw new DomainError(NUL_IN_PASSWORD);
}

/**
 * What a stored hash may cost to verify: anything beyond is refused at import and never verified
 * (an imported `m=4194304` would take 4 GiB per sign-in). Django's defaults are m=102400 (100 MiB),
 * t=2, p=8 and 1,000,000 PBKDF2 iterations (Django 5.2).
 */
const MAX_ARGON2_MEMORY_KIB = 262_144;
const MAX_ARGON2_TIME = 10;
const MAX_ARGON2_PARALLELISM = 16;
const MAX_PBKDF2_ITERATIONS = 5_000_000;

/** Django writes `argon2` followed by the PHC string: `argon2$argon2id$v=19$m=...`. */
const DJANGO_ARGON2 = 'argon2$argon2id$';
const DJANGO_PBKDF2 = /^pbkdf2_sha256\$(\d{1,9})\$([^$]{1,200})\$([A-Za-z0-9+/]{43}=)$/;

type HashFormat =
  | { kind: 'argon2id'; phc: string; memoryKib: number }
  | { kind: 'pbkdf2'; iterations: number; salt: string; digest: Buffer };

/** The stored hash's format and parameters, or null when it is not one this server verifies. */
function readHash(stored: string): HashFormat | null {
  const pbkdf2Match = DJANGO_PBKDF2.exec(stored);
  if (pbkdf2Match) {
    const iterations = Number(pbkdf2Match[1]);
    if (iterations < 1 || iterations > MAX_PBKDF2_ITERATIONS) return null;
    return { kind: 'pbkdf2', iterations, salt: pbkdf2Match[2]!, digest: Buffer.from(pbkdf2Match[3]!, 'base64') };
  }
  const phc = stored.startsWith(DJANGO_ARGON2) ? stored.slice('argon2'.length) : stored;
  if (!phc.startsWith('$argon2id$')) return null;
  try {
    const options = parseOptions(phc);
    if (options.memoryCost > MAX_ARGON2_MEMORY_KIB || options.timeCost > MAX_ARGON2_TIME || options.parallelism > MAX_ARGON2_PARALLELISM)
      return null;
    return { kind: 'argon2id', phc, memoryKib: options.memoryCost };
  } catch {
    return null;
  }
}

/** Whether an import file's `password_hash` is one of the accepted Django formats within the limits above. */
export function isImportablePasswordHash(stored: string): boolean {
  return (stored.startsWith(DJANGO_ARGON2) || stored.startsWith('pbkdf2_sha256$')) && readHash(stored) !== null;
}

/** Whether the hash is this server's own current format (anything else is replaced at the next sign-in). */
function isCurrent(stored: string): boolean {
  if (!stored.startsWith('$argon2id$')) return false;
  const options = parseOptions(stored);
  return (
    options.memoryCost === ARGON2ID.memoryCost && options.timeCost === ARGON2ID.timeCost && options.parallelism === ARGON2ID.parallelism
  );
}

/** A hash or a sign-in could not even wait its turn: the reference's 429 (a sign-in form shows it as too many attempts). */
export const passwordCheckBusy = () =>
  new DomainError('API usage exceeded rate limit', {
    code: 'RATE_LIMIT_HIT',
    status: 429,
    data: { 'retry-after': 1 },
    headers: { 'Retry-After': '1' },
  });

/**
 * A weighted semaphore with a bounded queue: waiters beyond `maxWaiting` are refused at once (429)
 * rather than queued without end. Weights let the password gate below count memory: one OWASP hash
 * takes one slot, a larger Django hash several (up to all of them), so what verifications hold at
 * once stays under `slots` x 19 MiB.
 */
export class Gate {
  private free: number;
  private readonly waiting: { weight: number; start: () => void }[] = [];

  constructor(
    private readonly slots: number,
    private readonly maxWaiting: number,
  ) {
    this.free = slots;
  }

  async run<T>(work: () => Promise<T>, requestedWeight = 1): Promise<T> {
    const weight = Math.min(this.slots, Math.max(1, requestedWeight));
    await this.acquire(weight);
    try {
      return await work();
    } finally {
      this.free += weight;
      this.startWaiting();
    }
  }

  /** Requests waiting for a slot (for tests and metrics). */
  get queued(): number {
    return this.waiting.length;
  }

  private acquire(weight: number): Promise<void> {
    if (this.waiting.length === 0 && this.free >= weight) {
      this.free -= weight;
      return Promise.resolve();
    }
    if (this.waiting.length >= this.maxWaiting) return Promise.reject(passwordCheckBusy());
    return new Promise((resolve) => this.waiting.push({ weight, start: resolve }));
  }

  /** First come, first served: a heavy waiter at the head is not overtaken by lighter ones. */
  private startWaiting(): void {
    while (this.waiting.length > 0 && this.free >= this.waiting[0]!.weight) {
      const next = this.waiting.shift()!;
      this.free -= next.weight;
      next.start();
    }
  }
}

/**
 * Hashes at once: the cores, but at most one fewer than libuv's thread pool (UV_THREADPOOL_SIZE,
 * default 4), which file reads and writes share. 32 waiting per slot at most; sign-ins reach this
 * gate only through their own admission (src/domain/auth/sign-in.ts), which keeps them under it.
 */
const threadPool = Number(process.env.UV_THREADPOOL_SIZE) || 4;
export const HASH_SLOTS = Math.max(1, Math.min(availableParallelism(), threadPool - 1));
export const passwordGate = new Gate(HASH_SLOTS, 32 * HASH_SLOTS);

/** A hash's share of the gate: its memory in OWASP hashes. */
const weightOf = (memoryKib: number) => Math.ceil(memoryKib / ARGON2ID.memoryCost!);

export function hashPassword(password: string): Promise<string> {
  refuseNulInPasswords(password);
  return passwordGate.run(() => hash(password, ARGON2ID));
}

const pbkdf2Async = promisify(pbkdf2);

let verificationsStarted = 0;

/** Hashes this process has begun to verify: every sign-in verifies exactly one, an account or not (tests count them). */
export const passwordVerifications = () => verificationsStarted;

async function verifyFormat(format: HashFormat, password: string): Promise<boolean> {
  verificationsStarted++;
  if (format.kind === 'argon2id') return passwordGate.run(() => verify(format.phc, password), weightOf(format.memoryKib));
  const digest = await passwordGate.run(() => pbkdf2Async(password, format.salt, format.iterations, 32, 'sha256'));
  return timingSafeEqual(digest, format.digest);
}

let dummyHash: Promise<string> | undefined;

/** A hash of a random password nobody knows: verified when there is no real one, so that takes the same time. */
function dummy(): Promise<string> {
  dummyHash ??= hashPassword(randomBytes(24).toString('base64'));
  dummyHash.catch(() => (dummyHash = undefined));
  return dummyHash;
}

export interface Verification {
  valid: boolean;
  /** The password hashed anew in this server's current format, when the stored hash is in another. */
  upgradedHash?: string;
}

/** Verifies against the stored hash; no hash (or an unusable one) verifies a dummy hash and fails. */
export async function verifyPassword(stored: string | null, password: string): Promise<Verification> {
  refuseNulInPasswords(password);
  const format = stored === null ? null : readHash(stored);
  if (!format) {
    await verifyFormat(readHash(await dummy())!, password);
    return { valid: false };
  }
  if (!(await verifyFormat(format, password))) return { valid: false };
  return isCurrent(stored!) ? { valid: true } : { valid: true, upgradedHash: await hashPassword(password) };
}

type Zxcvbn = { check(password: string): { guesses: number } };
let zxcvbn: Zxcvbn | undefined;

/** Built on first use: the dictionaries take a moment and some memory that most processes never need. */
function strengthEstimator(): Zxcvbn {
  if (!zxcvbn) {
    const require = createRequire(import.meta.url);
    const { ZxcvbnFactory } = require('@zxcvbn-ts/core') as { ZxcvbnFactory: new (options: object) => Zxcvbn };
    const { dictionary, adjacencyGraphs } = require('@zxcvbn-ts/language-common') as { dictionary: object; adjacencyGraphs: object };
    zxcvbn = new ZxcvbnFactory({ dictionary, graphs: adjacencyGraphs });
  }
  return zxcvbn;
}

/** The reference's rule: 6 to 100 characters and at least 10,000 guesses by zxcvbn's estimate. */
export function isStrongPassword(password: string): boolean {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH || length > PASSWORD_MAX_LENGTH) return false;
  return strengthEstimator().check(password).guesses >= PASSWORD_MIN_GUESSES;
}
