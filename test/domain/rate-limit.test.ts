import { expect, test } from 'vitest';
import { DomainError } from '../../src/domain/errors.js';
import { parseRateRules, RateLimiter } from '../../src/domain/auth/rate-limit.js';

test('rules parse from the environment form, and off disables them', () => {
  expect(parseRateRules(undefined)).toEqual([
    { windowSeconds: 60, maxRequests: 200 },
    { windowSeconds: 3600, maxRequests: 2000 },
  ]);
  expect(parseRateRules('5/10')).toEqual([{ windowSeconds: 10, maxRequests: 5 }]);
  expect(parseRateRules('off')).toEqual([]);
  expect(() => parseRateRules('five/10')).toThrow(/API_RATE_LIMIT/);
});

test('the limit is per user and frees up as the window moves', () => {
  let now = 1_000_000;
  const limiter = new RateLimiter([{ windowSeconds: 60, maxRequests: 2 }], () => now);
  limiter.hit(1);
  limiter.hit(1);
  limiter.hit(2);
  let refusal: unknown;
  try {
    limiter.hit(1);
  } catch (error) {
    refusal = error;
  }
  expect(refusal).toBeInstanceOf(DomainError);
  expect(refusal).toMatchObject({
    code: 'RATE_LIMIT_HIT',
    status: 429,
    data: { 'retry-after': 60 },
    headers: { 'Retry-After': '60' },
  });
  now += 60_001;
  expect(() => limiter.hit(1)).not.toThrow();
});
