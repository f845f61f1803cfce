// FILE_SWEEP_MINUTES: 10 unless set, 0 or off for no sweep, and a one-line start-up error naming the
// variable for anything else.
import { expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { StartupError } from '../../src/startup-error.js';

const minutes = (value?: string) => loadConfig(value === undefined ? {} : { FILE_SWEEP_MINUTES: value }).fileSweepMinutes;

test('10 minutes unless set; 0 and off turn the sweep off; a week at most', () => {
  expect([minutes(), minutes(''), minutes('1'), minutes('60'), minutes('10080')]).toEqual([10, 10, 1, 60, 10_080]);
  expect([minutes('0'), minutes('off')]).toEqual([0, 0]);
});

test('negative, fractional, huge, non-numeric or NUL-carrying values stop the start with one line naming the variable', () => {
  for (const value of ['-1', '1.5', '10081', '99999999999999999999', 'ten', 'OFF', ' 5', '5\u0000', '1e3', '0x10']) {
    expect(() => minutes(value), value).toThrow(StartupError);
    const oneLine = /^FILE_SWEEP_MINUTES must be a whole number of minutes up to 10080, or 0 or off \(no sweep\), got "[^\n]*"$/;
    expect(() => minutes(value), value).toThrow(oneLine);
  }
});
