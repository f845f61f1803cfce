// The per-user API rate limit (the reference's `api_by_user` rules) and the failed-login limit per
// client address. Both are fixed-window counters in PostgreSQL (table rate_counter), so they hold
// across every server process sharing the database; a window starts with its first hit. An
// authenticated request costs one statement (its counters, and its address's failures, at once).
import type { Prisma } from '../../db/database.js';
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

/** `failures/seconds`, e.g. `100/600`; `off` disables the limit. */
export function parseFailedLoginRule(text: string | undefined): RateRule | null {
  if (!text) return DEFAULT_FAILED_LOGIN_RULE;
  if (text === 'off') return null;
  return parseRule(text, 'AUTH_FAILURE_LIMIT');
}

export interface RateLimits {
  perUser: RateRule[];
  failedLogins: RateRule | null;
}

interface Counter {
  key: string;
  count: number;
  windowEnd: Date;
}

const userKey = (userId: number, rule: RateRule) => `user:${userId}:${rule.windowSeconds}`;
const failureKey = (clientAddress: string) => `failed-login:${clientAddress}`;

export class RateLimiter {
  constructor(
    private readonly prisma: Prisma,
    private readonly limits: RateLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Counts `weight` requests of the user; throws RATE_LIMIT_HIT when a rule's window is over its
   * limit, or when the client address is locked out by failed logins.
   */
  async hit(userId: number, weight = 1, clientAddress?: string): Promise<void> {
    const rules = this.limits.perUser;
    const failures = this.limits.failedLogins && clientAddress !== undefined ? this.limits.failedLogins : null;
    if (rules.length === 0 && !failures) return;
    const now = new Date(this.now());
    const counters = await this.prisma.$queryRaw<Counter[]>`
      WITH hits AS (
        INSERT INTO rate_counter (key, count, "windowEnd")
        SELECT rule.key, ${weight}::int, ${now}::timestamp(3) + make_interval(secs => rule.seconds)
        FROM unnest(${rules.map((rule) => userKey(userId, rule))}::text[], ${rules.map((rule) => rule.windowSeconds)}::int[]) AS rule(key, seconds)
        ON CONFLICT (key) DO UPDATE SET
          count = CASE WHEN rate_counter."windowEnd" <= ${now}::timestamp(3) THEN EXCLUDED.count ELSE rate_counter.count + EXCLUDED.count END,
          "windowEnd" = CASE WHEN rate_counter."windowEnd" <= ${now}::timestamp(3) THEN EXCLUDED."windowEnd" ELSE rate_counter."windowEnd" END
        RETURNING key, count, "windowEnd")
      SELECT key, count, "windowEnd" FROM hits
      UNION ALL
      SELECT key, count, "windowEnd" FROM rate_counter WHERE key = ${failures ? failureKey(clientAddress!) : ''} AND "windowEnd" > ${now}::timestamp(3)`;
    const limitOf = (key: string) =>
      key.startsWith('failed-login:') ? failures!.maxRequests : rules.find((rule) => userKey(userId, rule) === key)!.maxRequests;
    this.refuseIfOver(counters, limitOf, now);
  }

  /** Counts one failed login from the address; throws RATE_LIMIT_HIT once the failures are over the limit. */
  async failure(clientAddress: string): Promise<void> {
    const rule = this.limits.failedLogins;
    if (!rule) return;
    const now = new Date(this.now());
    const counters = await this.prisma.$queryRaw<Counter[]>`
      INSERT INTO rate_counter (key, count, "windowEnd")
      VALUES (${failureKey(clientAddress)}, 1, ${now}::timestamp(3) + make_interval(secs => ${rule.windowSeconds}::int))
      ON CONFLICT (key) DO UPDATE SET
        count = CASE WHEN rate_counter."windowEnd" <= ${now}::timestamp(3) THEN 1 ELSE rate_counter.count + 1 END,
        "windowEnd" = CASE WHEN rate_counter."windowEnd" <= ${now}::timestamp(3) THEN EXCLUDED."windowEnd" ELSE rate_counter."windowEnd" END
      RETURNING key, count, "windowEnd"`;
    this.refuseIfOver(counters, () => rule.maxRequests, now);
  }

  private refuseIfOver(counters: Counter[], limitOf: (key: string) => number, now: Date): void {
    const over = counters.filter((counter) => counter.count > limitOf(counter.key));
    if (over.length === 0) return;
    const latestEnd = Math.max(...over.map((counter) => counter.windowEnd.getTime()));
    throw rateLimited((latestEnd - now.getTime()) / 1000);
  }
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
