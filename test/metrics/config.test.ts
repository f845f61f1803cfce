// METRICS_TOKEN and METRICS_PORT: off unless set, and a one-line start-up error for values that
// cannot work.
import { expect, test } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { StartupError } from '../../src/startup-error.js';

const TOKEN = 'c2VjcmV0LW1ldHJpY3MtdG9rZW4';

test('off unless METRICS_TOKEN or METRICS_PORT is set; empty values count as unset', () => {
  expect(loadConfig({}).metrics).toEqual({ token: undefined, port: undefined });
  expect(loadConfig({ METRICS_TOKEN: '', METRICS_PORT: '' }).metrics).toEqual({ token: undefined, port: undefined });
  expect(loadConfig({ METRICS_TOKEN: TOKEN }).metrics).toEqual({ token: TOKEN, port: undefined });
  expect(loadConfig({ METRICS_PORT: '9464' }).metrics).toEqual({ token: undefined, port: 9464 });
  expect(loadConfig({ METRICS_PORT: '0', PORT: '0' }).metrics.port).toBe(0);
});

test('a short token, or one a header cannot carry, stops the start with the variable named', () => {
  for (const token of ['short', 'fifteen-chars-x', `${TOKEN} with spaces`, `${TOKEN}\u00e9`, `"${TOKEN}"`]) {
    expect(() => loadConfig({ METRICS_TOKEN: token }), token).toThrow(StartupError);
    expect(() => loadConfig({ METRICS_TOKEN: token }), token).toThrow(/^METRICS_TOKEN must be at least 16 characters/);
  }
});

test('METRICS_PORT must be a port number other than PORT', () => {
  for (const port of ['65536', '-1', 'metrics', '1.5']) expect(() => loadConfig({ METRICS_PORT: port }), port).toThrow(/METRICS_PORT/);
  expect(() => loadConfig({ METRICS_PORT: '9991' })).toThrow('METRICS_PORT must differ from PORT (both are 9991)');
  expect(() => loadConfig({ PORT: '8000', METRICS_PORT: '8000' })).toThrow(StartupError);
  expect(loadConfig({ PORT: '8000', METRICS_PORT: '9991' }).metrics.port).toBe(9991);
});
