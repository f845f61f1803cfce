import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { sqlOver, type Sql } from '../../src/db/sql.js';
import { DomainError } from '../../src/domain/errors.js';
import {
  parseAddressRateRules,
  parseFailedLoginRule,
  parseRateRules,
  parseSignInRule,
  RateLimiter,
} from '../../src/domain/auth/rate-limit.js';
import { testDatabaseUrl } from '../support/server.js';

let pool: pg.Pool;
let sql: Sql;
beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await testDatabaseUrl() });
  sql = sqlOver(pool);
});
afterAll(() => pool?.end());

test('rules parse from the environment form, and off disables them', () => {
  expect(parseRateRules(undefined)).toEqual([{ windowSeconds: 60, maxRequests: 200 }]);
  expect(parseAddressRateRules(undefined)).toEqual([{ windowSeconds: 60, maxRequests: 100 }]);
  expect(parseAddressRateRules('10/60,50/3600')).toEqual([
    { windowSeconds: 60, maxRequests: 10 },
    { windowSeconds: 3600, maxRequests: 50 },
  ]);
  expect(parseAddressRateRules('off')).toEqual([]);
  expect(() => parseAddressRateRules('10')).toThrow(/API_IP_RATE_LIMIT/);
  expect(parseRateRules('5/10')).toEqual([{ windowSeconds: 10, maxRequests: 5 }]);
  expect(parseRateRules('off')).toEqual([]);
  expect(() => parseRateRules('five/10')).toThrow(/API_RATE_LIMIT/);
  expect(parseFailedLoginRule(undefined)).toEqual({ windowSeconds: 600, maxRequests: 100 });
  expect(parseFailedLoginRule('3/60')).toEqual({ windowSeconds: 60, maxRequests: 3 });
  expect(parseFailedLoginRule('off')).toBeNull();
  expect(() => parseFailedLoginRule('3')).toThrow(/AUTH_FAILURE_LIMIT/);
  expect(parseSignInRule(undefined)).toEqual({ windowSeconds: 1800, maxRequests: 5 });
  expect(parseSignInRule('10/60')).toEqual({ windowSeconds: 60, maxRequests: 10 });
  expect(parseSignInRule('off')).toBeNull();
  expect(() => parseSignInRule('5/0')).toThrow(/SIGNIN_RATE_LIMIT/);
});

async function refusal(work: Promise<void>): Promise<unknown> {
  try {
    await work;
  } catch (error) {
    return error;
  }
  return undefined;
}

test('the limit is per user, counts weights, and frees up when the window ends', async () => {
  let now = Date.UTC(2030, 0, 1);
  const limiter = new RateLimiter(sql, { perUser: [{ windowSeconds: 60, maxRequests: 3 }], failedLogins: null }, () => now);
  const user = 1_000_000 + Math.floor(Math.random() * 1_000_000);
  await limiter.hit(user);
  await limiter.hit(user, 2);
  await limiter.hit(user + 1, 3);
  now += 30_000;
  const refused = await refusal(limiter.hit(user));
  expect(refused).toBeInstanceOf(DomainError);
  expect(refused).toMatchObject({ code: 'RATE_LIMIT_HIT', status: 429, data: { 'retry-after': 30 }, headers: { 'Retry-After': '30' } });
  now += 30_000;
  await expect(limiter.hit(user, 3)).resolves.toBeUndefined();
  await expect(refusal(limiter.hit(user))).resolves.toMatchObject({ code: 'RATE_LIMIT_HIT' });
});

test('failed logins lock out their address only, and the lock-out ends with the window', async () => {
  let now = Date.UTC(2030, 0, 1);
  const limiter = new RateLimiter(sql, { perUser: [], failedLogins: { windowSeconds: 600, maxRequests: 2 } }, () => now);
  const address = `192.0.2.${Math.floor(Math.random() * 250)}-${Math.random()}`;
  await limiter.failure(address);
  await limiter.failure(address);
  await expect(refusal(limiter.failure(address))).resolves.toMatchObject({ code: 'RATE_LIMIT_HIT', headers: { 'Retry-After': '600' } });
  await expect(refusal(limiter.hit(7, 1, address))).resolves.toMatchObject({ code: 'RATE_LIMIT_HIT' });
  await expect(limiter.hit(7, 1, `${address}-other`)).resolves.toBeUndefined();
  now += 600_000;
  await expect(limiter.hit(7, 1, address)).resolves.toBeUndefined();
});
