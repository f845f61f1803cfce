// Per-user API rate limit (the reference's `api_by_user` rules), kept in this process's memory:
// with several server processes each enforces the rules on the requests it serves.
import { DomainError } from '../errors.js';

export interface RateRule {
  windowSeconds: number;
  maxRequests: number;
}

export const DEFAULT_RATE_RULES: RateRule[] = [
  { windowSeconds: 60, maxRequests: 200 },
  { windowSeconds: 3600, maxRequests: 2000 },
];

/** `200/60,2000/3600` (requests/seconds, comma-separated); `off` disables the limit. */
export function parseRateRules(text: string | undefined): RateRule[] {
  if (!text) return DEFAULT_RATE_RULES;
  if (text === 'off') return [];
  return text.split(',').map((rule) => {
    const [requests, seconds] = rule.split('/').map(Number);
    if (!Number.isSafeInteger(requests) || !Number.isSafeInteger(seconds) || requests! < 1 || seconds! < 1) {
      throw new Error(`API_RATE_LIMIT: cannot read rule ${JSON.stringify(rule)} (expected requests/seconds)`);
    }
    return { maxRequests: requests!, windowSeconds: seconds! };
  });
}

export class RateLimiter {
  private readonly history = new Map<number, number[]>();
  private readonly longestWindowMs: number;

  constructor(private readonly rules: RateRule[], private readonly now: () => number = Date.now) {
    this.longestWindowMs = Math.max(0, ...rules.map((r) => r.windowSeconds * 1000));
  }

  /** Records one request of the user, or throws RATE_LIMIT_HIT when a rule is exhausted. */
  hit(userId: number, weight = 1): void {
    if (this.rules.length === 0) return;
    const now = this.now();
    const times = (this.history.get(userId) ?? []).filter((t) => t > now - this.longestWindowMs);
    for (const rule of this.rules) {
      const inWindow = times.filter((t) => t > now - rule.windowSeconds * 1000);
      if (inWindow.length + weight > rule.maxRequests) {
        this.history.set(userId, times);
        throw rateLimited((inWindow[0]! + rule.windowSeconds * 1000 - now) / 1000);
      }
    }
    for (let i = 0; i < weight; i++) times.push(now);
    this.history.set(userId, times);
  }
}

function rateLimited(retryAfterSeconds: number): DomainError {
  return new DomainError(
    'API usage exceeded rate limit; see https://zulip.com/api/http-headers#rate-limiting-response-headers',
    {
      code: 'RATE_LIMIT_HIT',
      status: 429,
      data: { 'retry-after': retryAfterSeconds },
      headers: { 'Retry-After': String(Math.ceil(retryAfterSeconds)) },
    },
  );
}
