// The CLI's progress display (src/cli/progress.ts) as it renders, on a clock of the test's own: bars
// redrawn in place at a terminal, plain lines elsewhere, nothing for quiet work that ends quickly.
import { expect, test } from 'vitest';
import { Progress, renderBar } from '../../src/cli/progress.js';

function recorder(isTTY: boolean) {
  let written = '';
  let now = 0;
  return {
    out: { isTTY, write: (text: string) => (written += text) },
    clock: () => now,
    advance: (ms: number) => (now += ms),
    written: () => written,
  };
}

test('a bar shows the count of the total, the rate and the time left; unknown totals show neither bar nor time left', () => {
  expect(renderBar({ name: 'messages', unit: 'rows', done: 12_000, total: 48_000, elapsedMs: 3_000 })).toBe(
    'messages [######------------------]  12,000/48,000 rows  4,000/s, about 9.0 s left',
  );
  expect(renderBar({ name: 'messages', unit: 'rows', done: 48_000, total: 48_000, elapsedMs: 12_000 })).toBe(
    'messages [########################]  48,000/48,000 rows  4,000/s',
  );
  expect(renderBar({ name: 'sweep', unit: 'stored files listed', done: 1_500, detail: '3 removed', elapsedMs: 500 })).toBe(
    'sweep  1,500 stored files listed, 3 removed  3,000/s',
  );
});

test('at a terminal: each stage redrawn in place at most every 100 ms, ended on a line of its own', () => {
  const r = recorder(true);
  const progress = new Progress(r.out, { now: r.clock });
  progress.update('users', 0, 10);
  r.advance(50);
  progress.update('users', 5, 10); // within 100 ms of the last drawing: not drawn
  r.advance(100);
  progress.update('users', 8, 10);
  progress.update('channels', 0, 2); // ends users
  r.advance(1_000);
  progress.line('Created 10 users.');
  expect(r.written().split('\r\x1b[2K')).toEqual([
    '',
    'users [------------------------]  0/10 rows  0/s',
    'users [###################-----]  8/10 rows  53/s, about 0.0 s left',
    'users [###################-----]  8/10 rows  53/s, about 0.0 s left  in 0.1 s\n',
    'channels [------------------------]  0/2 rows  0/s',
    'channels [------------------------]  0/2 rows  0/s  in 1.0 s\nCreated 10 users.\n',
  ]);
});

test('elsewhere: a line when a stage ends and one every few seconds while it runs', () => {
  const r = recorder(false);
  const progress = new Progress(r.out, { now: r.clock, plainEveryMs: 5_000 });
  progress.update('messages', 0, 30_000);
  r.advance(5_000);
  progress.update('messages', 10_000, 30_000);
  r.advance(4_000); // 4 s after the last line: none
  progress.update('messages', 20_000, 30_000);
  r.advance(500);
  progress.update('messages', 30_000, 30_000);
  progress.update('stored files', 2, 2, { unit: 'files' });
  progress.line('done');
  expect(r.written()).toBe(
    [
      'messages: 10,000/30,000 rows, 2,000/s, about 10.0 s left',
      'messages: 30,000 rows in 9.5 s',
      'stored files: 2 files in 0.0 s',
      'done',
      '',
    ].join('\n'),
  );
});

test('quiet work shows nothing when it ends quickly, and reports once it lasts', () => {
  for (const isTTY of [true, false]) {
    const quick = recorder(isTTY);
    const progress = new Progress(quick.out, { now: quick.clock, quiet: true });
    progress.update('sweep', 500, undefined, { unit: 'stored files listed' });
    quick.advance(900);
    progress.update('sweep', 900, undefined, { unit: 'stored files listed' });
    progress.end();
    expect(quick.written(), `terminal: ${isTTY}`).toBe('');
  }
  const long = recorder(false);
  const progress = new Progress(long.out, { now: long.clock, quiet: true, plainEveryMs: 5_000 });
  progress.update('sweep', 0, undefined, { unit: 'stored files listed' });
  long.advance(6_000);
  progress.update('sweep', 6_000, undefined, { unit: 'stored files listed', detail: '2 removed' });
  progress.end();
  expect(long.written()).toBe(
    'sweep: 6,000 stored files listed, 2 removed, 1,000/s\nsweep: 6,000 stored files listed, 2 removed in 6.0 s\n',
  );
});
