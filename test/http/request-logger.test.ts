// The request's logger (src/logging.ts): made only when the request first writes through it, then
// the same as a child logger with the request's id: its lines, redaction, children and level.
import { expect, test } from 'vitest';
import { requestLogger } from '../../src/logging.js';
import { capturedLogger } from '../support/log-capture.js';

function countingChildren(level: string) {
  const captured = capturedLogger(level);
  const made = { count: 0 };
  const child = captured.logger.child.bind(captured.logger);
  captured.logger.child = ((...args: Parameters<typeof child>) => {
    made.count++;
    return child(...args);
  }) as typeof child;
  return { ...captured, made };
}

test('no child logger is made until the request writes a line; then one, reused', () => {
  const { logger, lines, made } = countingChildren('info');
  const log = requestLogger(logger, 'request-1');
  expect(made.count).toBe(0);
  log.info({ step: 1 }, 'first');
  log.warn({ step: 2 }, 'second');
  expect(made.count).toBe(1);
  expect(lines.map(({ requestId, step, msg }) => ({ requestId, step, msg }))).toEqual([
    { requestId: 'request-1', step: 1, msg: 'first' },
    { requestId: 'request-1', step: 2, msg: 'second' },
  ]);
});

test("its lines are redacted as the process logger's, and its children keep the request's id", () => {
  const { logger, lines } = capturedLogger('info');
  const log = requestLogger(logger, 'request-2');
  log.child({ part: 'outbox' }).error({ apiKey: 'secret-key', authorization: 'Basic c2VjcmV0' }, 'failed');
  expect(lines).toEqual([
    expect.objectContaining({ requestId: 'request-2', part: 'outbox', apiKey: '[redacted]', authorization: '[redacted]', msg: 'failed' }),
  ]);
});

test("its level is its own: raising it leaves the process logger's as it was", () => {
  const { logger, lines } = capturedLogger('info');
  const log = requestLogger(logger, 'request-3');
  expect(log.level).toBe('info');
  log.level = 'error';
  log.info({}, 'dropped');
  logger.info({}, 'kept');
  expect(logger.level).toBe('info');
  expect(lines.map(({ msg }) => msg)).toEqual(['kept']);
});
