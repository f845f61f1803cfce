// DATABASE_LOCK_WAIT_SECONDS: a default, 0 for no limit, and a clear start-up error for values
// PostgreSQL's lock_timeout cannot take.
import { expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { StartupError } from '../../src/startup-error.js';

const lockWait = (value?: string) => loadConfig(value === undefined ? {} : { DATABASE_LOCK_WAIT_SECONDS: value }).databaseLockWaitSeconds;

test('10 seconds unless set; 0 and a day are accepted', () => {
  expect(lockWait()).toBe(10);
  expect(lockWait('')).toBe(10);
  expect(lockWait('0')).toBe(0);
  expect(lockWait('86400')).toBe(86_400);
});

test('more than a day, negative, fractional or non-numeric values stop the start with the variable named', () => {
  for (const value of ['86401', '99999999999', '-1', '1.5', 'ten', '5\u0000']) {
    expect(() => lockWait(value), value).toThrow(StartupError);
    expect(() => lockWait(value), value).toThrow(/DATABASE_LOCK_WAIT_SECONDS/);
  }
});
