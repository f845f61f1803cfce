// The rate limits: requests per user (the reference's `api_by_user`), unauthenticated requests per
// client address (`api_by_ip`), sign-in attempts per e-mail address (`authenticate_by_username`),
// and the failed-login lockout per client address. All are fixed-window counters in PostgreSQL
// (table rate_counter), so they hold across every server process sharing the database; a window
// starts with its first hit. A request's limiters cost one statement together (their counters
// grow, and the address's lockout is read, at once; a failed login's count is one more), and each
// one that ran is noted in the request's RateLimitReport, which its answer's X-RateLimit-* headers
// show (rate-limits.md).
import type pg from 'pg';
import type { NotificationSubscriber } from '../../db/notifications.js';
import { namedStatement, type Sql } from '../../db/sql.js';
import { DomainError } from '../errors.js';

export interface RateRule {
  windowSeconds: number;
  maxRequests: number;
}

/** The reference's `api_by_user`. */
export const DEFAULT_RATE_RULES: RateRule[] = [{ windowSeconds: 60, maxRequests: 200 }];

/** The reference's `api_by_ip`, for the routes that need no credentials. */
export const DEFAULT_ADDRESS_RATE_RULES: RateRule[] = [{ windowSeconds: 60, maxRequests: 100 }];

/** 100 failed logins per 10 minutes from one address: far beyond anyone mistyping a key. */
export const DEFAULT_FAILED_LOGIN_RULE: RateRule = { windowSeconds: 600, maxRequests: 100 };

function parseRule(rule: string, variable: string): RateRule {
  const [requests, seconds] = rule.split('/').map(Number);
  if (!Number.isSafeInteger(requests) || !Number.isSafeInteger(seconds) || requests! < 1 || seconds! < 1) {
    throw new Error(`${variable}: cannot read rule ${JSON.stringify(rule)} (expected requests/seconds)`);
  }
  return { maxRequests: requests!, windowSeconds: seconds! };
}

function parseRuleList(text: string | undefined, variable: string, defaults: RateRule[]): RateRule[] {
  if (!text) return defaults;
  if (text === 'off') return [];
  return text.split(',').map((rule) => parseRule(rule, variable));
}

/** API_RATE_LIMIT: `200/60` (requests/seconds rules, comma-separated); `off` disables the limit. */
export const parseRateRules = (text: string | undefined): RateRule[] => parseRuleList(text, 'API_RATE_LIMIT', DEFAULT_RATE_RULES);

/** API_IP_RATE_LIMIT: `100/60` (requests/seconds rules, comma-separated); `off` disables the limit. */
export const parseAddressRateRules = (text: string | undefined): RateRule[] =>
  parseRuleList(text, 'API_IP_RATE_LIMIT', DEFAULT_ADDRESS_RATE_RULES);

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
  /** Requests without credentials per client address; absent: the default, empty: none. */
  perAddress?: RateRule[];
  /** Sign-in attempts per e-mail address (signin.md section 2); absent: the default, null: none. */
  signIn?: RateRule | null;
}

/** Which limit refused: the user's requests, the address's requests, its failed logins, or an e-mail address's sign-ins. */
export type RefusalKind = 'per_user' | 'per_address' | 'failed_login' | 'sign_in';

/** What one limiter that ran for a request says: its longest-window rule's limit, what is left of it, and when its windows end. */
export interface LimiterState {
  limit: number;
  remaining: number;
  /** Epoch milliseconds: when no counted request of this limiter applies any more. */
  resetAt: number;
}

/** What the answer's X-RateLimit-* headers say (rate-limits.md section 1). */
export interface RateLimitSummary {
  limit: number;
  remaining: number;
  /** Whole UNIX seconds (truncated). */
  reset: number;
}

/**
 * The limiters that ran for one request. The summary is the smallest limit and remaining across
 * them and the latest reset; after a refusal nothing remains.
 */
export class RateLimitReport {
  private readonly states: LimiterState[] = [];
  private refused = false;

  note(state: LimiterState, refused = false): void {
    this.states.push(state);
    if (refused) this.refused = true;
  }

  /** Null when no limiter ran (the answer then carries no X-RateLimit-* headers). */
  summary(): RateLimitSummary | null {
    if (this.states.length === 0) return null;
    const limit = Math.min(...this.states.map((state) => state.limit));
    const remaining = this.refused ? 0 : Math.min(...this.states.map((state) => state.remaining));
    return { limit, remaining, reset: Math.trunc(Math.max(...this.states.map((state) => state.resetAt)) / 1000) };
  }
}

interface Counter {
  key: string;
  count: number;
  /** Epoch milliseconds. */
  windowEnd: number;
}

/** One limiter's rules, each counted under its own key. */
interface Limiter {
  kind: RefusalKind;
  rules: RateRule[];
  keyOf(rule: RateRule): string;
  weight: number;
}

const userKey = (userId: number, rule: RateRule) => `user:${userId}:${rule.windowSeconds}`;
const addressKey = (clientAddress: string, rule: RateRule) => `address:${clientAddress}:${rule.windowSeconds}`;
const ipKey = (clientAddress: string, rule: RateRule) => `ip:${clientAddress}:${rule.windowSeconds}`;
const failureKey = (clientAddress: string) => `failed-login:${clientAddress}`;
/** The counter of sign-in attempts for a lower-cased e-mail address. */
export const signInCounterKey = (emailKey: string) => `sign-in:${emailKey}`;

// Every authenticated request runs one of these, so they go straight to the driver. Times travel as
// ISO text and come back as epoch milliseconds: the columns are UTC timestamps without a time zone.
const COUNTER_COLUMNS = `key, count, (extract(epoch FROM "windowEnd") * 1000)::float8 AS "windowEnd"`;
const NEW_WINDOW = `rate_counter."windowEnd" <= $1::timestamp(3)`;

/**
 * $1 now, $2 keys, $3 window seconds, $4 weights, $5 the address's failure key, $6 the failures
 * allowed. The counters grow by their weights unless the address is locked out; the lockout's
 * counter comes back when it is.
 */
const COUNT_UNLESS_LOCKED_OUT = namedStatement(
  'rate.count-unless-locked-out',
  `
  WITH lockout AS (
    SELECT ${COUNTER_COLUMNS} FROM rate_counter WHERE key = $5 AND count > $6 AND "windowEnd" > $1::timestamp(3)),
  hits AS (
    INSERT INTO rate_counter (key, count, "windowEnd")
    SELECT rule.key, rule.weight, $1::timestamp(3) + make_interval(secs => rule.seconds)
      FROM unnest($2::text[], $3::int[], $4::int[]) AS rule(key, seconds, weight)
     WHERE NOT EXISTS (SELECT FROM lockout)
    ON CONFLICT (key) DO UPDATE SET
      count = CASE WHEN ${NEW_WINDOW} THEN EXCLUDED.count ELSE rate_counter.count + EXCLUDED.count END,
      "windowEnd" = CASE WHEN ${NEW_WINDOW} THEN EXCLUDED."windowEnd" ELSE rate_counter."windowEnd" END
    RETURNING ${COUNTER_COLUMNS})
  SELECT * FROM hits
  UNION ALL
  SELECT * FROM lockout`,
);

/** $1 now, $2 the address's failure key. */
const READ_FAILURES = namedStatement(
  'rate.read-failures',
  `SELECT ${COUNTER_COLUMNS} FROM rate_counter WHERE key = $2 AND "windowEnd" > $1::timestamp(3)`,
);

const LOCKOUT_CHANNEL = 'failed_login_lockout';

/** $1 now, $2 the key, $3 window seconds: one more in the key's window. */
const COUNT_ATTEMPT = namedStatement(
  'rate.count-attempt',
  `
  INSERT INTO rate_counter (key, count, "windowEnd")
  VALUES ($2, 1, $1::timestamp(3) + make_interval(secs => $3::int))
  ON CONFLICT (key) DO UPDATE SET
    count = CASE WHEN ${NEW_WINDOW} THEN 1 ELSE rate_counter.count + 1 END,
    "windowEnd" = CASE WHEN ${NEW_WINDOW} THEN EXCLUDED."windowEnd" ELSE rate_counter."windowEnd" END
  RETURNING ${COUNTER_COLUMNS}`,
);

/**
 * $1 now, $2 the address's failure key, $3 window seconds, $4 the limit. Once the address is over
 * the limit, every process hears of it at commit ("<windowEnd ms> <key>"); a deleted failure
 * counter is announced as "0 <key>" (migration failed_login_release_notifications).
 */
const COUNT_FAILURE = namedStatement(
  'rate.count-failure',
  `
  WITH counted AS (
    INSERT INTO rate_counter (key, count, "windowEnd")
    VALUES ($2, 1, $1::timestamp(3) + make_interval(secs => $3::int))
    ON CONFLICT (key) DO UPDATE SET
      count = CASE WHEN ${NEW_WINDOW} THEN 1 ELSE rate_counter.count + 1 END,
      "windowEnd" = CASE WHEN ${NEW_WINDOW} THEN EXCLUDED."windowEnd" ELSE rate_counter."windowEnd" END
    RETURNING ${COUNTER_COLUMNS})
  SELECT counted.*, CASE WHEN count > $4 THEN pg_notify('${LOCKOUT_CHANNEL}', "windowEnd"::int8 || ' ' || key) END AS announced
    FROM counted`,
);

/** $1 now, $2 the limit: the addresses locked out now, for a process that starts listening. */
const CURRENT_LOCKOUTS = `
  SELECT ${COUNTER_COLUMNS} FROM rate_counter
   WHERE key LIKE 'failed-login:%' AND count > $2 AND "windowEnd" > $1::timestamp(3)`;

/** Addresses at most this many are remembered; past it, checks go to the database again. */
const MAX_LOCKOUTS = 100_000;

/** The announcement of an emptied table (a TRUNCATE): every lockout ends. */
const ALL_RELEASED = '0 *';

/**
 * The client addresses locked out by failed logins, kept in every process from the notifications
 * the failures send, so an authenticated request needs no statement to learn it is not locked out.
 * A failure counter deleted (an operator's release) is announced too, and ends its lockout here.
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
    if (payload === ALL_RELEASED) {
      this.until.clear();
      return;
    }
    const space = payload.indexOf(' ');
    const windowEnd = Number(payload.slice(0, space));
    const key = payload.slice(space + 1);
    if (windowEnd === 0) this.until.delete(key);
    else this.note(key, windowEnd);
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

/** A limiter's state: its longest-window rule's limit and what is left of it, and when its last window ends. */
function limiterState(counters: { rule: RateRule; counter: Counter }[]): LimiterState {
  const longest = counters.reduce((found, entry) => (entry.rule.windowSeconds > found.rule.windowSeconds ? entry : found));
  return {
    limit: longest.rule.maxRequests,
    remaining: Math.max(0, longest.rule.maxRequests - longest.counter.count),
    resetAt: Math.max(...counters.map(({ counter }) => counter.windowEnd)),
  };
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

  /** Whether requests are limited per user (API_RATE_LIMIT is not off). */
  get limitsUsers(): boolean {
    return this.limits.perUser.length > 0;
  }

  /**
   * Counts `weight` requests of the user (0: reads the counters, for a request that is not to be
   * counted); throws RATE_LIMIT_HIT when a rule's window is over its limit, or when the client
   * address is locked out by failed logins.
   */
  async hit(userId: number, weight = 1, clientAddress?: string, report?: RateLimitReport): Promise<void> {
    const limiters: Limiter[] = [];
    if (this.limitsUsers) limiters.push({ kind: 'per_user', rules: this.limits.perUser, keyOf: (rule) => userKey(userId, rule), weight });
    await this.count(limiters, clientAddress, report);
  }

  /**
   * Counts `weight` requests of a caller without credentials, known only by its address, against the
   * same rules as a user's (what such a caller may make the server keep, e.g. an APQ registration).
   */
  async hitAddress(clientAddress: string, weight = 1, report?: RateLimitReport): Promise<void> {
    if (!this.limitsUsers) return;
    const limiter: Limiter = { kind: 'per_user', rules: this.limits.perUser, keyOf: (rule) => addressKey(clientAddress, rule), weight };
    await this.count([limiter], undefined, report);
  }

  /** Counts one request to a route that needs no credentials against the client address (`api_by_ip`). */
  async hitUnauthenticated(clientAddress: string, report?: RateLimitReport): Promise<void> {
    const limiter = this.unauthenticatedLimiter(clientAddress);
    if (limiter) await this.count([limiter], undefined, report);
  }

  /**
   * A sign-in's limits in one statement: the client address's lockout, then (unless it is locked
   * out) one more request of the address (`api_by_ip`) and, for a well-formed e-mail address, one
   * more attempt for it, counted before its password is checked: past the limit the right password
   * is refused too (signin.md section 2).
   */
  async signInAttempt(clientAddress: string, emailKey: string | null, report?: RateLimitReport): Promise<void> {
    const limiters: Limiter[] = [];
    const unauthenticated = this.unauthenticatedLimiter(clientAddress);
    if (unauthenticated) limiters.push(unauthenticated);
    const rule = this.signInRule;
    if (rule && emailKey !== null) limiters.push({ kind: 'sign_in', rules: [rule], keyOf: () => signInCounterKey(emailKey), weight: 1 });
    await this.count(limiters, clientAddress, report);
  }

  /** Counts one attempt at the caller's own password (a password change): the same counter as signing in. */
  async passwordAttempt(emailKey: string): Promise<void> {
    const rule = this.signInRule;
    if (rule) await this.count([{ kind: 'sign_in', rules: [rule], keyOf: () => signInCounterKey(emailKey), weight: 1 }]);
  }

  /** Counts one failed login from the address; throws RATE_LIMIT_HIT once the failures are over the limit. */
  async failure(clientAddress: string, report?: RateLimitReport): Promise<void> {
    const rule = this.limits.failedLogins;
    if (!rule) return;
    const now = this.now();
    const key = failureKey(clientAddress);
    const counters = await this.sql.rows<Counter>(COUNT_FAILURE, [new Date(now).toISOString(), key, rule.windowSeconds, rule.maxRequests]);
    const over = counters.find((counter) => counter.count > rule.maxRequests);
    if (!over) return;
    this.lockouts.note(over.key, over.windowEnd);
    throw this.lockedOut(over.windowEnd, now, report);
  }

  /** A successful sign-in, a password change or reset start the address's count afresh. */
  async clearSignInAttempts(emailKey: string): Promise<void> {
    if (!this.signInRule) return;
    await this.sql.rows(`DELETE FROM rate_counter WHERE key = $1`, [signInCounterKey(emailKey)]);
  }

  private get signInRule(): RateRule | null {
    return this.limits.signIn === undefined ? DEFAULT_SIGN_IN_RULE : this.limits.signIn;
  }

  private unauthenticatedLimiter(clientAddress: string): Limiter | null {
    const rules = this.limits.perAddress ?? DEFAULT_ADDRESS_RATE_RULES;
    return rules.length > 0 ? { kind: 'per_address', rules, keyOf: (rule) => ipKey(clientAddress, rule), weight: 1 } : null;
  }

  /**
   * One statement: the limiters' counters grow (unless the address is locked out), and the
   * address's lockout is read. Without counters, the lockout alone: known in memory while listening.
   */
  private async count(limiters: Limiter[], clientAddress?: string, report?: RateLimitReport): Promise<void> {
    const failures = clientAddress !== undefined ? this.limits.failedLogins : null;
    const now = this.now();
    if (limiters.length === 0) {
      if (failures) await this.refuseIfLockedOut(failureKey(clientAddress!), now, report);
      return;
    }
    const counted = limiters.flatMap((limiter) => limiter.rules.map((rule) => ({ limiter, rule, key: limiter.keyOf(rule) })));
    const counters = await this.sql.rows<Counter>(COUNT_UNLESS_LOCKED_OUT, [
      new Date(now).toISOString(),
      counted.map((entry) => entry.key),
      counted.map((entry) => entry.rule.windowSeconds),
      counted.map((entry) => entry.limiter.weight),
      failures ? failureKey(clientAddress!) : '',
      failures?.maxRequests ?? 0,
    ]);
    const byKey = new Map(counters.map((counter) => [counter.key, counter]));
    const lockout = failures ? byKey.get(failureKey(clientAddress!)) : undefined;
    if (lockout) throw this.lockedOut(lockout.windowEnd, now, report);
    let refusal: { kind: RefusalKind; windowEnd: number } | null = null;
    for (const limiter of limiters) {
      const counters = limiter.rules.map((rule) => ({ rule, counter: byKey.get(limiter.keyOf(rule))! }));
      const over = counters.filter(({ rule, counter }) => counter.count > rule.maxRequests);
      report?.note(limiterState(counters), over.length > 0);
      const end = Math.max(0, ...over.map(({ counter }) => counter.windowEnd));
      if (over.length > 0 && (!refusal || end > refusal.windowEnd)) refusal = { kind: limiter.kind, windowEnd: end };
    }
    if (refusal) throw this.refusal(refusal.kind, (refusal.windowEnd - now) / 1000);
  }

  /** Without counters only the address's lockout matters: known in memory while listening. */
  private async refuseIfLockedOut(addressKey: string, now: number, report?: RateLimitReport): Promise<void> {
    const until = this.lockouts.lockedUntil(addressKey);
    if (until !== undefined) {
      if (until > now) throw this.lockedOut(until, now, report);
      return;
    }
    const [counter] = await this.sql.rows<Counter>(READ_FAILURES, [new Date(now).toISOString(), addressKey]);
    if (counter && counter.count > this.limits.failedLogins!.maxRequests) throw this.lockedOut(counter.windowEnd, now, report);
  }

  private lockedOut(windowEnd: number, now: number, report?: RateLimitReport): DomainError {
    report?.note({ limit: this.limits.failedLogins!.maxRequests, remaining: 0, resetAt: windowEnd }, true);
    return this.refusal('failed_login', (windowEnd - now) / 1000);
  }

  private refusal(kind: RefusalKind, retryAfterSeconds: number): DomainError {
    this.onRefusal(kind);
    return rateLimited(retryAfterSeconds);
  }
}

/** The reference's RateLimitedError, the same for every limit (behaviour.md rule 5). */
export function rateLimited(retryAfterSeconds: number): DomainError {
  return new DomainError('API usage exceeded rate limit', {
    code: 'RATE_LIMIT_HIT',
    status: 429,
    data: { 'retry-after': retryAfterSeconds },
    headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
  });
}

/**
 * Counts one more in the key's fixed window and returns the count, refusing nothing: for limits past
 * which a request is answered as usual but does less (password reset e-mails, signin.md section 2).
 */
export async function countInWindow(sql: Sql, key: string, windowSeconds: number, now = Date.now()): Promise<number> {
  const [counter] = await sql.rows<Counter>(COUNT_ATTEMPT, [new Date(now).toISOString(), key, windowSeconds]);
  return counter!.count;
}
