// The per-user API rate limit (the reference's `api_by_user` rules) and the failed-login limit per
// client address. Both are fixed-window counters in PostgreSQL (table rate_counter), so they hold
// across every server process sharing the database; a window starts with its first hit. An
// authenticated request costs one statement (its counters, and its address's failures, at once).
import type pg from 'pg';
import type { NotificationSubscriber } from '../../db/notifications.js';
import type { Sql } from '../../db/sql.js';
import { DomainError } from '../errors.js';

export interface RateRule {
  windowSeconds: number;
  maxRequests: number;
}

export const DEFAULT_RATE_RULES: RateRule[] = [
  { windowSeconds: 60, maxRequests: 200 },
  { windowSeconds: 3600, maxRequests: 2000 },
];

/** 100 failed logins per 10 minutes from one address: far beyond anyone mistyping a key. */
export const DEFAULT_FAILED_LOGIN_RULE: RateRule = { windowSeconds: 600, maxRequests: 100 };

function parseRule(rule: string, variable: string): RateRule {
  const [requests, seconds] = rule.split('/').map(Number);
  if (!Number.isSafeInteger(requests) || !Number.isSafeInteger(seconds) || requests! < 1 || seconds! < 1) {
    throw new Error(`${variable}: cannot read rule ${JSON.stringify(rule)} (expected requests/seconds)`);
  }
  return { maxRequests: requests!, windowSeconds: seconds! };
}

/** `200/60,2000/3600` (requests/seconds, comma-separated); `off` disables the limit. */
export function parseRateRules(text: string | undefined): RateRule[] {
  if (!text) return DEFAULT_RATE_RULES;
  if (text === 'off') return [];
  return text.split(',').map((rule) => parseRule(rule, 'API_RATE_LIMIT'));
}

/** The reference's `authenticate_by_username`: 5 sign-in attempts per address in 30 minutes. */
export const DEFAULT_SIGN_IN_RULE: RateRule = { windowSeconds: 1800, maxRequests: 5 };

/** `attempts/seconds`, e.g. `5/1800`; `off` disables the limit (SIGNIN_RATE_LIMIT). */
export function parseSignInRule(text: string | undefined): RateRule | null {
  if (!text) return DEFAULT_SIGN_IN_RULE;
  if (text === 'off') return null;
  return parseRule(text, 'SIGNIN_RATE_LIMIT');
}

/** `failures/seconds`, e.g. `100/600`; `off` disables the limit. */
export function parseFailedLoginRule(text: string | undefined): RateRule | null {
  if (!text) return DEFAULT_FAILED_LOGIN_RULE;
  if (text === 'off') return null;
  return parseRule(text, 'AUTH_FAILURE_LIMIT');
}

export interface RateLimits {
  perUser: RateRule[];
  failedLogins: RateRule | null;
  /** Sign-in attempts per e-mail address (signin.md section 2); absent: the default, null: none. */
  signIn?: RateRule | null;
}

/** Which limit refused: the user's requests, or the client address's failed logins. */
export type RefusalKind = 'per_user' | 'failed_login';

interface Counter {
  key: string;
  count: number;
  /** Epoch milliseconds. */
  windowEnd: number;
}

const userKey = (userId: number, rule: RateRule) => `user:${userId}:${rule.windowSeconds}`;
const addressKey = (clientAddress: string, rule: RateRule) => `address:${clientAddress}:${rule.windowSeconds}`;
const failureKey = (clientAddress: string) => `failed-login:${clientAddress}`;
/** The counter of sign-in attempts for a lower-cased e-mail address. */
export const signInCounterKey = (emailKey: string) => `sign-in:${emailKey}`;

// Every authenticated request runs one of these, so they go straight to the driver. Times travel as
// ISO text and come back as epoch milliseconds: the columns are UTC timestamps without a time zone.
const COUNTER_COLUMNS = `key, count, (extract(epoch FROM "windowEnd") * 1000)::float8 AS "windowEnd"`;
const NEW_WINDOW = `rate_counter."windowEnd" <= $1::timestamp(3)`;

/** $1 now, $2 weight, $3 keys, $4 window seconds, $5 the address's failure key. */
const HIT_AND_READ_FAILURES = `
  WITH hits AS (
    INSERT INTO rate_counter (key, count, "windowEnd")
    SELECT rule.key, $2::int, $1::timestamp(3) + make_interval(secs => rule.seconds)
      FROM unnest($3::text[], $4::int[]) AS rule(key, seconds)
    ON CONFLICT (key) DO UPDATE SET
      count = CASE WHEN ${NEW_WINDOW} THEN EXCLUDED.count ELSE rate_counter.count + EXCLUDED.count END,
      "windowEnd" = CASE WHEN ${NEW_WINDOW} THEN EXCLUDED."windowEnd" ELSE rate_counter."windowEnd" END
    RETURNING ${COUNTER_COLUMNS})
  SELECT * FROM hits
  UNION ALL
  SELECT ${COUNTER_COLUMNS} FROM rate_counter WHERE key = $5 AND "windowEnd" > $1::timestamp(3)`;

/** $1 now, $2 the address's failure key. */
const READ_FAILURES = `SELECT ${COUNTER_COLUMNS} FROM rate_counter WHERE key = $2 AND "windowEnd" > $1::timestamp(3)`;

const LOCKOUT_CHANNEL = 'failed_login_lockout';

/** $1 now, $2 the key, $3 window seconds: one more in the key's window. */
const COUNT_ATTEMPT = `
  INSERT INTO rate_counter (key, count, "windowEnd")
  VALUES ($2, 1, $1::timestamp(3) + make_interval(secs => $3::int))
  ON CONFLICT (key) DO UPDATE SET
    count = CASE WHEN ${NEW_WINDOW} THEN 1 ELSE rate_counter.count + 1 END,
    "windowEnd" = CASE WHEN ${NEW_WINDOW} THEN EXCLUDED."windowEnd" ELSE rate_counter."windowEnd" END
  RETURNING ${COUNTER_COLUMNS}`;

/**
 * $1 now, $2 the address's failure key, $3 window seconds, $4 the limit. Once the address is over
 * the limit, every process hears of it at commit ("<windowEnd ms> <key>").
 */
const COUNT_FAILURE = `
  WITH counted AS (
    INSERT INTO rate_counter (key, count, "windowEnd")
    VALUES ($2, 1, $1::timestamp(3) + make_interval(secs => $3::int))
    ON CONFLICT (key) DO UPDATE SET
      count = CASE WHEN ${NEW_WINDOW} THEN 1 ELSE rate_counter.count + 1 END,
      "windowEnd" = CASE WHEN ${NEW_WINDOW} THEN EXCLUDED."windowEnd" ELSE rate_counter."windowEnd" END
    RETURNING ${COUNTER_COLUMNS})
  SELECT counted.*, CASE WHEN count > $4 THEN pg_notify('${LOCKOUT_CHANNEL}', "windowEnd"::int8 || ' ' || key) END AS announced
    FROM counted`;

/** $1 now, $2 the limit: the addresses locked out now, for a process that starts listening. */
const CURRENT_LOCKOUTS = `
  SELECT ${COUNTER_COLUMNS} FROM rate_counter
   WHERE key LIKE 'failed-login:%' AND count > $2 AND "windowEnd" > $1::timestamp(3)`;

/** Addresses at most this many are remembered; past it, checks go to the database again. */
const MAX_LOCKOUTS = 100_000;

/**
 * The client addresses locked out by failed logins, kept in every process from the notifications
 * the failures send, so an authenticated request needs no statement to learn it is not locked out.
 * Trusted only while the process listens (src/db/notifications.ts).
 */
export class FailedLoginLockouts implements NotificationSubscriber {
  readonly channel = LOCKOUT_CHANNEL;
  private readonly until = new Map<string, number>();
  private on = false;

  constructor(
    private readonly rule: RateRule | null,
    private readonly now: () => number,
  ) {}

  notified(payload: string): void {
    const space = payload.indexOf(' ');
    this.note(payload.slice(space + 1), Number(payload.slice(0, space)));
  }

  async listening(on: boolean, client?: pg.Client): Promise<void> {
    this.until.clear();
    this.on = false;
    if (!on || !client || !this.rule) return;
    const { rows } = await client.query<Counter>(CURRENT_LOCKOUTS, [new Date(this.now()).toISOString(), this.rule.maxRequests]);
    for (const row of rows) this.note(row.key, row.windowEnd);
    this.on = true;
  }

  /** When the address's lockout ends (0: not locked out); undefined when only the database knows. */
  lockedUntil(key: string): number | undefined {
    if (!this.on || this.until.size >= MAX_LOCKOUTS) return undefined;
    return this.until.get(key) ?? 0;
  }

  /** The process that counted the failure knows at once; the others when the notification arrives. */
  note(key: string, windowEnd: number): void {
    if (this.until.size >= MAX_LOCKOUTS) this.forgetExpired();
    if ((this.until.get(key) ?? 0) < windowEnd) this.until.set(key, windowEnd);
  }

  private forgetExpired(): void {
    const now = this.now();
    for (const [key, end] of this.until) if (end <= now) this.until.delete(key);
  }
}

export class RateLimiter {
  /** Subscribe it to the process's notifications (src/db/notifications.ts) to spare the failures' statement. */
  readonly lockouts: FailedLoginLockouts;
  /** Told of every refusal (the server's metrics count them). */
  onRefusal: (kind: RefusalKind) => void = () => {};

  constructor(
    private readonly sql: Sql,
    private readonly limits: RateLimits,
    private readonly now: () => number = Date.now,
  ) {
    this.lockouts = new FailedLoginLockouts(limits.failedLogins, now);
  }

  /**
   * Counts `weight` requests of the user; throws RATE_LIMIT_HIT when a rule's window is over its
   * limit, or when the client address is locked out by failed logins.
   */
  async hit(userId: number, weight = 1, clientAddress?: string): Promise<void> {
    const failures = this.limits.failedLogins && clientAddress !== undefined ? this.limits.failedLogins : null;
    if (this.limits.perUser.length === 0 && !failures) return;
    const failuresKey = failures ? failureKey(clientAddress!) : '';
    if (this.limits.perUser.length === 0) return this.refuseIfLockedOut(failuresKey, this.now());
    await this.count((rule) => userKey(userId, rule), weight, failuresKey);
  }

  /**
   * Counts `weight` requests of a caller without credentials, known only by its address, against the
   * same rules as a user's (what such a caller may make the server keep, e.g. an APQ registration).
   */
  async hitAddress(clientAddress: string, weight = 1): Promise<void> {
    if (this.limits.perUser.length === 0) return;
    await this.count((rule) => addressKey(clientAddress, rule), weight, '');
  }

  /** One statement: the rules' counters of `keyOf` grow by `weight`, and the failures of `failuresKey` are read. */
  private async count(keyOf: (rule: RateRule) => string, weight: number, failuresKey: string): Promise<void> {
    const rules = this.limits.perUser;
    const now = this.now();
    const counters = await this.sql.rows<Counter>(HIT_AND_READ_FAILURES, [
      new Date(now).toISOString(),
      weight,
      rules.map(keyOf),
      rules.map((rule) => rule.windowSeconds),
      failuresKey,
    ]);
    const limitOf = (key: string) =>
      key.startsWith('failed-login:') ? this.limits.failedLogins!.maxRequests : rules.find((rule) => keyOf(rule) === key)!.maxRequests;
    this.refuseIfOver(counters, limitOf, now);
  }

  /** Counts one failed login from the address; throws RATE_LIMIT_HIT once the failures are over the limit. */
  async failure(clientAddress: string): Promise<void> {
    const rule = this.limits.failedLogins;
    if (!rule) return;
    const now = this.now();
    const counters = await this.sql.rows<Counter>(COUNT_FAILURE, [new Date(now).toISOString(), failureKey(clientAddress), rule.windowSeconds, rule.maxRequests]);
    for (const counter of counters) if (counter.count > rule.maxRequests) this.lockouts.note(counter.key, counter.windowEnd);
    this.refuseIfOver(counters, () => rule.maxRequests, now);
  }

  /**
   * Counts one sign-in attempt for the e-mail address (lower-cased), before its password is checked:
   * past the limit it throws RATE_LIMIT_HIT, the right password or not (signin.md section 2).
   */
  async signInAttempt(emailKey: string): Promise<void> {
    const rule = this.signInRule;
    if (!rule) return;
    const now = this.now();
    const counters = await this.sql.rows<Counter>(COUNT_ATTEMPT, [new Date(now).toISOString(), signInCounterKey(emailKey), rule.windowSeconds]);
    const over = counters.find((counter) => counter.count > rule.maxRequests);
    if (over) throw signInRefusal((over.windowEnd - now) / 1000);
  }

  /** A successful sign-in, a password change or reset start the address's count afresh. */
  async clearSignInAttempts(emailKey: string): Promise<void> {
    if (!this.signInRule) return;
    await this.sql.rows(`DELETE FROM rate_counter WHERE key = $1`, [signInCounterKey(emailKey)]);
  }

  /** Throws RATE_LIMIT_HIT while the client address is locked out by failed logins (no count). */
  async refuseLockedOutAddress(clientAddress: string): Promise<void> {
    if (this.limits.failedLogins) await this.refuseIfLockedOut(failureKey(clientAddress), this.now());
  }

  private get signInRule(): RateRule | null {
    return this.limits.signIn === undefined ? DEFAULT_SIGN_IN_RULE : this.limits.signIn;
  }

  /** Without per-user rules only the address's lockout matters: known in memory while listening. */
  private async refuseIfLockedOut(addressKey: string, now: number): Promise<void> {
    const until = this.lockouts.lockedUntil(addressKey);
    if (until !== undefined) {
      if (until > now) throw this.refusal('failed_login', (until - now) / 1000);
      return;
    }
    const counters = await this.sql.rows<Counter>(READ_FAILURES, [new Date(now).toISOString(), addressKey]);
    this.refuseIfOver(counters, () => this.limits.failedLogins!.maxRequests, now);
  }

  private refuseIfOver(counters: Counter[], limitOf: (key: string) => number, now: number): void {
    const over = counters.filter((counter) => counter.count > limitOf(counter.key));
    if (over.length === 0) return;
    const latestEnd = Math.max(...over.map((counter) => counter.windowEnd));
    const kind = over.some((counter) => counter.key.startsWith('failed-login:')) ? 'failed_login' : 'per_user';
    throw this.refusal(kind, (latestEnd - now) / 1000);
  }

  private refusal(kind: RefusalKind, retryAfterSeconds: number): DomainError {
    this.onRefusal(kind);
    return rateLimited(retryAfterSeconds);
  }
}

/** The reference's RateLimitedError of `authenticate_by_username`, whose message has no link. */
function signInRefusal(retryAfterSeconds: number): DomainError {
  return new DomainError('API usage exceeded rate limit', {
    code: 'RATE_LIMIT_HIT',
    status: 429,
    data: { 'retry-after': retryAfterSeconds },
    headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
  });
}

function rateLimited(retryAfterSeconds: number): DomainError {
  return new DomainError(
    'API usage exceeded rate limit; see https://zulip.com/api/http-headers#rate-limiting-response-headers',
    {
      code: 'RATE_LIMIT_HIT',
      status: 429,
      data: { 'retry-after': retryAfterSeconds },
      headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
    },
  );
}

/**
 * Counts one more in the key's fixed window and returns the count, refusing nothing: for limits past
 * which a request is answered as usual but does less (password reset e-mails, signin.md section 2).
 */
export async function countInWindow(sql: Sql, key: string, windowSeconds: number, now = Date.now()): Promise<number> {
  const [counter] = await sql.rows<Counter>(COUNT_ATTEMPT, [new Date(now).toISOString(), key, windowSeconds]);
  return counter!.count;
}
