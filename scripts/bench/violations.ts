// The benchmark fails on broken promises, never on timings: every scenario reports here what it saw
// break (an answer that differs, a 500, a dead process, an event not delivered, a stream not freed,
// an e-mail sent twice, a connection error or timeout of a client). `npm run bench` exits 1 when
// anything was reported, with the list at the head of its report and on stderr. Timings and memory
// figures stay figures: they are never reported here.
//
// A scenario (a file of scripts/bench/) imports `violation` and calls it for each broken invariant;
// nothing else is needed to fail the run.

export interface Violation {
  scenario: string;
  reason: string;
}

const recorded: Violation[] = [];

export function violation(scenario: string, reason: string): void {
  recorded.push({ scenario, reason });
  console.error(`VIOLATION ${scenario}: ${reason}`);
}

/** Reports `reason` when `held` is false; returns `held`. */
export function expectHolds(scenario: string, held: boolean, reason: string): boolean {
  if (!held) violation(scenario, reason);
  return held;
}

export const violations = (): readonly Violation[] => recorded;

/** The head of the report: the broken invariants, or nothing when none broke. */
export function violationsMarkdown(): string {
  if (recorded.length === 0) return '';
  return [
    `**FAILED: ${recorded.length} broken invariant${recorded.length > 1 ? 's' : ''}:**`,
    '',
    ...recorded.map((v) => `- ${v.scenario}: ${v.reason.replaceAll('\n', ' ')}`),
    '',
    '',
  ].join('\n');
}
